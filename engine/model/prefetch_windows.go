package model

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows' forms of the read-ahead and populate calls (prefetch_linux.go,
// prefetch_unix.go): PrefetchVirtualMemory (Windows 8 and later) reads a mapped range
// into memory in large requests, and a read of one byte a page then maps each page
// into the process; GlobalMemoryStatusEx says how much memory is available.

var (
	kernel32               = windows.NewLazySystemDLL("kernel32.dll")
	prefetchVirtualMemory  = kernel32.NewProc("PrefetchVirtualMemory")
	globalMemoryStatusEx   = kernel32.NewProc("GlobalMemoryStatusEx")
	pageSize               = windows.Getpagesize()
	prefetchVirtualMissing = prefetchVirtualMemory.Find() != nil // before Windows 8
)

// memoryRangeEntry is WIN32_MEMORY_RANGE_ENTRY.
type memoryRangeEntry struct {
	addr uintptr
	size uintptr
}

// willNeedBytes asks Windows to read the pages that hold b into memory
// (PrefetchVirtualMemory). Its failure is ignored: advice that cannot be given
// changes nothing but the speed.
func willNeedBytes(b []byte) {
	if len(b) == 0 || prefetchVirtualMissing {
		return
	}
	e := memoryRangeEntry{uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b))}
	prefetchVirtualMemory.Call(uintptr(windows.CurrentProcess()), 1, uintptr(unsafe.Pointer(&e)), 0)
}

// populateBytes reads the pages that hold b into memory and maps each into the
// process, so that nothing faults on them later: PrefetchVirtualMemory's large reads,
// then one read a page.
func populateBytes(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	willNeedBytes(b)
	touchPages(b)
	return nil
}

// memoryStatusEx is MEMORYSTATUSEX.
type memoryStatusEx struct {
	length               uint32
	memoryLoad           uint32
	totalPhys            uint64
	availPhys            uint64
	totalPageFile        uint64
	availPageFile        uint64
	totalVirtual         uint64
	availVirtual         uint64
	availExtendedVirtual uint64
}

// memoryAvailable is the physical memory Windows can give without paging out
// (GlobalMemoryStatusEx's ullAvailPhys: free memory and the standby list, a model's
// own cached file pages included), in bytes; 0 when it cannot be read.
func memoryAvailable() int64 {
	m := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if r, _, _ := globalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); r == 0 {
		return 0
	}
	return int64(m.availPhys)
}
