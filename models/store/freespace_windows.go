//go:build windows

package store

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// FreeSpace returns the bytes available to this user on the volume holding path
// (the nearest existing parent is used when path does not exist yet).
func FreeSpace(path string) (int64, error) {
	p := existingParent(path)
	u, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return 0, fmt.Errorf("free space of %s: %w", p, err)
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(u, &avail, &total, &free); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", p, err)
	}
	return int64(avail), nil
}
