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
	g := gemmOp{kern: kern, out: out, a: a, b: b, m: m, n: n, k: k, layout: layout, accumulate: accumulate}
	parts := min(workers(), max(1, m*n*k/parallelMACs))
	if parts == 1 {
		buf := packBufs.Get().(*packBuf)
		defer packBufs.Put(buf)
		g.block(buf, 0, m, 0, n)
		return
	}
	// Split as mulNTSplit does: by columns when there are enough, by rows otherwise.
	colPanels, rowPanels := ceilDiv(n, kern.nr), ceilDiv(m, kern.mr)
	parallel(parts, func(part int) {
		buf := packBufs.Get().(*packBuf)
		defer packBufs.Put(buf)
		if colPanels >= 2*parts || colPanels >= rowPanels {
			g.block(buf, 0, m, kern.nr*(colPanels*part/parts), min(n, kern.nr*(colPanels*(part+1)/parts)))
		} else {
			g.block(buf, kern.mr*(rowPanels*part/parts), min(m, kern.mr*(rowPanels*(part+1)/parts)), 0, n)
		}
	})
}

// gemmOp is one Gemm call, shared by the parts that compute its blocks.
type gemmOp struct {
	kern       *microKernel
	out, a, b  []float32
	m, n, k    int
	layout     Layout
	accumulate bool
}

// packA packs rows [r0, r0+rows) of op(a), depth [p0, p0+kc), as mr-wide panels.
func (g *gemmOp) packA(dst []float32, r0, rows, p0, kc int) {
	if g.layout == TN {
		packDepthRows(dst, g.a, g.m, r0, rows, p0, kc, g.kern.mr)
		return
	}
	packPanels(dst, g.a, g.k, r0, rows, p0, kc, g.kern.mr)
}

// packB packs columns [j0, j0+cols) of op(b), depth [p0, p0+kc), as nr-wide panels.
func (g *gemmOp) packB(dst []float32, j0, cols, p0, kc int) {
	if g.layout == NT {
		packPanels(dst, g.b, g.k, j0, cols, p0, kc, g.kern.nr)
		return
	}
	packDepthRows(dst, g.b, g.n, j0, cols, p0, kc, g.kern.nr)
}

// block computes rows [i0, i1) × columns [j0, j1) of the product: mulNTPacked's loop
// nest (columns, depth, rows, then micro-tiles), accumulating from the first depth
// block when g.accumulate is set.
func (g *gemmOp) block(buf *packBuf, i0, i1, j0, j1 int) {
	kern, n, k := g.kern, g.n, g.k
	mr, nr := kern.mr, kern.nr
	mc := blockM / mr * mr
	nc := blockN / nr * nr
	kcMax := min(blockK, k)
	buf.a = grow(buf.a, ceilDiv(min(mc, i1-i0), mr)*mr*kcMax)
	buf.b = grow(buf.b, ceilDiv(min(nc, j1-j0), nr)*nr*kcMax)
	buf.tile = grow(buf.tile, mr*nr)
	for jc := j0; jc < j1; jc += nc {
		ncols := min(nc, j1-jc)
		for pc := 0; pc < k; pc += blockK {
			kc := min(blockK, k-pc)
			accumulate := g.accumulate || pc > 0
			g.packB(buf.b, jc, ncols, pc, kc)
			for ic := i0; ic < i1; ic += mc {
				mrows := min(mc, i1-ic)
				g.packA(buf.a, ic, mrows, pc, kc)
				for jr := 0; jr < ncols; jr += nr {
					bp := &buf.b[jr*kc]
					cols := min(nr, ncols-jr)
					for ir := 0; ir < mrows; ir += mr {
						ap := &buf.a[ir*kc]
						rows := min(mr, mrows-ir)
						c := g.out[(ic+ir)*n+jc+jr:]
						if rows == mr && cols == nr {
							kern.fn(kc, ap, bp, &c[0], n, accumulate)
							continue
						}
						kern.fn(kc, ap, bp, &buf.tile[0], nr, false)
						for r := range rows {
							src, dst := buf.tile[r*nr:r*nr+cols], c[r*n:r*n+cols]
							if accumulate {
								for j, v := range src {
									dst[j] += v
								}
							} else {
								copy(dst, src)
							}
						}
					}
				}
			}
		}
	}
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
