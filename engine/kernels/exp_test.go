package kernels

import (
	"math"
	"testing"
)

// TestExpShift: the vector and scalar exponentials against float64 math, sums included,
// with −∞ inputs (masked attention scores) giving (almost) zero.
func TestExpShift(t *testing.T) {
	var src []float32
	for x := -90.0; x < 89; x += 0.0371 {
		src = append(src, float32(x))
	}
	src = append(src, float32(math.Inf(-1)), 0, 1, -1, 3) // odd tail
	for _, c := range []struct{ shift, scale float32 }{{0, 1}, {2.5, 0.7}, {-1, 1.3}, {89, 1}} {
		dst := make([]float32, len(src))
		sum := ExpShift(dst, src, c.shift, c.scale)
		var want64 float64
		for i, x := range src {
			arg := float64((x - c.shift) * c.scale)
			want := math.Exp(min(max(arg, -87.3365447504), 88.3762626647949))
			want64 += float64(dst[i])
			if math.IsInf(float64(dst[i]), 0) || math.IsNaN(float64(dst[i])) {
				t.Fatalf("exp(%g) = %g, want finite", arg, dst[i])
			}
			if arg < -87 || arg > 88 { // clamped range ends: finite is all that is promised
				continue
			}
			if e := math.Abs(float64(dst[i])-want) / want; e > 1e-6 {
				t.Fatalf("exp(%g) = %g, want %g (rel %.2e)", arg, dst[i], want, e)
			}
			if s := Expf(float32(arg)); math.Abs(float64(s)-want)/want > 1e-6 {
				t.Fatalf("Expf(%g) = %g, want %g", arg, s, want)
			}
		}
		if want64 < 1e37 && math.Abs(float64(sum)-want64)/want64 > 1e-5 { // float32 sums overflow past that
			t.Errorf("sum %g, want %g", sum, want64)
		}
	}
}
