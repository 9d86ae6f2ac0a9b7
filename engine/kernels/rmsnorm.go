package kernels

import "math"

// RMSNorm writes the root-mean-square norm of each row of x (rows of width n) into dst:
// dst[j] = x[j]·r·w[j] with r = 1/√(mean(x²) + eps), or x[j]·r when w is nil. The mean
// of squares is accumulated in float32 lanes (dot's order), r is rounded from float64,
// and each value is (x·r)·w, as the scalar formula rounds it. dst may be x; len(x) must
// be a multiple of n and dst at least as long.
func RMSNorm(dst, x, w []float32, n int, eps float32) {
	if n <= 0 || len(x)%n != 0 || len(dst) < len(x) || (w != nil && len(w) < n) {
		panic("kernels.RMSNorm: slices do not match the row width")
	}
	if rmsNormRows(dst, x, w, n, eps) { // the loop below in one vector call
		return
	}
	for r := 0; r < len(x); r += n {
		row, o := x[r:r+n], dst[r:r+n]
		ms := dot(row, row)
		inv := float32(1 / math.Sqrt(float64(ms/float32(n)+eps)))
		scaleRow(o, row, w, inv)
	}
}

// scaleRowGo is scaleRow in plain Go: dst[j] = x[j]·s·w[j] (w nil: x[j]·s).
func scaleRowGo(dst, x, w []float32, s float32) {
	dst = dst[:len(x)]
	if w == nil {
		for j, v := range x {
			dst[j] = v * s
		}
		return
	}
	w = w[:len(x)]
	for j, v := range x {
		dst[j] = v * s * w[j]
	}
}
