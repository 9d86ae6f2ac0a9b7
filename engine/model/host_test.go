package model

import (
	"math"
	"testing"
)

// TestGeluMul: the vector GeGLU product against gelu_tanh in float64.
func TestGeluMul(t *testing.T) {
	var gate, up []float32
	for x := -30.0; x < 30; x += 0.0117 {
		gate, up = append(gate, float32(x)), append(up, float32(1+x/100))
	}
	dst := make([]float32, len(gate))
	geluMulInto(dst, gate, up, make([]float32, len(gate)))
	for j, x := range gate {
		v := float64(x)
		want := 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))) * float64(up[j])
		if d := math.Abs(float64(dst[j]) - want); d > 1e-6*math.Max(1, math.Abs(want)) {
			t.Fatalf("gelu(%g)·%g = %g, want %g", x, up[j], dst[j], want)
		}
	}
}
