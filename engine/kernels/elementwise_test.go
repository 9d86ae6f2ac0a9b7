package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddScale: Add and Scale give each value the scalar sum and product bit for bit,
// on lengths with and without a vector part and a tail.
func TestAddScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 64, 100} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()*1e3), float32(rng.NormFloat64())
		}
		s := float32(rng.NormFloat64())
		sum, prod := append([]float32(nil), x...), append([]float32(nil), x...)
		Add(sum, y)
		Scale(prod, s)
		for i := range x {
			if math.Float32bits(sum[i]) != math.Float32bits(x[i]+y[i]) {
				t.Fatalf("n=%d: Add [%d] = %g, want %g", n, i, sum[i], x[i]+y[i])
			}
			if math.Float32bits(prod[i]) != math.Float32bits(x[i]*s) {
				t.Fatalf("n=%d: Scale [%d] = %g, want %g", n, i, prod[i], x[i]*s)
			}
		}
	}
}
