package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph code reads best dot-imported.
)

// NVFP4 storage (see the package comment): NAME.qweight holds the FP4 E2M1 codes as
// ModelOpt packs them, NAME.qscale is Uint8 [..., G+4] per row: the G = n/group
// FP8-E4M3 block-scale codes exactly as ModelOpt stores them (weight_scale), then the
// row's float32 weight_scale_2 in four bytes (NVFP4ScaleBytes). The block scale is
// float32(fp8) · weight_scale_2, multiplied in float32 as ModelOpt's
// NVFP4QTensor.dequantize does (NVIDIA/Model-Optimizer,
// modelopt/torch/quantization/qtensor/nvfp4_tensor.py), so the dequantized weights are
// ModelOpt's exactly, at 4.5 bits per weight plus 32 bits per row.

// E2M1 holds the values of the 16 FP4 E2M1 codes: bit 3 is the sign, bits 0–2 index
// the magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6} (1 sign, 2 exponent bits with bias 1,
// 1 mantissa bit; exponent 0 is subnormal). It is ModelOpt's e2m1_values table
// (nvfp4_tensor.py).
var E2M1 = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6}

// NVFP4ScaleBytes is the number of bytes per qscale row after the block-scale codes:
// weight_scale_2 as a 24-bit integer mantissa m (little endian) and an exponent byte
// e, value m·2^(e−150) — exact for every finite non-negative float32 (e = max(the
// float's biased exponent, 1)). Both decode exactly in a graph without bit operations:
// m by byte arithmetic, 2^(e−150) from a 256-entry table.
const NVFP4ScaleBytes = 4

// fp8E4M3 and pow2 are the decoding tables of the FP8-E4M3 block-scale codes and of the
// weight_scale_2 exponent byte.
var fp8E4M3, pow2 = func() (f, p [256]float32) {
	for b := range 256 {
		e, m := b>>3&15, b&7
		var v float64
		switch {
		case b&0x7f == 0x7f:
			v = math.NaN()
		case e == 0:
			v = float64(m) / 512
		default:
			v = math.Ldexp(1+float64(m)/8, e-7)
		}
		if b&0x80 != 0 {
			v = -v
		}
		f[b] = float32(v)
		if b > 0 {
			p[b] = float32(math.Ldexp(1, b-150)) // 2^-149 … 2^105, all exact in float32
		}
	}
	return
}()

// FP8E4M3 decodes a float8_e4m3fn code (NaN for S.1111.111).
func FP8E4M3(b byte) float32 { return fp8E4M3[b] }

// PutNVFP4ScaleRow writes one qscale row: the FP8-E4M3 block-scale codes of the row
// (as stored by ModelOpt), then scale2. A NaN code or a negative, infinite or NaN
// scale2 is an error.
func PutNVFP4ScaleRow(dst, fp8 []byte, scale2 float32) error {
	if len(dst) != len(fp8)+NVFP4ScaleBytes {
		return fmt.Errorf("nvfp4 scale row: %d bytes for %d codes", len(dst), len(fp8))
	}
	return PutNVFP4ScaleRows(dst, fp8, len(fp8), scale2)
}

// PutNVFP4ScaleRows is PutNVFP4ScaleRow for each row of a module: fp8 holds rows of
// groups codes, dst as many qscale rows of groups + NVFP4ScaleBytes. scale2 is
// checked and encoded once, and the codes checked for NaN eight at a time.
func PutNVFP4ScaleRows(dst, fp8 []byte, groups int, scale2 float32) error {
	if groups <= 0 || len(fp8)%groups != 0 || len(dst) != len(fp8)/groups*(groups+NVFP4ScaleBytes) {
		return fmt.Errorf("nvfp4 scale rows: %d bytes for %d codes in rows of %d", len(dst), len(fp8), groups)
	}
	if i := nanFP8(fp8); i >= 0 {
		return fmt.Errorf("nvfp4 scale row %d: block scale %d is NaN (code %#02x)", i/groups, i%groups, fp8[i])
	}
	bits := math.Float32bits(scale2)
	if bits>>31 != 0 && scale2 != 0 || math.IsNaN(float64(scale2)) || math.IsInf(float64(scale2), 0) {
		return fmt.Errorf("nvfp4 scale row: weight_scale_2 %v is not a finite non-negative number", scale2)
	}
	exp, mant := bits>>23&0xff, bits&0x7fffff
	if exp > 0 {
		mant |= 1 << 23
	}
	tail := [NVFP4ScaleBytes]byte{byte(mant), byte(mant >> 8), byte(mant >> 16), byte(max(exp, 1))}
	w := groups + NVFP4ScaleBytes
	for r := range len(fp8) / groups {
		copy(dst[r*w:r*w+groups], fp8[r*groups:(r+1)*groups])
		copy(dst[r*w+groups:(r+1)*w], tail[:])
	}
	return nil
}

// nanFP8 is the index of the first NaN FP8-E4M3 code in b (S.1111.111), −1 if none:
// eight bytes at a time, a byte whose low seven bits are all set found as a zero byte
// of the word's complement with its top bits cleared.
func nanFP8(b []byte) int {
	const low7, ones, tops = 0x7f7f7f7f7f7f7f7f, 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		v := ^binary.LittleEndian.Uint64(b[i:]) & low7 // a NaN byte: 0
		if (v-ones)&^v&tops != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i]&0x7f == 0x7f {
			return i
		}
	}
	return -1
}

// NVFP4RowScales decodes a qscale row into its float32 block scales
// float32(fp8)·scale2; dst has one entry per block.
func NVFP4RowScales(dst []float32, row []byte) {
	g := len(row) - NVFP4ScaleBytes
	s2 := NVFP4Scale2(row[g:])
	for i, c := range row[:g] {
		dst[i] = fp8E4M3[c] * s2
	}
}

// NVFP4Scale2 decodes a qscale row's weight_scale_2 from its last NVFP4ScaleBytes
// bytes t.
func NVFP4Scale2(t []byte) float32 {
	return float32(int(t[0])|int(t[1])<<8|int(t[2])<<16) * pow2[t[3]]
}

// nvfp4ScalesGraph decodes qscale rows in the graph: Uint8 [..., G+4] → Float32
// [..., G, 1] block scales, exactly as NVFP4RowScales.
func nvfp4ScalesGraph(qs *Node) *Node {
	last := qs.Rank() - 1
	groups := qs.Shape().Dimensions[last] - NVFP4ScaleBytes
	x := ConvertDType(qs, dtypes.Int32)
	codes := SliceAxis(x, last, AxisRange(0, groups))
	fp8 := lookupGraph(fp8E4M3[:], codes) // [..., G]
	byteAt := func(i int) *Node { return SliceAxis(x, last, AxisRange(groups+i, groups+i+1)) }
	f := func(n *Node) *Node { return ConvertDType(n, dtypes.Float32) }
	mant := Add(f(byteAt(0)), Add(MulScalar(f(byteAt(1)), 256), MulScalar(f(byteAt(2)), 65536))) // < 2^24: exact
	s2 := Mul(mant, lookupGraph(pow2[:], byteAt(3)))                                             // [..., 1]
	return ExpandAxes(Mul(fp8, s2), -1)
}

// lookupGraph returns table[idx] elementwise (idx: integer, any shape). The indices
// are flattened to [N, 1] for the Gather: GoMLX v0.26's shape inference rejects
// index-vector axes beyond the rank of a 1-D table.
func lookupGraph(table []float32, idx *Node) *Node {
	dims := idx.Shape().Dimensions
	flat := Reshape(idx, idx.Shape().Size(), 1)
	return Reshape(Gather(Const(idx.Graph(), table), flat), dims...)
}

// e2m1Graph maps FP4 E2M1 codes c ∈ {0…15} (as exact Float32) to their values
// (E2M1) with branch-free arithmetic: h = ⌊c/8⌋ is the sign bit, m = c − 8h the
// magnitude index, and |v| = m/2 + max(m−4, 0)/2 + max(m−6, 0) gives 0, .5, 1, 1.5, 2,
// 3, 4, 6 for m = 0…7 (steps of .5 up to 2, then 1, then 2). Every step is exact.
func e2m1Graph(c *Node) *Node {
	g := c.Graph()
	zero := ScalarZero(g, dtypes.Float32)
	h := Floor(MulScalar(c, 1.0/8))
	m := Sub(c, MulScalar(h, 8))
	mag := Add(MulScalar(m, 0.5), Add(MulScalar(Max(AddScalar(m, -4), zero), 0.5), Max(AddScalar(m, -6), zero)))
	return Mul(mag, OneMinus(MulScalar(h, 2)))
}

// NVFP4TensorScale is the weight_scale_2 ModelOpt gives a tensor whose largest magnitude
// is amax: amax / (6·448), in float32 (NVFP4QTensor.get_weights_scaling_factor_2), so
// that the largest block scale is FP8-E4M3's largest value, 448.
func NVFP4TensorScale(amax float32) float32 { return amax / (6 * 448) }

// QuantizeNVFP4 writes w (whole blocks of 16 values) as ModelOpt's NVFP4QTensor
// quantizes it with weight_scale_2 scale2: each block's scale the FP8-E4M3 code
// nearest block amax / (6·scale2) (ties to even, as a float8_e4m3fn cast rounds,
// at most 448) into fp8, then each value divided by the decoded block scale
// float32(fp8)·scale2 and rounded to the nearest E2M1 value (ties to the even code,
// as nvfp4_tensor.py's _cast_fp4 does) into codes, two a byte, the first in the low
// nibble. A block of zeros (or scale2 0) is scale code 0 and codes 0.
func QuantizeNVFP4(codes, fp8 []byte, w []float32, scale2 float32) error {
	if len(w)%16 != 0 || len(codes) != len(w)/2 || len(fp8) != len(w)/16 {
		return fmt.Errorf("nvfp4: %d values into %d code bytes and %d scales", len(w), len(codes), len(fp8))
	}
	if !(scale2 >= 0) || math.IsInf(float64(scale2), 0) {
		return fmt.Errorf("nvfp4: weight_scale_2 %v is not a finite non-negative number", scale2)
	}
	for b := range len(w) / 16 {
		x := w[16*b : 16*b+16]
		var amax float32
		for _, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("nvfp4: value %d is %v", 16*b, v)
			}
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		c := byte(0)
		if scale2 > 0 {
			c = fp8Code(amax / (6 * scale2))
		}
		fp8[b] = c
		s := fp8E4M3[c] * scale2
		for i := 0; i < 16; i += 2 {
			var lo, hi byte
			if s > 0 {
				lo, hi = e2m1Code(x[i]/s), e2m1Code(x[i+1]/s)
			}
			codes[8*b+i/2] = lo | hi<<4
		}
	}
	return nil
}

// fp8Code is the FP8-E4M3 code (non-negative) nearest v ≥ 0, ties to the even code,
// 448 (0x7e) at most.
func fp8Code(v float32) byte {
	if !(v > 0) {
		return 0
	}
	// The positive codes 0…0x7e decode in increasing order.
	hi := sort.Search(0x7f, func(c int) bool { return fp8E4M3[c] >= v })
	switch {
	case hi == 0x7f:
		return 0x7e
	case hi == 0 || fp8E4M3[hi] == v:
		return byte(hi)
	}
	lo := hi - 1
	dl, dh := v-fp8E4M3[lo], fp8E4M3[hi]-v
	if dl < dh || dl == dh && lo%2 == 0 {
		return byte(lo)
	}
	return byte(hi)
}

// e2m1Bounds are the midpoints between consecutive E2M1 magnitudes.
var e2m1Bounds = [7]float32{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}

// e2m1Code is the E2M1 code nearest x (ties to the even code; beyond ±6, ±6; a
// negative x rounded to zero is −0, code 8).
func e2m1Code(x float32) byte {
	a := float32(math.Abs(float64(x)))
	var m byte
	for m < 7 && a > e2m1Bounds[m] {
		m++
	}
	if m < 7 && a == e2m1Bounds[m] && m%2 == 1 { // a tie below an even code: round up
		m++
	}
	if x < 0 { // the sign kept for a value rounded to zero, as _cast_fp4 keeps it
		m |= 8
	}
	return m
}
