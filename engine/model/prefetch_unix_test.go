//go:build linux || darwin || freebsd

package model

import (
	"testing"
	"unsafe"
)

// TestPageAligned: what madvise is given starts on a page boundary inside b and
// ends where b ends — never before b (a slice reaching back before its memory
// stopped `go test -race ./app/server` with "checkptr: pointer arithmetic result
// points to invalid allocation"); a b holding no page start gives nothing.
func TestPageAligned(t *testing.T) {
	buf := make([]byte, 3*pageSize)
	for _, c := range []struct{ from, to int }{{0, len(buf)}, {1, len(buf)}, {pageSize - 1, 2*pageSize + 5}, {5, 100}} {
		b := buf[c.from:c.to]
		a := pageAligned(b)
		start, aStart := uintptr(unsafe.Pointer(&b[0])), uintptr(0)
		if len(a) > 0 {
			aStart = uintptr(unsafe.Pointer(&a[0]))
		}
		switch {
		case len(a) == 0:
			if next := (start + uintptr(pageSize) - 1) &^ uintptr(pageSize-1); next < start+uintptr(len(b)) {
				t.Errorf("b[%d:%d]: nothing, though it holds a page start", c.from, c.to)
			}
		case aStart < start || aStart%uintptr(pageSize) != 0 || aStart+uintptr(len(a)) != start+uintptr(len(b)):
			t.Errorf("b[%d:%d] at %#x: %d bytes at %#x; want a page start inside b, ending at b's end", c.from, c.to, start, len(a), aStart)
		}
	}
	willNeedBytes(buf[1:]) // under -race, checkptr would stop here
}
