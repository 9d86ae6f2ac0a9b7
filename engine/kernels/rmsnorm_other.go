//go:build !amd64 || noasm

package kernels

func scaleRow(dst, x, w []float32, s float32) { scaleRowGo(dst, x, w, s) }

func rmsNormRows(dst, x, w []float32, n int, eps float32) bool { return false }
