package cli

import (
	"runtime"
	"testing"
	"time"
)

// TestPeakRSS: where bench reads the peak resident set (Linux's VmHWM, Windows' peak
// working set), it counts 64 MiB just touched, and processorTime counts the
// processor time spent touching them; Windows had reported no resident set (it read
// /proc) and no processor time.
func TestPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		t.Skip("bench reads the peak resident set on Linux and Windows only")
	}
	before, ok := processorTime()
	if !ok {
		t.Fatal("no processor time")
	}
	const n = 64 << 20
	b := make([]byte, n)
	t0 := time.Now()
	for time.Since(t0) < 50*time.Millisecond { // some processor time to count
		for i := 0; i < n; i += 4096 {
			b[i]++
		}
	}
	if got := peakRSS(); got < n {
		t.Errorf("peak resident set %d bytes after touching %d", got, n)
	}
	after, _ := processorTime()
	if after-before < 10*time.Millisecond {
		t.Errorf("processor time %v → %v over 50 ms of work", before, after)
	}
	runtime.KeepAlive(b)
}
