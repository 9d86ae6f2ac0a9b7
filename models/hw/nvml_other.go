//go:build !(linux && cgo)

package hw

import "errors"

func nvmlGPUs() ([]GPU, error) {
	return nil, errors.New("not available in this build (needs Linux and cgo)")
}
