//go:build !unix && !windows

package mapfile

import (
	"errors"
	"os"
)

// mapFile does not map here (a system with neither mmap nor Windows' file mappings).
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	return nil, nil, errors.ErrUnsupported
}
