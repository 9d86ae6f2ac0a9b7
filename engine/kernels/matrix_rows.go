package kernels

import "fmt"

// The parts of a stored-format Matrix that the host model needs beyond its products
// with a·wᵀ: a block of rows as a Matrix of its own (one expert of a stacked [E·F, D]
// weight), rows decoded whole (the embedding lookup), and the product a·w (the tied
// embedding's second use, softmax(logits)·E).

// RowRange is rows [r0, r1) of w as a Matrix over the same bytes (nothing is copied):
// every format stores its rows one after another, each with its own scales.
func (w *Matrix) RowRange(r0, r1 int) (Matrix, error) {
	if err := w.Check(); err != nil {
		return Matrix{}, err
	}
	if r0 < 0 || r1 < r0 || r1 > w.Rows {
		return Matrix{}, fmt.Errorf("%s: rows [%d, %d) out of range", w, r0, r1)
	}
	sub := Matrix{Rows: r1 - r0, Cols: w.Cols, Spec: w.Spec, GGUF: w.GGUF}
	if w.Rows == 0 {
		return sub, nil
	}
	part := func(b []byte) []byte {
		per := len(b) / w.Rows // Check made the byte counts whole rows
		return b[r0*per : r1*per : r1*per]
	}
	sub.Data, sub.Scales, sub.Mins = part(w.Data), part(w.Scales), part(w.Mins)
	return sub, nil
}

// DecodeRow writes row r of w as float32 into dst[:Cols].
func (w *Matrix) DecodeRow(dst []float32, r int) error {
	if err := w.Check(); err != nil {
		return err
	}
	if r < 0 || r >= w.Rows || len(dst) < w.Cols {
		return fmt.Errorf("%s: decode row %d into %d values", w, r, len(dst))
	}
	w.decode(dst, r, 0, w.Cols)
	return nil
}

// align is the column alignment decode needs for a range that does not end at Cols:
// the GGUF block, or the scale group (a per-row scale: the whole row).
func (w *Matrix) align() int {
	if w.Spec.Bits == 0 {
		return w.GGUF.BlockSize()
	}
	return max(w.group(), 2)
}

// MulNN computes out = a·w for a [m, Rows] and out [m, Cols], overwritten: the packed
// product of MulNT with bᵀ = w, each kc×nr panel filled from kc rows of w decoded over
// the panel's columns (widened to the format's blocks). Every part of the product
// decodes only its own columns, so the whole of w is decoded once per call.
func (w *Matrix) MulNN(out, a []float32, m int) error {
	if err := w.Check(); err != nil {
		return err
	}
	n, k := w.Cols, w.Rows
	if m < 0 || len(a) < m*k || len(out) < m*n {
		return fmt.Errorf("%s: MulNN with a of %d and out of %d for %d rows", w, len(a), len(out), m)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 {
		clear(out[:m*n])
		return nil
	}
	if w.useIntProductNN(m) {
		w.mulNNInt(out, a, m)
		return nil
	}
	kern := gemmKernel
	al := w.align()
	packB := func(dst []float32, buf *packBuf, j0, cols, p0, kc int) error {
		nr := kern.nr
		c0, c1 := j0/al*al, min(n, ceilDiv(j0+cols, al)*al)
		buf.dec = grow(buf.dec, c1-c0)
		for p := range kc {
			w.decode(buf.dec, p0+p, c0, c1)
			row := buf.dec[j0-c0 : j0-c0+cols]
			for q := 0; q < cols; q += nr {
				h := min(nr, cols-q)
				dp := dst[q*kc+p*nr : q*kc+(p+1)*nr]
				copy(dp, row[q:q+h])
				clear(dp[h:])
			}
		}
		return nil
	}
	return mulNTSplit(kern, out, a, m, n, k, packB)
}
