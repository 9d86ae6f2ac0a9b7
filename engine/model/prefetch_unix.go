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
	if a := pageAligned(b); len(a) > 0 {
		_ = unix.Madvise(a, unix.MADV_WILLNEED)
	}
}

// pageAligned is b from its first page boundary on (madvise wants a page-aligned
// start), empty where b holds none. It starts inside b, not at the start of b's
// first page: memory before b is not b's, and a slice reaching back to it pointed
// outside its allocation, which `go test -race`'s pointer checks stop the program
// for (checkptr) — b's part of its first page goes unadvised.
func pageAligned(b []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	skip := int((uintptr(pageSize) - p%uintptr(pageSize)) % uintptr(pageSize))
	if skip >= len(b) {
		return nil
	}
	return b[skip:]
}
