package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
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

func TestMulNT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range [][3]int{{1, 1, 1}, {2, 4, 8}, {3, 5, 7}, {7, 9, 17}, {16, 67, 130}, {33, 130, 600}, {64, 64, 1030}, {256, 40, 64}} {
		m, n, k := c[0], c[1], c[2]
		t.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(t *testing.T) {
			a, b := randSlice(rng, m*k), randSlice(rng, n*k)
			want := naiveNT(a, b, m, n, k)
			out := randSlice(rng, m*n) // overwritten
			MulNT(out, a, b, m, n, k)
			for i, w := range want {
				if d := math.Abs(float64(out[i]) - w); d > 1e-4*math.Sqrt(float64(k)) {
					t.Fatalf("out[%d] = %g, want %g", i, out[i], w)
				}
			}
		})
	}
}

// TestTileKernels checks the vector tile (assembly where the CPU has it) against the
// portable one, lane by lane.
func TestTileKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kv := range []int{8, 16, 128, 512} {
		s := make([][]float32, 6)
		for i := range s {
			s[i] = randSlice(rng, kv)
		}
		var got, want [8]float32
		tile2x4(&s[0][0], &s[1][0], &s[2][0], &s[3][0], &s[4][0], &s[5][0], kv, &got)
		tile2x4Go(s[0], s[1], s[2], s[3], s[4], s[5], kv, &want)
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*math.Sqrt(float64(kv)) {
				t.Fatalf("kv=%d lane %d: %g, want %g", kv, i, got[i], want[i])
			}
		}
	}
	_ = unsafe.Sizeof(0)
}

func BenchmarkMulNT(b *testing.B) {
	for _, c := range [][3]int{{256, 4096, 128}, {256, 128, 4096}, {256, 256, 128}} {
		m, n, k := c[0], c[1], c[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			x, y, out := randSlice(rng, m*k), randSlice(rng, n*k), make([]float32, m*n)
			start := time.Now()
			for range b.N {
				MulNT(out, x, y, m, n, k)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/time.Since(start).Seconds()/1e9, "GFLOP/s")
		})
	}
}
