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
