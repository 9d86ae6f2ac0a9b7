package kernels

import (
	"encoding/binary"
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// The canvas product against integer weights in integer arithmetic (AVX-512 VNNI or
// AVX-VNNI, or AVX2 for codes up to 15): MulNT (and MulNN of a per-row int8 matrix:
// the soft embedding, mulNNInt) give out = a·wᵀ with a's rows quantized to int8 in
// groups of 32 inputs and w's codes taken as stored, widened only to bytes. Each
// group's 32 products are summed exactly in int32 (VPDPBUSD: four unsigned bytes of w
// times four signed bytes of a into each of sixteen lanes, 64 multiply-adds an
// instruction against a float32 FMA's 16), then scaled into the float32 result:
//
//	out[i,j] = Σ_g sa[i,g]·sw[j,g]·Σ_{p∈g} qa[i,p]·u[j,p] + mw[j,g]·sa[i,g]·Σ_{p∈g} qa[i,p]
//
// where a[i,p] ≈ sa[i,g]·qa[i,p] (qa in [−127, 127], sa = max|a|/127 over the group,
// rounded to nearest) and w[j,p] = sw[j,g]·u[j,p] + mw[j,g] exactly (u an unsigned
// byte: an int4 code, or an int8 code + 128, with the format's scale and its offset or
// minimum folded into mw). NVFP4's blocks of 16 inputs, one FP8 scale each, take
// groups of 16 (a kernel of their own, kern16; a's rows quantized in groups of 16 too,
// quantizeRow16): u is the E2M1 value doubled plus 12, an integer in [0, 24]
// (nvfp4Codes), sw the block's scale halved and mw = −12·sw. This is llama.cpp's
// scheme for its quantized CPU products (activations in Q8 blocks of 32). Against the
// float32 path it adds a's rounding, a relative error of about 0.2% of a group's
// largest value per input, averaged over the contraction; the weights are the stored
// ones either way.
//
// Intel's desktop cores since Alder Lake (2021) have no AVX-512 but AVX-VNNI:
// VPDPBUSD on 32-byte ymm registers, VEX-encoded, for every code
// (qkernel3x16AVXVNNI, 32 multiply-adds an instruction). CPUs with AVX2 and no VNNI at
// all (AMD before Zen 4, Intel before 2019) take VPMADDUBSW, which adds pairs of byte
// products into saturating 16-bit words: exact for 4-bit codes — int4, Q4_K, Q4_0,
// Q4_1 (a word's 16 products of a group stay below 2¹⁵) — and in groups of 16 (a
// word's 8 products) for codes up to 31: NVFP4's (up to 24), Q3_K's and Q2_K's, and
// the 5-bit ones (Q5_0, Q5_1, Q5_K: intGroup), not for int8's or Q8_0's or Q6_K's,
// whose products keep the float path there (qkernel3x16AVX2; qPath.wide).
//
// The weight codes are packed in panels of qNR columns — MulNT's over the whole
// contraction (mulNTInt), MulNN's a qDepth block at a time — as
// [group][quad][16-column half][16 lanes × 4 bytes],
// each lane four consecutive inputs of one column (a 16×16 transpose of 32-bit words,
// the float path's transpose16), and each group's 32 scales then 32 minimums beside
// them. Activations stay row-major (the micro-kernel broadcasts four bytes of a row at
// a time), with each row's (scale, scale·code sum) pairs in a second array.
const (
	qMR    = 6  // rows of the int8 micro-kernel's tile
	qNR    = 32 // columns of its tile
	qGroup = 32 // inputs per scale, activations and weights alike (NVFP4: 16, intGroup)
	// qDepth is MulNN's depth of packed weights at a time: the padded contraction is
	// cut at multiples of it, so it is a multiple of 64 (a transpose block) as the
	// padded contraction is.
	qDepth = blockK
)

// qPath is one way of running the integer products: its micro-kernel and the codes it
// takes. The CPU's best (qgemm_amd64.go: AVX-512 VNNI, else AVX-VNNI, else AVX2) is
// qBest, the one in use qActive (nil: the float path).
type qPath struct {
	name string
	kern qKernelFunc
	// kern16 is kern over groups of 16 inputs (NVFP4's blocks), codes up to 24 on every
	// path.
	kern16 qKernelFunc
	// wide: codes up to 255 — int8 weights (an int8 code + 128) in MulNT and MulNN,
	// GGUF's Q8_0 and Q6_K, and the 5-bit types in their own groups of 32 — as well as
	// up to 15 in groups of 32 and 31 in groups of 16; the AVX2 kernel's 16-bit sums
	// take only the latter.
	wide bool
	// avx512: its CPUs have AVX-512, whose forms of the helpers (quantizeRow32, …) it
	// takes; the others take AVX2's (qHelpers2).
	avx512 bool
}

// kernel is p's micro-kernel for groups of gs inputs (qGroup or 16).
func (p *qPath) kernel(gs int) qKernelFunc {
	if gs == 16 {
		return p.kern16
	}
	return p.kern
}

// use makes p the path MulNT and MulNN take, its helpers in the forms a CPU whose
// best path p is takes (the Go kernel's: those of the CPU at hand).
func (p *qPath) use() {
	qActive = p
	if p != qGo {
		qHelpers2 = !p.avx512
	}
}

// verified reports whether p's micro-kernels give the Go kernel's tile bit for bit on
// fixed codes (up to 15 where p is not wide; up to 24 over groups of 16) over four
// groups of 16 and two of 32, adding into a tile: microseconds, run once for the path
// a CPU would take.
func (p *qPath) verified() bool {
	const lda, lds = 2 * qGroup, 8 * 4
	var a [qMR * lda]int8
	var pairs [qMR * lds / 4]float32
	var b [2 * 1024]byte
	var bs [2 * qNR * 4]float32
	for i := range a {
		a[i] = int8(i*37%255 - 127)
	}
	for i := range pairs {
		pairs[i] = float32(i%7+1) / 64
	}
	for i := range bs {
		bs[i] = float32(i%11-5) / 32
	}
	for _, gs := range []int{qGroup, 16} {
		for i := range b {
			b[i] = byte(i * 91 % 256)
			switch {
			case gs == 16:
				b[i] %= 25
			case !p.wide:
				b[i] &= 15
			}
		}
		var got, want [qMR * qNR]float32
		for i := range got {
			got[i], want[i] = float32(i%5), float32(i%5)
		}
		groups := lda / gs
		p.kernel(gs)(groups, &a[0], lda, &pairs[0], lds, &b[0], &bs[0], &got[0], qNR, true)
		qGo.kernel(gs)(groups, &a[0], lda, &pairs[0], lds, &b[0], &bs[0], &want[0], qNR, true)
		if got != want {
			return false
		}
	}
	return true
}

// qGo is the Go micro-kernel as a path: the tests run the driver with it where the CPU
// has no vector one.
var qGo = &qPath{name: "go", kern: qKernelGo, kern16: qKernelGo16, wide: true}

// qActive is the integer path MulNT and MulNN take, nil where they take the float one.
var qActive = qBest

// DARKROOM_INT_PRODUCTS=0 in the environment turns the integer products off for the
// process (to compare the two paths, or to rule the integer one out); the name of a
// path this CPU runs ("avx2" on an AVX-512 machine, say) makes it the one taken, its
// helpers in the forms a CPU whose best path it is takes.
func init() {
	switch v := os.Getenv("DARKROOM_INT_PRODUCTS"); v {
	case "", "1":
	case "0":
		SetIntProducts(false)
	default:
		for _, p := range qPaths() {
			if p.name == v {
				qBest = p
				p.use()
			}
		}
	}
}

// IntProducts reports whether MulNT multiplies Darkroom's int4 weights (and, with
// AVX-512 VNNI or AVX-VNNI, int8) in integer arithmetic: on CPUs with either or with
// AVX2, unless SetIntProducts turned it off.
func IntProducts() bool { return qActive != nil }

// IntFormats lists the stored formats whose canvas products run in integer arithmetic
// now ("int4", "nvfp4", "int8"; none where IntProducts is false), and IntKernel names the
// micro-kernel ("avx512-vnni", "avx-vnni", "avx2"; "" where none).
func IntFormats() []string {
	switch {
	case qActive == nil:
		return nil
	case qActive.wide:
		return []string{"int4", "nvfp4", "int8"}
	}
	return []string{"int4", "nvfp4"}
}

// IntGGUF lists the GGUF block types whose canvas products run in integer arithmetic
// now (intCodes: "Q4_K", "Q3_K", "Q2_K", "Q4_0", "Q4_1", and with a wide path "Q5_K",
// "Q6_K", "Q5_0", "Q5_1", "Q8_0"; none where IntProducts is false).
func IntGGUF() []string {
	if qActive == nil {
		return nil
	}
	var names []string
	for _, t := range []gguf.Type{gguf.Q4_K, gguf.Q3_K, gguf.Q2_K, gguf.Q5_K, gguf.Q6_K, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0} {
		if (&Matrix{GGUF: t, Cols: gguf.QK_K}).intCodes(qActive) {
			names = append(names, t.String())
		}
	}
	return names
}

// IntRowFormats lists the stored formats whose printer's products (below dotRows
// rows) run in integer arithmetic now (matrix_introws.go): "int4" with AVX2-class
// kernels (mulRowsInt4Int; AVX-512's float dots keep the memory's pace), "nvfp4",
// and GGUF's "Q4_K", "Q5_0", (AVX2-class, as int4) "Q4_0", and (AVX2's on every CPU)
// "Q5_K", "Q6_K", "Q4_1", "Q5_1", "Q3_K", "Q2_K", "IQ4_NL" and "IQ4_XS" where their
// kernels run.
func IntRowFormats() []string {
	var f []string
	for _, c := range []struct {
		name string
		on   bool
	}{{"int4", int4IntRuns()}, {"nvfp4", nvfp4IntRuns()}, {"Q4_K", q4kIntRuns()}, {"Q5_0", q50IntRuns()}, {"Q4_0", q40IntRuns()},
		{"Q5_K", ymmIntRuns()}, {"Q6_K", ymmIntRuns()}, {"Q4_1", ymmIntRuns()}, {"Q5_1", ymmIntRuns()},
		{"Q3_K", ymmIntRuns()}, {"Q2_K", ymmIntRuns()}, {"IQ4_NL", ymmIntRuns()}, {"IQ4_XS", ymmIntRuns()}} {
		if c.on {
			f = append(f, c.name)
		}
	}
	return f
}

// IntKernel: see IntFormats.
func IntKernel() string {
	if qActive == nil {
		return ""
	}
	return qActive.name
}

// GEMMKernel names the float products' micro-kernel ("avx512-14x32", "avx2-6x16",
// "go4x4").
func GEMMKernel() string { return gemmKernel.name }

// SetIntProducts turns the integer products on (where the CPU has them) or off and
// returns the previous setting. Tests that hold a quantized model to its float32 twin
// within float32 rounding turn them off; nothing may multiply meanwhile.
func SetIntProducts(on bool) (was bool) {
	was, qActive = qActive != nil, nil
	if on {
		qActive = qBest
	}
	return was
}

// qBuf is one worker's packed weight panels and row scratch.
type qBuf struct {
	codes []byte    // panels of groups × 1024 bytes: MulNT's one over the whole contraction, MulNN's of qDepth
	scale []float32 // the panels' groups' 32 scales and 32 minimums
	rows  []byte    // 16 rows' codes, [16][kp]
	rs    []float32 // 16 rows' scales and minimums, [16][kp/32] each
	tile  []float32 // an edge tile
}

var qBufs = sync.Pool{New: func() any { return new(qBuf) }}

// qAct is a's rows quantized: codes [mp][kp] (mp rows padded to qMR with zero rows,
// kp inputs to a multiple of 64 with zeros) and, per row and group of group inputs,
// the pair (sa, sa·Σ codes).
type qAct struct {
	codes    []int8
	pairs    []float32
	mp, kp   int
	group    int // inputs per scale: qGroup, or 16 against NVFP4
	groupsKP int
	scale    []float32 // MulNN's row scales of w, folded into a (mulNNInt)
	zero     []byte    // MulNN's stand-in for w's rows past Rows
}

var qActs = sync.Pool{New: func() any { return new(qAct) }}

// intCodes reports whether path p can multiply w on its integer codes: Darkroom's int8
// (p.wide) and int4 whose scale groups are whole groups of 32 inputs, on rows of whole
// groups of 32; NVFP4 in its blocks of 16 (kern16); GGUF's Q4_K (a scale and a
// minimum per 32 of each block of 256), the bulk of a Q4_K_M file, and the other K
// types (qgemm_k.go): Q3_K and Q2_K in their groups of 16 (kern16), the bulk of a
// Q3_K_M or 2-bit file, Q5_K, and where p is wide Q6_K (groups of 16);
// and GGUF's blocks of 32 with one scale
// (and a minimum) each — Q4_0, Q4_1, Q5_0, Q5_1, and where p is wide Q8_0, the
// types llama.cpp writes a K-quant's tensors in when their rows are not whole blocks
// of 256 (a Q4_K_M 26B's expert and MLP down projections, 704 and 2,112 inputs a row).
// The 5-bit codes (Q5_0, Q5_1, Q5_K: up to 31) take groups of 16 on a narrow path
// (intGroup).
func (w *Matrix) intCodes(p *qPath) bool {
	if w.Spec.Bits == 0 {
		switch w.GGUF {
		case gguf.Q4_K, gguf.Q3_K, gguf.Q2_K, gguf.Q5_K:
			return w.Cols > 0 && w.Cols%gguf.QK_K == 0
		case gguf.Q6_K:
			return p.wide && w.Cols > 0 && w.Cols%gguf.QK_K == 0
		case gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1:
			return w.Cols > 0 && w.Cols%qGroup == 0
		case gguf.Q8_0:
			return p.wide && w.Cols > 0 && w.Cols%qGroup == 0
		}
		return false
	}
	if w.Spec.Format == quant.FP4 {
		return w.group() == 16 && w.Cols > 0 && w.Cols%16 == 0
	}
	if w.Spec.Bits == 8 && !p.wide || w.Spec.Bits != 8 && w.Spec.Bits != 4 {
		return false
	}
	return w.Cols > 0 && w.Cols%qGroup == 0 && w.group()%qGroup == 0
}

// intGroup is the number of inputs per scale in w's integer product on path p
// (intCodes): 16 for NVFP4 and GGUF's Q3_K, Q2_K and Q6_K (codeGroup), else qGroup.
//
// On a narrow path (AVX2's VPMADDUBSW, whose 16-bit words each sum a group's
// products: 16 of them in a group of 32, 8 in one of 16) the 5-bit codes take groups
// of 16 too, each of their groups' scale and minimum twice (packQB): 8·31·127 = 31,496
// fits a word, 16·31·127 would not (Q4_K's 16·15·127 = 30,480 does).
func (w *Matrix) intGroup(p *qPath) int {
	if w.codeGroup() == 16 || !p.wide && w.Spec.Bits == 0 && (w.GGUF == gguf.Q5_0 || w.GGUF == gguf.Q5_1 || w.GGUF == gguf.Q5_K) {
		return 16
	}
	return qGroup
}

// codeGroup is the number of inputs per scale that rowCodes writes for w: 16 for
// NVFP4 and GGUF's Q3_K, Q2_K and Q6_K, else qGroup.
func (w *Matrix) codeGroup() int {
	if w.Spec.Format == quant.FP4 || w.Spec.Bits == 0 && (w.GGUF == gguf.Q3_K || w.GGUF == gguf.Q2_K || w.GGUF == gguf.Q6_K) {
		return 16
	}
	return qGroup
}

// spreadGroups rewrites n groups' values v[:n], in place, as 2n groups' of half the
// inputs, each value twice.
func spreadGroups(v []float32, n int) {
	for j := n - 1; j >= 0; j-- {
		v[2*j+1], v[2*j] = v[j], v[j]
	}
}

// useIntProduct reports whether MulNT takes the integer product for m rows of a.
func (w *Matrix) useIntProduct(m int) bool {
	return qActive != nil && m >= dotRows && w.intCodes(qActive)
}

// quantize fills q with a [m, k]'s rows quantized in groups of gs inputs (qGroup or
// 16: quantizeRow), each column p multiplied by scale[p] first where scale is not nil,
// run across the worker pool when there are many rows.
func (q *qAct) quantize(a, scale []float32, m, k, gs int) {
	q.mp, q.kp = ceilDiv(m, qMR)*qMR, ceilDiv(k, 64)*64
	q.group, q.groupsKP = gs, q.kp/gs
	if cap(q.codes) < q.mp*q.kp {
		q.codes = make([]int8, q.mp*q.kp)
	}
	q.codes = q.codes[:q.mp*q.kp]
	q.pairs = grow(q.pairs, 2*q.mp*q.groupsKP)
	parts := min(workers(), max(1, m*k/(1<<16)))
	whole := k / gs * gs // the rest, a last group of fewer, padded with zeros
	parallel(parts, func(part int) {
		var tail, tailScale [qGroup]float32
		var ts []float32
		if scale != nil && whole < k {
			copy(tailScale[:], scale[whole:k])
			ts = tailScale[:gs]
		}
		for i := m * part / parts; i < m*(part+1)/parts; i++ {
			row := q.codes[i*q.kp : (i+1)*q.kp]
			pairs := q.pairs[2*i*q.groupsKP : 2*(i+1)*q.groupsKP]
			quantizeRow(row[:whole], pairs[:2*whole/gs], a[i*k:i*k+whole], scale, gs)
			done := whole
			if whole < k {
				copy(tail[:], a[i*k+whole:(i+1)*k])
				clear(tail[k-whole:])
				quantizeRow(row[whole:whole+gs], pairs[2*whole/gs:2*whole/gs+2], tail[:gs], ts, gs)
				done += gs
			}
			clear(row[done:])
			clear(pairs[2*done/gs:])
		}
	})
	clear(q.codes[m*q.kp:])
	clear(q.pairs[2*m*q.groupsKP:])
}

// quantizeRow32 and quantizeRow16 are quantizeRow in groups of 32 and of 16.
func quantizeRow32(q []int8, pairs, a, scale []float32) { quantizeRow(q, pairs, a, scale, qGroup) }

func quantizeRow16(q []int8, pairs, a []float32) { quantizeRow(q, pairs, a, nil, 16) }

// quantizeRow32Go is quantizeRowGo in groups of 32.
func quantizeRow32Go(q []int8, pairs, a, scale []float32) { quantizeRowGo(q, pairs, a, scale, qGroup) }

// quantizeRowGo quantizes a (whole groups of gs ≤ 32; each value times scale's where
// scale is not nil) into q, and writes each group's (scale, scale·Σ codes) into pairs.
// A group whose largest magnitude is below 2⁻¹²⁰
// (or zero) is all zero codes with scale 0; one holding an infinity or a NaN has
// scale NaN, so the products it enters are NaN, as the float path's would be.
func quantizeRowGo(q []int8, pairs, a, scale []float32, gs int) {
	var scaled [qGroup]float32
	for g := range len(a) / gs {
		x, qg := a[gs*g:gs*(g+1)], q[gs*g:gs*(g+1)]
		if scale != nil {
			for i, v := range x {
				scaled[i] = v * scale[gs*g+i]
			}
			x = scaled[:gs]
		}
		var top uint32
		for _, v := range x {
			top = max(top, math.Float32bits(v)&0x7fffffff)
		}
		switch {
		case top >= 0x7f800000:
			clear(qg)
			pairs[2*g], pairs[2*g+1] = float32(math.NaN()), 0
			continue
		case top < 0x03800000:
			clear(qg)
			pairs[2*g], pairs[2*g+1] = 0, 0
			continue
		}
		amax := math.Float32frombits(top)
		inv := 127 / amax
		var sum int32
		for i, v := range x {
			c := int32(math.RoundToEven(float64(v * inv)))
			qg[i] = int8(max(-127, min(127, c)))
			sum += c
		}
		s := amax / 127
		pairs[2*g], pairs[2*g+1] = s, s*float32(sum)
	}
}

// rowCodes writes row r of w as unsigned bytes into dst[:Cols], and each group's
// scale and minimum (of 32 inputs, or 16: codeGroup) into s and mn, so that
// w[r,p] = s·u + mn.
func (w *Matrix) rowCodes(dst []byte, s, mn []float32, r int) {
	if w.Spec.Bits == 0 { // GGUF's blocks (intCodes)
		switch w.GGUF {
		case gguf.Q4_K:
			w.rowCodesQ4K(dst, s, mn, r)
		case gguf.Q3_K:
			w.rowCodesQ3K(dst, s, mn, r)
		case gguf.Q2_K:
			w.rowCodesQ2K(dst, s, mn, r)
		case gguf.Q6_K:
			w.rowCodesQ6K(dst, s, mn, r)
		case gguf.Q5_K:
			w.rowCodesQ5K(dst, s, mn, r)
		default: // blocks of 32
			w.rowCodes32(dst, s, mn, r)
		}
		return
	}
	if w.Spec.Format == quant.FP4 {
		w.rowCodesNVFP4(dst, s, mn, r)
		return
	}
	k := w.Cols
	w.groupValues(s, w.Scales, r)
	switch {
	case w.Spec.Bits == 8:
		xor80(dst[:k], w.Data[r*k:(r+1)*k])
		for j := range k / qGroup {
			mn[j] = -128 * s[j]
		}
	case w.Spec.Format == quant.Affine:
		unpackNibbles(dst[:k], w.Data[r*k/2:(r+1)*k/2], &nibbleCodes)
		w.groupValues(mn, w.Mins, r)
	default: // symmetric int4: (code − 8)·s
		unpackNibbles(dst[:k], w.Data[r*k/2:(r+1)*k/2], &nibbleCodes)
		for j := range k / qGroup {
			mn[j] = -8 * s[j]
		}
	}
}

// nibbleCodes is the int4 codes' table for unpackNibbles (each its own value), and
// nvfp4Codes the FP4 E2M1 codes' (quant.E2M1's value doubled, plus 12: 0…24), which
// the NVFP4 printer's dots (vec_amd64.s) read for VPSHUFB too.
var nibbleCodes, nvfp4Codes = func() (id, fp4 [16]byte) {
	for c := range id {
		id[c], fp4[c] = byte(c), byte(12+2*quant.E2M1[c])
	}
	return id, fp4
}()

// rowCodesNVFP4 is rowCodes for NVFP4 (blocks of 16 inputs, each an FP8 scale times
// the row's scale_2: quant.NVFP4RowScales): the codes through nvfp4Codes, so that a
// value E2M1[c]·S is (S/2)·u − 12·(S/2) — scale S/2, minimum −6·S — exactly.
func (w *Matrix) rowCodesNVFP4(dst []byte, s, mn []float32, r int) {
	h := w.codesNVFP4(dst, r)
	// One pass over the block scales (it was two, NVFP4RowScales' then halving: half
	// the decoding's time): S/2 = fp8·(scale_2/2), exactly (fp8·scale_2)/2.
	blocks := w.Cols / 16
	stride := blocks + quant.NVFP4ScaleBytes
	fp8 := w.Scales[r*stride : r*stride+blocks]
	s, mn = s[:len(fp8)], mn[:len(fp8)]
	for j, c := range fp8 {
		s[j], mn[j] = nvfp4BlockScale(c, h)
	}
}

// nvfp4BlockScale is an NVFP4 block's scale and minimum for the integer products'
// codes 2·e2m1 + 12: S/2 and −12·S/2, S/2 its FP8 code c times the row's scale_2
// halved h.
func nvfp4BlockScale(c byte, h float32) (s, mn float32) {
	s = quant.FP8E4M3(c) * h
	return s, -12 * s
}

// codesNVFP4 writes row r's codes as rowCodesNVFP4 does and returns its scale_2
// halved, which each block's FP8 scale multiplies.
func (w *Matrix) codesNVFP4(dst []byte, r int) float32 {
	k := w.Cols
	blocks := k / 16
	stride := blocks + quant.NVFP4ScaleBytes
	unpackNibbles(dst[:k], w.Data[r*k/2:(r+1)*k/2], &nvfp4Codes)
	return quant.NVFP4Scale2(w.Scales[r*stride+blocks:(r+1)*stride]) / 2
}

// panelScalesNVFP4 writes the block scales of rows [r0, r0+16) of an NVFP4 w, whose
// scale_2 halved are h, into dst as packQB's panel holds them (transposeScales'
// places, rowCodesNVFP4's values): the vector code's where it has one
// (nvfp4ScalesVector), and the groups past the row's (to groups) zero.
func (w *Matrix) panelScalesNVFP4(dst []float32, r0 int, h *[16]float32, groups int) {
	blocks := w.Cols / 16
	stride := blocks + quant.NVFP4ScaleBytes
	fp8 := w.Scales[r0*stride : (r0+16)*stride]
	g := nvfp4ScalesVector(dst, fp8, stride, h, blocks)
	nvfp4PanelScalesGo(dst, fp8, stride, h, g, blocks)
	for g := blocks; g < groups; g++ {
		clear(dst[2*qNR*g : 2*qNR*g+16])
		clear(dst[2*qNR*g+qNR : 2*qNR*g+qNR+16])
	}
}

// nvfp4PanelScalesGo writes the block scales of 16 NVFP4 rows (fp8: row r's FP8 codes
// from r·stride; h[r] its scale_2 halved) for groups [g0, g1) in a packed panel's
// places: s = FP8E4M3(c)·h at dst[2·qNR·g + r], the minimum −12·s at
// dst[2·qNR·g + qNR + r].
func nvfp4PanelScalesGo(dst []float32, fp8 []byte, stride int, h *[16]float32, g0, g1 int) {
	for g := g0; g < g1; g++ {
		d := dst[2*qNR*g : 2*qNR*g+qNR+16]
		for r := range 16 {
			d[r], d[qNR+r] = nvfp4BlockScale(fp8[r*stride+g], h[r])
		}
	}
}

// groupValues writes row r's scale (or minimum) tensor b as one value per group of 32
// inputs into dst: the stored ones where the format's groups are of 32, else each
// group of 32 given its group's.
func (w *Matrix) groupValues(dst []float32, b []byte, r int) {
	k, g := w.Cols, w.group()
	groups := k / qGroup
	if g == qGroup {
		w.scales(dst[:groups], b, r*k/g)
		return
	}
	for j := range groups {
		dst[j] = w.scale(b, (r*k+qGroup*j)/g)
	}
}

// rowCodesQ4K is rowCodes for GGUF Q4_K, whose blocks {fp16 d; fp16 dmin; u8
// scales[12]; u8 qs[128]} hold 256 inputs: four runs of 32 bytes, each the low nibbles
// of one group of 32 then the high nibbles of the next, group j's value d·sc_j·q −
// dmin·m_j (the float decoder's arithmetic: scale d·sc_j, minimum −(dmin·m_j)).
func (w *Matrix) rowCodesQ4K(dst []byte, s, mn []float32, r int) {
	const bb = 144
	nb := w.Cols / gguf.QK_K
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	unpackQ4K(dst[:w.Cols], row, nb)
	q4kHeaders(s[:8*nb], mn[:8*nb], row)
}

// q4kHeadersGo is q4kHeaders without vector code.
func q4kHeadersGo(s, mn []float32, src []byte) {
	const bb = 144
	for b := range len(src) / bb {
		blk := src[bb*b : bb*b+16]
		d := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk))
		dmin := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[2:]))
		sb, mb := (*[8]float32)(s[8*b:8*b+8]), (*[8]float32)(mn[8*b:8*b+8])
		scalesMinsK4(sb, mb, (*[12]byte)(blk[4:16]), d, dmin)
		for j := range mb {
			mb[j] = -mb[j]
		}
	}
}

// rowCodes32 is rowCodes for GGUF's blocks of 32 inputs with one fp16 scale d (and,
// in the _1 types, a minimum m) each, ggml's layouts and values:
//
//	Q8_0 {d; i8 qs[32]}: q·d — the code q + 128, minimum −128·d
//	Q4_0 {d; u8 qs[16]}: (q − 8)·d, q the low nibble of qs[j] for input j and the high
//	     one for input j + 16 — minimum −8·d
//	Q4_1 {d; m; u8 qs[16]}: q·d + m
//	Q5_0 {d; u8 qh[4]; u8 qs[16]}: (q − 16)·d, q a Q4_0 nibble with bit j of qh (input
//	     j) above it — minimum −16·d
//	Q5_1 {d; m; u8 qh[4]; u8 qs[16]}: q·d + m
//
// The scales (and minimums) are widened by blockHalves; the codes go eight at a time
// in 64-bit words.
func (w *Matrix) rowCodes32(dst []byte, s, mn []float32, r int) {
	t := w.GGUF
	bb := t.BlockBytes()
	nb := w.Cols / qGroup
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	if codes32Vector(dst, s, mn, row, t, nb) {
		return
	}
	rowCodes32Go(dst, s, mn, row, t, nb)
}

// rowCodes32Go is rowCodes32 of row's nb blocks of type t without vector code (but
// blockHalves' and scaleRow's).
func rowCodes32Go(dst []byte, s, mn []float32, row []byte, t gguf.Type, nb int) {
	bb := t.BlockBytes()
	blockHalves(s[:nb], row, bb, 0)
	switch t {
	case gguf.Q4_1, gguf.Q5_1:
		blockHalves(mn[:nb], row, bb, 2)
	case gguf.Q8_0:
		scaleRow(mn[:nb], s[:nb], nil, -128)
	case gguf.Q4_0:
		scaleRow(mn[:nb], s[:nb], nil, -8)
	case gguf.Q5_0:
		scaleRow(mn[:nb], s[:nb], nil, -16)
	}
	codes32(dst, row, t, nb, false)
}

// codes32 writes the codes of nb GGUF blocks of 32 of type t (row, as rowCodes32
// reads them) into dst, eight at a time in 64-bit words, by pointer (little-endian
// words, as every platform Go runs us on has): unsigned, or with signed the signed
// ones (signedCodes32), each byte less the type's zero without borrowing from the next
// ((x | 0x80…) − z, then the top bit flipped back; Q8_0's bytes as stored).
func codes32(dst, row []byte, t gguf.Type, nb int, signed bool) {
	const nib, top = 0x0f0f0f0f0f0f0f0f, 0x8080808080808080
	bb, off := t.BlockBytes(), codesAt32(t)
	_, _ = dst[qGroup*nb-1], row[bb*nb-1]
	var z uint64 // the zero code in each byte, where signed
	switch {
	case signed && t == gguf.Q4_0:
		z = 0x0808080808080808
	case signed && t == gguf.Q5_0:
		z = 0x1010101010101010
	}
	src, out := unsafe.Pointer(unsafe.SliceData(row)), unsafe.Pointer(unsafe.SliceData(dst))
	word := func(p unsafe.Pointer, i int) uint64 { return *(*uint64)(unsafe.Add(p, i)) }
	put := func(i int, v uint64) {
		if z != 0 {
			v = (v | top) - z ^ top
		}
		*(*uint64)(unsafe.Add(out, i)) = v
	}
	switch t {
	case gguf.Q8_0:
		flip := uint64(top) // q + 128
		if signed {
			flip = 0
		}
		for b := range nb {
			q := unsafe.Add(src, bb*b+off)
			for i := 0; i < qGroup; i += 8 {
				put(qGroup*b+i, word(q, i)^flip)
			}
		}
	case gguf.Q4_0, gguf.Q4_1:
		for b := range nb {
			q := unsafe.Add(src, bb*b+off)
			x0, x1 := word(q, 0), word(q, 8)
			put(qGroup*b, x0&nib)
			put(qGroup*b+8, x1&nib)
			put(qGroup*b+16, x0>>4&nib)
			put(qGroup*b+24, x1>>4&nib)
		}
	default: // Q5_0, Q5_1: qh just before qs
		for b := range nb {
			q := unsafe.Add(src, bb*b+off)
			hi := *(*uint32)(unsafe.Add(q, -4))
			x0, x1 := word(q, 0), word(q, 8)
			put(qGroup*b, x0&nib|highBits[hi&255])
			put(qGroup*b+8, x1&nib|highBits[hi>>8&255])
			put(qGroup*b+16, x0>>4&nib|highBits[hi>>16&255])
			put(qGroup*b+24, x1>>4&nib|highBits[hi>>24])
		}
	}
}

// blockHalves widens the fp16 value at byte at of each of len(dst) blocks of bb bytes
// (src) into dst: 64 blocks' gathered and widened by one decodeF16 (F16C where the
// CPU has it) at a time.
func blockHalves(dst []float32, src []byte, bb, at int) {
	var halves [2 * 64]byte
	for b0 := 0; b0 < len(dst); b0 += 64 {
		n := min(64, len(dst)-b0)
		for b := range n {
			i := bb*(b0+b) + at
			halves[2*b], halves[2*b+1] = src[i], src[i+1]
		}
		decodeF16(dst[b0:b0+n], halves[:2*n])
	}
}

// codesAt32 is where the codes of a block of GGUF type t (one rowCodes32 takes) begin:
// its last 32 bytes (Q8_0's int8 codes) or 16 (the nibbles), after d, m and qh.
func codesAt32(t gguf.Type) int {
	if t == gguf.Q8_0 {
		return t.BlockBytes() - qGroup
	}
	return t.BlockBytes() - qGroup/2
}

// signedCodes32 writes row r of a GGUF Q8_0, Q5_0 or Q4_0 matrix (int8Blocks) as its
// signed codes into dst[:Cols] — q, q − 16, q − 8: each value is its code times its
// block's d, as ggml decodes it — and each block's d into s; of a Q4_1 or Q5_1 matrix,
// its codes q (0…31), each value d·q + m (the minimums are the caller's).
func (w *Matrix) signedCodes32(dst []byte, s []float32, r int) {
	t := w.GGUF
	bb := t.BlockBytes()
	nb := w.Cols / qGroup
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	blockHalves(s[:nb], row, bb, 0)
	codes32(dst, row, t, nb, true)
}

// highBits[b] is eight code bytes holding bit i of b as their fifth bit (16): the high
// bits of eight Q5 codes, from one byte of the block's qh.
var highBits = func() (t [256]uint64) {
	for b := range t {
		for i := range 8 {
			t[b] |= uint64(b>>i&1) << (8*i + 4)
		}
	}
	return t
}()

// unpackQ4KGo writes the codes of nb Q4_K blocks (src, 144 bytes each) into dst in
// input order: per run of 32 bytes, their low nibbles, then their high nibbles.
func unpackQ4KGo(dst, src []byte, nb int) {
	for b := range nb {
		qs, out := src[144*b+16:144*b+144], dst[256*b:256*b+256]
		for run := range 4 {
			for i, x := range qs[32*run : 32*run+32] {
				out[64*run+i], out[64*run+32+i] = x&15, x>>4
			}
		}
	}
}

// xor80Go writes src's bytes with their top bit flipped (an int8 code + 128).
func xor80Go(dst, src []byte) {
	dst = dst[:len(src)]
	i := 0
	for ; i+8 <= len(src); i += 8 {
		v := *(*uint64)(unsafe.Pointer(&src[i])) ^ 0x8080808080808080
		*(*uint64)(unsafe.Pointer(&dst[i])) = v
	}
	for ; i < len(src); i++ {
		dst[i] = src[i] ^ 0x80
	}
}

// unpackNibblesGo writes the table lut's entry for byte i's low nibble to dst[2i]
// and its high one's to dst[2i+1].
func unpackNibblesGo(dst, src []byte, lut *[16]byte) {
	dst = dst[:2*len(src)]
	for i, b := range src {
		dst[2*i], dst[2*i+1] = lut[b&15], lut[b>>4]
	}
}

// packQB packs rows [j0, j0+cols) of w (cols ≤ qNR) over the whole contraction,
// padded to kp inputs (a multiple of 64), into one panel in buf.codes and buf.scale:
// kp/4 quads of 128 code bytes and, per group of gs = w.intGroup(qActive) inputs, 64 floats,
// rows past cols and inputs past Cols zero.
func (w *Matrix) packQB(buf *qBuf, j0, cols, kp int) {
	gs, cg, k := w.intGroup(qActive), w.codeGroup(), w.Cols // cg > gs: rowCodes' groups spread (spreadGroups)
	groups := kp / gs
	if cap(buf.codes) < 32*kp {
		buf.codes = make([]byte, 32*kp)
	}
	buf.codes = buf.codes[:32*kp]
	buf.scale = grow(buf.scale, groups*2*qNR)
	if cap(buf.rows) < 16*kp {
		buf.rows = make([]byte, 16*kp)
	}
	buf.rows = buf.rows[:16*kp]
	buf.rs = grow(buf.rs, 2*16*groups)
	fp4 := w.Spec.Format == quant.FP4
	for h := range 2 {
		// NVFP4's 16 rows, all of them w's, have their block scales written straight
		// into the panel (panelScalesNVFP4), not row by row and transposed.
		direct := fp4 && 16*h+16 <= cols
		var half [16]float32 // their scale_2 halved
		for r := range 16 {
			row := buf.rows[r*kp : (r+1)*kp]
			s := buf.rs[r*groups : (r+1)*groups]
			mn := buf.rs[(16+r)*groups : (17+r)*groups]
			if j := 16*h + r; direct {
				half[r] = w.codesNVFP4(row, j0+j)
				clear(row[k:])
			} else if j < cols {
				w.rowCodes(row, s, mn, j0+j)
				if gs < cg {
					spreadGroups(s, k/cg)
					spreadGroups(mn, k/cg)
				}
				clear(row[k:])
				clear(s[k/gs:])
				clear(mn[k/gs:])
			} else {
				clear(row)
				clear(s)
				clear(mn)
			}
		}
		transposeWords(buf.codes[64*h:], buf.rows, kp)
		if direct {
			w.panelScalesNVFP4(buf.scale[16*h:], j0+16*h, &half, groups)
			continue
		}
		transposeScales(buf.scale[16*h:], buf.rs[:16*groups], groups)
		transposeScales(buf.scale[qNR+16*h:], buf.rs[16*groups:], groups)
	}
}

// transposeScales writes 16 rows' values for each of groups groups (src [16][groups])
// into dst with a stride of one group's 2·qNR scales and minimums: row r's value for
// group g at dst[g·2·qNR + r]. Whole blocks of 16 groups by transpose16 where the CPU
// has it, the rest one by one.
func transposeScales(dst, src []float32, groups int) {
	for g := transposeScalesVector(dst, src, groups); g < groups; g++ {
		for r := range 16 {
			dst[g*2*qNR+r] = src[r*groups+g]
		}
	}
}

// transposeWordsGo is transposeWords: 16 rows of kc bytes (src [16][kc]) into dst as
// 32-bit words, word p of row r at dst[128·p + 4·r] (p < kc/4).
func transposeWordsGo(dst, src []byte, kc int) {
	for r := range 16 {
		for p := range kc / 4 {
			copy(dst[128*p+4*r:128*p+4*r+4], src[r*kc+4*p:r*kc+4*p+4])
		}
	}
}

// qKernelFunc is the int8 micro-kernel's signature (qKernel, qKernelGo).
type qKernelFunc func(groups int, a *int8, lda int, sa *float32, lds int, b *uint8, bs *float32, c *float32, ldc int, accumulate bool)

// mulNTInt computes out = a·wᵀ (MulNT's result, w.useIntProduct(m)) with the active
// path's micro-kernel for w's groups: a quantized once, the columns split across the
// worker pool, each worker packing its own a panel at a time.
func (w *Matrix) mulNTInt(out, a []float32, m int) {
	gs, n, k := w.intGroup(qActive), w.Rows, w.Cols
	kern := qActive.kernel(gs)
	q := qActs.Get().(*qAct)
	defer qActs.Put(q)
	q.quantize(a, nil, m, k, gs)
	panels := ceilDiv(n, qNR)
	parts := min(packedParts(m*n*k/4), panels)
	parallel(parts, func(part int) {
		buf := qBufs.Get().(*qBuf)
		defer qBufs.Put(buf)
		j0, j1 := qNR*(panels*part/parts), min(n, qNR*(panels*(part+1)/parts))
		// A panel of qNR rows of w at a time, over the whole contraction: each row's
		// codes are read from memory in one sequential run (a canvas's product
		// streams the weights once, and an expert's few rows of a leave the reads
		// of the weights as most of its time: cut into depth blocks, each piece of
		// a row was a fresh trip to memory), and the packed panel (a 26B expert's:
		// 2816 inputs, 110 KB) stays in L2 while every row of a passes it.
		for jc := j0; jc < j1; jc += qNR {
			cols := min(qNR, j1-jc)
			w.packQB(buf, jc, cols, q.kp)
			q.multiply(kern, buf, out, m, n, jc, cols, 0, q.kp)
		}
	})
}

// multiply adds (or, at depth 0, writes) the packed block's products for every row of
// a into out's columns [jc, jc+cols), kern taking q's groups.
func (q *qAct) multiply(kern qKernelFunc, buf *qBuf, out []float32, m, n, jc, cols, pc, kc int) {
	groups := kc / q.group
	buf.tile = grow(buf.tile, qMR*qNR)
	for pn := range ceilDiv(cols, qNR) {
		codes := &buf.codes[pn*32*kc]
		scale := &buf.scale[pn*groups*2*qNR]
		w := min(qNR, cols-pn*qNR)
		for i := 0; i < m; i += qMR {
			a := &q.codes[i*q.kp+pc]
			pairs := &q.pairs[2*(i*q.groupsKP+pc/q.group)]
			h := min(qMR, m-i)
			c := out[i*n+jc+pn*qNR:]
			if h == qMR && w == qNR {
				kern(groups, a, q.kp, pairs, 8*q.groupsKP, codes, scale, &c[0], n, pc > 0)
				continue
			}
			tile := buf.tile
			if pc > 0 {
				for r := range h {
					copy(tile[r*qNR:r*qNR+w], c[r*n:r*n+w])
				}
			}
			kern(groups, a, q.kp, pairs, 8*q.groupsKP, codes, scale, &tile[0], qNR, pc > 0)
			for r := range h {
				copy(c[r*n:r*n+w], tile[r*qNR:r*qNR+w])
			}
		}
	}
}

// qKernelGo is the int8 micro-kernel in Go (qkernel6x32VNNI's arithmetic, its float
// steps in the same order, each rounded to float32): a qMR×qNR tile of c from groups
// groups of 32 inputs of a's rows (row stride lda bytes; their scale pairs at row
// stride lds bytes) and the packed panel b (codes) and bs (scales and minimums).
func qKernelGo(groups int, a *int8, lda int, sa *float32, lds int, b *uint8, bs *float32, c *float32, ldc int, accumulate bool) {
	qKernelGoN(qGroup, groups, a, lda, sa, lds, b, bs, c, ldc, accumulate)
}

// qKernelGo16 is qKernelGo over groups of 16 inputs (qkernel6x32VNNIG16's arithmetic).
func qKernelGo16(groups int, a *int8, lda int, sa *float32, lds int, b *uint8, bs *float32, c *float32, ldc int, accumulate bool) {
	qKernelGoN(16, groups, a, lda, sa, lds, b, bs, c, ldc, accumulate)
}

// qKernelGoN is qKernelGo over groups of gs inputs.
func qKernelGoN(gs, groups int, a *int8, lda int, sa *float32, lds int, b *uint8, bs *float32, c *float32, ldc int, accumulate bool) {
	as := unsafe.Slice(a, (qMR-1)*lda+gs*groups)
	ss := unsafe.Slice(sa, ((qMR-1)*lds+8*groups)/4)
	bb := unsafe.Slice(b, 32*gs*groups)
	bf := unsafe.Slice(bs, 2*qNR*groups)
	cs := unsafe.Slice(c, (qMR-1)*ldc+qNR)
	var tile [qMR][qNR]float32
	for g := range groups {
		for r := range qMR {
			s, asum := ss[(r*lds)/4+2*g], ss[(r*lds)/4+2*g+1]
			for j := range qNR {
				var sum int32
				for p := range gs {
					// Quad p/4 of the group, half j/16, lane j%16, byte p%4.
					u := bb[g*32*gs+(p/4)*128+(j/16)*64+(j%16)*4+p%4]
					sum += int32(u) * int32(as[r*lda+g*gs+p])
				}
				t := float32(sum) * bf[g*2*qNR+j]
				tile[r][j] = fma32(t, s, tile[r][j])
				tile[r][j] = fma32(bf[g*2*qNR+qNR+j], asum, tile[r][j])
			}
		}
	}
	for r := range qMR {
		for j := range qNR {
			if accumulate {
				tile[r][j] += cs[r*ldc+j]
			}
			cs[r*ldc+j] = tile[r][j]
		}
	}
}

// intCodesNN reports whether path p can run MulNN on w's integer codes: int8 (p.wide)
// with one scale per row (the int4 and int8 profiles' embedding, whose MulNN is the
// soft embedding), the row's scale folded into a's column, on rows of whole panels of
// qNR columns.
func (w *Matrix) intCodesNN(p *qPath) bool {
	return p.wide && w.Spec.Bits == 8 && w.Spec.Format != quant.FP4 && w.group() == w.Cols && w.Cols%qNR == 0
}

// useIntProductNN reports whether MulNN takes the integer product for m rows of a.
func (w *Matrix) useIntProductNN(m int) bool {
	return qActive != nil && m >= dotRows && w.intCodesNN(qActive)
}

// mulNNInt computes out = a·w (MulNN's result, w.useIntProductNN(m)) with the active
// path's micro-kernel: a [m, Rows] times each row's scale, quantized once; w's codes
// packed as mulNTInt packs wᵀ's, from four rows of w at a time (interleave4), every
// column's scale 1 and minimum −128 (the code's offset).
func (w *Matrix) mulNNInt(out, a []float32, m int) {
	kern, n, k := qActive.kern, w.Cols, w.Rows
	q := qActs.Get().(*qAct)
	defer qActs.Put(q)
	q.scale = grow(q.scale, k)
	w.scales(q.scale, w.Scales, 0)
	q.quantize(a, q.scale, m, k, qGroup)
	if cap(q.zero) < n { // the rows past Rows (their codes meet a's zeros)
		q.zero = make([]byte, n)
	}
	zero := q.zero[:n]
	panels := n / qNR
	parts := min(packedParts(m*n*k/4), panels)
	parallel(parts, func(part int) {
		buf := qBufs.Get().(*qBuf)
		defer qBufs.Put(buf)
		j0, j1 := qNR*(panels*part/parts), qNR*(panels*(part+1)/parts)
		const nc = blockN / qNR * qNR
		for jc := j0; jc < j1; jc += nc {
			cols := min(nc, j1-jc)
			for pc := 0; pc < q.kp; pc += qDepth {
				kc := min(qDepth, q.kp-pc)
				w.packQBT(buf, zero, jc, cols, pc, kc)
				q.multiply(kern, buf, out, m, n, jc, cols, pc, kc)
			}
		}
	})
}

// packQBT is packQB for MulNN: columns [j0, j0+cols) of w (cols a multiple of qNR),
// depth rows [p0, p0+kc) (kc a multiple of 64), rows past Rows read from zero.
func (w *Matrix) packQBT(buf *qBuf, zero []byte, j0, cols, p0, kc int) {
	groups := kc / qGroup
	panels := cols / qNR
	stride := groups * 1024
	if cap(buf.codes) < panels*stride {
		buf.codes = make([]byte, panels*stride)
	}
	buf.codes = buf.codes[:panels*stride]
	buf.scale = grow(buf.scale, panels*groups*2*qNR)
	for i := range panels * groups {
		sg := buf.scale[i*2*qNR : (i+1)*2*qNR]
		for j := range qNR {
			sg[j], sg[qNR+j] = 1, -128
		}
	}
	n := w.Cols
	var rows [4][]byte
	for quad := range kc / 4 {
		for i := range rows {
			if r := p0 + 4*quad + i; r < w.Rows {
				rows[i] = w.Data[r*n+j0 : r*n+j0+cols]
			} else {
				rows[i] = zero[:cols]
			}
		}
		interleave4(buf.codes[128*quad:], stride, &rows, cols)
	}
}

// interleave4Go is interleave4: for each qNR columns of rows (four rows of int8
// codes), 128 bytes at dst — column c's four codes + 128 at 4c within its 16-column
// half's 64 bytes — the next qNR columns panelStride bytes on.
func interleave4Go(dst []byte, panelStride int, rows *[4][]byte, cols int) {
	for pn := range cols / qNR {
		d := dst[pn*panelStride : pn*panelStride+128]
		for c := range qNR {
			for r := range 4 {
				d[(c/16)*64+(c%16)*4+r] = rows[r][pn*qNR+c] ^ 0x80
			}
		}
	}
}
