//go:build !noasm

package kernels

// copyRows512 copies rows rows of w ≤ 32 floats, ld apart in src, to consecutive rows
// of dst (train_amd64.s: masked AVX-512 moves).
//
//go:noescape
func copyRows512(dst, src *float32, ld, rows, w int)

// copyPanelRows copies kc rows of w floats, ld apart in src, into panel (kc·w floats),
// and reports whether it did: with AVX-512, for w ≤ 32 (the micro-kernels' widths).
func copyPanelRows(panel, src []float32, ld, kc, w int) bool {
	if !useAVX512 || w > 32 || kc == 0 {
		return false
	}
	_, _ = panel[kc*w-1], src[(kc-1)*ld+w-1] // the rows are there
	copyRows512(&panel[0], &src[0], ld, kc, w)
	return true
}
