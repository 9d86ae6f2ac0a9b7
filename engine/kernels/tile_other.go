//go:build !amd64 || noasm

package kernels

import "unsafe"

func tile2x4(a0, a1, b0, b1, b2, b3 *float32, kv int, sums *[8]float32) {
	tile2x4Go(unsafe.Slice(a0, kv), unsafe.Slice(a1, kv), unsafe.Slice(b0, kv), unsafe.Slice(b1, kv),
		unsafe.Slice(b2, kv), unsafe.Slice(b3, kv), kv, sums)
}

const useAVX2 = false

func expShiftAVX2(dst, src *float32, n int, shift, scale float32) float32 {
	panic("gemm: no vector exp on this platform")
}

var gemmKernel = goKernel

func gemmKernels() []*microKernel { return []*microKernel{goKernel} }

func packPanelVector(panel, src []float32, k, base, p0, kc, w int) bool { return false }
