//go:build linux || darwin || freebsd

package model

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = unix.Getpagesize()

// willNeedBytes is madvise(MADV_WILLNEED) over the pages that hold b. Its error is
// ignored: advice that cannot be given (memory that is not a mapping of a file, an
// old kernel) changes nothing but the speed.
func willNeedBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	_ = unix.Madvise(pageAligned(b), unix.MADV_WILLNEED)
}

// pageAligned is b's memory from the start of its first page to b's end: madvise
// wants a page-aligned start.
func pageAligned(b []byte) []byte {
	p := unsafe.Pointer(unsafe.SliceData(b))
	off := int(uintptr(p) % uintptr(pageSize))
	return unsafe.Slice((*byte)(unsafe.Add(p, -off)), len(b)+off)
}
