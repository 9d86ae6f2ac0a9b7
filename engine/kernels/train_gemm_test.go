package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var layoutNames = [...]string{NN: "NN", NT: "NT", TN: "TN"}

// naiveGemm is the float64 reference of Gemm: out0 (nil: zero) plus op(a)·op(b).
func naiveGemm(out0, a, b []float32, m, n, k int, layout Layout) []float64 {
	at := func(i, p int) float32 {
		if layout == TN {
			return a[p*m+i]
		}
		return a[i*k+p]
	}
	bt := func(p, j int) float32 {
		if layout == NT {
			return b[j*k+p]
		}
		return b[p*n+j]
	}
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			if out0 != nil {
				s = float64(out0[i*n+j])
			}
			for p := range k {
				s += float64(at(i, p)) * float64(bt(p, j))
			}
			out[i*n+j] = s
		}
	}
	return out
}

// TestGemm runs every micro-kernel this CPU has on the three layouts, overwriting
// (out starts as garbage) and accumulating (out's values are added to), on shapes
// that are not multiples of the micro-tiles or cache blocks — edge tiles, depths past
// one KC block, products split across the pool by columns and by rows, and ones of
// fewer rows than a tile — against the float64 product; on an AVX-512 CPU again with
// the portable packing.
func TestGemm(t *testing.T) {
	defer func(v bool) { useAVX512 = v }(useAVX512)
	for _, vec := range []bool{useAVX512, false} { // with AVX-512: its packing, then Go's
		useAVX512 = vec
		testGemm(t, fmt.Sprintf("vec=%v", vec))
	}
}

func testGemm(t *testing.T, name string) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][3]int{
		{1, 1, 1}, {1, 7, 1}, {7, 1, 33}, {3, 5, 7}, {15, 33, 257}, {16, 67, 130},
		{33, 130, 600}, {113, 31, 513}, {29, 2049 + 32, 5}, {257, 97, 300}, {2, 600, 300},
		{300, 1, 3}, {384, 192, 384},
	}
	for _, kern := range gemmKernels() {
		for _, layout := range []Layout{NN, NT, TN} {
			for _, acc := range []bool{false, true} {
				for _, c := range shapes {
					m, n, k := c[0], c[1], c[2]
					t.Run(fmt.Sprintf("%s/%s/%s/acc=%v/%dx%dx%d", name, kern.name, layoutNames[layout], acc, m, n, k), func(t *testing.T) {
						a, b := randSlice(rng, m*k), randSlice(rng, n*k)
						out := randSlice(rng, m*n)
						var out0 []float32
						if acc {
							out0 = append([]float32(nil), out...)
						}
						want := naiveGemm(out0, a, b, m, n, k, layout)
						gemm(kern, out, a, b, m, n, k, layout, acc)
						checkClose(t, out, want, k+1, 1e-5)
					})
				}
			}
		}
	}
}

// TestGemmNTIsMulNT: in MulNT's layout, Gemm is MulNT bit for bit (same panels, same
// kernel, same order of the sums), so the tape's forward products do not change.
func TestGemmNTIsMulNT(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range [][3]int{{15, 33, 257}, {384, 192, 384}, {113, 4096, 64}} {
		m, n, k := c[0], c[1], c[2]
		a, b := randSlice(rng, m*k), randSlice(rng, n*k)
		want, got := make([]float32, m*n), make([]float32, m*n)
		MulNT(want, a, b, m, n, k)
		Gemm(got, a, b, m, n, k, NT, false)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%v: out[%d] = %g, MulNT %g", c, i, got[i], want[i])
			}
		}
	}
}

// TestGemmZeroDepth: with k = 0 the product is zero — out cleared, or left as it was
// when accumulating.
func TestGemmZeroDepth(t *testing.T) {
	out := []float32{1, 2, 3, 4}
	Gemm(out, nil, nil, 2, 2, 0, TN, true)
	if out[0] != 1 || out[3] != 4 {
		t.Fatalf("accumulating an empty product changed out: %v", out)
	}
	Gemm(out, nil, nil, 2, 2, 0, NN, false)
	for _, v := range out {
		if v != 0 {
			t.Fatalf("an empty product left out = %v", out)
		}
	}
}

// BenchmarkGemm compares the layouts on the tape's shapes at Darkroom Mini 2's size:
// a Linear's backward (dx NN, dw TN), the LM head's ([rows, V] against E) and a KV
// head's attention backward (dV = Pᵀ·dO, TN).
func BenchmarkGemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name    string
		m, n, k int
	}{{"linear", 384, 192, 384}, {"head", 384, 4096, 192}, {"headT", 4096, 192, 384}, {"attention", 384, 32, 1152}} {
		for _, layout := range []Layout{NN, NT, TN} {
			a, x := randSlice(rng, c.m*c.k), randSlice(rng, c.n*c.k)
			out := make([]float32, c.m*c.n)
			b.Run(c.name+"/"+layoutNames[layout], func(b *testing.B) {
				for range b.N {
					Gemm(out, a, x, c.m, c.n, c.k, layout, true)
				}
				b.ReportMetric(2*float64(c.m*c.n*c.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
