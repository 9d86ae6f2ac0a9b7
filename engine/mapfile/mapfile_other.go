//go:build !unix && !windows

package mapfile

import (
	"errors"
	"os"
)

// mapFile does not map here: see the package comment (Windows).
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	return nil, nil, errors.ErrUnsupported
}
