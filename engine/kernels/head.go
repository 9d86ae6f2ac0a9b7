package kernels

import (
	"fmt"
	"math"
)

// The tied LM head fused with what a denoising step does with its logits.
//
// A decoder step ends with, for each of its C canvas positions and the whole
// vocabulary V,
//
//	logits = c·tanh((h·Eᵀ)/c)              the tied head and the soft-cap   [C, V]
//	p      = softmax(logits/T)             the tempered distribution        [C, V]
//	argmax, entropy(p), a draw from p      the sampler's statistics         [C]
//	soft   = p·E·scale                     the next step's self-conditioning [C, D]
//
// Done one after another these write the [C, V] logits and probabilities to memory
// and read them back several times (4 MB each for Darkroom Mini, a quarter of a GB for
// a 262,144-word vocabulary). Head does all of it a block of positions at a time —
// the block's logits and probabilities stay in the core's L2 — against E packed once
// into the micro-kernel's panels (both orientations), so neither E's packing nor the
// [C, V] arrays come back each step. (An E too large to pack is multiplied as stored,
// with one [C, V] array kept: see Head.)
//
// The arithmetic is the unfused one's, operation for operation: the logits are
// MulNT's (the same micro-kernel, panels and depth order, so the same bits), the
// soft-cap SoftCap's, the exponentials, entropy and draw Tempered's, the
// probabilities Softmax's and the soft embedding MulNN's. The fused step therefore
// gives bit for bit the result of Matrix.MulNT, SoftCap, Tempered, Softmax and
// Matrix.MulNN run in turn (head_test.go), and a sampler built on Tempered draws the
// same tokens from either.

// ExpFloor is the smallest exponential a softmax keeps: ExpShift clamps arguments
// below −87.3 to ~1.2e-38, and anything below ExpFloor is taken as an exact zero
// (ExpMoments' floor in Tempered).
const ExpFloor = 1e-37

// Position is what the tempered distribution of one canvas position yields.
type Position struct {
	Sampled int     // drawn from softmax(logits/T)
	Argmax  int     // argmax(logits), ties → lowest id
	Entropy float32 // entropy (nats) of softmax(logits/T)
}

// Tempered is the sampler's arithmetic for one position's soft-capped logits row and
// inv = 1/T: the argmax (ties → the lowest id), the entropy of softmax(row·inv), and
// the id the inverse CDF gives for the uniform draw u ∈ [0, 1). e is scratch of
// len(row).
//
// With z = row·inv, m = max z, e_j = exp(z_j − m), s = Σ e_j: p_j = e_j/s and
// H = −Σ p_j log p_j = log s − Σ e_j (z_j − m) / s. The exponentials are ExpShift's
// float32 ones (relative error ~2e-7), those below ExpFloor zero; the sums that decide
// the entropy and the draw are float64, the draw the first id whose running sum
// exceeds u·s.
func Tempered(row, e []float32, inv, u float64) Position {
	return tempered(row, e, nil, inv, u)
}

// tempered is Tempered that also writes softmax(row·inv) into probs, as Softmax does
// (the exponentials before ExpFloor's zeroing, times the reciprocal of ExpShift's
// float32 sum), unless probs is nil.
func tempered(row, e, probs []float32, inv, u float64) Position {
	return temperedAt(row, e, probs, ArgMax(row), inv, u)
}

// temperedAt is tempered with the row's argmax am already found.
func temperedAt(row, e, probs []float32, am int, inv, u float64) Position {
	e = e[:len(row)]
	sum := expShift(e, row, row[am], float32(inv))
	if probs != nil { // e·(1/sum), as Softmax scales its exponentials, in one pass
		scaleRow(probs[:len(row)], e, nil, 1/sum)
	}
	m := float64(row[am])
	s, ez := ExpMoments(e, row, m, inv, ExpFloor)
	h := math.Log(s) - ez/s
	if h < 0 { // rounding on a one-hot row
		h = 0
	}
	sampled := inverseCDF(e, u*s, s)
	if sampled < 0 { // u·s rounded above the sum: take the last id with mass
		for j := len(e) - 1; j >= 0; j-- {
			if e[j] > 0 {
				sampled = j
				break
			}
		}
	}
	return Position{Sampled: sampled, Argmax: am, Entropy: float32(h)}
}

// cdfBlock is how many values inverseCDF skips at a time.
const cdfBlock = 64

// inverseCDF returns the first j at which the running sum of e (float64, in order:
// acc_j = acc_{j−1} + e_j) exceeds target, or −1 where none does; total is Σ e (an
// upper bound of every running sum). It is that scan's answer, found about three
// times faster: blocks whose end the running sum provably does not pass are skipped
// by their sums, added four at a time in independent chains. Summed in another order
// a prefix differs from the running sum by at most δ = 4·(len(e)+1)·2⁻⁵³·total (twice
// the bound of either order's rounding), so a decision taken with a margin of δ is
// the scan's; a value within δ of target sends it back to the plain scan.
func inverseCDF(e []float32, target, total float64) int {
	delta := 4 * float64(len(e)+1) * 0x1p-53 * total
	acc, j := 0.0, 0
	for ; j+cdfBlock <= len(e); j += cdfBlock {
		b := blockSum(e[j : j+cdfBlock])
		if acc+b > target-delta {
			break
		}
		acc += b
	}
	for ; j < len(e); j++ {
		acc += float64(e[j])
		switch {
		case acc > target+delta:
			return j
		case acc > target-delta:
			return inverseCDFScan(e, target) // too close to call
		}
	}
	if acc > target-delta {
		return inverseCDFScan(e, target)
	}
	return -1
}

// inverseCDFScan is inverseCDF by the running sum itself.
func inverseCDFScan(e []float32, target float64) int {
	var acc float64
	for j, v := range e {
		acc += float64(v)
		if acc > target {
			return j
		}
	}
	return -1
}

// blockSum is Σ x in float64, in four chains (len(x) a multiple of 4).
func blockSum(x []float32) float64 {
	var s0, s1, s2, s3 float64
	for i := 0; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
	}
	return (s0 + s1) + (s2 + s3)
}

// softCapMax is SoftCap(row, c) and then ArgMax(row), in one pass where AVX-512
// runs: its part is SoftCap's vector arithmetic lane for lane, so the values are
// SoftCap's, and it keeps each lane's maximum and its first index, the lowest index
// of the largest of which is ArgMax's (ties → the lowest id; NaNs never larger).
func softCapMax(row []float32, c float32) (argmax int) {
	if !useAVX512 || c <= 0 || len(row) < 16 {
		SoftCap(row, c)
		return ArgMax(row)
	}
	n := len(row) &^ 15
	var lm [16]float32
	var li [16]int32
	softCapArgMax512(&row[0], n, c, -2/c, &lm, &li)
	m, am := float32(math.Inf(-1)), -1
	for l, v := range lm {
		if i := int(li[l]); i >= 0 && (v > m || v == m && i < am) {
			m, am = v, i
		}
	}
	SoftCap(row[n:], c)
	for j, v := range row[n:] {
		if v > m {
			m, am = v, n+j
		}
	}
	if am < 0 || row[0] != row[0] { // no number, or ArgMax's NaN at 0
		return ArgMax(row)
	}
	return am
}

// expShift is ExpShift with AVX-512 where it runs: the same values and sum.
func expShift(dst, src []float32, shift, scale float32) float32 {
	if !useAVX512 || len(src) < 8 {
		return ExpShift(dst, src, shift, scale)
	}
	dst = dst[:len(src)]
	n := len(src) &^ 7
	sum := expShift512(&dst[0], &src[0], n, shift, scale)
	for i := n; i < len(src); i++ {
		e := Expf((src[i] - shift) * scale)
		dst[i] = e
		sum += e
	}
	return sum
}

// scale multiplies x by r in place, as Softmax does.
func scale(x []float32, r float32) {
	n := 0
	if useAVX2 && len(x) >= 8 {
		n = len(x) &^ 7
		scaleAVX2(&x[0], n, r)
	}
	for j := n; j < len(x); j++ {
		x[j] *= r
	}
}

// Head is the tied LM head over an embedding E [V, D] (a Matrix in its stored format),
// fused with the soft-cap, the sampler's statistics and the soft embedding (see the
// comment above). NewHead packs E once when its two packed float32 copies take at most
// HeadPackBytes; a larger E (a 262,144-word vocabulary) is decoded inside the products
// as Matrix.MulNT and MulNN decode it, the step's [C, V] logits (overwritten by the
// probabilities) then kept from one call to the next instead of allocated. A Head is
// not safe for concurrent use.
type Head struct {
	e      Matrix
	v, d   int
	kern   *microKernel
	nt, nn []float32 // E's panels for h·Eᵀ and p·E (packedOffset); nil: not packed
	bufs   []*headBuf
	whole  headBuf // the unpacked path's [C, V] array
}

// HeadPackBytes bounds the float32 panels NewHead packs E into (both orientations).
const HeadPackBytes = 64 << 20

// headBlockBytes is what one block's logits and probabilities may take: a core's L2
// (1 MiB on this machine's cores), so they are written and read there and never reach
// memory. Measured on Darkroom Mini's head, blocks of 28 to 126 rows run alike; 14
// rows (B's panels streamed once per tile of rows) ran 10% slower.
const headBlockBytes = 1 << 20

// headBuf is one worker's block scratch.
type headBuf struct {
	a, tile, logits, probs, e []float32
	row                       []float32 // stepWhole's probabilities of one row
}

// HeadStep is what a step's head needs besides the hidden state.
type HeadStep struct {
	Softcap        float32   // the logits' soft-cap c (≤ 0: none)
	InvTemperature float64   // 1/T of the tempered softmax
	Draws          []float64 // per position, the uniform draw of Tempered
	SoftScale      float32   // the soft embedding's factor (the embedding scale, √D)
}

// NewHead returns the head over e [V, D], packing it when it fits HeadPackBytes.
func NewHead(e Matrix) (*Head, error) {
	if err := e.Check(); err != nil {
		return nil, err
	}
	h := &Head{e: e, v: e.Rows, d: e.Cols, kern: gemmKernel}
	if HeadPacks(h.v, h.d) {
		if err := h.pack(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// HeadPacks reports whether NewHead packs an embedding [v, d]: its two packed float32
// copies (nr-wide panels, both orientations) take at most HeadPackBytes. models/speed
// prices a step's head by it.
func HeadPacks(v, d int) bool {
	nr := gemmKernel.nr
	return v > 0 && d > 0 && ceilDiv(v, nr)*nr*d+ceilDiv(d, nr)*nr*v <= HeadPackBytes/4
}

// Packed reports whether NewHead packed E (the fused, blocked path runs).
func (h *Head) Packed() bool { return h.nt != nil }

// packedLen is the float32 count of n columns over depth k packed in nr-wide panels.
func (h *Head) packedLen(n, k int) int { return ceilDiv(n, h.kern.nr) * h.kern.nr * k }

// packedOffset is where the panel of columns [q·nr, q·nr+nr) over depth [pc, pc+kc)
// starts in a packing of n columns over depth k: the depth blocks one after another
// (blockK deep, the last kc), each holding its column panels in order.
func (h *Head) packedOffset(n, k, pc, q int) int {
	nr := h.kern.nr
	return pc*ceilDiv(n, nr)*nr + q*min(blockK, k-pc)*nr
}

// pack decodes E and packs it as the two products read it: for h·Eᵀ E's rows are the
// columns (depth D), for p·E its columns (depth V), each panel as packPanels (h·Eᵀ)
// and MulNN (p·E) would pack it for the product.
func (h *Head) pack() error {
	v, d, nr := h.v, h.d, h.kern.nr
	src, ok := h.e.float32s()
	if !ok {
		src = make([]float32, v*d)
		for r := range v {
			if err := h.e.DecodeRow(src[r*d:(r+1)*d], r); err != nil {
				return err
			}
		}
	}
	h.nt = make([]float32, h.packedLen(v, d))
	for pc := 0; pc < d; pc += blockK {
		kc := min(blockK, d-pc)
		for q := 0; q*nr < v; q++ {
			off := h.packedOffset(v, d, pc, q)
			packPanels(h.nt[off:off+kc*nr], src, d, q*nr, min(nr, v-q*nr), pc, kc, nr)
		}
	}
	h.nn = make([]float32, h.packedLen(d, v))
	for pc := 0; pc < v; pc += blockK {
		kc := min(blockK, v-pc)
		for q := 0; q*nr < d; q++ {
			off := h.packedOffset(d, v, pc, q)
			cols := min(nr, d-q*nr)
			for p := range kc {
				copy(h.nn[off+p*nr:off+p*nr+cols], src[(pc+p)*d+q*nr:][:cols])
			}
		}
	}
	return nil
}

// blockRows is how many positions one block holds: whole micro-tiles whose logits
// and probabilities fit headBlockBytes, at least one tile.
func (h *Head) blockRows() int {
	mr := h.kern.mr
	return mr * max(1, headBlockBytes/(8*h.v*mr))
}

// buf is worker part's scratch: a row of exponentials, and with block the arrays of
// one block's logits and probabilities.
func (h *Head) buf(part int, block bool) *headBuf {
	for len(h.bufs) <= part {
		h.bufs = append(h.bufs, new(headBuf))
	}
	b := h.bufs[part]
	b.e = grow(b.e, h.v)
	if block {
		// probs has rows to spare past the block: packPanels transposes 16 rows
		// at a time, and reads them whole even for the last, partial panel.
		r := h.blockRows()
		b.logits, b.probs = grow(b.logits, r*h.v), grow(b.probs, (r+16)*h.v)
	}
	return b
}

// check refuses slices shorter than rows positions need.
func (h *Head) check(op string, hidden []float32, rows int, outs ...int) error {
	if rows < 0 || len(hidden) < rows*h.d {
		return fmt.Errorf("%s: head: %d hidden values for %d rows of %d", op, len(hidden), rows, h.d)
	}
	for _, n := range outs {
		if n < 0 {
			return fmt.Errorf("%s: head: outputs shorter than %d rows", op, rows)
		}
	}
	return nil
}

// Logits writes out [rows, V] = the soft-capped h·Eᵀ of the hidden rows [rows, D]
// (softcap ≤ 0: none), bit for bit Matrix.MulNT followed by SoftCap on each row.
func (h *Head) Logits(out, hidden []float32, rows int, softcap float32) error {
	if err := h.check("logits", hidden, rows, len(out)-rows*h.v); err != nil {
		return err
	}
	if h.nt == nil || rows < dotRows {
		if err := h.e.MulNT(out, hidden, rows); err != nil {
			return err
		}
		ParallelRows(rows, func(lo, hi int) { softCapRows(out[lo*h.v:hi*h.v], h.v, softcap) })
		return nil
	}
	h.blocks(rows, func(b *headBuf, i0, i1 int) {
		o := out[i0*h.v : i1*h.v]
		h.mulPacked(b, o, hidden[i0*h.d:], i1-i0, h.v, h.d, h.nt)
		softCapRows(o, h.v, softcap)
	})
	return nil
}

// softCapRows is SoftCap on each row of v values of x, by softCapMax (whose argmax it
// drops) as Step caps its rows; the values are SoftCap(x, c)'s, which do not depend on
// where a row's lanes split.
func softCapRows(x []float32, v int, c float32) {
	for i := 0; i+v <= len(x); i += v {
		softCapMax(x[i:i+v], c)
	}
}

// Step runs a denoising step's head over the final-normed hidden rows [rows, D]:
// pos[i] is Tempered over row i's soft-capped logits at s.InvTemperature with draw
// s.Draws[i], and soft [rows, D] the soft embedding softmax(logits·inv)·E·s.SoftScale.
// The logits are not kept.
func (h *Head) Step(soft []float32, pos []Position, hidden []float32, rows int, s HeadStep) error {
	if err := h.check("step", hidden, rows, len(soft)-rows*h.d, len(pos)-rows, len(s.Draws)-rows); err != nil {
		return err
	}
	if rows == 0 {
		return nil
	}
	if h.nt == nil || rows < dotRows {
		return h.stepWhole(soft, pos, hidden, rows, s)
	}
	h.blocks(rows, func(b *headBuf, i0, i1 int) {
		n, v := i1-i0, h.v
		logits, probs := b.logits[:n*v], b.probs
		h.mulPacked(b, logits, hidden[i0*h.d:], n, v, h.d, h.nt)
		for r := range n {
			row := logits[r*v : (r+1)*v]
			am := softCapMax(row, s.Softcap)
			pos[i0+r] = temperedAt(row, b.e, probs[r*v:(r+1)*v], am, s.InvTemperature, s.Draws[i0+r])
		}
		out := soft[i0*h.d : i1*h.d]
		h.mulPacked(b, out, probs, n, h.d, v, h.nn)
		for i := range out {
			out[i] *= s.SoftScale
		}
	})
	return nil
}

// blocks runs fn over [0, rows) in blocks of at most blockRows positions, each worker
// on its own share of micro-tile rows (so the shares differ by at most one tile, as
// mulNTSplit splits a product) with its own scratch.
func (h *Head) blocks(rows int, fn func(b *headBuf, i0, i1 int)) {
	r, mr := h.blockRows(), h.kern.mr
	tiles := ceilDiv(rows, mr)
	parts := min(workers(), tiles)
	for p := range parts {
		h.buf(p, true) // before the workers start: bufs is not grown concurrently
	}
	parallel(parts, func(part int) {
		b := h.bufs[part]
		lo, hi := mr*(tiles*part/parts), min(rows, mr*(tiles*(part+1)/parts))
		for i0 := lo; i0 < hi; i0 += r {
			fn(b, i0, min(hi, i0+r))
		}
	})
}

// stepWhole is Step over E as stored: the logits of all rows by Matrix.MulNT into a
// [rows, V] array kept for the next call, the statistics row by row (each row's
// probabilities then written over its logits), the soft embedding by Matrix.MulNN.
func (h *Head) stepWhole(soft []float32, pos []Position, hidden []float32, rows int, s HeadStep) error {
	v := h.v
	w := &h.whole
	w.logits = grow(w.logits, rows*v)
	if err := h.e.MulNT(w.logits, hidden, rows); err != nil {
		return err
	}
	parts := min(workers(), rows)
	for p := range parts {
		b := h.buf(p, false)
		b.row = grow(b.row, v)
	}
	parallel(parts, func(part int) {
		b := h.bufs[part]
		for i := rows * part / parts; i < rows*(part+1)/parts; i++ {
			row := w.logits[i*v : (i+1)*v]
			am := softCapMax(row, s.Softcap)
			pos[i] = temperedAt(row, b.e, b.row, am, s.InvTemperature, s.Draws[i])
			copy(row, b.row)
		}
	})
	if err := h.e.MulNN(soft, w.logits, rows); err != nil {
		return err
	}
	for i := range soft[:rows*h.d] {
		soft[i] *= s.SoftScale
	}
	return nil
}

// mulPacked computes out [rows, n] = a·bᵀ for a [rows, k] (a may run on past them:
// the vector packing then reads whole groups of rows) and b packed in panels
// (packedOffset), rows at most a block: gemmOp.block's loop nest (columns, depth, then
// macroKernel's micro-tiles) with b's panels read where they are, so each output value
// is the one MulNT computes.
func (h *Head) mulPacked(buf *headBuf, out, a []float32, rows, n, k int, packed []float32) {
	mr, nr := h.kern.mr, h.kern.nr
	nc := blockN / nr * nr
	buf.a = grow(buf.a, ceilDiv(rows, mr)*mr*min(blockK, k))
	buf.tile = grow(buf.tile, mr*nr)
	for jc := 0; jc < n; jc += nc {
		ncols := min(nc, n-jc)
		for pc := 0; pc < k; pc += blockK {
			kc := min(blockK, k-pc)
			packPanels(buf.a, a, k, 0, rows, pc, kc, mr)
			bp := packed[h.packedOffset(n, k, pc, jc/nr):]
			macroKernel(h.kern, out[jc:], n, buf.a, bp, buf.tile, rows, ncols, kc, pc > 0)
		}
	}
}
