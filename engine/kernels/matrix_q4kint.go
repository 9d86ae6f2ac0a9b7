package kernels

import "github.com/darkroomlabs/darkroom/engine/gguf"

// The printer's product (below dotRows rows of x) against GGUF Q4_K rows in integer
// arithmetic, where the canvas products run that way (qgemm.go; AVX-512 VNNI, or AVX2
// with F16C):
// x is quantized once per product as the canvas quantizes its rows — int8 in groups
// of 32, each group's scale max|x|/127 (quantizeRow32) — and each row's blocks are
// dotted from their bytes (dotQ4KVNNI, dotQ4KIntAVX2): a group's 32 nibble · code products summed
// exactly in int32, scaled by d·sc_j times the group's x scale, and the minimums
// (−dmin·m_j) against x's exact group sums. llama.cpp dots Q4_K this way (x in Q8_K
// blocks); against the float kernel (dotQ4KTable), whose table lookups and FMAs cost
// twice the instructions a block and ran at two thirds of the memory's rate here, it
// adds x's rounding, as the canvas's integer products do, and no other error.

// q4kIntBlockCodes is where each of a Q4_K block's eight groups of x goes in a block's
// 256 codes for dotQ4KVNNI: groups 0 and 2 (a 64-byte load of code bytes' low
// nibbles), 1 and 3 (their high nibbles), 4 and 6, 5 and 7. dotQ4KIntAVX2 takes them
// in order (a 32-byte load's low nibbles are group 2r, its high ones group 2r+1).
var q4kIntBlockCodes = [2][8]int{
	{0, 32, 64, 96, 128, 160, 192, 224}, // AVX2
	{0, 64, 32, 96, 128, 192, 160, 224}, // AVX-512 VNNI
}

// q4kInt reports whether w's product with fewer than dotRows rows of x runs in
// integer arithmetic (mulRowsQ4KInt).
func (w *Matrix) q4kInt() bool {
	return q4kIntRuns() && w.Spec.Bits == 0 && w.GGUF == gguf.Q4_K && w.Cols > 0 && w.Cols%gguf.QK_K == 0
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
			var sum float32
			for _, v := range x[qGroup*g : qGroup*(g+1)] {
				sum += v
			}
			xs[16*b+j], xs[16*b+8+j] = pairs[2*g], sum
		}
	}
}

// mulRowsQ4KInt is mulRows for a Q4_K w where q4kInt: out [m, Rows] = a [m, Cols]·wᵀ,
// a's rows quantized once (q4kIntX), then each row of w dotted with each of them.
func (w *Matrix) mulRowsQ4KInt(out, a []float32, m int) {
	n, k := w.Rows, w.Cols
	nb := k / gguf.QK_K
	cb := packBufs.Get().(*packBuf)
	defer packBufs.Put(cb)
	if cap(cb.q) < 2*m*k {
		cb.q = make([]int8, 2*m*k)
	}
	xq, codes := cb.q[:m*k], cb.q[m*k:2*m*k]
	cb.dec = grow(cb.dec, m*k/16+k/16)
	xs, pairs := cb.dec[:m*k/16], cb.dec[m*k/16:m*k/16+k/16]
	zmm := q4kIntZMM()
	for i := range m {
		q4kIntX(xq[i*k:(i+1)*k], xs[i*k/16:(i+1)*k/16], a[i*k:(i+1)*k], codes[:k], pairs, zmm)
	}
	bb := gguf.Q4_K.BlockBytes()
	parts := dotParts(m * n * k)
	parallel(parts, func(part int) {
		for r := n * part / parts; r < n*(part+1)/parts; r++ {
			row := w.Data[r*nb*bb : (r+1)*nb*bb]
			for i := range m {
				out[i*n+r] = dotQ4KInt(xq[i*k:(i+1)*k], xs[i*k/16:(i+1)*k/16], row, nb, zmm)
			}
		}
	})
}
