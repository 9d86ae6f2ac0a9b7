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

// Expf is e^x in float32 with the same range reduction, polynomial and clamping as
// the vector kernel (Cephes expf).
func Expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	x = min(max(x, -87.3365447504), 88.3762626647949)
	fn := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - fn*c1 - fn*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	return y * math.Float32frombits(uint32(int32(fn)+127)<<23)
}

// SoftCap replaces each x of row by c·tanh(x/c), the logit soft-cap, computed as
// c·(1 − e)/(1 + e) with e = e^(−2|x|/c) (ExpShift's exponential) and the sign of x:
// exact at 0, ±c in the limit and for ±∞ (a NaN's result is unspecified). c ≤ 0 leaves
// row as it is. It is the host head's soft-cap (ExpShift, then the quotient) in one pass,
// with the same result.
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
		e := Expf(max(x, -x) * scale)
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
