//go:build !linux && !windows

package sysmem

import "errors"

func read() (Memory, error) {
	return Memory{}, errors.New("reading the RAM is not implemented on this system")
}
