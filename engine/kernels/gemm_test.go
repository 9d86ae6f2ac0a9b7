package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// naiveNT is the float64 reference of MulNT.
func naiveNT(a, b []float32, m, n, k int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += float64(a[i*k+p]) * float64(b[j*k+p])
			}
			out[i*n+j] = s
		}
	}
	return out
}

// checkClose fails unless got matches the float64 reference within float32 rounding of
// a k-term sum of products of unit-scale values.
func checkClose(t *testing.T, got []float32, want []float64, k int, tol float64) {
	t.Helper()
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); d > tol*math.Sqrt(float64(k)) || math.IsNaN(float64(got[i])) {
			t.Fatalf("out[%d] = %g, want %g", i, got[i], w)
		}
	}
}

// TestMulNT runs every micro-kernel this CPU has (AVX-512, AVX2, portable) on shapes
// that are not multiples of the micro-tiles (14×32, 6×16, 4×4) or of the cache blocks
// (MC 112, KC 256, NC 2048), so every edge tile and the depth accumulation are
// exercised, the larger shapes split across the pool by columns and by rows, and the
// ones of fewer than four rows as dot products; out starts as garbage and must be
// overwritten.
func TestMulNT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{
		{1, 1, 1}, {1, 7, 1}, {7, 1, 33}, {2, 4, 8}, {3, 5, 7}, {7, 9, 17}, {15, 33, 257},
		{16, 67, 130}, {33, 130, 600}, {64, 64, 1030}, {256, 40, 64}, {113, 31, 513},
		{29, 2049 + 32, 5}, {257, 97, 300}, {1, 300, 257}, {300, 1, 3}, {2, 600, 300},
	}
	for _, kern := range gemmKernels() {
		for _, c := range shapes {
			m, n, k := c[0], c[1], c[2]
			t.Run(fmt.Sprintf("%s/%dx%dx%d", kern.name, m, n, k), func(t *testing.T) {
				a, b := randSlice(rng, m*k), randSlice(rng, n*k)
				out := randSlice(rng, m*n)
				mulNT(kern, out, a, b, m, n, k)
				checkClose(t, out, naiveNT(a, b, m, n, k), k, 1e-5)
			})
		}
	}
}

// TestMulNTAVX2Packing: the AVX2 machines' path, AVX2 micro-kernel and 8×8 transposes,
// forced on this CPU when it has AVX-512 too.
func TestMulNTAVX2Packing(t *testing.T) {
	var avx2 *microKernel
	for _, k := range gemmKernels() {
		if k.name == "avx2-6x16" {
			avx2 = k
		}
	}
	if avx2 == nil {
		t.Skip("no AVX2 here")
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	useAVX512 = false
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range [][3]int{{6, 16, 8}, {7, 17, 9}, {40, 70, 300}, {13, 33, 600}, {256, 64, 64}} {
		m, n, k := c[0], c[1], c[2]
		a, b := randSlice(rng, m*k), randSlice(rng, n*k)
		out := randSlice(rng, m*n)
		mulNT(avx2, out, a, b, m, n, k)
		checkClose(t, out, naiveNT(a, b, m, n, k), k, 1e-5)
	}
}

// TestMulNTZeroDepth: k = 0 leaves a zero product, not what out held.
func TestMulNTZeroDepth(t *testing.T) {
	for _, kern := range gemmKernels() {
		out := []float32{1, 2, 3, 4, 5, 6}
		mulNT(kern, out, nil, nil, 2, 3, 0)
		for i, v := range out {
			if v != 0 {
				t.Fatalf("%s: out[%d] = %g, want 0", kern.name, i, v)
			}
		}
	}
}

// TestMulNTConcurrent: products started from several goroutines at once (the pool busy)
// all finish with the right result.
func TestMulNTConcurrent(t *testing.T) {
	const m, n, k = 90, 70, 300 // large enough to be split across the pool
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := randSlice(rng, m*k), randSlice(rng, n*k)
	want := naiveNT(a, b, m, n, k)
	var wg sync.WaitGroup
	outs := make([][]float32, 8)
	for g := range outs {
		outs[g] = make([]float32, m*n)
		wg.Go(func() {
			for range 5 {
				MulNT(outs[g], a, b, m, n, k)
			}
		})
	}
	wg.Wait()
	for _, out := range outs {
		checkClose(t, out, want, k, 1e-5)
	}
}

// TestMulNTSplitPackError: an error from packing b's panels (a Matrix whose weights
// cannot be decoded) ends the product and is what mulNTSplit returns, whether the part
// that met it ran alone or beside others in the pool — here the part holding b's last
// columns, at its second depth block.
func TestMulNTSplitPackError(t *testing.T) {
	errDecode := errors.New("decode failed")
	for _, c := range [][3]int{{8, 8, 300}, {64, 256, 300}, {256, 8, 300}} { // one part; split by columns; by rows
		m, n, k := c[0], c[1], c[2]
		out, a := make([]float32, m*n), make([]float32, m*k)
		packB := func(_ []float32, _ *packBuf, j0, cols, p0, _ int) error {
			if p0 > 0 && j0+cols == n {
				return fmt.Errorf("columns [%d, %d): %w", j0, j0+cols, errDecode)
			}
			return nil
		}
		if err := mulNTSplit(gemmKernel, out, a, m, n, k, packB); !errors.Is(err, errDecode) {
			t.Errorf("%v: mulNTSplit returned %v, want the packing's error", c, err)
		}
	}
}

// benchShapes are the products bench-peers.sh compares with OpenBLAS: the Mini's
// [256,64]×[64,4096], the 26B's expert/attention [256,2816]×[2816,704], a square 2048³
// and the Mini's MLP-sized [256,512]×[512,512]; as [m, n, k].
var benchShapes = [][3]int{{256, 4096, 64}, {256, 704, 2816}, {2048, 2048, 2048}, {256, 512, 512}}

func BenchmarkMulNT(b *testing.B) {
	for _, kern := range gemmKernels() {
		for _, c := range benchShapes {
			m, n, k := c[0], c[1], c[2]
			b.Run(fmt.Sprintf("%s/%dx%dx%d", kern.name, m, k, n), func(b *testing.B) {
				if kern == goKernel && m*n*k > 1<<28 {
					b.Skip("portable kernel: too slow for this shape")
				}
				rng := rand.New(rand.NewPCG(1, 1))
				x, y, out := randSlice(rng, m*k), randSlice(rng, n*k), make([]float32, m*n)
				mulNT(kern, out, x, y, m, n, k)
				b.ResetTimer()
				for b.Loop() {
					mulNT(kern, out, x, y, m, n, k)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMicroKernel: each micro-kernel alone on L1-resident panels (kc = 256), the
// ceiling the packed product approaches.
func BenchmarkMicroKernel(b *testing.B) {
	for _, kern := range gemmKernels() {
		b.Run(kern.name, func(b *testing.B) {
			const kc = 256
			a := make([]float32, kern.mr*kc)
			bb := make([]float32, kern.nr*kc)
			c := make([]float32, kern.mr*kern.nr)
			for b.Loop() {
				kern.fn(kc, &a[0], &bb[0], &c[0], kern.nr, true)
			}
			b.ReportMetric(2*float64(kern.mr*kern.nr*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkPeers is packaging/bench-peers.sh's side of the comparison with OpenBLAS:
// MulNT as callers get it (this CPU's micro-kernel, the worker pool) at the shapes the
// script gives numpy, named [m,k]×[k,n] as m×k×n.
func BenchmarkPeers(b *testing.B) {
	for _, c := range benchShapes {
		m, n, k := c[0], c[1], c[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			x, y, out := randSlice(rng, m*k), randSlice(rng, n*k), make([]float32, m*n)
			MulNT(out, x, y, m, n, k)
			for b.Loop() {
				MulNT(out, x, y, m, n, k)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
