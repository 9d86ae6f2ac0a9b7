package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRMSNorm holds RMSNorm to a float64 reference on odd row widths (vector part,
// tail, and rows shorter than a vector), with and without a scale, in place and not,
// and the vector scaling to scaleRowGo bit for bit.
func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 3, 7, 8, 9, 31, 32, 33, 64, 100, 257, 2816} {
		for _, withW := range []bool{false, true} {
			const rows = 3
			x := make([]float32, rows*n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 3)
			}
			var w []float32
			if withW {
				w = make([]float32, n)
				for i := range w {
					w[i] = float32(rng.NormFloat64())
				}
			}
			const eps = 1e-6
			got := make([]float32, len(x))
			RMSNorm(got, x, w, n, eps)
			for r := range rows {
				row := x[r*n : (r+1)*n]
				var ms float64
				for _, v := range row {
					ms += float64(v) * float64(v)
				}
				inv := 1 / math.Sqrt(ms/float64(n)+eps)
				for j, v := range row {
					want := float64(v) * inv
					if withW {
						want *= float64(w[j])
					}
					if d := math.Abs(float64(got[r*n+j]) - want); d > 1e-5*(1+math.Abs(want)) {
						t.Fatalf("n=%d w=%v row %d [%d]: got %g, want %g", n, withW, r, j, got[r*n+j], want)
					}
				}
				// The scaling is the scalar formula's rounding, whichever path ran.
				ref := make([]float32, n)
				sq := dot(row, row)
				scaleRowGo(ref, row, w, float32(1/math.Sqrt(float64(sq/float32(n)+eps))))
				for j := range ref {
					if ref[j] != got[r*n+j] {
						t.Fatalf("n=%d w=%v row %d [%d]: %g, scaleRowGo %g", n, withW, r, j, got[r*n+j], ref[j])
					}
				}
			}
			inPlace := append([]float32(nil), x...)
			RMSNorm(inPlace, inPlace, w, n, eps)
			for i := range got {
				if inPlace[i] != got[i] {
					t.Fatalf("n=%d w=%v: in place [%d] = %g, want %g", n, withW, i, inPlace[i], got[i])
				}
			}
		}
	}
}

func TestRMSNormZeroRow(t *testing.T) {
	x := make([]float32, 16)
	RMSNorm(x, x, nil, 16, 1e-6)
	for i, v := range x {
		if v != 0 || math.IsNaN(float64(v)) {
			t.Fatalf("[%d] = %g, want 0", i, v)
		}
	}
}

func TestRMSNormShapeMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a length that is not a multiple of the row width")
		}
	}()
	RMSNorm(make([]float32, 10), make([]float32, 10), nil, 4, 1e-6)
}

// TestRMSNormRowsMatchRowLoop: the whole-matrix vector call RMSNorm makes for widths
// that are multiples of 32 gives each row the bits of the row-by-row loop (dot,
// the float64 reciprocal square root, scaleRow), in place or not, with and without a
// scale, for values whose squares span many binades.
func TestRMSNormRowsMatchRowLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{32, 64, 192, 512} {
		for _, withW := range []bool{false, true} {
			const rows, eps = 37, 1e-6
			x := make([]float32, rows*n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
			}
			clear(x[n : 2*n]) // a zero row
			var w []float32
			if withW {
				w = make([]float32, n)
				for i := range w {
					w[i] = float32(rng.NormFloat64())
				}
			}
			want := make([]float32, len(x))
			for r := 0; r < len(x); r += n {
				row := x[r : r+n]
				ms := dot(row, row)
				scaleRow(want[r:r+n], row, w, float32(1/math.Sqrt(float64(ms/float32(n)+eps))))
			}
			got := make([]float32, len(x))
			ran := rmsNormRows(got, x, w, n, eps)
			if !ran {
				RMSNorm(got, x, w, n, eps)
			}
			inPlace := append([]float32(nil), x...)
			RMSNorm(inPlace, inPlace, w, n, eps)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d w=%v vector call %v: [%d] = %g (in place %g), the row loop %g", n, withW, ran, i, got[i], inPlace[i], want[i])
				}
			}
		}
	}
}
