package clock

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	kernel32 = windows.NewLazySystemDLL("kernel32.dll")
	qpc      = kernel32.NewProc("QueryPerformanceCounter")
	// freq is QueryPerformanceFrequency's counts a second (10 MHz on Windows 10 and
	// 11), 0 where it could not be read: then the portable clock.
	freq = func() int64 {
		var f int64
		if r, _, _ := kernel32.NewProc("QueryPerformanceFrequency").Call(uintptr(unsafe.Pointer(&f))); r == 0 {
			return 0
		}
		return f
	}()
)

// now is QueryPerformanceCounter in nanoseconds (whole seconds and the rest apart,
// so that a counter of many days does not overflow the product).
func now() int64 {
	var c int64
	if freq <= 0 {
		return portable()
	}
	if r, _, _ := qpc.Call(uintptr(unsafe.Pointer(&c))); r == 0 {
		return portable()
	}
	return c/freq*1e9 + c%freq*1e9/freq
}
