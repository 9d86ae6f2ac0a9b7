//go:build linux

package speed

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// uncached opens path to be read from the disk rather than the system's cache: its
// pages, written and synced, are dropped from the page cache (posix_fadvise
// POSIX_FADV_DONTNEED, which drops clean pages no one maps).
func uncached(path string) (io.ReaderAt, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}
