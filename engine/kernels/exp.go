package kernels

import "math"

// ExpShift writes dst[i] = e^((src[i] − shift)·scale) for every i and returns the sum
// of dst (accumulated in float32 lanes): the exponentials of a softmax. Arguments below
// −87.3 give values ≤ 1.2e-38 (inputs of −∞ included) and above 88.37 are clamped, so
// the result is always finite. Relative error about 2e-7 (Cephes expf).
func ExpShift(dst, src []float32, shift, scale float32) float32 {
	dst = dst[:len(src)]
	n := 0
	var sum float32
	if useAVX2 && len(src) >= 8 {
		n = len(src) &^ 7
		sum = expShiftAVX2(&dst[0], &src[0], n, shift, scale)
	}
	for i := n; i < len(src); i++ {
		e := Expf((src[i] - shift) * scale)
		dst[i] = e
		sum += e
	}
	return sum
}

// Expf is e^x in float32 as a lane of the vector kernels computes it (Cephes expf):
// the clamp (a NaN clamped to the upper bound, as the vector minimum keeps its bound),
// x·log2e rounded to even, the two-step range reduction and the polynomial with each
// multiply-add rounded once (fma32), in the same order, so a row's scalar tail gives
// bit for bit the values its vector part would.
func Expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	if !(x < 88.3762626647949) { // VMINPS: x < hi ? x : hi
		x = 88.3762626647949
	}
	if !(x > -87.3365447504) { // VMAXPS: x > lo ? x : lo
		x = -87.3365447504
	}
	fn := float32(math.RoundToEven(float64(x * log2e)))
	r := fma32(-fn, c1, x)
	r = fma32(-fn, c2, r)
	p := float32(1.9875691500e-4)
	p = fma32(p, r, 1.3981999507e-3)
	p = fma32(p, r, 8.3334519073e-3)
	p = fma32(p, r, 4.1665795894e-2)
	p = fma32(p, r, 1.6666665459e-1)
	p = fma32(p, r, 5.0000001201e-1)
	y := fma32(p, float32(r*r), r+1)
	return float32(y * math.Float32frombits(uint32(int32(fn)+127)<<23))
}

// fma32 is a·b + c rounded once to float32, as a vector FMA lane computes it (Go has
// no float32 FMA, and the compiler fuses a·b + c only on some targets). The product is
// exact in float64, so the float64 sum s is the exact value rounded once, and rounding
// s to float32 is rounding the exact value unless s landed on a float32 tie (or in
// float32's subnormal range, where the ties lie elsewhere): fma32Tie settles those.
func fma32(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b)) // the conversion keeps it a product, not fused
	s := p + float64(c)
	if bits := math.Float64bits(s); bits&(1<<29-1) == 1<<28 || bits&(0x7ff<<52) < (1023-126)<<52 {
		return fma32Tie(p, float64(c), s)
	}
	return float32(s)
}

// fma32Tie is fma32 where s = p + c, rounded to float64, may round to float32 twice:
// s rounded to odd instead (its exact error by TwoSum), which then rounds to float32
// as the exact value does (Boldo and Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", 2008).
func fma32Tie(p, c, s float64) float32 {
	bv := s - p
	if e := (p - (s - bv)) + (c - bv); e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// SoftCap replaces each x of row by c·tanh(x/c), the logit soft-cap, computed as
// c·(1 − e)/(1 + e) with e = e^(−2|x|/c) (ExpShift's exponential) and the sign of x:
// exact at 0, ±c in the limit and for ±∞ (a NaN's result is unspecified, but the same
// wherever it falls in the row). c ≤ 0 leaves row as it is. It is the host head's
// soft-cap (ExpShift, then the quotient) in one pass, with the same result. The vector
// part and the scalar tail compute the same operations in the same order, so each
// value is the same bit for bit wherever the row's split into 8 lanes falls.
func SoftCap(row []float32, c float32) {
	if c <= 0 {
		return
	}
	scale := -2 / c
	n := 0
	if useAVX2 && len(row) >= 8 {
		n = len(row) &^ 7
		softCapAVX2(&row[0], n, c, scale)
	}
	for i := n; i < len(row); i++ {
		x := row[i]
		e := Expf(math.Float32frombits(math.Float32bits(x)&^(1<<31)) * scale) // |x| as VANDPS takes it
		t := c * (1 - e) / (1 + e)
		if x < 0 {
			t = -t
		}
		row[i] = t
	}
}

// Softmax writes softmax(x·scale) into dst (dst may be x; scale is 1/temperature):
// e^((x − max x)·scale) by ExpShift, divided by its sum (as a multiplication by the
// reciprocal). x must not be empty.
func Softmax(dst, x []float32, scale float32) {
	dst = dst[:len(x)]
	r := 1 / ExpShift(dst, x, maxOf(x), scale)
	n := 0
	if useAVX2 && len(dst) >= 8 {
		n = len(dst) &^ 7
		scaleAVX2(&dst[0], n, r)
	}
	for j := n; j < len(dst); j++ {
		dst[j] *= r
	}
}
