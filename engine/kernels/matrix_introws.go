package kernels

import (
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// The printer's products (below dotRows rows of x) against GGUF Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, Q4_0, Q4_1, Q5_0 and Q5_1 rows (and NVFP4's, mulRowsNVFP4Int, and with AVX2-class kernels Darkroom's
// int4, mulRowsInt4Int) in integer arithmetic, where the canvas products run that way
// (qgemm.go; with AVX-512 VNNI, else AVX2 — F16C too for the GGUF types, whose Q5_K
// and Q6_K kernels are AVX2's on every CPU): x is quantized once per product as the
// canvas quantizes its rows — int8 in groups of 32, each group's scale max|x|/127
// (quantizeRow32) — and each row's blocks are dotted from their bytes: a group's 32
// code · code products summed exactly in int32 (VPDPBUSD, or VPMADDUBSW and
// VPMADDWD), scaled by the block's scale times the group's x scale, and the offsets —
// Q4_K's and Q5_K's minimums (−dmin·m_j) against x's exact group sums, Q4_1's and
// Q5_1's m and Q5_0's −16·d
// and Q6_K's −32·d·sc (Q3_K's −4·d·sc, Q2_K's minimums) against the sums of x's codes — added apart. llama.cpp dots its
// blocks this way (x in Q8_K and Q8_0 blocks). Against the float kernels
// (dotQ4KTable, dotBlocks32, and the decoders Q5_K and Q6_K went through), whose
// table lookups or conversions and FMAs cost about twice the instructions a block
// and ran below the memory's rate here (Q4_K at two thirds of it, Q5_0 at half, Q5_K
// and Q6_K at a tenth and a quarter), it adds x's rounding, as the canvas's integer
// products do, and no other error.

// intRows reports whether w's product with fewer than dotRows rows of x runs in
// integer arithmetic (mulRowsInt).
func (w *Matrix) intRows() bool {
	if w.Spec.Format == quant.FP4 {
		return nvfp4IntRuns() && w.group() == 16 && w.Cols > 0 && w.Cols%64 == 0
	}
	if w.Spec.Bits == 4 {
		return int4IntRuns() && w.group() == qGroup && w.Cols > 0 && w.Cols%64 == 0
	}
	if w.Spec.Bits != 0 || w.Cols <= 0 {
		return false
	}
	switch w.GGUF {
	case gguf.Q4_K:
		return q4kIntRuns() && w.Cols%gguf.QK_K == 0
	case gguf.Q5_K, gguf.Q6_K, gguf.Q3_K, gguf.Q2_K:
		return ymmIntRuns() && w.Cols%gguf.QK_K == 0
	case gguf.Q4_1, gguf.Q5_1, gguf.IQ4_NL:
		return ymmIntRuns() && w.Cols%qGroup == 0
	case gguf.IQ4_XS:
		return ymmIntRuns() && w.Cols%gguf.QK_K == 0
	case gguf.Q5_0:
		return q50IntRuns() && w.Cols%qGroup == 0
	case gguf.Q4_0:
		return q40IntRuns() && w.Cols%qGroup == 0
	}
	return false
}

// mulRowsInt is mulRows where intRows: out [m, Rows] = a [m, Cols]·wᵀ, a's rows
// quantized once, then each row of w dotted with each of them.
func (w *Matrix) mulRowsInt(out, a []float32, m int) {
	if w.Spec.Format == quant.FP4 {
		w.mulRowsNVFP4Int(out, a, m)
		return
	}
	if w.Spec.Bits == 4 {
		w.mulRowsInt4Int(out, a, m)
		return
	}
	switch w.GGUF {
	case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.Q3_K, gguf.Q2_K:
		w.mulRowsK(out, a, m)
		return
	}
	w.mulRowsBlocks32Int(out, a, m)
}

// mulRowsInt4Int is mulRowsInt for Darkroom's int4 in groups of 32 (with AVX2-class
// kernels: int4IntRuns): x's codes in nibbleOrderX's order, each group's scale spread
// over the lanes its sums take and its xs·Σcode, and a block of rowBlock rows' scales
// and minimums widened at a time (a symmetric group's minimum is −8·s: the kernel
// takes it so), each row dotted
// 64 values at a time (dotInt4IntAVX2). The float dots (dotInt4Rows) widen every code
// to float32 and ran at half the memory's rate with AVX2 alone.
func (w *Matrix) mulRowsInt4Int(out, a []float32, m int) {
	n, k := w.Rows, w.Cols
	groups, steps := k/qGroup, k/64
	affine := w.Spec.Format == quant.Affine
	cb := packBufs.Get().(*packBuf)
	defer packBufs.Put(cb)
	if cap(cb.q) < m*k {
		cb.q = make([]int8, m*k)
	}
	xq := cb.q[:m*k]
	cb.dec = grow(cb.dec, m*(2*groups+8*steps+groups))
	pairs := cb.dec[:2*m*groups]
	xsl := cb.dec[2*m*groups : 2*m*groups+8*m*steps]
	xsum := cb.dec[2*m*groups+8*m*steps : 2*m*groups+8*m*steps+m*groups]
	for i := range m {
		q, p := xq[i*k:(i+1)*k], pairs[2*i*groups:2*(i+1)*groups]
		quantizeRow32(q, p, a[i*k:(i+1)*k], nil)
		nibbleOrderX(q)
		for g := range groups {
			xsum[i*groups+g] = p[2*g+1]
			for l := range 4 {
				xsl[i*8*steps+4*g+l] = p[2*g]
			}
		}
	}
	w.int4RowBlocks(dotParts(m*n*k), func(r0, h int, scales, mins []float32) {
		for j := range h {
			r := r0 + j
			codes := w.Data[r*k/2 : (r+1)*k/2]
			s, mn := scales[j*groups:(j+1)*groups], []float32(nil)
			if affine {
				mn = mins[j*groups : (j+1)*groups]
			}
			for i := range m {
				out[i*n+r] = dotInt4Int(xq[i*k:(i+1)*k], xsl[i*8*steps:(i+1)*8*steps], xsum[i*groups:(i+1)*groups], codes, s, mn)
			}
		}
	})
}

// mulRowsBlocks32Int is mulRowsInt for the types scaled per 32, Q5_0, Q4_0, Q4_1, Q5_1,
// IQ4_NL and IQ4_XS: x's codes in order with quantizeRow32's pairs, each row dotted
// from its blocks, their d (and m) widened in registers (dotQ5_0VNNI,
// dotQ5_0IntAVX2; dotQ4_0IntAVX2; dotQ4_1IntAVX2, dotQ5_1IntAVX2: the float path ran
// at a fifth of the memory's rate; dotIQ4NLIntAVX2, dotIQ4XSIntAVX2: their levels
// looked up by VPSHUFB, where decoding them ran at a thirtieth).
func (w *Matrix) mulRowsBlocks32Int(out, a []float32, m int) {
	n, k := w.Rows, w.Cols
	nb := k / qGroup
	bb := w.GGUF.BlockBytes()
	cb := packBufs.Get().(*packBuf)
	defer packBufs.Put(cb)
	if cap(cb.q) < m*k {
		cb.q = make([]int8, m*k)
	}
	xq := cb.q[:m*k]
	cb.dec = grow(cb.dec, 2*m*nb)
	pairs := cb.dec[:2*m*nb]
	for i := range m {
		quantizeRow32(xq[i*k:(i+1)*k], pairs[2*i*nb:2*(i+1)*nb], a[i*k:(i+1)*k], nil)
	}
	zmm := intRowsZMM()
	blocks := k / w.GGUF.BlockSize() // nb but for IQ4_XS: blocks of 256, a scale per 32
	rowBytes := blocks * bb
	parts := dotParts(m * n * k)
	parallel(parts, func(part int) {
		for r := n * part / parts; r < n*(part+1)/parts; r++ {
			row := w.Data[r*rowBytes : (r+1)*rowBytes]
			for i := range m {
				xq, pairs := xq[i*k:(i+1)*k], pairs[2*i*nb:2*(i+1)*nb]
				switch w.GGUF {
				case gguf.IQ4_NL, gguf.IQ4_XS:
					out[i*n+r] = dotIQ4Int(xq, pairs, row, blocks, w.GGUF)
				case gguf.Q4_0:
					out[i*n+r] = dotQ4_0Int(xq, pairs, row, nb)
				case gguf.Q4_1, gguf.Q5_1:
					out[i*n+r] = dotQ1Int(xq, pairs, row, nb, w.GGUF)
				default:
					out[i*n+r] = dotQ5_0Int(xq, pairs, row, nb, zmm)
				}
			}
		}
	})
}

// mulRowsNVFP4Int is mulRowsInt for NVFP4 (blocks of 16, an FP8 scale each and the
// row's scale_2): x's codes in order with quantizeRow32's pairs and each block's
// xs·Σcode, each row's codes dotted 64 at a time with its scales decoded in
// registers (dotNVFP4VNNI, or dotNVFP4IntAVX2 on CPUs without AVX-512; the kernels'
// codes are the E2M1 values doubled, integers −12…12, so their scales are halved).
// The float path decoded every value and its block scale to float32 first, at about
// half the memory's rate with AVX-512 and a fifth of int4's speed with AVX2 alone
// (BenchmarkMatrixMulVec/nvfp4).
func (w *Matrix) mulRowsNVFP4Int(out, a []float32, m int) {
	n, k := w.Rows, w.Cols
	blocks, groups := k/16, k/qGroup
	stride := blocks + quant.NVFP4ScaleBytes
	cb := packBufs.Get().(*packBuf)
	defer packBufs.Put(cb)
	if cap(cb.q) < m*k {
		cb.q = make([]int8, m*k)
	}
	xq := cb.q[:m*k]
	cb.dec = grow(cb.dec, 2*m*groups+m*blocks)
	pairs, xsum := cb.dec[:2*m*groups], cb.dec[2*m*groups:2*m*groups+m*blocks]
	zmm := intRowsZMM()
	for i := range m {
		q, p := xq[i*k:(i+1)*k], pairs[2*i*groups:2*(i+1)*groups]
		quantizeRow32(q, p, a[i*k:(i+1)*k], nil)
		nvfp4XSums(xsum[i*blocks:(i+1)*blocks], q, p)
		nibbleOrderX(q)
	}
	parts := dotParts(m * n * k)
	parallel(parts, func(part int) {
		for r := n * part / parts; r < n*(part+1)/parts; r++ {
			codes, srow := w.Data[r*k/2:(r+1)*k/2], w.Scales[r*stride:(r+1)*stride]
			for i := range m {
				out[i*n+r] = dotNVFP4Int(xq[i*k:(i+1)*k], pairs[2*i*groups:2*(i+1)*groups], xsum[i*blocks:(i+1)*blocks], codes, srow, zmm)
			}
		}
	})
}

// nibbleOrderX puts x's codes xq (whole steps of 64 values) in the order the
// printer's nibble dots take them (dotNVFP4Int's kernels, dotInt4IntAVX2): in each
// step of 64 values the even values' codes, then the odd ones', as the kernels split
// a step's 32 code bytes into their low nibbles (the even values), then their high
// ones, with no interleaving back (a fifth of the zmm kernel's instructions).
func nibbleOrderX(xq []int8) {
	var t [64]int8
	for s := 0; s+64 <= len(xq); s += 64 {
		step := xq[s : s+64]
		for p := range 32 {
			t[p], t[32+p] = step[2*p], step[2*p+1]
		}
		copy(step, t[:])
	}
}

// nvfp4XSums writes each NVFP4 block's xs·Σcode of x's codes xq and
// quantizeRow32's pairs: the offset dotNVFP4VNNI's codes, shifted by 12, take back.
func nvfp4XSums(xsum []float32, xq []int8, pairs []float32) {
	for b := range xsum {
		var sum int32
		for _, c := range xq[16*b : 16*(b+1)] {
			sum += int32(c)
		}
		xsum[b] = pairs[2*(b/2)] * float32(sum)
	}
}

// q4kIntBlockCodes is where each of a Q4_K block's eight groups of x goes in a block's
// 256 codes for dotQ4KVNNI: groups 0 and 2 (a 64-byte load of code bytes' low
// nibbles), 1 and 3 (their high nibbles), 4 and 6, 5 and 7. dotQ4KIntAVX2 takes them
// in order (a 32-byte load's low nibbles are group 2r, its high ones group 2r+1).
var q4kIntBlockCodes = [2][8]int{
	{0, 32, 64, 96, 128, 160, 192, 224}, // AVX2
	{0, 64, 32, 96, 128, 192, 160, 224}, // AVX-512 VNNI
}

// q4kIntX quantizes x (whole Q4_K blocks of 256) for dotQ4KInt's zmm or ymm kernel:
// xq its codes, block by block in q4kIntBlockCodes' order for that kernel, and xs per
// block its eight groups' scales then their exact sums; codes and pairs are scratch
// of len(x) and len(x)/16.
func q4kIntX(xq []int8, xs []float32, x []float32, codes []int8, pairs []float32, zmm bool) {
	order := &q4kIntBlockCodes[0]
	if zmm {
		order = &q4kIntBlockCodes[1]
	}
	quantizeRow32(codes, pairs, x, nil)
	for b := range len(x) / gguf.QK_K {
		for j, at := range order {
			g := 8*b + j
			copy(xq[256*b+at:256*b+at+qGroup], codes[qGroup*g:qGroup*(g+1)])
			xs[16*b+j] = pairs[2*g]
		}
		halfSums(xs[16*b+8:16*b+16], x[gguf.QK_K*b:gguf.QK_K*(b+1)], qGroup)
	}
}

// q6kXS is how many floats q6kIntX writes per block of 256 (Q6_K, Q3_K, Q2_K): its
// eight groups' x scales, then each sixteen's scale times the sum of its codes.
const q6kXS = 24

// q6kIntX quantizes x (whole blocks of 256) for dotK16Int: xq its codes in order,
// xs per block q6kXS floats; pairs is scratch of len(x)/16.
func q6kIntX(xq []int8, xs []float32, x []float32, pairs []float32) {
	quantizeRow32(xq, pairs, x, nil)
	for b := range len(x) / gguf.QK_K {
		bx := xs[q6kXS*b : q6kXS*(b+1)]
		for j := range 8 {
			bx[j] = pairs[2*(8*b+j)]
		}
		for i := range 16 {
			var sum int32
			for _, c := range xq[gguf.QK_K*b+16*i : gguf.QK_K*b+16*(i+1)] {
				sum += int32(c)
			}
			bx[8+i] = bx[i/2] * float32(sum)
		}
	}
}

// mulRowsK is mulRowsInt for the K types (blocks of 256): each row of a quantized
// once, in the order its kernel takes the codes — Q4_K's and Q5_K's by q4kIntX (the
// blocks' code bytes' order), each group's scale and exact sum beside; Q6_K's,
// Q3_K's and Q2_K's by q6kIntX, each sixteen's scale times its code sum beside —
// then each row of w dotted from its blocks, their headers decoded in registers
// (dotQ4KInt, dotQ5KInt, dotK16Int). The float paths decoded every value first: Q6_K
// at a quarter of the memory's rate (decodeQ6K), Q5_K at a tenth, Q3_K and Q2_K at a
// hundredth (gguf.Dequantize).
func (w *Matrix) mulRowsK(out, a []float32, m int) {
	n, k, t := w.Rows, w.Cols, w.GGUF
	nb := k / gguf.QK_K
	perBlock := q6kXS // x's floats per block
	if t == gguf.Q4_K || t == gguf.Q5_K {
		perBlock = 16
	}
	zmm := intRowsZMM() && t == gguf.Q4_K
	cb := packBufs.Get().(*packBuf)
	defer packBufs.Put(cb)
	if cap(cb.q) < m*k+k {
		cb.q = make([]int8, m*k+k)
	}
	xq, codes := cb.q[:m*k], cb.q[m*k:m*k+k]
	cb.dec = grow(cb.dec, perBlock*m*nb+k/16)
	xs, pairs := cb.dec[:perBlock*m*nb], cb.dec[perBlock*m*nb:perBlock*m*nb+k/16]
	xRow := func(i int) ([]int8, []float32) { return xq[i*k : (i+1)*k], xs[perBlock*i*nb : perBlock*(i+1)*nb] }
	for i := range m {
		xi, si := xRow(i)
		if perBlock == 16 {
			q4kIntX(xi, si, a[i*k:(i+1)*k], codes, pairs, zmm)
		} else {
			q6kIntX(xi, si, a[i*k:(i+1)*k], pairs)
		}
	}
	bb := t.BlockBytes()
	parts := dotParts(m * n * k)
	parallel(parts, func(part int) {
		for r := n * part / parts; r < n*(part+1)/parts; r++ {
			row := w.Data[r*nb*bb : (r+1)*nb*bb]
			for i := range m {
				xi, si := xRow(i)
				switch t {
				case gguf.Q4_K:
					out[i*n+r] = dotQ4KInt(xi, si, row, nb, zmm)
				case gguf.Q5_K:
					out[i*n+r] = dotQ5KInt(xi, si, row, nb)
				default:
					out[i*n+r] = dotK16Int(xi, si, row, nb, t)
				}
			}
		}
	})
}
