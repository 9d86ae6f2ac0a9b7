//go:build windows

package sysmem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

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

var globalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// read calls GlobalMemoryStatusEx: ullTotalPhys, and ullAvailPhys (free memory and
// the standby list, a model's own cached file pages included). A job object's
// memory limit is not read.
func read() (Memory, error) {
	m := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if r, _, e := globalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); r == 0 {
		return Memory{}, fmt.Errorf("GlobalMemoryStatusEx: %v", e)
	}
	return Memory{Total: int64(m.totalPhys), Available: int64(m.availPhys), Machine: int64(m.totalPhys)}, nil
}
