package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// splitRow is a long row of logits over many scales, with the values where the vector
// and scalar forms are most likely to part: ±0, ±∞, NaN, the largest and the smallest
// floats, and the soft-cap's own example 1.1210707.
func splitRow(n int) []float32 {
	rng := rand.New(rand.NewPCG(7, 11))
	row := make([]float32, n)
	for i := range row {
		row[i] = float32(rng.NormFloat64() * math.Pow(10, rng.Float64()*4-2))
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 1e30, -1e30, math.SmallestNonzeroFloat32,
		1.1210707, -1.1210707, 30, -30, 88.3762626647949, -87.3365447504}
	for i, v := range specials {
		row[3+i*37] = v
	}
	return row
}

// TestSoftCapSplit: every value of a row gets the same bits from SoftCap wherever the
// row's 8-lane split puts it — in the vector part (the whole row), in the scalar tail
// (the value alone) or at any offset 0..7 — and so through the fused head's AVX-512
// pass. Before the scalar tail did the vector's fused multiply-adds and rounding it
// differed for about one value in six (1.1210707 at c = 30: 1.1205488 and 1.1205498).
func TestSoftCapSplit(t *testing.T) {
	const n = 4099
	row := splitRow(n)
	for _, c := range []float32{30, 50, 1} {
		whole := append([]float32(nil), row...)
		SoftCap(whole, c)
		for i, x := range row {
			one := []float32{x}
			SoftCap(one, c)
			if math.Float32bits(one[0]) != math.Float32bits(whole[i]) {
				t.Fatalf("c=%g: SoftCap(%g) alone = %g (%#x), in the row = %g (%#x)",
					c, x, one[0], math.Float32bits(one[0]), whole[i], math.Float32bits(whole[i]))
			}
		}
		for off := range 8 {
			part := append([]float32(nil), row[off:]...)
			SoftCap(part, c)
			for i, v := range part {
				if math.Float32bits(v) != math.Float32bits(whole[off+i]) {
					t.Fatalf("c=%g offset %d: SoftCap(%g) = %g, from offset 0 %g", c, off, row[off+i], v, whole[off+i])
				}
			}
			fused := append([]float32(nil), row[off:]...)
			softCapMax(fused, c)
			for i, v := range fused {
				if math.Float32bits(v) != math.Float32bits(whole[off+i]) {
					t.Fatalf("c=%g offset %d: the head's soft-cap of %g = %g, SoftCap %g", c, off, row[off+i], v, whole[off+i])
				}
			}
		}
	}
}

// TestExpShiftSplit: ExpShift's values (Softmax's exponentials) are the same bits in
// the vector part and the scalar tail, so a softmax row does not depend on its split
// either.
func TestExpShiftSplit(t *testing.T) {
	const n = 4099
	row := splitRow(n)
	whole := make([]float32, n)
	ExpShift(whole, row, 1.5, 0.7)
	for off := range 8 {
		part := make([]float32, n-off)
		ExpShift(part, row[off:], 1.5, 0.7)
		for i, v := range part {
			if math.Float32bits(v) != math.Float32bits(whole[off+i]) {
				t.Fatalf("offset %d: ExpShift of %g = %g, from offset 0 %g", off, row[off+i], v, whole[off+i])
			}
		}
	}
	for i, x := range row {
		var one [1]float32
		ExpShift(one[:], []float32{x}, 1.5, 0.7)
		if math.Float32bits(one[0]) != math.Float32bits(whole[i]) {
			t.Fatalf("ExpShift of %g alone = %g, in the row %g", x, one[0], whole[i])
		}
	}
}

// TestFMA32: fma32 is a·b + c rounded once, against big.Float's exact product and sum,
// on random operands and on ties that a plain float64 sum would round twice.
func TestFMA32(t *testing.T) {
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func() float32 {
		return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
	}
	for range 200000 {
		a, b, c := rnd(), rnd(), rnd()
		if got, want := fma32(a, b, c), exact(a, b, c); got != want {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for range 20000 { // results in float32's subnormal range
		a, b := rnd()*0x1p-60, rnd()*0x1p-60
		c := float32(rng.NormFloat64()) * 0x1p-130
		if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	// −2^-24·(1+2^-15)·(1−2^-15) + (1 + 2^-23) is 1 + 2^-24 + 2^-54, just above a float32
	// tie: a float64 sum rounds it to the tie, then to 1; rounded once it is 1 + 2^-23.
	a, b, c := float32(-(1+0x1p-15)*0x1p-24), float32(1-0x1p-15), float32(1+0x1p-23)
	if twice := float32(float64(a)*float64(b) + float64(c)); twice != 1 {
		t.Fatalf("the tie case is not one: rounded twice it is %g", twice)
	}
	if got, want := fma32(a, b, c), float32(1+0x1p-23); got != want || exact(a, b, c) != want {
		t.Fatalf("fma32(%g, %g, %g) = %.9g, want %.9g", a, b, c, got, want)
	}
	// The same in float32's subnormal range, where a tie is a half step of 2^-149:
	// 2^-150·(1 − 2^-46) + (2^-130 + 2^-149) rounds to the tie in float64, then up to
	// the even 2^-130 + 2^-148; rounded once it is 2^-130 + 2^-149.
	a, b, c = float32(0x1p-75*(1+0x1p-23)), float32(0x1p-75*(1-0x1p-23)), float32(0x1p-130+0x1p-149)
	if got := fma32(a, b, c); got != c || exact(a, b, c) != c {
		t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, c)
	}
}
