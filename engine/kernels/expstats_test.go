package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArgMax: the first index of the largest value, as the scalar scan, on rows with
// ties, ±0, NaNs (at 0 and elsewhere), −∞ and lengths with and without a vector tail.
func TestArgMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 100, 4096} {
		for trial := range 12 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.IntN(7) - 3) // many ties
			}
			switch trial {
			case 1:
				x[rng.IntN(n)] = nan
			case 2:
				x[0] = nan
			case 3:
				clear(x)
				x[rng.IntN(n)] = float32(math.Copysign(0, -1))
			case 4:
				for i := range x {
					x[i] = -inf
				}
			case 5:
				x[n-1] = inf
			}
			if got, want := ArgMax(x), argMaxGo(x); got != want {
				t.Fatalf("n=%d trial %d: ArgMax = %d, scalar scan %d (%v)", n, trial, got, want, x[:min(n, 20)])
			}
		}
	}
}

// TestExpMoments: the sums against float64 references over the zeroed exponentials,
// and the zeroing itself, on lengths with and without a vector tail.
func TestExpMoments(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{1, 3, 4, 5, 8, 33, 4096} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 20)
		}
		if n > 1 {
			x[rng.IntN(n-1)] = -1e6 // its exponential clamps to ~1e-38: a zero
			x[n-1] = 50             // (and it is not the maximum)
		}
		const inv = 1 / 0.7
		m := float64(x[ArgMax(x)])
		e := make([]float32, n)
		ExpShift(e, x, float32(m), inv)
		ref := append([]float32(nil), e...)
		wantS, wantZ := expMomentsGo(ref, x, m, inv, 1e-37)
		s, z := ExpMoments(e, x, m, inv, 1e-37)
		for j := range e {
			if e[j] != ref[j] {
				t.Fatalf("n=%d: e[%d] = %g, want %g", n, j, e[j], ref[j])
			}
			if x[j] == -1e6 && e[j] != 0 {
				t.Fatalf("n=%d: the clamped exponential e[%d] = %g was kept", n, j, e[j])
			}
		}
		if math.Abs(s-wantS) > 1e-14*wantS || math.Abs(z-wantZ) > 1e-14*(math.Abs(wantZ)+wantS) {
			t.Fatalf("n=%d: sums %g, %g; want %g, %g", n, s, z, wantS, wantZ)
		}
		if s < 1 { // the maximum's own exponential is 1
			t.Fatalf("n=%d: sum %g < 1", n, s)
		}
	}
}
