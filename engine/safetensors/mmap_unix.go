//go:build unix

package safetensors

import (
	"errors"
	"os"
	"syscall"
)

func mmapFile(f *os.File, size int) ([]byte, func() error, error) {
	if size == 0 {
		return nil, nil, errors.New("empty file")
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
