//go:build !noasm

package kernels

import "golang.org/x/sys/cpu"

var useAVX512 = cpu.X86.HasAVX512F

// kernel14x32AVX512 is the AVX-512 micro-kernel (gemm_amd64.s): a 14×32 tile held in
// 28 zmm accumulators, two 16-float loads of b and fourteen broadcasts of a per depth
// step.
//
//go:noescape
func kernel14x32AVX512(kc int, a, b, c *float32, ldc int, accumulate bool)

var avx512Kernel = &microKernel{name: "avx512-14x32", mr: 14, nr: 32, fn: kernel14x32AVX512}

// kernel6x16AVX2 is the AVX2+FMA micro-kernel (gemm_amd64.s): a 6×16 tile in 12 ymm
// accumulators.
//
//go:noescape
func kernel6x16AVX2(kc int, a, b, c *float32, ldc int, accumulate bool)

var avx2Kernel = &microKernel{name: "avx2-6x16", mr: 6, nr: 16, fn: kernel6x16AVX2}

// gemmKernel is MulNT's micro-kernel on this CPU.
var gemmKernel = func() *microKernel {
	switch {
	case useAVX512:
		return avx512Kernel
	case useAVX2:
		return avx2Kernel
	}
	return goKernel
}()

// gemmKernels lists every MulNT path this CPU can run, for the tests and benchmarks.
func gemmKernels() []*microKernel {
	ks := []*microKernel{goKernel}
	if useAVX2 {
		ks = append(ks, avx2Kernel)
	}
	if useAVX512 {
		ks = append(ks, avx512Kernel)
	}
	return ks
}

// transpose16 transposes blocks 16×16 blocks: dst[(16·blk+p)·ldd + r] = src[r·lds +
// 16·blk + p] for p < 16, r < lanes ≤ 16. It reads 16 rows of src whatever lanes is.
//
//go:noescape
func transpose16(dst *float32, ldd int, src *float32, lds int, blocks int, lanes int)

// transpose8AVX2 is transpose16 for AVX2 (8×8 blocks; mask selects the stored lanes).
//
//go:noescape
func transpose8AVX2(dst *float32, ldd int, src *float32, lds int, blocks int, mask *int32)

// laneMasks[l] selects the first l of eight lanes (VMASKMOVPS masks).
var laneMasks = func() (m [9][8]int32) {
	for l := range m {
		for i := range l {
			m[l][i] = -1
		}
	}
	return
}()

// packPanelVector packs one full panel (w rows from src row base, depth [p0, p0+kc))
// by 16×16 (AVX-512) or 8×8 (AVX2) transposes, and reports whether it did: it needs
// w ≤ the block or a multiple of it, a depth of at least one block, and a block's rows
// of src from base for each group of rows. The depth's last kc mod block values are
// copied in Go.
func packPanelVector(panel, src []float32, k, base, p0, kc, w int) bool {
	bs := 16
	if !useAVX512 {
		bs = 8
		if !useAVX2 {
			return false
		}
	}
	if kc < bs || (w > bs && w%bs != 0) {
		return false
	}
	for g := 0; g < w; g += bs {
		if (base+g+bs)*k > len(src) {
			return false
		}
	}
	blocks := kc / bs
	for g := 0; g < w; g += bs {
		if bs == 16 {
			transpose16(&panel[g], w, &src[(base+g)*k+p0], k, blocks, min(16, w-g))
		} else {
			transpose8AVX2(&panel[g], w, &src[(base+g)*k+p0], k, blocks, &laneMasks[min(8, w-g)][0])
		}
	}
	for r := range w {
		s := src[(base+r)*k+p0+bs*blocks : (base+r)*k+p0+kc]
		for p, v := range s {
			panel[(bs*blocks+p)*w+r] = v
		}
	}
	return true
}
