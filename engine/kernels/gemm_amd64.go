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

// packPanelVector packs one full panel (w rows from src row base, depth [p0, p0+kc))
// with transpose16 and reports whether it did: it needs AVX-512, w ≤ 16 or a multiple of 16, and
// 16 rows of src from base for each 16-row group. The depth's last kc mod 16 values
// are copied in Go.
func packPanelVector(panel, src []float32, k, base, p0, kc, w int) bool {
	if !useAVX512 || kc < 16 || (w > 16 && w%16 != 0) {
		return false
	}
	for g := 0; g < w; g += 16 {
		if (base+g+16)*k > len(src) {
			return false
		}
	}
	blocks := kc / 16
	for g := 0; g < w; g += 16 {
		transpose16(&panel[g], w, &src[(base+g)*k+p0], k, blocks, min(16, w-g))
	}
	for r := range w {
		s := src[(base+r)*k+p0+16*blocks : (base+r)*k+p0+kc]
		for p, v := range s {
			panel[(16*blocks+p)*w+r] = v
		}
	}
	return true
}
