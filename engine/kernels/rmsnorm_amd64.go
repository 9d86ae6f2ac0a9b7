//go:build !noasm

package kernels

// scaleRowAVX2 writes dst[i] = x[i]·s·w[i] for n (a positive multiple of 8) values
// (rmsnorm_amd64.s).
//
//go:noescape
func scaleRowAVX2(dst, x, w *float32, n int, s float32)

// scaleToAVX2 writes dst[i] = x[i]·s for n (a positive multiple of 8) values
// (rmsnorm_amd64.s).
//
//go:noescape
func scaleToAVX2(dst, x *float32, n int, s float32)

// rmsNormRowsAVX2 is RMSNorm over rows rows of n values, n a positive multiple of 32,
// in one call: each row's arithmetic is RMSNorm's loop's, bit for bit
// (rmsnorm_amd64.s).
//
//go:noescape
func rmsNormRowsAVX2(dst, x, w *float32, rows, n int, eps float32)

// rmsNormRows is RMSNorm's loop by rmsNormRowsAVX2 where it applies (AVX2, n a
// multiple of 32, at least one row), reporting whether it ran.
func rmsNormRows(dst, x, w []float32, n int, eps float32) bool {
	if !useAVX2 || n%32 != 0 || len(x) == 0 {
		return false
	}
	var wp *float32
	if w != nil {
		wp = &w[0]
	}
	rmsNormRowsAVX2(&dst[0], &x[0], wp, len(x)/n, n, eps)
	return true
}

// scaleRow writes dst[j] = x[j]·s·w[j] (w nil: x[j]·s), rounded as scaleRowGo.
func scaleRow(dst, x, w []float32, s float32) {
	n := 0
	if useAVX2 && len(x) >= 8 {
		n = len(x) &^ 7
		_ = dst[n-1]
		if w == nil {
			scaleToAVX2(&dst[0], &x[0], n, s)
		} else {
			_ = w[n-1]
			scaleRowAVX2(&dst[0], &x[0], &w[0], n, s)
		}
	}
	if w != nil {
		w = w[n:]
	}
	scaleRowGo(dst[n:], x[n:], w, s)
}
