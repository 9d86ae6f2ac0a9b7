package cli

import (
	"time"

	"golang.org/x/sys/windows"
)

// processorTime is the processor time this process has used so far, user and kernel
// (GetProcessTimes, in 100 ns units); ok is false where it cannot be read.
func processorTime() (d time.Duration, ok bool) {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0, false
	}
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration(ticks(kernel)+ticks(user)) * 100, true
}
