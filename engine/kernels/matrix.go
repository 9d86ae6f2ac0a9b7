package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// Matrix is a weight matrix [Rows, Cols] in its stored format, multiplied without
// widening it: the products decode one cache-sized block of it at a time into float32.
// The rows are the outputs and Cols the contracted inputs, as Linear weights are
// stored ([out, in]).
//
// With Spec set (Spec.Bits ≠ 0) the bytes are one of Darkroom's formats (engine/quant):
// Data is NAME.qweight's bytes, Scales NAME.qscale's (Float32 or BFloat16 little
// endian, or NVFP4's Uint8 rows) and Mins NAME.qmin's (affine int4 only). Otherwise Data
// holds the rows as GGUF blocks of type GGUF (engine/gguf): Q4_K, Q6_K, Q4_0, Q4_1, Q8_0
// and the other k- and legacy quants that package reads, or plain F32, F16 and BF16 —
// a bf16 checkpoint's tensor is a Matrix with GGUF = gguf.BF16.
//
// The products check the byte counts first (Check) and return an error for a damaged
// matrix; the caller names the file and tensor.
type Matrix struct {
	Rows, Cols         int
	Spec               quant.Spec
	GGUF               gguf.Type
	Data, Scales, Mins []byte
}

func (w *Matrix) String() string {
	if w.Spec.Bits != 0 {
		return fmt.Sprintf("%s [%d %d]", w.Spec, w.Rows, w.Cols)
	}
	return fmt.Sprintf("%s [%d %d]", w.GGUF, w.Rows, w.Cols)
}

// Check reports whether the stored bytes are exactly what the format needs for
// [Rows, Cols]: a truncated tensor, a wrong block or scale count, or a format the
// kernels cannot decode is an error.
func (w *Matrix) Check() error {
	if w.Rows < 0 || w.Cols < 0 {
		return fmt.Errorf("%s: negative shape", w)
	}
	bytes := func(what string, b []byte, want int) error {
		if len(b) != want {
			return fmt.Errorf("%s: %s holds %d bytes, want %d", w, what, len(b), want)
		}
		return nil
	}
	if w.Spec.Bits == 0 {
		t := w.GGUF
		if !t.Supported() {
			return fmt.Errorf("%s: the kernels cannot decode ggml type %s", w, t)
		}
		if w.Cols%t.BlockSize() != 0 {
			return fmt.Errorf("%s: rows of %d are not whole %s blocks of %d", w, w.Cols, t, t.BlockSize())
		}
		return bytes("data", w.Data, w.Rows*(w.Cols/t.BlockSize())*t.BlockBytes())
	}
	shape := []int{w.Rows, w.Cols}
	if err := w.Spec.Check(shape); err != nil {
		return fmt.Errorf("%s: %w", w, err)
	}
	qw, qs := w.Spec.Shapes(shape)
	if err := bytes("qweight", w.Data, qw[0]*qw[1]*w.Spec.DType().Size()); err != nil {
		return err
	}
	scaleBytes := qs[0] * qs[1] * w.Spec.ScaleDType().Size()
	if err := bytes("qscale", w.Scales, scaleBytes); err != nil {
		return err
	}
	if w.Spec.HasMin() {
		return bytes("qmin", w.Mins, scaleBytes)
	}
	return bytes("qmin", w.Mins, 0)
}

// group is the number of inputs per scale (Darkroom formats) or per block (GGUF).
func (w *Matrix) group() int {
	if w.Spec.Bits == 0 {
		return w.GGUF.BlockSize()
	}
	if w.Spec.GroupSize == 0 {
		return max(w.Cols, 1)
	}
	return w.Spec.GroupSize
}

// decode writes row r, inputs [p0, p1), as float32 into dst[:p1−p0]. p0 is a multiple
// of the format's block (GGUF) or of 2 (nibble pairs), and p1 one too or Cols. The
// matrix has passed Check.
func (w *Matrix) decode(dst []float32, r, p0, p1 int) {
	dst = dst[:p1-p0]
	k := w.Cols
	if w.Spec.Bits == 0 {
		t := w.GGUF
		bs, bb := t.BlockSize(), t.BlockBytes()
		row := w.Data[r*(k/bs)*bb:]
		decodeGGUF(dst, t, row[p0/bs*bb:p1/bs*bb])
		return
	}
	g := w.group()
	switch {
	case w.Spec.Bits == 8:
		codes := w.Data[r*k+p0 : r*k+p1]
		for q := 0; q < len(codes); {
			n := min(len(codes)-q, g-(p0+q)%g)
			s := w.scale(w.Scales, (r*k+p0+q)/g)
			decodeInt8(dst[q:q+n], codes[q:q+n], s)
			q += n
		}
	case w.Spec.Format == quant.FP4:
		groups := k / g
		stride := groups + quant.NVFP4ScaleBytes
		srow := w.Scales[r*stride : (r+1)*stride]
		var scales [64]float32
		var sbytes [64 + quant.NVFP4ScaleBytes]byte
		codes := w.Data[(r*k+p0)/2 : (r*k+p1)/2]
		for q := 0; q < len(dst); {
			// Up to 64 blocks' scales at a time, from their codes and the row's scale_2.
			g0 := (p0 + q) / g
			nb := min(64, ceilDiv(p1-(p0+q), g))
			copy(sbytes[:nb], srow[g0:g0+nb])
			copy(sbytes[nb:], srow[groups:])
			quant.NVFP4RowScales(scales[:nb], sbytes[:nb+quant.NVFP4ScaleBytes])
			if g == 16 {
				decodeE2M1Runs(dst[q:q+16*nb], codes[q/2:q/2+8*nb], scales[:nb])
				q += 16 * nb
				continue
			}
			for b := range nb {
				n := min(len(dst)-q, g-(p0+q)%g)
				decodeE2M1(dst[q:q+n], codes[q/2:(q+n)/2], scales[b])
				q += n
			}
		}
	case g == 32:
		// Up to 128 groups of 32 per vector call, their scales and minimums widened
		// first.
		var scales, mins [128]float32
		affine := w.Spec.Format == quant.Affine
		off := int32(8)
		if affine {
			off = 0
		}
		g0 := (r*k + p0) / 32
		for q := 0; q < len(dst); q += 128 * 32 {
			n := min(128, (len(dst)-q)/32)
			gi := g0 + q/32
			w.scales(scales[:n], w.Scales, gi)
			if affine {
				w.scales(mins[:n], w.Mins, gi)
			}
			decodeInt4Runs(dst[q:q+32*n], w.Data[(r*k+p0+q)/2:(r*k+p0+q)/2+16*n], scales[:n], mins[:n], off)
		}
	default: // int4 in other groups, symmetric or affine
		codes := w.Data[(r*k+p0)/2 : (r*k+p1)/2]
		for q := 0; q < len(dst); {
			n := min(len(dst)-q, g-(p0+q)%g)
			gi := (r*k + p0 + q) / g
			s := w.scale(w.Scales, gi)
			if w.Spec.Format == quant.Affine {
				decodeUint4(dst[q:q+n], codes[q/2:(q+n)/2], s, w.scale(w.Mins, gi))
			} else {
				decodeInt4(dst[q:q+n], codes[q/2:(q+n)/2], s)
			}
			q += n
		}
	}
}

// scales widens entries [i, i+len(dst)) of a Float32 or BFloat16 scale (or minimum)
// tensor.
func (w *Matrix) scales(dst []float32, b []byte, i int) {
	if w.Spec.BF16Scales {
		decodeBF16(dst, b[2*i:2*(i+len(dst))])
		return
	}
	decodeF32(dst, b[4*i:4*(i+len(dst))])
}

// scale reads entry i of a Float32 or BFloat16 scale (or minimum) tensor.
func (w *Matrix) scale(b []byte, i int) float32 {
	if w.Spec.BF16Scales {
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

func decodeBF16Go(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(src[2*i])<<16 | uint32(src[2*i+1])<<24)
	}
}

func decodeInt8Go(dst []float32, codes []byte, s float32) {
	codes = codes[:len(dst)]
	for i, c := range codes {
		dst[i] = float32(int8(c)) * s
	}
}

// decodeInt4Go: element 2i is the low nibble of byte i, 2i+1 the high one; code − 8.
func decodeInt4Go(dst []float32, codes []byte, s float32) {
	dst = dst[:2*len(codes)]
	for i, b := range codes {
		dst[2*i] = float32(int(b&15)-8) * s
		dst[2*i+1] = float32(int(b>>4)-8) * s
	}
}

// decodeUint4: affine int4, q·s rounded to float32, then + m (quant.Dequantize's order).
func decodeUint4(dst []float32, codes []byte, s, m float32) {
	dst = dst[:2*len(codes)]
	for i, b := range codes {
		dst[2*i] = float32(float32(b&15)*s) + m
		dst[2*i+1] = float32(float32(b>>4)*s) + m
	}
}

func decodeE2M1(dst []float32, codes []byte, s float32) {
	dst = dst[:2*len(codes)]
	for i, b := range codes {
		dst[2*i] = quant.E2M1[b&15] * s
		dst[2*i+1] = quant.E2M1[b>>4] * s
	}
}

// MulVec computes out = w·x for x [Cols], out [Rows] (the AR step's product, one pass
// over the weights), the rows split across the worker pool; each row is decoded into a
// buffer and dotted with x.
func (w *Matrix) MulVec(out, x []float32) error {
	if err := w.Check(); err != nil {
		return err
	}
	if len(x) < w.Cols || len(out) < w.Rows {
		return fmt.Errorf("%s: MulVec with x of %d and out of %d", w, len(x), len(out))
	}
	if b, ok := w.float32s(); ok {
		mulNTDots(out, x, b, 1, w.Rows, w.Cols)
		return nil
	}
	w.mulRows(out, x, 1)
	return nil
}

// float32s is an F32 matrix's values in place, when its bytes allow it (aligned, on a
// little-endian machine): the float32 product needs no decoding.
func (w *Matrix) float32s() ([]float32, bool) {
	n := w.Rows * w.Cols
	if w.Spec.Bits != 0 || w.GGUF != gguf.F32 || n == 0 || !littleEndian || uintptr(unsafe.Pointer(&w.Data[0]))%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&w.Data[0])), n), true
}

// mulRows computes out [m, Rows] = a [m, Cols]·wᵀ a decoded row of w at a time (in L1
// or L2: a row is at most tens of KiB), dotted with the m rows of a (MulVec's way, for
// m < dotRows) exactly as MulNT dots float32 rows, so a stored matrix's product is bit
// for bit that of its dequantized float32 twin; bf16, int8 (per row, and in groups of 32
// or a multiple) and int4 g32 without writing the decoded values (the
// same bits), ggml's 4-bit formats without decoding (matrix_dot.go), Q4_K, Q5_K, Q6_K,
// Q5_0 and NVFP4 in integer arithmetic where the canvas's products are
// (matrix_introws.go: x rounded to int8).
func (w *Matrix) mulRows(out, a []float32, m int) {
	if w.intRows() {
		w.mulRowsInt(out, a, m)
		return
	}
	n, k := w.Rows, w.Cols
	parts := dotParts(m * n * k)
	// The fused products' sums of a: scratch from the pool, as every buffer of a product
	// (an AR step makes a thousand of these).
	cb := packBufs.Get().(*packBuf)
	defer packBufs.Put(cb)
	if m == 1 && w.int8Blocks() && blocks32Direct(w.GGUF) {
		// The printer's one row: each row of w dotted from its blocks, decoded in
		// registers (dotBlocks32), their d too.
		groups := k / qGroup
		bb := w.GGUF.BlockBytes()
		parallel(parts, func(part int) {
			for r := n * part / parts; r < n*(part+1)/parts; r++ {
				out[r] = dotBlocks32(a[:k], w.Data[r*groups*bb:(r+1)*groups*bb], w.GGUF, groups)
			}
		})
		return
	}
	if w.int8Blocks() {
		// GGUF's blocks of 32 as int8 codes and a scale per 32, a block of rows at a
		// time, dotted as Darkroom's int8 groups are (the symmetric types: the same
		// bits as decoding them, each value its code times d, as ggml decodes it).
		// Q4_1's and Q5_1's values are d·q + m: their codes q dotted so, then each
		// block's m times x's sum over the block added, as matrix_dot.go sums the
		// 4-bit formats (decoded a value at a time, Q5_1 ran at 1 GB/s of weights);
		// Q5_K's, d·sc·q − dmin·m in each group of 32 of a block of 256, likewise
		// (q5kCodes; decoded, it ran at 0.26 GB/s).
		groups := k / qGroup
		affine := w.affineBlocks32()
		var xs []float32 // a's sums over each block, for the minimums
		if affine {
			cb.dec = grow(cb.dec, m*groups)
			xs = cb.dec[:m*groups]
			for i := range m {
				halfSums(xs[i*groups:(i+1)*groups], a[i*k:(i+1)*k], qGroup)
			}
		}
		bb := w.GGUF.BlockBytes()
		parallel(parts, func(part int) {
			buf := qBufs.Get().(*qBuf)
			defer qBufs.Put(buf)
			if cap(buf.rows) < rowBlock*k {
				buf.rows = make([]byte, rowBlock*k)
			}
			codes := buf.rows[:rowBlock*k]
			buf.rs = grow(buf.rs, rowBlock*groups)
			var mins []float32
			if affine {
				buf.scale = grow(buf.scale, rowBlock*groups)
				mins = buf.scale[:rowBlock*groups]
			}
			r1 := n * (part + 1) / parts
			for r0 := n * part / parts; r0 < r1; r0 += rowBlock {
				h := min(rowBlock, r1-r0)
				for j := range h {
					if w.GGUF == gguf.Q5_K {
						q5kCodes(codes[j*k:(j+1)*k], buf.rs[j*groups:(j+1)*groups], mins[j*groups:(j+1)*groups],
							w.Data[(r0+j)*k/gguf.QK_K*bb:(r0+j+1)*k/gguf.QK_K*bb])
						continue
					}
					w.signedCodes32(codes[j*k:(j+1)*k], buf.rs[j*groups:(j+1)*groups], r0+j)
					if affine { // m, the fp16 after d
						blockHalves(mins[j*groups:(j+1)*groups], w.Data[(r0+j)*groups*bb:(r0+j+1)*groups*bb], bb, 2)
					}
				}
				_ = dotInt8Groups(out[r0:], n, a[:m*k], m, codes[:h*k], buf.rs[:h*groups]) // int8Blocks: it can
				for j := range h * min(1, len(mins)) {
					mj := mins[j*groups : (j+1)*groups]
					for i := range m {
						var s float32
						for b, v := range xs[i*groups : (i+1)*groups] {
							s += mj[b] * v
						}
						out[i*n+r0+j] += s
					}
				}
			}
		})
		return
	}
	if h := w.nibbleHalf(); h > 0 && k > 0 {
		cb.dec = grow(cb.dec, m*k/h)
		xs := cb.dec
		if w.GGUF != gguf.Q4_K || !q4kTabled() { // the table kernels add the minimums with the values
			for i := range m {
				halfSums(xs[i*k/h:(i+1)*k/h], a[i*k:(i+1)*k], h)
			}
		}
		parallel(parts, func(part int) {
			buf := packBufs.Get().(*packBuf)
			defer packBufs.Put(buf)
			buf.dec = grow(buf.dec, 16*q4kRowBlocks) // dotNibbles' scales and minimums
			for r := n * part / parts; r < n*(part+1)/parts; r++ {
				for i := range m {
					out[i*n+r] = w.dotNibbles(r, a[i*k:(i+1)*k], xs[i*k/h:(i+1)*k/h], buf.dec)
				}
			}
		})
		return
	}
	if w.int4Fused() {
		affine := w.Spec.Format == quant.Affine
		// x permuted once into the order the code bytes widen to (dotInt4Rows).
		cb.dec = grow(cb.dec, m*k)
		xp := cb.dec
		for i := range m {
			permuteInt4X(xp[i*k:(i+1)*k], a[i*k:(i+1)*k])
		}
		w.int4RowBlocks(parts, func(r, h int, scales, mins []float32) {
			_ = dotInt4Rows(out[r:], n, xp, m, w.Data[r*k/2:(r+h)*k/2], scales, mins, affine) // int4Fused: it can
		})
		return
	}
	bf16 := w.Spec.Bits == 0 && w.GGUF == gguf.BF16
	g := w.group()
	int8Row := w.Spec.Bits == 8 && k > 0 && g == k                  // one scale per row
	int8Groups := w.Spec.Bits == 8 && g < k && g%32 == 0 && useAVX2 // one per 32 values or more
	// The widened scales of rowBlock rows.
	nScales := 0
	switch {
	case int8Row:
		nScales = rowBlock
	case int8Groups:
		nScales = rowBlock * (k/g + k/32)
	}
	parallel(parts, func(part int) {
		buf := packBufs.Get().(*packBuf)
		defer packBufs.Put(buf)
		buf.dec = grow(buf.dec, k+nScales)
		dec, scales := buf.dec[:k], buf.dec[k:]
		r1 := n * (part + 1) / parts
		for r0 := n * part / parts; r0 < r1; r0 += rowBlock {
			h := min(rowBlock, r1-r0)
			if int8Row || int8Groups { // widened in registers, the same bits
				codes := w.Data[r0*k : (r0+h)*k]
				if int8Row {
					w.scales(scales[:h], w.Scales, r0)
					dotInt8Rows(out[r0:], n, a[:m*k], m, codes, scales[:h], dec)
					continue
				}
				// One scale per 32 values: each group's repeated g/32 times.
				gs, cs := scales[:h*k/g], scales[h*k/g:h*(k/g+k/32)]
				w.scales(gs, w.Scales, r0*k/g)
				if g == 32 {
					cs = gs
				} else {
					for c := range cs {
						cs[c] = gs[c*32/g]
					}
				}
				_ = dotInt8Groups(out[r0:], n, a[:m*k], m, codes, cs) // int8Groups: it can
				continue
			}
			for r := r0; r < r0+h; r++ {
				if bf16 { // widened in registers, the same bits
					for i := range m {
						out[i*n+r] = dotBF16(a[i*k:(i+1)*k], w.Data[2*r*k:2*(r+1)*k], dec)
					}
					continue
				}
				w.decode(dec, r, 0, k)
				for i := range m {
					out[i*n+r] = dot(dec, a[i*k:(i+1)*k])
				}
			}
		}
	})
}

// int8Blocks reports whether mulRows dots w's rows as int8 codes in groups of 32
// (dotInt8Groups, AVX2): GGUF's blocks of 32 with a scale — Q8_0, Q5_0 and Q4_0
// (signedCodes32), and Q4_1 and Q5_1 with their minimums added after
// (affineBlocks32) — which it otherwise decoded a row at a time (Q5_0 and Q5_1 by
// engine/gguf's scalar decoder, about 1 GB/s of weights here).
func (w *Matrix) int8Blocks() bool {
	if w.Spec.Bits != 0 || !useAVX2 || w.Cols == 0 || w.Cols%qGroup != 0 {
		return false
	}
	switch w.GGUF {
	case gguf.Q8_0, gguf.Q5_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_1:
		return true
	case gguf.Q5_K:
		return w.Cols%gguf.QK_K == 0
	}
	return false
}

// affineBlocks32 reports whether w is GGUF's Q4_1 or Q5_1: blocks of 32 whose values
// are d·q + m, which int8Blocks dots as their codes times d plus m times x's block
// sum — not the bits of decoding each value, as the 4-bit formats' dots
// (matrix_dot.go).
func (w *Matrix) affineBlocks32() bool {
	return w.Spec.Bits == 0 && (w.GGUF == gguf.Q4_1 || w.GGUF == gguf.Q5_1 || w.GGUF == gguf.Q5_K)
}

// q5kCodes writes the codes of a row of Q5_K blocks (src, 176 bytes each: fp16 d,
// fp16 dmin, scales[12], qh[32], qs[128]) into dst in input order, q = the low
// nibble (a group of 32 from the low nibbles of a run of 32 qs bytes, the next
// group from their high nibbles) | 16 where the group's bit of qh is set, as ggml
// decodes them, and each group of 32's scale d·sc and minimum −dmin·m into s and mn:
// its values are s·q + mn.
func q5kCodes(dst []byte, s, mn []float32, src []byte) {
	const nib = 0x0f0f0f0f0f0f0f0f
	for b := range len(src) / 176 {
		blk := src[176*b : 176*b+176]
		var sc, m [8]float32
		scalesMinsK4(&sc, &m, (*[12]byte)(blk[4:16]), gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk)),
			gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[2:])))
		for j := range 8 {
			s[8*b+j], mn[8*b+j] = sc[j], -m[j]
		}
		// Eight bytes at a time, unchecked (the slices above bound them): qh's word i
		// serves the four runs' words i.
		_ = dst[256*b+255]
		qh, qs := unsafe.Pointer(&blk[16]), unsafe.Pointer(&blk[48])
		out := unsafe.Pointer(&dst[256*b])
		for i := uintptr(0); i < 32; i += 8 {
			h := *(*uint64)(unsafe.Add(qh, i))
			for run := uintptr(0); run < 4; run++ {
				x := *(*uint64)(unsafe.Add(qs, 32*run+i))
				*(*uint64)(unsafe.Add(out, 64*run+i)) = x&nib | (h>>(2*run)&0x0101010101010101)<<4
				*(*uint64)(unsafe.Add(out, 64*run+32+i)) = x>>4&nib | (h>>(2*run+1)&0x0101010101010101)<<4
			}
		}
	}
}

// rowBlock is the rows of w a dot-product worker takes at a time: their scales are
// widened in one call, and with several rows of a the block's weights are read from
// memory once and from the cache for the rest.
const rowBlock = 8

// int4RowBlocks runs f on parts parts of w's rows (Darkroom's int4 in groups of 32)
// on the pool, rowBlock rows [r, r+h) at a time with their scales and minimums
// widened to float32 (a symmetric group's minimums 0).
func (w *Matrix) int4RowBlocks(parts int, f func(r, h int, scales, mins []float32)) {
	groups := w.Cols / 32
	affine := w.Spec.Format == quant.Affine
	parallel(parts, func(part int) {
		buf := packBufs.Get().(*packBuf)
		defer packBufs.Put(buf)
		buf.dec = grow(buf.dec, 2*rowBlock*groups)
		scales, mins := buf.dec[:rowBlock*groups], buf.dec[rowBlock*groups:2*rowBlock*groups]
		if !affine {
			clear(mins)
		}
		r1 := w.Rows * (part + 1) / parts
		for r := w.Rows * part / parts; r < r1; r += rowBlock {
			h := min(rowBlock, r1-r)
			w.scales(scales[:h*groups], w.Scales, r*groups)
			if affine {
				w.scales(mins[:h*groups], w.Mins, r*groups)
			}
			f(r, h, scales[:h*groups], mins[:h*groups])
		}
	})
}

// int4Fused reports whether mulRows dots w's rows without decoding them: Darkroom's
// int4 in groups of 32 with the vector code, whose sum is bit for bit that of decoding
// and dotting (dotInt4Perm).
func (w *Matrix) int4Fused() bool {
	return useAVX2 && w.Spec.Bits == 4 && w.Spec.Format != quant.FP4 && w.group() == 32 && w.Cols >= 32
}

// MulNT computes out = a·wᵀ for a [m, Cols], out [m, Rows], overwritten: MulNT's
// packed product with each nr-row panel of w decoded into float32 as it is packed
// (below dotRows rows of a, MulVec's decoded rows and dot products).
func (w *Matrix) MulNT(out, a []float32, m int) error {
	if err := w.Check(); err != nil {
		return err
	}
	n, k := w.Rows, w.Cols
	if m < 0 || len(a) < m*k || len(out) < m*n {
		return fmt.Errorf("%s: MulNT with a of %d and out of %d for %d rows", w, len(a), len(out), m)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if b, ok := w.float32s(); ok {
		mulNT(gemmKernel, out, a, b, m, n, k)
		return nil
	}
	if k == 0 || m < dotRows {
		w.mulRows(out, a, m)
		return nil
	}
	if w.useIntProduct(m) {
		w.mulNTInt(out, a, m)
		return nil
	}
	kern := gemmKernel
	packB := func(dst []float32, buf *packBuf, j0, cols, p0, kc int) error {
		nr := kern.nr
		buf.dec = grow(buf.dec, nr*kc)
		for q := 0; q < cols; q += nr {
			h := min(nr, cols-q)
			for r := range h {
				w.decode(buf.dec[r*kc:(r+1)*kc], j0+q+r, p0, p0+kc)
			}
			packPanels(dst[q*kc:], buf.dec[:h*kc], kc, 0, h, 0, kc, nr)
		}
		return nil
	}
	return mulNTSplit(kern, out, a, m, n, k, packB)
}

func dotGo(x, y []float32) float32 {
	var s0, s1, s2, s3 float32
	y = y[:len(x)]
	p := 0
	for ; p+4 <= len(x); p += 4 {
		s0 += x[p] * y[p]
		s1 += x[p+1] * y[p+1]
		s2 += x[p+2] * y[p+2]
		s3 += x[p+3] * y[p+3]
	}
	for ; p < len(x); p++ {
		s0 += x[p] * y[p]
	}
	return (s0 + s1) + (s2 + s3)
}

func decodeInt4RunsGo(dst []float32, codes []byte, scales, mins []float32, off int32) {
	for g := range len(codes) / 16 {
		s, m := scales[g], mins[g]
		y := dst[32*g : 32*g+32]
		for i, b := range codes[16*g : 16*g+16] {
			// The conversions round the product, as the vector code does (no fusing).
			y[2*i] = float32(float32(int32(b&15)-off)*s) + m
			y[2*i+1] = float32(float32(int32(b>>4)-off)*s) + m
		}
	}
}

func decodeNibbleRunsGo(dst []float32, src []byte, runBytes, stride int, sm []float32, off int32) {
	for r := range len(sm) / 4 {
		y := dst[2*runBytes*r : 2*runBytes*(r+1)]
		sl, ml, sh, mh := sm[4*r], sm[4*r+1], sm[4*r+2], sm[4*r+3]
		for i, b := range src[stride*r : stride*r+runBytes] {
			y[i] = float32(float32(int32(b&15)-off)*sl) + ml
			y[runBytes+i] = float32(float32(int32(b>>4)-off)*sh) + mh
		}
	}
}

// decodeGGUF decodes whole blocks of type t: the common 4- and 8-bit types with the
// vector decoders, per block (scales and minimums unpacked here, in ggml's float32
// arithmetic), the rest with engine/gguf's decoders.
func decodeGGUF(dst []float32, t gguf.Type, src []byte) {
	half := func(b []byte) float32 { return gguf.HalfToFloat32(binary.LittleEndian.Uint16(b)) }
	switch t {
	case gguf.F32:
		decodeF32(dst, src)
	case gguf.F16:
		decodeF16(dst, src)
	case gguf.BF16:
		decodeBF16(dst, src)
	case gguf.Q8_0: // {fp16 d; i8 qs[32]}: q·d
		var scales [64]float32
		for b0 := 0; b0 < len(dst)/32; b0 += len(scales) {
			n := min(len(scales), len(dst)/32-b0)
			for b := range n {
				scales[b] = half(src[34*(b0+b):])
			}
			decodeQ8Blocks(dst[32*b0:32*(b0+n)], src[34*b0:34*(b0+n)], scales[:n])
		}
	case gguf.Q4_0, gguf.Q4_1:
		// Q4_0 {fp16 d; u8 qs[16]}: (q − 8)·d; Q4_1 {fp16 d; fp16 m; u8 qs[16]}: q·d + m.
		// One vector call per 64 blocks, their {d, m} pairs first.
		var sm [4 * 64]float32
		bb, codes, off := 18, 2, int32(8)
		if t == gguf.Q4_1 {
			bb, codes, off = 20, 4, 0
		}
		for b0 := 0; b0 < len(dst)/32; b0 += 64 {
			n := min(64, len(dst)/32-b0)
			for b := range n {
				blk := src[bb*(b0+b):]
				d, m := half(blk), float32(0)
				if t == gguf.Q4_1 {
					m = half(blk[2:])
				}
				sm[4*b], sm[4*b+1], sm[4*b+2], sm[4*b+3] = d, m, d, m
			}
			decodeNibbleRuns(dst[32*b0:32*(b0+n)], src[bb*b0+codes:bb*(b0+n)], 16, bb, sm[:4*n], off)
		}
	case gguf.Q4_K: // {fp16 d; fp16 dmin; u8 scales[12]; u8 qs[128]}: d·sc·q − dmin·m
		var sm [16]float32
		for b := range len(dst) / gguf.QK_K {
			blk := src[144*b : 144*b+144]
			var sc, m [8]float32
			scalesMinsK4(&sc, &m, (*[12]byte)(blk[4:16]), half(blk), half(blk[2:]))
			for j := range 8 {
				sm[2*j], sm[2*j+1] = sc[j], -m[j]
			}
			decodeNibbleRuns(dst[gguf.QK_K*b:gguf.QK_K*(b+1)], blk[16:], 32, 32, sm[:], 0)
		}
	case gguf.Q6_K: // {u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d}: d·scale·(q − 32)
		var ds [16]float32
		for b := range len(dst) / gguf.QK_K {
			blk := src[210*b : 210*b+210]
			d := half(blk[208:])
			for i, sc := range blk[192:208] {
				ds[i] = d * float32(int8(sc))
			}
			decodeQ6K(dst[gguf.QK_K*b:gguf.QK_K*(b+1)], blk, &ds)
		}
	case gguf.Q5_K: // d·sc·q − dmin·m per group of 32 (q5kCodes), rounded as ggml's decoder does
		var codes [gguf.QK_K]byte
		var s, mn [8]float32
		for b := range len(dst) / gguf.QK_K {
			q5kCodes(codes[:], s[:], mn[:], src[176*b:176*b+176])
			for g := range 8 {
				y := dst[gguf.QK_K*b+32*g : gguf.QK_K*b+32*g+32]
				for i, q := range codes[32*g : 32*g+32] {
					y[i] = float32(s[g]*sixBits[q]) + mn[g]
				}
			}
		}
	default:
		_ = gguf.Dequantize(t, src, dst) // whole blocks: cannot fail after Check
	}
}

// scalesMinsK4 unpacks the eight 6-bit scales and minimums of a Q4_K block's 12 scale
// bytes (ggml's get_scale_min_k4 for j = 0…7, as engine/gguf's decoder reads them)
// four at a time in 32-bit words, the four bytes q[0:4] (scales 0…3, and the high
// bits of 4…7), q[4:8] (minimums, likewise) and q[8:12] (the low bits of scales and
// minimums 4…7, a nibble each), and writes d·sc_j into s and dmin·m_j into mn.
func scalesMinsK4(s, mn *[8]float32, q *[12]byte, d, dmin float32) {
	u0 := binary.LittleEndian.Uint32(q[0:])
	u1 := binary.LittleEndian.Uint32(q[4:])
	u2 := binary.LittleEndian.Uint32(q[8:])
	sc := uint64(u0&0x3f3f3f3f) | uint64(u2&0x0f0f0f0f|u0>>2&0x30303030)<<32
	m := uint64(u1&0x3f3f3f3f) | uint64(u2>>4&0x0f0f0f0f|u1>>2&0x30303030)<<32
	for j := range 8 {
		s[j], mn[j] = d*sixBits[sc>>(8*j)&63], dmin*sixBits[m>>(8*j)&63]
	}
}

// sixBits holds 0…63 as float32: a table load is cheaper than a conversion.
var sixBits = func() (t [64]float32) {
	for i := range t {
		t[i] = float32(i)
	}
	return
}()

func decodeQ8BlocksGo(dst []float32, src []byte, scales []float32) {
	for b, d := range scales {
		decodeInt8Go(dst[32*b:32*b+32], src[34*b+2:34*b+34], d)
	}
}

func decodeE2M1RunsGo(dst []float32, codes []byte, scales []float32) {
	for b, s := range scales {
		decodeE2M1(dst[16*b:16*b+16], codes[8*b:8*b+8], s)
	}
}

// decodeQ6KGo is ggml's dequantize_row_q6_K for one block, with d·scale precomputed.
func decodeQ6KGo(dst []float32, blk []byte, ds *[16]float32) {
	for h := range 2 {
		ql, qh, y := blk[64*h:], blk[128+32*h:], dst[128*h:]
		for l := range 32 {
			is := 8*h + l/16
			y[l] = ds[is] * float32(int32(ql[l]&0xF|(qh[l]&3)<<4)-32)
			y[l+32] = ds[is+2] * float32(int32(ql[l+32]&0xF|(qh[l]>>2&3)<<4)-32)
			y[l+64] = ds[is+4] * float32(int32(ql[l]>>4|(qh[l]>>4&3)<<4)-32)
			y[l+96] = ds[is+6] * float32(int32(ql[l+32]>>4|(qh[l]>>6&3)<<4)-32)
		}
	}
}

// decodeF32 copies little-endian float32 values: from the bytes themselves where they
// are 4-byte aligned and the machine is little endian (every GOARCH Darkroom ships),
// one by one otherwise (a memory-mapped file need not align its tensors).
func decodeF32(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	if len(dst) > 0 && littleEndian && uintptr(unsafe.Pointer(&src[0]))%4 == 0 {
		copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(&src[0])), len(dst)))
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func dotNibbleRunsGo(x []float32, src []byte, runBytes, stride int, scales []float32) float32 {
	var s float32
	for r := range len(scales) / 2 {
		xr := x[2*runBytes*r : 2*runBytes*(r+1)]
		sl, sh := scales[2*r], scales[2*r+1]
		for i, b := range src[stride*r : stride*r+runBytes] {
			s += float32(float32(b&15)*sl) * xr[i]
			s += float32(float32(b>>4)*sh) * xr[runBytes+i]
		}
	}
	return s
}

func decodeF16Go(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = gguf.HalfToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}
