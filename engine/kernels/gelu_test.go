package kernels

import (
	"math"
	"testing"
)

// TestGeluMul: GeluMul against gelu_tanh in float64 over [−30, 30), and value for value
// against the scalar formula (geluMulGo) on lengths with and without a vector tail,
// also written in place over gate and over up.
func TestGeluMul(t *testing.T) {
	var gate, up []float32
	for x := -30.0; x < 30; x += 0.0117 {
		gate, up = append(gate, float32(x)), append(up, float32(1+x/100))
	}
	tmp := make([]float32, len(gate))
	dst := make([]float32, len(gate))
	GeluMul(dst, gate, up, tmp)
	for j, x := range gate {
		v := float64(x)
		want := 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))) * float64(up[j])
		if d := math.Abs(float64(dst[j]) - want); d > 1e-6*math.Max(1, math.Abs(want)) {
			t.Fatalf("gelu(%g)·%g = %g, want %g", x, up[j], dst[j], want)
		}
	}
	for _, n := range []int{1, 7, 8, 9, 31, 64, 100, len(gate)} {
		g, u := gate[len(gate)-n:], up[:n]
		ref := make([]float32, n)
		geluMulGo(ref, g, u, make([]float32, n))
		got := make([]float32, n)
		GeluMul(got, g, u, tmp)
		inGate := append([]float32(nil), g...)
		GeluMul(inGate, inGate, u, tmp)
		inUp := append([]float32(nil), u...)
		GeluMul(inUp, g, inUp, tmp)
		for j := range ref {
			if got[j] != ref[j] || inGate[j] != ref[j] || inUp[j] != ref[j] {
				t.Fatalf("n=%d [%d]: got %g (over gate %g, over up %g), scalar %g", n, j, got[j], inGate[j], inUp[j], ref[j])
			}
		}
	}
}
