//go:build !linux

package train

import "time"

// processCPU is not measured off Linux (the benchmarks report 0).
func processCPU() time.Duration { return 0 }
