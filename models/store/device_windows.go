//go:build windows

package store

import (
	"path/filepath"
	"strings"
)

// sameDevice reports whether a and b are on the same volume.
func sameDevice(a, b string) bool {
	return strings.EqualFold(filepath.VolumeName(a), filepath.VolumeName(b))
}
