//go:build !amd64 || noasm

package kernels

func softCapArgMax512(row *float32, n int, c, scale float32, max *[16]float32, idx *[16]int32) {
	panic("kernels: no AVX-512 on this platform")
}

func expShift512(dst, src *float32, n int, shift, scale float32) float32 {
	panic("kernels: no AVX-512 on this platform")
}
