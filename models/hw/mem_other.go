//go:build !linux && !windows

package hw

import "errors"

func memory() (total, avail int64, err error) {
	return 0, 0, errors.New("RAM detection not implemented on this OS")
}
