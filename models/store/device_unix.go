//go:build unix

package store

import (
	"golang.org/x/sys/unix"
)

// sameDevice reports whether a and b (or their nearest existing parents) are on
// the same file system, where a move is a rename and needs no extra space.
func sameDevice(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(existingParent(a), &sa) != nil || unix.Stat(existingParent(b), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}
