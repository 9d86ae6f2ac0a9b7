//go:build !linux && !windows

package speed

import (
	"errors"
	"io"
)

// uncached is not written for this system: its disk is not measured, and a model
// that runs from the disk has no speed estimate beyond its in-memory one.
func uncached(string) (io.ReaderAt, func(), error) {
	return nil, nil, errors.New("reading past the system's cache is not implemented on this system")
}
