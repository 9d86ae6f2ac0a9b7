//go:build !amd64 || noasm

package kernels

func expMomentsAVX2(e, x *float32, n int, m, inv float64, floor float32) (sum, moment float64) {
	panic("kernels: no vector moments on this platform")
}
