//go:build !unix

package safetensors

import (
	"errors"
	"os"
)

func mmapFile(f *os.File, size int) ([]byte, func() error, error) {
	return nil, nil, errors.New("mmap not available")
}
