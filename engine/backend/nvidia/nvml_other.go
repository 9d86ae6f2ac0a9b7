//go:build !(linux && cgo)

package nvidia

import "errors"

// NVML needs Linux and cgo (go-nvml dlopens the driver's library).
func NVML() ([]GPU, error) {
	return nil, errors.New("not available in this build (needs Linux and cgo)")
}
