package cli

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// processMemoryCounters is Windows' PROCESS_MEMORY_COUNTERS.
type processMemoryCounters struct {
	cb                         uint32
	pageFaultCount             uint32
	peakWorkingSetSize         uintptr
	workingSetSize             uintptr
	quotaPeakPagedPoolUsage    uintptr
	quotaPagedPoolUsage        uintptr
	quotaPeakNonPagedPoolUsage uintptr
	quotaNonPagedPoolUsage     uintptr
	pagefileUsage              uintptr
	peakPagefileUsage          uintptr
}

var getProcessMemoryInfo = windows.NewLazySystemDLL("kernel32.dll").NewProc("K32GetProcessMemoryInfo")

// resetPeakRSS does nothing on Windows, which keeps no resettable peak: the peak
// working set bench reports is the whole process's, its start included.
func resetPeakRSS() {}

// peakRSS is the process's peak working set (K32GetProcessMemoryInfo's
// PeakWorkingSetSize: Windows' peak resident set), 0 where unavailable.
func peakRSS() uint64 {
	c := processMemoryCounters{cb: uint32(unsafe.Sizeof(processMemoryCounters{}))}
	if r, _, _ := getProcessMemoryInfo.Call(uintptr(windows.CurrentProcess()), uintptr(unsafe.Pointer(&c)), uintptr(c.cb)); r == 0 {
		return 0
	}
	return uint64(c.peakWorkingSetSize)
}
