package kernels

// Layout says how Gemm's operands are stored, for out [m, n] = op(a)·op(b) contracted
// over k: each operand either row-major in the product's orientation or transposed.
// The training tape's backward passes read their operands this way, so no product
// needs a transposed copy: dx = dy·w is NN, dw = dyᵀ·x is TN.
type Layout uint8

const (
	// NN: a [m, k] and b [k, n], out = a·b.
	NN Layout = iota
	// NT: a [m, k] and b [n, k], out = a·bᵀ (MulNT's layout).
	NT
	// TN: a [k, m] and b [k, n], out = aᵀ·b.
	TN
)

// Gemm computes out = op(a)·op(b) for out [m, n] with the operands stored as layout
// says, or adds the product to out when accumulate is set (a gradient buffer, added
// to without a temporary). It is MulNT's packed product — the same micro-kernel and
// cache blocks, split across the same pool — with each operand packed from its
// layout: a row-major operand contracted on its last axis by transposes (as MulNT
// packs both), one contracted on its first axis by copying kc rows of the panel's
// width, which needs no transpose at all. Every sum runs over the contraction in order,
// in blocks of blockK: with accumulate, out + s₁ + s₂ … rather than out + (s₁ + s₂ …).
// Slices shorter than their shapes are a programming error and panic.
func Gemm(out, a, b []float32, m, n, k int, layout Layout, accumulate bool) {
	gemm(gemmKernel, out, a, b, m, n, k, layout, accumulate)
}

// gemm is Gemm with the micro-kernel given.
func gemm(kern *microKernel, out, a, b []float32, m, n, k int, layout Layout, accumulate bool) {
	if m < 0 || n < 0 || k < 0 || len(a) < m*k || len(b) < n*k || len(out) < m*n || layout > TN {
		panic("kernels.Gemm: slices shorter than their shapes")
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !accumulate {
			clear(out[:m*n])
		}
		return
	}
	_ = (&gemmOp{kern: kern, out: out, a: a, b: b, m: m, n: n, k: k, layout: layout, accumulate: accumulate}).run() // float32 operands cannot fail
}

// packA packs rows [r0, r0+rows) of op(a), depth [p0, p0+kc), as mr-wide panels.
func (g *gemmOp) packA(dst []float32, r0, rows, p0, kc int) {
	if g.layout == TN {
		packDepthRows(dst, g.a, g.m, r0, rows, p0, kc, g.kern.mr)
		return
	}
	packPanels(dst, g.a, g.k, r0, rows, p0, kc, g.kern.mr)
}

// packB packs columns [j0, j0+cols) of op(b), depth [p0, p0+kc), as nr-wide panels
// into buf.b, or has g.packFn write them.
func (g *gemmOp) packB(buf *packBuf, j0, cols, p0, kc int) error {
	switch {
	case g.packFn != nil:
		return g.packFn(buf.b, buf, j0, cols, p0, kc)
	case g.layout == NT:
		packPanels(buf.b, g.b, g.k, j0, cols, p0, kc, g.kern.nr)
	default:
		packDepthRows(buf.b, g.b, g.n, j0, cols, p0, kc, g.kern.nr)
	}
	return nil
}

// packDepthRows is packPanels for an operand stored depth-major, src [·, ld] with the
// product's rows along its contiguous axis: rows [r0, r0+rows), depth [p0, p0+kc) into
// w-wide panels (dst[panel·w·kc + p·w + r]), each depth step one contiguous copy —
// masked vector moves for a full panel where the CPU has them, not a memmove call per
// step — the last panel padded with zeros.
func packDepthRows(dst, src []float32, ld, r0, rows, p0, kc, w int) {
	for q := 0; q < rows; q += w {
		panel := dst[q*kc : (q+w)*kc]
		h := min(w, rows-q)
		s := src[p0*ld+r0+q:]
		if h == w && copyPanelRows(panel, s, ld, kc, w) {
			continue
		}
		for p := range kc {
			d := panel[p*w : p*w+w]
			copy(d[:h], s[p*ld:p*ld+h])
			clear(d[h:])
		}
	}
}
