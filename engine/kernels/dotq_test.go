package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotInt4Perm: the fused int4 g32 dot is bit for bit dot on the decoded values (what
// the host model's twin test relies on), for symmetric and affine codes, group counts 1
// to 257, codes of 8 (zero values) and negative scales included; and within float32
// rounding of the float64 product.
func TestDotInt4Perm(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: the products decode int4 rows")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, groups := range []int{1, 7, 33, 257} {
		for _, affine := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/affine=%v", groups, affine), func(t *testing.T) {
				k := 32 * groups
				x := randWeights(rng, k)
				codes := make([]byte, k/2)
				for i := range codes {
					codes[i] = byte(rng.Uint32())
				}
				codes[0] = 0x88 // two zero values of a symmetric group
				scales, mins := randWeights(rng, groups), make([]float32, groups)
				off := int32(8)
				if affine {
					off, mins = 0, randWeights(rng, groups)
				}
				values := make([]float32, k)
				decodeInt4Runs(values, codes, scales, mins, off)
				xp := make([]float32, k)
				permuteInt4X(xp, x)
				got, ok := dotInt4Perm(xp, codes, scales, mins, off, affine)
				if !ok {
					t.Fatal("dotInt4Perm refused AVX2 input")
				}
				if want := dot(values, x); got != want {
					t.Fatalf("dotInt4Perm = %g, dot of the decoded values %g", got, want)
				}
				var s, abs float64
				for i, v := range values {
					s += float64(v) * float64(x[i])
					abs += math.Abs(float64(v) * float64(x[i]))
				}
				if math.Abs(float64(got)-s) > 2e-6*abs {
					t.Fatalf("dotInt4Perm = %g, float64 %g (Σ|terms| %g)", got, s, abs)
				}
			})
		}
	}
}

// TestDotInt8: the fused int8 dot is bit for bit dot on the decoded values, on lengths
// with and without a tail past the vector code's 32, and within float32 rounding of the
// float64 product; under noasm it is the Go code's.
func TestDotInt8(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, k := range []int{1, 7, 33, 257, 4097} {
		x := randWeights(rng, k)
		codes := make([]byte, k)
		for i := range codes {
			codes[i] = byte(rng.Uint32())
		}
		codes[0] = 0x80 // −128, the one code the quantizer never writes
		const s = -0.0173
		values, tail := make([]float32, k), make([]float32, k)
		decodeInt8(values, codes, s)
		got := dotInt8(x, codes, s, tail)
		if want := dot(values, x); got != want {
			t.Fatalf("k=%d: dotInt8 = %g, dot of the decoded values %g", k, got, want)
		}
		var sum, abs float64
		for i, v := range values {
			sum += float64(v) * float64(x[i])
			abs += math.Abs(float64(v) * float64(x[i]))
		}
		if math.Abs(float64(got)-sum) > 2e-6*abs {
			t.Fatalf("k=%d: dotInt8 = %g, float64 %g (Σ|terms| %g)", k, got, sum, abs)
		}
	}
}
