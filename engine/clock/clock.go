// Package clock times short intervals — a speed probe's few microseconds, a forward
// pass, a token — at the finest resolution the system offers. On Linux and macOS
// that is time.Now's monotonic reading (nanoseconds). On Windows Go's time.Now reads
// the kernel's interrupt time, which moves once a timer tick, 0.5 to 15.6 ms
// (golang/go#8687; Go's own benchmarks read QueryPerformanceCounter instead,
// golang/go#31160): a probe of a few microseconds measured 0 there, and darkroom hw
// printed rates such as 268,435,456 GFLOP/s. This package reads
// QueryPerformanceCounter on Windows (about 100 ns) and time.Now elsewhere.
//
// Instants measure intervals only; times of day stay time.Now's.
package clock

import "time"

// Instant is a reading of the interval clock, for Since.
type Instant struct{ ns int64 }

// Now reads the interval clock.
func Now() Instant { return Instant{now()} }

// Since is the time passed since i.
func Since(i Instant) time.Duration { return time.Duration(now() - i.ns) }

// base is what the portable clock counts from.
var base = time.Now()

// portable is nanoseconds since base by time.Now's monotonic reading.
func portable() int64 { return int64(time.Since(base)) }
