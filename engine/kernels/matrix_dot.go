package kernels

import (
	"encoding/binary"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// The AR step's products for the 4-bit formats without decoding: a value is scale·q +
// min per (half-)block, so its dot product with x is Σ scale·(Σ q·x) over the blocks
// (dotNibbleRuns, in vector code) plus Σ min·(Σ x), the sums of x taken once per
// product. It reads each weight byte once and writes nothing, which is what a
// memory-bound product wants. ggml's layouts put a run's low nibbles first and its
// high ones after, as dotNibbleRuns reads them; Darkroom's int4 interleaves them
// (value 2i low, 2i+1 high), so x is permuted once per product to match: each group of
// 32 as its 16 even values, then its 16 odd ones.

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

// int4Dot reports whether w is Darkroom's int4 in groups of 32 (symmetric or affine),
// whose fused product takes x permuted by evensOdds.
func (w *Matrix) int4Dot() bool {
	return w.Spec.Bits == 4 && w.Spec.Format != quant.FP4 && w.group() == 32
}

// evensOdds writes each group of 32 values of x into dst as its 16 even values, then
// its 16 odd ones.
func evensOdds(dst, x []float32) {
	for g := 0; g+32 <= len(x); g += 32 {
		for i := range 16 {
			dst[g+i], dst[g+16+i] = x[g+2*i], x[g+2*i+1]
		}
	}
}

// dotInt4 is row r of an int4 g32 w dotted with x, xp being x permuted by evensOdds and
// xs its group sums; sc is scratch for 3·Cols/32 values.
func (w *Matrix) dotInt4(r int, xp, xs, sc []float32) float32 {
	k := w.Cols
	groups := k / 32
	g0 := r * groups
	s := sc[2*groups : 3*groups]
	w.scales(s, w.Scales, g0)
	var mins float32
	if w.Spec.Format == quant.Affine {
		m := sc[:groups]
		w.scales(m, w.Mins, g0)
		for g, v := range m {
			mins += v * xs[g]
		}
	} else {
		for g, v := range s {
			mins -= 8 * v * xs[g]
		}
	}
	// Both halves of a group (its even and its odd values) share its scale.
	pair := sc[:2*groups]
	for g, v := range s {
		pair[2*g], pair[2*g+1] = v, v
	}
	return dotNibbleRuns(xp, w.Data[g0*16:(g0+groups)*16], 16, 16, pair) + mins
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

// dotNibbles is row r of w dotted with x, xs being x's half-block sums.
func (w *Matrix) dotNibbles(r int, x, xs []float32) float32 {
	half := func(b []byte) float32 { return gguf.HalfToFloat32(binary.LittleEndian.Uint16(b)) }
	t := w.GGUF
	bb := t.BlockBytes()
	nb := w.Cols / t.BlockSize()
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	var dot, mins float32
	if t == gguf.Q4_K {
		var scales [8]float32
		for b := range nb {
			blk := row[144*b : 144*b+144]
			d, dmin := half(blk), half(blk[2:])
			sc, m := scalesMinsK4((*[12]byte)(blk[4:16]))
			for j := range 8 {
				scales[j] = d * float32(sc[j])
				mins -= dmin * float32(m[j]) * xs[8*b+j]
			}
			dot += dotNibbleRuns(x[256*b:256*(b+1)], blk[16:], 32, 32, scales[:])
		}
		return dot + mins
	}
	// Q4_0 {fp16 d; u8 qs[16]}: d·q − 8d; Q4_1 {fp16 d; fp16 m; u8 qs[16]}: d·q + m.
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
