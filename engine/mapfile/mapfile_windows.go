package mapfile

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// mapFile maps f's first size bytes read-only: a file mapping object, a view of it,
// and the object's handle closed at once (the view holds the mapping; unmap lets both
// go).
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READONLY,
		uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, nil, &os.PathError{Op: "CreateFileMapping", Path: f.Name(), Err: err}
	}
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	windows.CloseHandle(h)
	if err != nil {
		return nil, nil, &os.PathError{Op: "MapViewOfFile", Path: f.Name(), Err: err}
	}
	// The view is memory the system owns, not Go's: its address comes as a uintptr.
	b := unsafe.Slice((*byte)(unsafe.Add(nil, addr)), size)
	return b, func() error { return windows.UnmapViewOfFile(addr) }, nil
}
