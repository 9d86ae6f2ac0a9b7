package model

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows' forms of the read-ahead and populate calls (prefetch_linux.go,
// prefetch_unix.go): PrefetchVirtualMemory (Windows 8 and later) reads a mapped range
// into memory in large requests, and a read of one byte a page then maps each page
// into the process.

var (
	kernel32               = windows.NewLazySystemDLL("kernel32.dll")
	prefetchVirtualMemory  = kernel32.NewProc("PrefetchVirtualMemory")
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
