//go:build !amd64 || noasm

package kernels

const useAVX2 = false

func expShiftAVX2(dst, src *float32, n int, shift, scale float32) float32 {
	panic("kernels: no vector exp on this platform")
}

var gemmKernel = goKernel

func gemmKernels() []*microKernel { return []*microKernel{goKernel} }

func packPanelVector(panel, src []float32, k, base, p0, kc, w int) bool { return false }
