//go:build !windows

package server

import (
	"errors"
	"syscall"
)

// addrInUse reports whether err is the system's "address already in use".
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE)
}
