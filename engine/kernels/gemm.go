package kernels

import (
	"sync"
	"unsafe"
)

// A microKernel computes one mr×nr tile of c (row stride ldc floats) from kc steps of
// packed panels: a holds mr values per step (one per row of the tile), b nr values per
// step (one per column). It stores the tile, or adds it to c when accumulate is set.
type microKernel struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c *float32, ldc int, accumulate bool)
}

// Cache blocking of the packed path: a KC-deep slice of the contraction at a time; MC
// rows of a (MC·KC·4 B ≈ 112 KiB, L2-resident) against NC columns of b (KC·NC·4 B, the
// L3's share of one core); each kc×nr micro-panel of b (32 KiB) stays in L1 while the
// row panels of a stream past it.
const (
	blockK = 256
	blockM = 112
	blockN = 2048
)

// MulNT computes out = a·bᵀ for row-major a [m, k] and b [n, k] (both contracted on
// their contiguous last axis), out [m, n]: out[i·n+j] = Σ_p a[i·k+p]·b[j·k+p].
// out is overwritten. The product is split across the package's worker pool (one
// worker per core). Slices shorter than their shapes are a programming error and
// panic.
func MulNT(out, a, b []float32, m, n, k int) {
	mulNT(gemmKernel, out, a, b, m, n, k)
}

// mulNT is MulNT with the micro-kernel given.
func mulNT(kern *microKernel, out, a, b []float32, m, n, k int) {
	if m < 0 || n < 0 || k < 0 || len(a) < m*k || len(b) < n*k || len(out) < m*n {
		panic("kernels.MulNT: slices shorter than their shapes")
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(out[:m*n])
		return
	}
	if m < dotRows {
		mulNTDots(out, a, b, m, n, k)
		return
	}
	_ = (&gemmOp{kern: kern, out: out, a: a, b: b, m: m, n: n, k: k, layout: NT}).run() // a float32 b cannot fail
}

// A packFunc writes columns [j0, j0+cols) of bᵀ, depth [p0, p0+kc), into dst as nr-wide
// panels (packPanels' layout); buf is the calling worker's scratch.
type packFunc func(dst []float32, buf *packBuf, j0, cols, p0, kc int) error

// mulNTSplit computes out = a·bᵀ, MulNT's packed product, with b's panels supplied by
// packB (a Matrix decoding its rows or columns as they are packed). It returns the
// first error of packB.
func mulNTSplit(kern *microKernel, out, a []float32, m, n, k int, packB packFunc) error {
	return (&gemmOp{kern: kern, out: out, a: a, m: m, n: n, k: k, layout: NT, packFn: packB}).run()
}

// gemmOp is one packed product, out [m, n] = op(a)·op(b) with the operands stored as
// layout says (Gemm's; MulNT's is NT), shared by the parts that compute its blocks.
type gemmOp struct {
	kern       *microKernel
	out, a, b  []float32
	m, n, k    int
	layout     Layout
	accumulate bool     // add the product to out rather than overwrite it
	packFn     packFunc // b's panels, in place of packing b from its layout; nil: b is used
}

// run computes the product split across the workers: by columns when there are enough
// of them (each part packs only its own columns of b, and a is the cheaper operand to
// pack twice), by rows otherwise. It returns the first error of g.packFn.
func (g *gemmOp) run() error {
	kern := g.kern
	parts := packedParts(g.m * g.n * g.k)
	if parts == 1 {
		buf := packBufs.Get().(*packBuf)
		defer packBufs.Put(buf)
		return g.block(buf, 0, g.m, 0, g.n)
	}
	colPanels, rowPanels := ceilDiv(g.n, kern.nr), ceilDiv(g.m, kern.mr)
	errs := make([]error, parts)
	parallel(parts, func(part int) {
		buf := packBufs.Get().(*packBuf)
		defer packBufs.Put(buf)
		if colPanels >= 2*parts || colPanels >= rowPanels {
			j0, j1 := kern.nr*(colPanels*part/parts), min(g.n, kern.nr*(colPanels*(part+1)/parts))
			errs[part] = g.block(buf, 0, g.m, j0, j1)
		} else {
			i0, i1 := kern.mr*(rowPanels*part/parts), min(g.m, kern.mr*(rowPanels*(part+1)/parts))
			errs[part] = g.block(buf, i0, i1, 0, g.n)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// block computes rows [i0, i1) × columns [j0, j1) of the product with packed panels
// (the loop nest of BLIS: columns, depth, rows, then macroKernel's micro-tiles). Every
// sum runs over the contraction in order, in blocks of blockK.
func (g *gemmOp) block(buf *packBuf, i0, i1, j0, j1 int) error {
	n, k := g.n, g.k
	mr, nr := g.kern.mr, g.kern.nr
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
			if err := g.packB(buf, jc, ncols, pc, kc); err != nil {
				return err
			}
			for ic := i0; ic < i1; ic += mc {
				mrows := min(mc, i1-ic)
				g.packA(buf.a, ic, mrows, pc, kc)
				macroKernel(g.kern, g.out[ic*n+jc:], n, buf.a, buf.b, buf.tile, mrows, ncols, kc, g.accumulate || pc > 0)
			}
		}
	}
	return nil
}

// macroKernel computes the rows × cols block at c (row stride ldc) from kc depth steps
// of packed panels — a's mr-row panels in ap against b's nr-column panels in bp, each
// last one padded — a column panel at a time, so that b's panel stays in L1 while a's
// stream past it. A full micro-tile is stored in c; an edge tile is computed whole into
// tile (mr·nr floats) and the part that exists copied out. With accumulate the block
// is added to c.
func macroKernel(kern *microKernel, c []float32, ldc int, ap, bp, tile []float32, rows, cols, kc int, accumulate bool) {
	mr, nr, fn := kern.mr, kern.nr, kern.fn
	for jr := 0; jr < cols; jr += nr {
		b := &bp[jr*kc]
		w := min(nr, cols-jr)
		for ir := 0; ir < rows; ir += mr {
			a := &ap[ir*kc]
			h := min(mr, rows-ir)
			ct := c[ir*ldc+jr:]
			if h == mr && w == nr {
				fn(kc, a, b, &ct[0], ldc, accumulate)
				continue
			}
			fn(kc, a, b, &tile[0], nr, false)
			for r := range h {
				src, dst := tile[r*nr:r*nr+w], ct[r*ldc:r*ldc+w]
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

// parallelMACs is the work (multiply-adds) worth a part of its own on another worker:
// about 20 µs of the packed product, against the few µs a parked worker takes to wake.
// Smaller products run on the calling goroutine.
const parallelMACs = 1 << 20

// packedParts is the parts a packed product of macs multiply-adds is split into: one
// per parallelMACs, at most one per worker.
func packedParts(macs int) int { return min(workers(), max(1, macs/parallelMACs)) }

// ParallelMACs is parallelMACs: a packed product of fewer than 2·ParallelMACs
// multiply-adds runs on the calling goroutine alone.
const ParallelMACs = parallelMACs

// dotRows is the row count below which a product is dot products of rows (each row of
// b read once, from memory, for all rows of a) rather than packed: packing b costs
// more than a product with one or two rows (the AR step) gains from it.
const dotRows = 4

// DotRows is the row count of a below which MulNT computes dot products instead of
// the packed product (dotRows): their sums run in another order, so a caller that
// cuts a product into parts of rows and wants the whole product's bits keeps each
// part at DotRows rows or more.
const DotRows = dotRows

// DepthBlock is the packed products' contraction block (blockK): MulNT and Gemm sum
// each output over the contraction in blocks of DepthBlock, one after another.
const DepthBlock = blockK

// dotMACs is parallelMACs for dot products, which read their weights from memory once
// (about 20 µs at this machine's read rate).
const dotMACs = 1 << 18

// mulNTDots computes out = a·bᵀ as m·n dot products, the rows of b split across the
// worker pool.
func mulNTDots(out, a, b []float32, m, n, k int) {
	parts := min(workers(), dotParts(m*n*k))
	parallel(parts, func(part int) {
		for j := n * part / parts; j < n*(part+1)/parts; j++ {
			bj := b[j*k : (j+1)*k]
			for i := range m {
				out[i*n+j] = dot(a[i*k:(i+1)*k], bj)
			}
		}
	})
}

// packBuf is one worker's packed panels, edge tile and decoding scratch.
type packBuf struct {
	a, b, tile, dec []float32
	q               []int8 // the printer's x as int8 codes (mulRowsInt)
}

var packBufs = sync.Pool{New: func() any { return new(packBuf) }}

// packPanels copies rows [r0, r0+rows) of src [·, k], depth [p0, p0+kc), into dst as
// panels of w rows each stored depth-major (dst[panel·w·kc + p·w + r]), the last panel
// padded with zeros.
func packPanels(dst, src []float32, k, r0, rows, p0, kc, w int) {
	for q := 0; q < rows; q += w {
		panel := dst[q*kc : (q+w)*kc]
		h := min(w, rows-q)
		if h == w && packPanelVector(panel, src, k, r0+q, p0, kc, w) {
			continue
		}
		for r := range h {
			s := src[(r0+q+r)*k+p0:][:kc]
			for p, v := range s {
				panel[p*w+r] = v
			}
		}
		if h < w {
			for p := range kc {
				clear(panel[p*w+h : p*w+w])
			}
		}
	}
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// kernel4x4Go is the portable micro-kernel (4×4, sixteen scalar accumulators).
func kernel4x4Go(kc int, a, b, c *float32, ldc int, accumulate bool) {
	ap, bp := unsafe.Slice(a, 4*kc), unsafe.Slice(b, 4*kc)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := 0; p < 4*kc; p += 4 {
		av, bv := ap[p:p+4:p+4], bp[p:p+4:p+4]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	t := [16]float32{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
	for r := range 4 {
		row := cs[r*ldc : r*ldc+4]
		if accumulate {
			for j := range row {
				row[j] += t[4*r+j]
			}
		} else {
			copy(row, t[4*r:4*r+4])
		}
	}
}

var goKernel = &microKernel{name: "go4x4", mr: 4, nr: 4, fn: kernel4x4Go}
