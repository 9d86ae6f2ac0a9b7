package server

import (
	"errors"

	"golang.org/x/sys/windows"
)

// addrInUse reports whether err is Winsock's "address already in use": on
// Windows net returns WSAEADDRINUSE, which syscall.EADDRINUSE does not match.
func addrInUse(err error) bool {
	return errors.Is(err, windows.WSAEADDRINUSE)
}
