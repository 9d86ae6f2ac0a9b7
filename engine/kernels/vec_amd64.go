//go:build !noasm

package kernels

import (
	"golang.org/x/sys/cpu"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// dotAVX2 returns Σ x[i]·y[i] for n (a positive multiple of 32) values (vec_amd64.s).
//
//go:noescape
func dotAVX2(x, y *float32, n int) float32

// dot returns Σ x[i]·y[i] over len(x) values (y at least as long).
func dot(x, y []float32) float32 {
	n := 0
	var s float32
	if useAVX2 && len(x) >= 32 {
		n = len(x) &^ 31
		s = dotAVX2(&x[0], &y[0], n)
	}
	return s + dotGo(x[n:], y[n:len(x)])
}

// decodeBF16AVX2 widens n (a positive multiple of 16) bfloat16 values (vec_amd64.s).
//
//go:noescape
func decodeBF16AVX2(dst *float32, src *byte, n int)

func decodeBF16(dst []float32, src []byte) {
	n := 0
	if useAVX2 && len(dst) >= 16 {
		n = len(dst) &^ 15
		_ = src[2*n-1]
		decodeBF16AVX2(&dst[0], &src[0], n)
	}
	decodeBF16Go(dst[n:], src[2*n:])
}

// decodeInt8AVX2 writes dst[i] = float32(int8(codes[i]))·s for n (a positive multiple of
// 16) values (vec_amd64.s).
//
//go:noescape
func decodeInt8AVX2(dst *float32, codes *byte, n int, s float32)

func decodeInt8(dst []float32, codes []byte, s float32) {
	n := 0
	if useAVX2 && len(dst) >= 16 {
		n = len(dst) &^ 15
		_ = codes[n-1]
		decodeInt8AVX2(&dst[0], &codes[0], n, s)
	}
	decodeInt8Go(dst[n:], codes[n:len(dst)], s)
}

// decodeInt4AVX2 writes the 2n values of n (a positive multiple of 8) int4 code bytes,
// (nibble − 8)·s, element 2i from byte i's low nibble (vec_amd64.s).
//
//go:noescape
func decodeInt4AVX2(dst *float32, codes *byte, n int, s float32)

func decodeInt4(dst []float32, codes []byte, s float32) {
	n := 0
	if useAVX2 && len(codes) >= 8 {
		n = len(codes) &^ 7
		_ = dst[2*n-1]
		decodeInt4AVX2(&dst[0], &codes[0], n, s)
	}
	decodeInt4Go(dst[2*n:], codes[n:], s)
}

// decodeInt4RunsAVX2 decodes groups of 32 values in Darkroom's int4 order (vec_amd64.s).
//
//go:noescape
func decodeInt4RunsAVX2(dst *float32, codes *byte, groups int, scales, mins *float32, off int32)

// decodeNibbleRunsAVX2 decodes runs of ggml's split-nibble layout (vec_amd64.s).
//
//go:noescape
func decodeNibbleRunsAVX2(dst *float32, src *byte, runs, runBytes, stride int, sm *float32, off int32)

// decodeInt4Runs writes dst[32g+i] = (nibble − off)·scales[g] + mins[g] for the groups
// of 32 values in codes (16 bytes each, Darkroom's nibble order).
func decodeInt4Runs(dst []float32, codes []byte, scales, mins []float32, off int32) {
	groups := len(codes) / 16
	if useAVX2 && groups > 0 {
		_, _, _ = dst[32*groups-1], scales[groups-1], mins[groups-1]
		decodeInt4RunsAVX2(&dst[0], &codes[0], groups, &scales[0], &mins[0], off)
		return
	}
	decodeInt4RunsGo(dst, codes, scales, mins, off)
}

// decodeNibbleRuns decodes len(sm)/4 runs of runBytes bytes, stride bytes apart, in
// ggml's split-nibble layout (low nibbles, then high nibbles, each run with its own
// {scale, min} pairs).
func decodeNibbleRuns(dst []float32, src []byte, runBytes, stride int, sm []float32, off int32) {
	runs := len(sm) / 4
	if useAVX2 && runs > 0 && runBytes%8 == 0 {
		_, _ = dst[2*runBytes*runs-1], src[stride*(runs-1)+runBytes-1]
		decodeNibbleRunsAVX2(&dst[0], &src[0], runs, runBytes, stride, &sm[0], off)
		return
	}
	decodeNibbleRunsGo(dst, src, runBytes, stride, sm, off)
}

// decodeQ8BlocksAVX2 decodes GGUF Q8_0 blocks with their widened scales (vec_amd64.s).
//
//go:noescape
func decodeQ8BlocksAVX2(dst *float32, src *byte, blocks int, scales *float32)

// decodeQ8Blocks decodes len(scales) Q8_0 blocks of src, scales[b] being block b's d.
func decodeQ8Blocks(dst []float32, src []byte, scales []float32) {
	n := len(scales)
	if useAVX2 && n > 0 {
		_, _ = dst[32*n-1], src[34*n-1]
		decodeQ8BlocksAVX2(&dst[0], &src[0], n, &scales[0])
		return
	}
	decodeQ8BlocksGo(dst, src, scales)
}

// decodeE2M1RunsAVX2 decodes NVFP4 blocks of 16 with their scales (vec_amd64.s).
//
//go:noescape
func decodeE2M1RunsAVX2(dst *float32, codes *byte, groups int, scales *float32)

// decodeE2M1Runs decodes len(scales) NVFP4 blocks of 16 values (8 code bytes each).
func decodeE2M1Runs(dst []float32, codes []byte, scales []float32) {
	n := len(scales)
	if useAVX2 && n > 0 {
		_, _ = dst[16*n-1], codes[8*n-1]
		decodeE2M1RunsAVX2(&dst[0], &codes[0], n, &scales[0])
		return
	}
	decodeE2M1RunsGo(dst, codes, scales)
}

// decodeQ6KAVX2 decodes one GGUF Q6_K block with its sixteen d·scale products
// (vec_amd64.s).
//
//go:noescape
func decodeQ6KAVX2(dst *float32, blk *byte, ds *float32)

func decodeQ6K(dst []float32, blk []byte, ds *[16]float32) {
	if useAVX2 {
		_, _ = dst[255], blk[209]
		decodeQ6KAVX2(&dst[0], &blk[0], &ds[0])
		return
	}
	decodeQ6KGo(dst, blk, ds)
}

// dotNibbleRunsAVX2 is Σ nibble·scale·x over runs of ggml's split-nibble layout,
// groupRuns runs at a time skip bytes apart (vec_amd64.s).
//
//go:noescape
func dotNibbleRunsAVX2(x *float32, src *byte, runs, runBytes, stride, groupRuns, skip int, scales *float32) float32

// dotQ4KAVX512 is Σ decoded value · x over nb Q4_K blocks, their headers decoded in
// registers (vec_amd64.s).
//
//go:noescape
func dotQ4KAVX512(x *float32, src *byte, nb int) float32

// dotQ4KAVX2 is dotQ4KAVX512's sum with AVX2 and F16C (vec_amd64.s).
//
//go:noescape
func dotQ4KAVX2(x *float32, src *byte, nb int) float32

// q4kTabled reports whether the AR product dots Q4_K rows with dotQ4KTable, headers
// and codes in one kernel (AVX-512, or AVX2 with F16C), rather than unpacking their
// scales in Go for dotQ4K and dotting the minimums apart.
func q4kTabled() bool { return useAVX512 || useAVX2 && useF16C }

// dotQ4KTable returns Σ decoded value · x over nb (> 0) whole Q4_K blocks (src, 144
// bytes each), their headers decoded as the decoder does: each group's values looked
// up in a table (dotQ4KAVX512), or made with one FMA each (dotQ4KAVX2); only where
// q4kTabled.
func dotQ4KTable(x []float32, src []byte, nb int) float32 {
	_, _ = x[256*nb-1], src[144*nb-1]
	if useAVX512 {
		return dotQ4KAVX512(&x[0], &src[0], nb)
	}
	return dotQ4KAVX2(&x[0], &src[0], nb)
}

// dotQ4KVNNI is Σ decoded value · x over nb (> 0) Q4_K blocks, x quantized by
// q4kIntX, in integer arithmetic (vec_amd64.s; AVX-512 VNNI).
//
//go:noescape
func dotQ4KVNNI(xq *int8, xs *float32, src *byte, nb int) float32

// dotQ4KIntAVX2 is dotQ4KVNNI's sum with AVX2 and F16C (vec_amd64.s).
//
//go:noescape
func dotQ4KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// q4kIntRuns reports whether the printer's Q4_K products run in integer arithmetic
// (matrix_introws.go): where the canvas's do (with AVX2, given F16C for the blocks'
// fp16 scales). intRowsZMM reports whether the printer's integer dots are AVX-512
// VNNI's (dotQ4KVNNI, dotQ5_0VNNI) rather than AVX2's (dotQ4KIntAVX2, dotQ5_0IntAVX2).
func q4kIntRuns() bool {
	switch qActive {
	case qVNNI:
		return true
	case qVNNI256, qAVXVNNI, qAVX2:
		return useF16C
	}
	return false
}

func intRowsZMM() bool { return qActive == qVNNI }

// intRowsKernels lists the printer's integer dots this CPU runs (true: AVX-512
// VNNI's), for the tests.
func intRowsKernels() []bool {
	var ks []bool
	if hasVNNI {
		ks = append(ks, true)
	}
	if useAVX2 && useF16C {
		ks = append(ks, false)
	}
	return ks
}

// dotQ4KInt is dotQ4KVNNI (zmm) or dotQ4KIntAVX2 over slices: x's codes and scales as
// q4kIntX wrote them for that kernel.
func dotQ4KInt(xq []int8, xs []float32, src []byte, nb int, zmm bool) float32 {
	_, _, _ = xq[256*nb-1], xs[16*nb-1], src[144*nb-1]
	if zmm {
		return dotQ4KVNNI(&xq[0], &xs[0], &src[0], nb)
	}
	return dotQ4KIntAVX2(&xq[0], &xs[0], &src[0], nb)
}

// dotNVFP4VNNI is Σ value · x over nb (> 0) steps of 64 NVFP4 values, their blocks'
// FP8 scale codes in fp8 and scale_2 halved in hs2, x quantized by quantizeRow32 (its
// codes and pairs) with each block's xs·Σcode in xsum, in integer arithmetic
// (vec_amd64.s; AVX-512 VNNI).
//
//go:noescape
func dotNVFP4VNNI(xq *int8, xs, xsum *float32, codes, fp8 *byte, hs2 float32, nb int) float32

// dotNVFP4IntAVX2 is dotNVFP4VNNI's sum with AVX2 (vec_amd64.s).
//
//go:noescape
func dotNVFP4IntAVX2(xq *int8, xs, xsum *float32, codes, fp8 *byte, hs2 float32, nb int) float32

// nvfp4IntRuns reports whether the printer's NVFP4 products run in integer
// arithmetic (mulRowsNVFP4Int): wherever the canvas's integer products are on — with
// AVX-512 VNNI (dotNVFP4VNNI), else AVX2 (dotNVFP4IntAVX2, on AVX-VNNI CPUs too: a
// step's pairs of products fit VPMADDUBSW's 16-bit words).
func nvfp4IntRuns() bool { return qActive != nil && qActive != qGo }

// dotNVFP4Int is dotNVFP4VNNI (zmm) or dotNVFP4IntAVX2 over slices: len(xq) values, a
// multiple of 64, in nibbleOrderX's order for the kernel; srow the row's qscale bytes
// (its blocks' FP8 codes, then scale_2).
func dotNVFP4Int(xq []int8, pairs, xsum []float32, codes, srow []byte, zmm bool) float32 {
	nb := len(xq) / 64
	_, _, _, _, _ = xq[64*nb-1], pairs[4*nb-1], xsum[4*nb-1], codes[32*nb-1], srow[4*nb+quant.NVFP4ScaleBytes-1]
	hs2 := quant.NVFP4Scale2(srow[4*nb:]) / 2
	if zmm {
		return dotNVFP4VNNI(&xq[0], &pairs[0], &xsum[0], &codes[0], &srow[0], hs2, nb)
	}
	return dotNVFP4IntAVX2(&xq[0], &pairs[0], &xsum[0], &codes[0], &srow[0], hs2, nb)
}

// dotQ5_0VNNI is Σ decoded value · x over nb (> 0) Q5_0 blocks, each d widened in
// registers, x quantized by quantizeRow32 (its codes and pairs), in integer arithmetic
// (vec_amd64.s; AVX-512 VNNI).
//
//go:noescape
func dotQ5_0VNNI(xq *int8, xs *float32, src *byte, nb int) float32

// dotQ5_0IntAVX2 is dotQ5_0VNNI's sum with AVX2 and F16C (vec_amd64.s).
//
//go:noescape
func dotQ5_0IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// q50IntRuns reports whether the printer's Q5_0 products run in integer arithmetic
// (matrix_introws.go): wherever the canvas's integer products are on (qActive) —
// with AVX-512 VNNI, AVX-VNNI or AVX2 alone, whose canvas keeps Q5_0 in float: the
// printer's pairs of 5-bit products fit VPMADDUBSW's 16-bit words, the canvas's
// longer sums of them do not.
func q50IntRuns() bool { return qActive != nil && qActive != qGo && useF16C }

// dotQ5_0Int is dotQ5_0VNNI (zmm) or dotQ5_0IntAVX2 over slices.
func dotQ5_0Int(xq []int8, pairs []float32, src []byte, nb int, zmm bool) float32 {
	_, _, _ = xq[32*nb-1], pairs[2*nb-1], src[22*nb-1]
	if zmm {
		return dotQ5_0VNNI(&xq[0], &pairs[0], &src[0], nb)
	}
	return dotQ5_0IntAVX2(&xq[0], &pairs[0], &src[0], nb)
}

// dotQ5KIntAVX2 is Σ decoded value · x over nb (> 0) Q5_K blocks, x quantized by
// q4kIntX for the AVX2 kernel, in integer arithmetic (vec_amd64.s; AVX2 and F16C).
//
//go:noescape
func dotQ5KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// dotQ6KIntAVX2 is Σ decoded value · x over nb (> 0) Q6_K blocks, x quantized by
// q6kIntX, in integer arithmetic (vec_amd64.s; AVX2 and F16C).
//
//go:noescape
func dotQ6KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// dotQ4_1IntAVX2 and dotQ5_1IntAVX2 are Σ decoded value · x over nb (> 0) Q4_1 or
// Q5_1 blocks, x quantized by quantizeRow32, in integer arithmetic (vec_amd64.s; AVX2
// and F16C).
//
//go:noescape
func dotQ4_1IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

//go:noescape
func dotQ5_1IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// dotQ1Int is dotQ4_1IntAVX2 or dotQ5_1IntAVX2 (t) over slices.
func dotQ1Int(xq []int8, pairs []float32, src []byte, nb int, t gguf.Type) float32 {
	_, _, _ = xq[32*nb-1], pairs[2*nb-1], src[t.BlockBytes()*nb-1]
	if t == gguf.Q5_1 {
		return dotQ5_1IntAVX2(&xq[0], &pairs[0], &src[0], nb)
	}
	return dotQ4_1IntAVX2(&xq[0], &pairs[0], &src[0], nb)
}

// dotQ3KIntAVX2 and dotQ2KIntAVX2 are Σ decoded value · x over nb (> 0) Q3_K or Q2_K
// blocks, x quantized by q6kIntX, in integer arithmetic (vec_amd64.s; AVX2 and F16C).
//
//go:noescape
func dotQ3KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

//go:noescape
func dotQ2KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// dotIQ4NLIntAVX2 and dotIQ4XSIntAVX2 are Σ decoded value · x over nb (> 0) IQ4_NL
// or IQ4_XS blocks, x quantized by quantizeRow32, in integer arithmetic (vec_amd64.s;
// AVX2 and F16C).
//
//go:noescape
func dotIQ4NLIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

//go:noescape
func dotIQ4XSIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// dotIQ4Int is dotIQ4NLIntAVX2 or dotIQ4XSIntAVX2 (t) over slices, nb blocks.
func dotIQ4Int(xq []int8, pairs []float32, src []byte, nb int, t gguf.Type) float32 {
	_, _, _ = xq[t.BlockSize()*nb-1], pairs[t.BlockSize()/16*nb-1], src[t.BlockBytes()*nb-1]
	if t == gguf.IQ4_XS {
		return dotIQ4XSIntAVX2(&xq[0], &pairs[0], &src[0], nb)
	}
	return dotIQ4NLIntAVX2(&xq[0], &pairs[0], &src[0], nb)
}

// ymmIntRuns reports whether the printer's Q5_K, Q6_K, Q3_K, Q2_K, Q4_1, Q5_1, IQ4_NL
// and IQ4_XS products run in integer arithmetic (matrix_introws.go): wherever the
// canvas's integer products are on, with AVX2 and F16C — their AVX2 kernels serve
// AVX-512 CPUs too (no zmm forms: the codes' high bits and the minimums cost the same
// either way, and these formats are a small share of a file).
func ymmIntRuns() bool { return qActive != nil && qActive != qGo && useAVX2 && useF16C }

// dotQ5KInt is dotQ5KIntAVX2 over slices: x's codes and scales as q4kIntX wrote them
// for the ymm kernel.
func dotQ5KInt(xq []int8, xs []float32, src []byte, nb int) float32 {
	_, _, _ = xq[256*nb-1], xs[16*nb-1], src[176*nb-1]
	return dotQ5KIntAVX2(&xq[0], &xs[0], &src[0], nb)
}

// dotK16Int is the integer dot of nb blocks of t — Q6_K, Q3_K or Q2_K, the K types
// with a scale per sixteen — x quantized by q6kIntX.
func dotK16Int(xq []int8, xs []float32, src []byte, nb int, t gguf.Type) float32 {
	_, _, _ = xq[256*nb-1], xs[q6kXS*nb-1], src[t.BlockBytes()*nb-1]
	switch t {
	case gguf.Q3_K:
		return dotQ3KIntAVX2(&xq[0], &xs[0], &src[0], nb)
	case gguf.Q2_K:
		return dotQ2KIntAVX2(&xq[0], &xs[0], &src[0], nb)
	}
	return dotQ6KIntAVX2(&xq[0], &xs[0], &src[0], nb)
}

// q4kHeadersAVX2 writes nb (> 0) Q4_K blocks' scales d·sc_j and minimums
// (−dmin)·m_j, eight each a block, into s and mn (vec_amd64.s; AVX2 and F16C).
//
//go:noescape
func q4kHeadersAVX2(s, mn *float32, src *byte, nb int)

// q4kHeaders writes the scales and minimums of the Q4_K blocks in src (whole blocks,
// 144 bytes each) into s and mn, eight each a block: the decoder's d·sc_j and
// −(dmin·m_j), one rounding each.
func q4kHeaders(s, mn []float32, src []byte) {
	nb := len(src) / 144
	if nb == 0 {
		return
	}
	_, _ = s[8*nb-1], mn[8*nb-1]
	if useAVX2 && useF16C {
		q4kHeadersAVX2(&s[0], &mn[0], &src[0], nb)
		return
	}
	q4kHeadersGo(s, mn, src)
}

// codesQ8_0AVX2 and codesQ5_0AVX2 are rowCodes32's codes, scales and offsets of nb
// (> 0) Q8_0 or Q5_0 blocks (vec_amd64.s; AVX2 and F16C).
//
//go:noescape
func codesQ8_0AVX2(dst *byte, s, mn *float32, src *byte, nb int)

//go:noescape
func codesQ5_0AVX2(dst *byte, s, mn *float32, src *byte, nb int)

// codes32Vector writes rowCodes32's values for the nb blocks of type t in row — the
// codes as unsigned bytes into dst, each block's scale into s and its offset into mn —
// with vector code, reporting false where it has none (a type other than Q5_0 and
// Q8_0, the types of a Q4_K_M file's rows of 32-blocks, or a CPU without AVX2 and
// F16C).
func codes32Vector(dst []byte, s, mn []float32, row []byte, t gguf.Type, nb int) bool {
	if !useAVX2 || !useF16C || nb == 0 || t != gguf.Q5_0 && t != gguf.Q8_0 {
		return false
	}
	_, _, _, _ = dst[32*nb-1], s[nb-1], mn[nb-1], row[t.BlockBytes()*nb-1]
	if t == gguf.Q8_0 {
		codesQ8_0AVX2(&dst[0], &s[0], &mn[0], &row[0], nb)
	} else {
		codesQ5_0AVX2(&dst[0], &s[0], &mn[0], &row[0], nb)
	}
	return true
}

// dotQ5_0AVX512 and dotQ8_0AVX512 are dotAVX2 of x with nb Q5_0 (Q8_0) blocks
// decoded in registers, each block's d widened there (F16C) (vec_amd64.s).
//
//go:noescape
func dotQ5_0AVX512(x *float32, src *byte, nb int) float32

//go:noescape
func dotQ8_0AVX512(x *float32, src *byte, nb int) float32

// dotQ5_0AVX2 and dotQ8_0AVX2 are the same sums with AVX2 and F16C (vec_amd64.s).
//
//go:noescape
func dotQ5_0AVX2(x *float32, src *byte, nb int) float32

//go:noescape
func dotQ8_0AVX2(x *float32, src *byte, nb int) float32

// blocks32Direct reports whether the printer's product dots a row of GGUF type t
// (Q5_0, Q8_0) straight from its blocks (dotBlocks32) rather than taking its codes out
// first (signedCodes32 and dotInt8Groups): with AVX2 (and F16C) or AVX-512, for one
// row of x.
func blocks32Direct(t gguf.Type) bool {
	return useAVX2 && useF16C && (t == gguf.Q5_0 || t == gguf.Q8_0)
}

// dotBlocks32 is dotAVX2 of x with nb (> 0) blocks of type t (blocks32Direct) decoded,
// each block's d widened where it is: bit for bit the decoded row's.
func dotBlocks32(x []float32, src []byte, t gguf.Type, nb int) float32 {
	_, _ = x[32*nb-1], src[t.BlockBytes()*nb-1]
	switch {
	case t == gguf.Q5_0 && useAVX512:
		return dotQ5_0AVX512(&x[0], &src[0], nb)
	case t == gguf.Q5_0:
		return dotQ5_0AVX2(&x[0], &src[0], nb)
	case useAVX512:
		return dotQ8_0AVX512(&x[0], &src[0], nb)
	}
	return dotQ8_0AVX2(&x[0], &src[0], nb)
}

// dotQ4K returns Σ nibble·scale·x over nb whole Q4_K blocks (src, 144 bytes each) and
// x's 256·nb values, scales[8b + j] the scale of group j of block b (the minimums are
// the caller's).
func dotQ4K(x []float32, src []byte, nb int, scales []float32) float32 {
	if useAVX2 && nb > 0 {
		// Four runs of 32 code bytes a block, after its 16 bytes of scales.
		_, _, _ = x[256*nb-1], src[144*nb-1], scales[8*nb-1]
		return dotNibbleRunsAVX2(&x[0], &src[16], 4*nb, 32, 32, 4, 16, &scales[0])
	}
	return dotQ4KGo(x, src, nb, scales)
}

// dotNibbleRuns returns Σ nibble·scale·x over len(scales)/2 runs of runBytes bytes,
// stride bytes apart, run r's low and high nibbles against x's values 2·runBytes·r …
// with scales[2r] and scales[2r+1].
func dotNibbleRuns(x []float32, src []byte, runBytes, stride int, scales []float32) float32 {
	runs := len(scales) / 2
	if useAVX2 && runs > 0 && runBytes%16 == 0 {
		_, _ = x[2*runBytes*runs-1], src[stride*(runs-1)+runBytes-1]
		return dotNibbleRunsAVX2(&x[0], &src[0], runs, runBytes, stride, runs, 0, &scales[0])
	}
	return dotNibbleRunsGo(x, src, runBytes, stride, scales)
}

var useF16C = cpu.X86.HasF16C && cpu.X86.HasAVX

// decodeF16F16C widens n (a positive multiple of 16) IEEE halves (vec_amd64.s).
//
//go:noescape
func decodeF16F16C(dst *float32, src *byte, n int)

func decodeF16(dst []float32, src []byte) {
	n := 0
	if useF16C && len(dst) >= 16 {
		n = len(dst) &^ 15
		_ = src[2*n-1]
		decodeF16F16C(&dst[0], &src[0], n)
	}
	decodeF16Go(dst[n:], src[2*n:])
}

// dotBF16AVX2 is dotAVX2 on bfloat16 values widened in registers (vec_amd64.s).
//
//go:noescape
func dotBF16AVX2(x *float32, src *byte, n int) float32

// dotBF16 returns dot(values, x) for the bfloat16 values in src, bit for bit; tail is
// scratch of len(x) floats (only the last len(x) mod 32 are widened into it with AVX2).
func dotBF16(x []float32, src []byte, tail []float32) float32 {
	n := 0
	var s float32
	if useAVX2 && len(x) >= 32 {
		n = len(x) &^ 31
		_ = src[2*n-1]
		s = dotBF16AVX2(&x[0], &src[0], n)
	}
	t := tail[:len(x)-n]
	decodeBF16Go(t, src[2*n:2*len(x)])
	return s + dotGo(t, x[n:])
}

// dotInt4IntAVX2 is Σ value · x over steps (> 0) of 64 Darkroom int4 values in
// integer arithmetic (vec_amd64.s; AVX2): mulRowsInt4Int's dot.
//
//go:noescape
func dotInt4IntAVX2(xq *int8, xsl, xsum *float32, codes *byte, scales, mins *float32, c float32, steps int) float32

// int4IntRuns reports whether the printer's products of Darkroom's int4 rows run in
// integer arithmetic (mulRowsInt4Int): where the canvas's integer products take an
// AVX2-class kernel (AVX2, AVX-VNNI). With AVX-512 the float dots (dotInt4Rows) read
// the weights near the memory's rate already and stay.
func int4IntRuns() bool { return qActive != nil && qActive != qGo && !intRowsZMM() }

// dotInt4Int is dotInt4IntAVX2 over slices: len(xq) values, a multiple of 64, in
// nibbleOrderX's order; xsl eight per 64 values, xsum, scales and mins one per 32 (mins
// nil: symmetric, each group's minimum −8·s).
func dotInt4Int(xq []int8, xsl, xsum []float32, codes []byte, scales, mins []float32) float32 {
	steps := len(xq) / 64
	c := float32(1)
	if mins == nil {
		mins, c = scales, -8
	}
	_, _, _, _, _ = xsl[8*steps-1], xsum[2*steps-1], codes[32*steps-1], scales[2*steps-1], mins[2*steps-1]
	return dotInt4IntAVX2(&xq[0], &xsl[0], &xsum[0], &codes[0], &scales[0], &mins[0], c, steps)
}

// dotQ4_0IntAVX2 is Σ decoded value · x over nb (> 0) Q4_0 blocks, each d widened in
// registers, x quantized by quantizeRow32 (its codes, in order, and pairs), in integer
// arithmetic (vec_amd64.s; AVX2 and F16C).
//
//go:noescape
func dotQ4_0IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32

// q40IntRuns reports whether the printer's Q4_0 products run in integer arithmetic
// (matrix_introws.go): with AVX2-class kernels and F16C, as int4's (int4IntRuns).
func q40IntRuns() bool { return int4IntRuns() && useF16C }

// dotQ4_0Int is dotQ4_0IntAVX2 over slices.
func dotQ4_0Int(xq []int8, pairs []float32, src []byte, nb int) float32 {
	_, _, _ = xq[32*nb-1], pairs[2*nb-1], src[18*nb-1]
	return dotQ4_0IntAVX2(&xq[0], &pairs[0], &src[0], nb)
}
