package kernels

import (
	"encoding/binary"

	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// The AR step's products for ggml's 4-bit formats without decoding: a value is
// scale·q + min per half-block, so its dot product with x is Σ scale·(Σ q·x) over the
// half-blocks (dotNibbleRuns, in vector code) plus Σ min·(Σ x), the sums of x taken
// once per product. It reads each weight byte once and writes nothing, which is what a
// memory-bound product wants. Darkroom's own int4 is not summed this way: the host
// model holds its products bit for bit to the float32 product of the dequantized
// weights (engine/weights' TestInt4Formats), which a regrouped sum would break; its
// rows are dotted value by value as they are decoded instead (dotInt4Perm). Where the
// canvas's products run in integer arithmetic, Q4_K's rows take its integer dot
// instead (matrix_introws.go).

// nibbleHalf is the length of the half-blocks of a format with a fused dot product
// (values sharing a scale and a minimum), 0 for the others.
func (w *Matrix) nibbleHalf() int {
	if w.Spec.Bits != 0 {
		return 0
	}
	switch w.GGUF {
	case gguf.Q4_0, gguf.Q4_1:
		return 16
	case gguf.Q4_K:
		return 32
	}
	return 0
}

// q4kRowBlocks is how many Q4_K blocks dotNibbles takes in one pass (16,384 inputs:
// any of the 26B's rows).
const q4kRowBlocks = 64

// dotQ4KGo is dotQ4K without vector code.
func dotQ4KGo(x []float32, src []byte, nb int, scales []float32) float32 {
	var dot float32
	for b := range nb {
		dot += dotNibbleRunsGo(x[256*b:256*(b+1)], src[144*b+16:144*(b+1)], 32, 32, scales[8*b:8*(b+1)])
	}
	return dot
}

// halfSums writes the sums of x's consecutive runs of h values into dst.
func halfSums(dst, x []float32, h int) {
	for g := range dst {
		var s float32
		for _, v := range x[g*h : (g+1)*h] {
			s += v
		}
		dst[g] = s
	}
}

// dotNibbles is row r of w dotted with x, xs being x's half-block sums; scratch holds
// 16·q4kRowBlocks floats (Q4_K blocks' scales and minimums).
func (w *Matrix) dotNibbles(r int, x, xs, scratch []float32) float32 {
	half := func(b []byte) float32 { return gguf.HalfToFloat32(binary.LittleEndian.Uint16(b)) }
	t := w.GGUF
	bb := t.BlockBytes()
	nb := w.Cols / t.BlockSize()
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	if t == gguf.Q4_K {
		if q4kTabled() { // headers, values and dot in one kernel
			return dotQ4KTable(x[:w.Cols], row, nb)
		}
		// q4kRowBlocks blocks at a time: their d and dmin widened (blockHalves), their
		// groups' scales and minimums unpacked (into scratch), then the codes dotted in
		// one pass (dotQ4K) and the minimums against x's group sums in another.
		var ds, dmins [q4kRowBlocks]float32
		var sum, mins float32
		for b0 := 0; b0 < nb; b0 += q4kRowBlocks {
			n := min(q4kRowBlocks, nb-b0)
			blocks := row[bb*b0 : bb*(b0+n)]
			scales, mns := scratch[:8*n], scratch[8*q4kRowBlocks:8*q4kRowBlocks+8*n]
			blockHalves(ds[:n], blocks, bb, 0)
			blockHalves(dmins[:n], blocks, bb, 2)
			for b := range n {
				scalesMinsK4((*[8]float32)(scales[8*b:8*b+8]), (*[8]float32)(mns[8*b:8*b+8]),
					(*[12]byte)(blocks[bb*b+4:bb*b+16]), ds[b], dmins[b])
			}
			sum += dotQ4K(x[256*b0:], blocks, n, scales)
			mins += dot(mns, xs[8*b0:8*(b0+n)])
		}
		return sum - mins
	}
	// Q4_0 {fp16 d; u8 qs[16]}: d·q − 8d; Q4_1 {fp16 d; fp16 m; u8 qs[16]}: d·q + m.
	var dot, mins float32
	codes := 2
	if t == gguf.Q4_1 {
		codes = 4
	}
	var scales [128]float32
	for b0 := 0; b0 < nb; b0 += 64 {
		n := min(64, nb-b0)
		for b := range n {
			blk := row[bb*(b0+b):]
			d := half(blk)
			m := -8 * d
			if t == gguf.Q4_1 {
				m = half(blk[2:])
			}
			scales[2*b], scales[2*b+1] = d, d
			mins += m * (xs[2*(b0+b)] + xs[2*(b0+b)+1])
		}
		dot += dotNibbleRuns(x[32*b0:32*(b0+n)], row[bb*b0+codes:bb*(b0+n)], 16, bb, scales[:2*n])
	}
	return dot + mins
}
