//go:build linux || darwin || freebsd

package speed

import "syscall"

// preemptions is how many times the kernel has taken a CPU from this process's
// threads while they could still run (involuntary context switches): another
// program's turn on the core. ok is false where it is not counted.
func preemptions() (n int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return int64(ru.Nivcsw), true
}
