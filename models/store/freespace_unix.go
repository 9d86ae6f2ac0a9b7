//go:build unix

package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FreeSpace returns the bytes available to this user on the file system holding
// path (the nearest existing parent is used when path does not exist yet).
func FreeSpace(path string) (int64, error) {
	p := existingParent(path)
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", p, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
