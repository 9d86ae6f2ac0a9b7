//go:build linux || darwin || freebsd

package model

import (
	"syscall"
	"unsafe"
)

var pageSize = syscall.Getpagesize()

// willNeedBytes is madvise(MADV_WILLNEED) over the pages that hold b (the call wants
// a page-aligned start). Its error is ignored: advice that cannot be given (memory
// that is not a mapping of a file, an old kernel) changes nothing but the speed.
func willNeedBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	off := int(uintptr(p) % uintptr(pageSize))
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, -off)), len(b)+off), syscall.MADV_WILLNEED)
}
