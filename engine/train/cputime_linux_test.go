package train

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used, which the
// benchmarks report next to wall time: on a shared, loaded machine it is the steadier
// measure of the work a step does.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
