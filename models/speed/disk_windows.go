//go:build windows

package speed

import (
	"io"
	"os"

	"golang.org/x/sys/windows"
)

// uncached opens path to be read from the disk rather than the system's cache:
// FILE_FLAG_NO_BUFFERING (reads of whole sectors into aligned buffers:
// alignedBuffer, diskChunk).
func uncached(path string) (io.ReaderAt, func(), error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, nil, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_NO_BUFFERING, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), path)
	return f, func() { f.Close() }, nil
}
