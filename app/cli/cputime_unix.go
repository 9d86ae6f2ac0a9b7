//go:build unix

package cli

import (
	"syscall"
	"time"
)

// processorTime is the processor time this process has used so far, user and system
// (getrusage); ok is false where it cannot be read.
func processorTime() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
