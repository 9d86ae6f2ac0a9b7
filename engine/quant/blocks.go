package quant

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph code reads best dot-imported.
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// GGUF blocks kept as stored.
//
// On a GPU the graph path holds a GGUF file's tensors of every type Darkroom reads in
// their own bits — Q2_K 2.625 a weight, Q3_K 3.4375, Q4_K 4.5, Q5_K 5.5, Q6_K 6.5625,
// Q4_0 4.5, Q4_1 5, Q5_0 5.5, Q5_1 6, Q8_0 8.5, IQ4_NL 4.5, IQ4_XS 4.25: the file's
// numbers — and unpacks them per matmul block inside the graph (DequantizeGraph),
// where converting them to Darkroom's groups of 32 had cost 4.5 to 9 bits and, for
// all but Q4_0, Q4_1, Q4_K and Q8_0, a second rounding. Each block is taken apart
// into up to three dense tensors (engine/gguf's Split), its bytes unchanged, per
// block along a row:
//
//	format             qweight (codes)        qscale                qmin
//	Q4K (4 bits, g32)  Uint8 128: qs          Uint8 12: 6-bit packed Uint16 2: d, dmin
//	Q5K (5 bits, g32)  Uint8 160: qh‖qs       Uint8 12: 6-bit packed Uint16 2: d, dmin
//	Q6K (6 bits, g16)  Uint8 192: ql‖qh       Int8 16               Uint16 1: d
//	Q40 (4 bits, g32)  Uint8 16: qs           Uint16 1: d           —
//	Q41 (4 bits, g32)  Uint8 16: qs           Uint16 1: d           Uint16 1: m
//	Q50 (5 bits, g32)  Uint8 20: qh‖qs        Uint16 1: d           —
//	Q51 (5 bits, g32)  Uint8 20: qh‖qs        Uint16 1: d           Uint16 1: m
//	Q2K (2 bits, g16)  Uint8 64: qs           Uint8 16: scale|min<<4 Uint16 2: d, dmin
//	Q3K (3 bits, g16)  Uint8 96: hmask‖qs     Uint8 12: 6-bit packed Uint16 1: d
//	IQ4NL (g32)        Uint8 16: qs           Int16 1: d            —
//	IQ4XS (g32)        Uint8 128: qs          Uint8 6: scales_h‖_l  Uint16 1: d
//	int8 F16Scales g32 Int8 32: Q8_0's qs     Uint16 1: d           —
//
// (blocks of 256 for the K-quants and IQ4_XS, 32 for the rest). Uint16 holds IEEE binary16
// bits (GoMLX's go backend has no Float16), decoded in the graph by halfGraph. The
// values are ggml's own (dequantize_row_q4_K and the rest): every product before the
// last rounding is exact in float32, so the graph and engine/gguf's Dequantize of the
// blocks agree bit for bit (TestBlocksGraph). On the host these formats are not
// decoded here (Dequantize refuses them): engine/weights' Set.Float32 joins the parts
// back into the file's blocks for engine/gguf's Dequantize, the one host decoder. The K-quants' 6-bit scales and minimums stay packed as ggml
// packs them (get_scale_min_k4) and are unpacked per block with float arithmetic,
// like the nibbles and the fifth and sixth bits (the go backend has no shifts). This
// package does not import engine/gguf (whose tests use it): engine/weights maps
// block types to these formats.

// blockLayout is a kept GGUF block format's stored parts per block.
type blockLayout struct {
	name       string
	bits       int          // Spec.Bits
	group      int          // Spec.GroupSize: the sub-block a scale covers
	block      int          // values a block
	codes      int          // qweight bytes a block
	scales     int          // qscale elements a block
	scaleDType dtypes.DType // qscale's dtype
	supers     int          // qmin elements a block (binary16 bits; 0: no qmin)
}

var blockLayouts = map[Format]blockLayout{
	Q4K: {"q4_k", 4, 32, 256, 128, 12, dtypes.Uint8, 2},
	Q5K: {"q5_k", 5, 32, 256, 160, 12, dtypes.Uint8, 2},
	Q6K: {"q6_k", 6, 16, 256, 192, 16, dtypes.Int8, 1},
	Q40: {"q4_0", 4, 32, 32, 16, 1, dtypes.Uint16, 0},
	Q41: {"q4_1", 4, 32, 32, 16, 1, dtypes.Uint16, 1},
	Q50: {"q5_0", 5, 32, 32, 20, 1, dtypes.Uint16, 0},
	Q51: {"q5_1", 5, 32, 32, 20, 1, dtypes.Uint16, 1},
	Q2K: {"q2_k", 2, 16, 256, 64, 16, dtypes.Uint8, 2},
	Q3K: {"q3_k", 3, 16, 256, 96, 12, dtypes.Uint8, 1},
	// IQ4_NL's parts are laid out as Q4_0's: its binary16 scales are stored as Int16
	// (the same bits) to tell the two apart.
	IQ4NL: {"iq4_nl", 4, 32, 32, 16, 1, dtypes.Int16, 0},
	IQ4XS: {"iq4_xs", 4, 32, 256, 128, 6, dtypes.Uint8, 1},
}

// kvaluesIQ4 are IQ4_NL's and IQ4_XS's sixteen levels, a nibble's value before its
// scale (ggml's kvalues_iq4nl; engine/gguf's dequantization has the same table,
// TestBlocksGraph holds the two to each other).
var kvaluesIQ4 = [16]float32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func (k blockLayout) spec(f Format) Spec { return Spec{Bits: k.bits, GroupSize: k.group, Format: f} }

// Kept formats of GGUF blocks (see above), and Q8_0 as int8 with its binary16
// scales.
var (
	KQ4    = blockLayouts[Q4K].spec(Q4K)
	KQ5    = blockLayouts[Q5K].spec(Q5K)
	KQ6    = blockLayouts[Q6K].spec(Q6K)
	BQ40   = blockLayouts[Q40].spec(Q40)
	BQ41   = blockLayouts[Q41].spec(Q41)
	BQ50   = blockLayouts[Q50].spec(Q50)
	BQ51   = blockLayouts[Q51].spec(Q51)
	KQ2    = blockLayouts[Q2K].spec(Q2K)
	KQ3    = blockLayouts[Q3K].spec(Q3K)
	BIQ4NL = blockLayouts[IQ4NL].spec(IQ4NL)
	BIQ4XS = blockLayouts[IQ4XS].spec(IQ4XS)
	Q8F16  = Spec{Bits: 8, GroupSize: 32, F16Scales: true}
)

// Kept reports whether s is one of the formats that keep GGUF blocks as stored (the
// block formats, binary16 scales): the graph path reads them; the host kernels and
// Dequantize do not (the host path multiplies a GGUF's blocks themselves,
// engine/kernels).
func (s Spec) Kept() bool {
	_, k := blockLayouts[s.Format]
	return k || s.F16Scales
}

// blockOf finds the block format stored tensors of these dtypes and shapes hold,
// and their blocks a row: qscale's dtype, qmin's presence and the parts' sizes a
// row in a block's proportions (no other format has a Uint16 qmin, or a Uint16 or
// Int8 qscale beside Uint8 codes).
func blockOf(qweight, qscale shapes.Shape, qmin ...shapes.Shape) (Format, int, bool) {
	if qweight.DType != dtypes.Uint8 || qweight.Rank() == 0 || qscale.Rank() == 0 || len(qmin) > 1 {
		return 0, 0, false
	}
	last := func(s shapes.Shape) int { return s.Dimensions[s.Rank()-1] }
	for f, k := range blockLayouts {
		if qscale.DType != k.scaleDType || (k.supers > 0) != (len(qmin) == 1) {
			continue
		}
		if k.supers > 0 && (qmin[0].DType != dtypes.Uint16 || qmin[0].Rank() == 0) {
			continue
		}
		nb := last(qscale) / k.scales
		if nb == 0 || last(qscale) != nb*k.scales || last(qweight) != nb*k.codes || (k.supers > 0 && last(qmin[0]) != nb*k.supers) {
			continue
		}
		return f, nb, true
	}
	return 0, 0, false
}

// halfPow2 is 2^(max(e, 1) − 25) for a binary16 exponent field e: the factor that
// turns the 11-bit significand (the implicit bit added by the caller) into the
// value. e = 31 (infinities and NaNs) is +Inf, so a non-finite scale stays
// non-finite (a NaN becomes an infinity).
var halfPow2 = func() [32]float32 {
	var t [32]float32
	for e := range t {
		t[e] = float32(math.Ldexp(1, max(e, 1)-25))
	}
	t[31] = float32(math.Inf(1))
	return t
}()

// halfGraph decodes binary16 bits (a Uint16 node, or Int16: IQ4_NL's) to Float32,
// exactly: the sign, the exponent and the significand split with float arithmetic,
// the power of two looked up (halfPow2).
func halfGraph(u *Node) *Node {
	g := u.Graph()
	h := ConvertDType(u, dtypes.Float32)
	if u.DType() == dtypes.Int16 { // the same bits read as unsigned: +65536 below zero
		h = Sub(h, MulScalar(Floor(MulScalar(h, 1.0/65536)), 65536))
	}
	sign := Floor(MulScalar(h, 1.0/32768))
	r := Sub(h, MulScalar(sign, 32768))
	e := Floor(MulScalar(r, 1.0/1024))
	m := Sub(r, MulScalar(e, 1024))
	idx := Reshape(ConvertDType(e, dtypes.Int32), e.Shape().Size(), 1) // flat: the go backend's Gather wants [N, 1]
	pow := Reshape(Gather(Const(g, halfPow2[:]), idx), e.Shape().Dimensions...)
	sig := Add(m, MulScalar(MinScalar(e, 1), 1024)) // the implicit bit, but for subnormals
	return Mul(Mul(sig, pow), OneMinus(MulScalar(sign, 2)))
}

// scaleGraph is a stored scale (or minimum) as Float32: binary16 bits decoded,
// anything else converted.
func scaleGraph(s *Node) *Node {
	if s.DType() == dtypes.Uint16 || s.DType() == dtypes.Int16 {
		return halfGraph(s)
	}
	return ConvertDType(s, dtypes.Float32)
}

// nibbles splits bytes x (Float32 values 0…255) into low and high nibbles.
func nibbles(x *Node) (lo, hi *Node) {
	hi = Floor(MulScalar(x, 1.0/16))
	return Sub(x, MulScalar(hi, 16)), hi
}

// bitField is ⌊x / 2^shift⌋ mod 2^width for x of Float32 byte values.
func bitField(x *Node, shift, width int) *Node {
	a := Floor(MulScalar(x, 1/float64(int(1)<<shift)))
	b := Floor(MulScalar(x, 1/float64(int(1)<<(shift+width))))
	return Sub(a, MulScalar(b, float64(int(1)<<width)))
}

// bits is the 8·m bits of bytes x [..., m] (Float32 values 0…255) as 0/1 values
// [..., 8·m], bit i of byte k at 8k + i (a little-endian bit field).
func bits(x *Node) *Node {
	var b []*Node
	for i := range 8 {
		b = append(b, bitField(x, i, 1))
	}
	d := x.Shape().Dimensions
	return Reshape(Stack(b, -1), append(append([]int{}, d[:len(d)-1]...), 8*d[len(d)-1])...)
}

// lookup is table[x] for x of Float32 indices 0…len(table)−1 (a gather from a
// constant; flat: the go backend's Gather wants [N, 1]).
func lookup(table []float32, x *Node) *Node {
	idx := Reshape(ConvertDType(x, dtypes.Int32), x.Shape().Size(), 1)
	return Reshape(Gather(Const(x.Graph(), table), idx), x.Shape().Dimensions...)
}

// blockDequantGraph is DequantizeGraph for the block formats: q, scale and qmin as
// the table above, → Float32 shape.
func blockDequantGraph(q, scale *Node, s Spec, shape []int, qmin ...*Node) *Node {
	k := blockLayouts[s.Format]
	lead := shape[:len(shape)-1]
	nb := shape[len(shape)-1] / k.block
	dims := func(rest ...int) []int { return append(append(append([]int{}, lead...), nb), rest...) }
	codes := Reshape(ConvertDType(q, dtypes.Float32), dims(k.codes)...)
	var sup *Node
	if k.supers > 0 {
		sup = Reshape(halfGraph(qmin[0]), dims(k.supers)...)
	}
	switch s.Format {
	case IQ4NL, IQ4XS:
		// As Q4_0 (IQ4_XS per group of 32 of 16 bytes), each nibble a level of
		// kvaluesIQ4 (looked up).
		lo, hi := nibbles(Reshape(codes, dims(k.block/32, 16)...))
		v := lookup(kvaluesIQ4[:], Concatenate([]*Node{lo, hi}, -1)) // [.., groups, 32]
		if s.Format == IQ4NL {
			return Reshape(Mul(Reshape(halfGraph(scale), dims(1, 1)...), v), shape...) // d·level
		}
		// ls of group g: bits 4(g%2) of scales_l[g/2] and bits 2g of scales_h.
		sc := Reshape(ConvertDType(scale, dtypes.Float32), dims(6)...)
		slo, shi := nibbles(SliceAxis(sc, -1, AxisRange(2, 6)))
		low := Reshape(Stack([]*Node{slo, shi}, -1), dims(8)...)
		sh := SliceAxis(sc, -1, AxisRange(0, 2))
		high := Reshape(Stack([]*Node{bitField(sh, 0, 2), bitField(sh, 2, 2), bitField(sh, 4, 2), bitField(sh, 6, 2)}, -1), dims(8)...)
		dl := Mul(sup, AddScalar(Add(low, MulScalar(high, 16)), -32)) // [.., 8]: d·(ls − 32), exact
		return Reshape(Mul(ExpandAxes(dl, -1), v), shape...)
	case Q2K:
		// Byte 32n + 16h + l holds values 128n + 32j + 16h + l in bits 2j; scale byte
		// 8n + 2j + h: its low nibble the scale, its high one the minimum.
		q := Reshape(codes, dims(2, 1, 2, 16)...)
		var f []*Node
		for j := range 4 {
			f = append(f, bitField(q, 2*j, 2))
		}
		v := Reshape(Concatenate(f, -3), dims(16, 16)...) // [.., 2n·4j·2h, l]
		sc := Reshape(ConvertDType(scale, dtypes.Float32), dims(16)...)
		lo, hi := nibbles(sc)
		d, dmin := SliceAxis(sup, -1, AxisElem(0)), SliceAxis(sup, -1, AxisElem(1))
		dl, ml := ExpandAxes(Mul(d, lo), -1), ExpandAxes(Mul(dmin, hi), -1)
		return Reshape(Sub(Mul(dl, v), ml), shape...) // dl·q − ml, as ggml
	case Q3K:
		// qs byte 32n + l holds values 128n + 32j + l in bits 2j; bit 4n + j of hmask
		// byte l adds 4 to it (less 4 either way); sixteen 6-bit scales, less 32.
		hm := SliceAxis(codes, -1, AxisRange(0, 32))
		qs := Reshape(SliceAxis(codes, -1, AxisRange(32, 96)), dims(2, 1, 32)...)
		var f []*Node
		for j := range 4 {
			f = append(f, bitField(qs, 2*j, 2))
		}
		var hb []*Node
		for b := range 8 {
			hb = append(hb, bitField(hm, b, 1))
		}
		h := Reshape(Stack(hb, -2), dims(2, 4, 32)...)
		v := AddScalar(Add(Concatenate(f, -2), MulScalar(h, 4)), -4)
		v = Reshape(v, dims(16, 16)...)
		sc3 := Reshape(ConvertDType(scale, dtypes.Float32), dims(3, 4)...)
		part := func(i int) *Node { return Reshape(SliceAxis(sc3, -2, AxisElem(i)), dims(4)...) }
		a, b, c := part(0), part(1), part(2)
		aLo, aHi := nibbles(a)
		bLo, bHi := nibbles(b)
		scales := AddScalar(Concatenate([]*Node{
			Add(aLo, MulScalar(bitField(c, 0, 2), 16)), Add(bLo, MulScalar(bitField(c, 2, 2), 16)),
			Add(aHi, MulScalar(bitField(c, 4, 2), 16)), Add(bHi, MulScalar(bitField(c, 6, 2), 16)),
		}, -1), -32) // [.., 16]
		dl := ExpandAxes(Mul(sup, scales), -1) // d·scale, exact
		return Reshape(Mul(dl, v), shape...)
	case Q40, Q41, Q50, Q51:
		// Value j < 16 is byte j's low nibble, value 16 + j its high one; Q5's fifth
		// bit of value j is bit j of qh (a little-endian uint32).
		lo, hi := nibbles(SliceAxis(codes, -1, AxisRange(k.codes-16, k.codes)))
		v := Concatenate([]*Node{lo, hi}, -1) // [.., 32]
		if k.codes == 20 {
			v = Add(v, MulScalar(bits(SliceAxis(codes, -1, AxisRange(0, 4))), 16))
		}
		d := Reshape(halfGraph(scale), dims(1)...)
		switch s.Format {
		case Q40:
			return Reshape(Mul(AddScalar(v, -8), d), shape...)
		case Q50:
			return Reshape(Mul(AddScalar(v, -16), d), shape...)
		}
		return Reshape(Add(Mul(v, d), sup), shape...) // q·d + m
	case Q6K:
		// Per half of 128: ql's 64 bytes give the low 4 bits (byte l's low nibble is
		// value l, byte l+32's value l+32, their high nibbles values l+64 and l+96),
		// qh's 32 bytes the high 2 bits (bits 2k, 2k+1 of byte l: value l + 32k).
		sc := Reshape(ConvertDType(scale, dtypes.Float32), dims(k.scales)...)
		ql := Reshape(SliceAxis(codes, -1, AxisRange(0, 128)), dims(2, 2, 32)...) // [.., half, l/32, l%32]
		qh := Reshape(SliceAxis(codes, -1, AxisRange(128, 192)), dims(2, 32)...)
		lo, hi := nibbles(ql)
		low := Reshape(Stack([]*Node{lo, hi}, -3), dims(2, 4, 32)...) // [.., half, quarter, l]
		high := Stack([]*Node{bitField(qh, 0, 2), bitField(qh, 2, 2), bitField(qh, 4, 2), bitField(qh, 6, 2)}, -2)
		v := AddScalar(Add(low, MulScalar(high, 16)), -32)
		v = Reshape(v, dims(16, 16)...)                     // sixteen sub-blocks of 16
		dsc := Mul(ExpandAxes(sc, -1), ExpandAxes(sup, -1)) // [.., 16, 1]: d·scale, exact
		return Reshape(Mul(dsc, v), shape...)               // (d·scale)·q, as ggml
	}
	// Q4K, Q5K: each run of 32 bytes of qs holds two sub-blocks of 32, the low nibbles
	// then the high ones; Q5K's qh adds bit 2j+i of byte l to sub-block 2j+i's value l.
	sc := Reshape(ConvertDType(scale, dtypes.Float32), dims(k.scales)...)
	lo, hi := nibbles(Reshape(SliceAxis(codes, -1, AxisRange(k.codes-128, k.codes)), dims(4, 32)...))
	v := Reshape(Stack([]*Node{lo, hi}, -2), dims(8, 32)...)
	if s.Format == Q5K {
		qh := SliceAxis(codes, -1, AxisRange(0, 32))
		var b []*Node
		for i := range 8 {
			b = append(b, bitField(qh, i, 1))
		}
		v = Add(v, MulScalar(Stack(b, -2), 16))
	}
	// The 12 scale bytes A, B, C (4 each): sub-block j < 4 has scale A&63, min B&63;
	// j ≥ 4 scale (C&15) | (A>>6)<<4, min (C>>4) | (B>>6)<<4 (get_scale_min_k4).
	sc3 := Reshape(sc, dims(3, 4)...)
	part := func(i int) *Node { return Reshape(SliceAxis(sc3, -2, AxisElem(i)), dims(4)...) }
	a, b, c := part(0), part(1), part(2)
	a6, b6 := bitField(a, 6, 2), bitField(b, 6, 2)
	cLo, cHi := nibbles(c)
	scales := Concatenate([]*Node{Sub(a, MulScalar(a6, 64)), Add(cLo, MulScalar(a6, 16))}, -1) // [.., 8]
	mins := Concatenate([]*Node{Sub(b, MulScalar(b6, 64)), Add(cHi, MulScalar(b6, 16))}, -1)
	d := SliceAxis(sup, -1, AxisElem(0))    // [.., 1]
	dmin := SliceAxis(sup, -1, AxisElem(1)) // [.., 1]
	d1 := ExpandAxes(Mul(d, scales), -1)    // [.., 8, 1]: d·sc, exact
	m1 := ExpandAxes(Mul(dmin, mins), -1)
	return Reshape(Sub(Mul(v, d1), m1), shape...) // d1·q − m1, as ggml
}
