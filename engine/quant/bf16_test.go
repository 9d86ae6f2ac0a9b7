package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestRoundBF16: the result is the nearest BFloat16 (checked against both neighbours
// in float64), ties go to the even mantissa, and NaN stays NaN.
func TestRoundBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 100000; i++ {
		x := math.Float32frombits(r.Uint32() & 0xfeffffff) // finite: exponent < 255
		got := RoundBF16(x)
		down := bfloat16.BFloat16(math.Float32bits(x) >> 16) // truncation: toward zero
		up := down + 1
		dd := math.Abs(float64(x) - float64(down.Float32()))
		du := math.Abs(float64(x) - float64(up.Float32()))
		want := down
		if du < dd || (du == dd && down&1 == 1) {
			want = up
		}
		if got != want {
			t.Fatalf("RoundBF16(%v = %#08x) = %#04x, want %#04x", x, math.Float32bits(x), got, want)
		}
	}
	for _, c := range []struct {
		bits uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // just above the tie
		{0xbf818000, 0xbf82}, // negative tie
	} {
		if got := RoundBF16(math.Float32frombits(c.bits)); uint16(got) != c.want {
			t.Errorf("RoundBF16(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
	if v := RoundBF16(float32(math.NaN())).Float32(); !math.IsNaN(float64(v)) {
		t.Errorf("NaN → %v", v)
	}
}

// realisticWeight is a heavy-tailed expert-like weight: N(0, 0.02²) with a Student-t
// (3 degrees of freedom) share, as trained LLM weights have.
func realisticWeight(seed uint64, rows, cols int) ([]float32, *tensors.Tensor) {
	r := rand.New(rand.NewPCG(seed, 7))
	w := make([]float32, rows*cols)
	for i := range w {
		v := r.NormFloat64()
		if r.IntN(10) == 0 {
			chi := (r.NormFloat64()*r.NormFloat64() + r.NormFloat64()*r.NormFloat64() + r.NormFloat64()*r.NormFloat64()) / 3
			v /= math.Sqrt(max(chi, 1e-3))
		}
		w[i] = float32(0.02 * v)
	}
	return w, tensors.FromFlatDataAndDimensions(w, rows, cols)
}

func relRMS(t *testing.T, w []float32, back *tensors.Tensor) float64 {
	t.Helper()
	d := values(t, back)
	var se, sw float64
	for i := range w {
		e := float64(d[i] - w[i])
		se += e * e
		sw += float64(w[i]) * float64(w[i])
	}
	return math.Sqrt(se / sw)
}

// TestBF16ScaleError measures what BF16 int4 scales cost on a realistic tensor: the
// relative RMS error against the Float32-scale int4 of the same weights, both for
// Darkroom's way (q chosen against the rounded scale) and the naive one (Float32-scale
// codes with their scales rounded afterwards). It also checks the size: 4.5 bits per
// weight instead of 5.
func TestBF16ScaleError(t *testing.T) {
	const rows, cols = 256, 2816
	w, wt := realisticWeight(9, rows, cols)
	errOf := func(s Spec) float64 {
		qw, qs, err := Quantize(wt, s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Dequantize(qw, qs, s, []int{rows, cols})
		if err != nil {
			t.Fatal(err)
		}
		return relRMS(t, w, back)
	}
	f32, bf := errOf(Int4F32), errOf(Int4)

	// Naive: the f32 codes with bf16-rounded scales.
	qw, qs, _ := Quantize(wt, Int4F32)
	sc := values(t, qs)
	for i := range sc {
		sc[i] = RoundBF16(sc[i]).Float32()
	}
	back, err := Dequantize(qw, tensors.FromFlatDataAndDimensions(sc, qs.Shape().Dimensions...), Int4F32, []int{rows, cols})
	if err != nil {
		t.Fatal(err)
	}
	naive := relRMS(t, w, back)
	t.Logf("int4 g32 rel. RMS error on a %dx%d heavy-tailed tensor: f32 scales %.5f, bf16 scales %.5f (%+.2f%%), naive bf16 rounding %.5f (%+.2f%%)",
		rows, cols, f32, bf, 100*(bf/f32-1), naive, 100*(naive/f32-1))
	if bf > f32*1.01 {
		t.Errorf("bf16 scales: rel. RMS %.5f, more than 1%% above f32 scales' %.5f", bf, f32)
	}
	if e8f, e8b := errOf(Int8), errOf(Spec{Bits: 8, BF16Scales: true}); e8b > e8f*1.01 {
		t.Errorf("int8 bf16 scales: rel. RMS %.5f vs %.5f", e8b, e8f)
	}

	shape := []int{128, 1408, 2816}
	n := float64(128 * 1408 * 2816)
	if b := float64(Int4.Bytes(shape)) * 8 / n; b != 4.5 {
		t.Errorf("int4 bf16: %.3f bits a weight, want 4.5", b)
	}
	if b := float64(Int4F32.Bytes(shape)) * 8 / n; b != 5 {
		t.Errorf("int4 f32: %.3f bits a weight, want 5", b)
	}
	if b := float64(Int4Affine.Bytes(shape)) * 8 / n; b != 6 {
		t.Errorf("affine int4 f32: %.3f bits a weight, want 6", b)
	}
	if b := float64(Spec{Bits: 4, GroupSize: 32, Format: Affine, BF16Scales: true}.Bytes(shape)) * 8 / n; b != 5 {
		t.Errorf("affine int4 bf16: %.3f bits a weight, want 5", b)
	}
}

// TestAffineRoundTrip: affine int4 puts every value within half a step (plus the
// minimum's own rounding) of the original, and beats symmetric int4 on a weight
// with an offset.
func TestAffineRoundTrip(t *testing.T) {
	const rows, cols = 32, 128
	w, _ := realisticWeight(11, rows, cols)
	for i := range w {
		w[i] += 0.03 // an offset symmetric int4 wastes levels on
	}
	wt := tensors.FromFlatDataAndDimensions(w, rows, cols)
	for _, s := range []Spec{Int4Affine, {Bits: 4, GroupSize: 32, Format: Affine, BF16Scales: true}} {
		qw, qs, qm, err := QuantizeAffine(wt, s)
		if err != nil {
			t.Fatal(err)
		}
		if qs.DType() != s.ScaleDType() || qm.DType() != s.ScaleDType() {
			t.Fatalf("%s: stored %s, %s", s, qs.DType(), qm.DType())
		}
		back, err := Dequantize(qw, qs, s, []int{rows, cols}, qm)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Dequantize(qw, qs, s, []int{rows, cols}); err == nil {
			t.Errorf("%s: dequantized without its qmin", s)
		}
		d := values(t, back)
		sc, mn := anyFloats(t, qs), anyFloats(t, qm)
		for i := range w {
			g := i / 32
			// Half a step, plus (bf16) what the rounded minimum and scale move the grid.
			bound := float64(sc[g])/2*1.0001 + 1e-9
			if s.BF16Scales {
				bound += math.Abs(float64(mn[g]))/256 + 15*float64(sc[g])/256
			}
			if e := math.Abs(float64(d[i] - w[i])); e > bound {
				t.Fatalf("%s element %d: %v → %v (error %v > %v)", s, i, w[i], d[i], e, bound)
			}
		}
		aff := relRMS(t, w, back)
		sw, ss, _ := Quantize(wt, Int4F32)
		sym, _ := Dequantize(sw, ss, Int4F32, []int{rows, cols})
		t.Logf("%s: rel. RMS %.4f (symmetric int4 f32: %.4f)", s, aff, relRMS(t, w, sym))
		if aff >= relRMS(t, w, sym) {
			t.Errorf("%s: affine error %.4f not below symmetric %.4f on offset weights", s, aff, relRMS(t, w, sym))
		}
	}
	nan := tensors.FromFlatDataAndDimensions(append([]float32{float32(math.Inf(1))}, make([]float32, 31)...), 1, 32)
	if _, _, _, err := QuantizeAffine(nan, Int4Affine); err == nil {
		t.Error("Inf quantized")
	}
}
