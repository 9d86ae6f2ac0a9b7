// Package quant owns Darkroom's weight quantization formats and profiles.
//
// Formats (groups along the LAST axis, which for every weight of the model is the
// input dimension — Linear weights are [out, in], experts [E, out, in], the embedding
// [V, D]):
//
//   - int8 per-channel (Spec{Bits: 8}): one scale per row; q = round(w/s), s = max|w|/127,
//     q ∈ [-127, 127] stored as Int8 with the weight's shape.
//
//   - int4 group-wise (Spec{Bits: 4, GroupSize: 32}): one scale per 32 consecutive
//     inputs; q = round(w/s), s = max|w|/7, q ∈ [-7, 7] stored as q+8 in a nibble; two
//     nibbles per Uint8 byte (element 2j in the low nibble, 2j+1 in the high one), so the
//     last axis halves. (Loaded nibbles may also be 0, i.e. q = −8: GGUF Q4_0.)
//
//   - BF16 scales (Spec.BF16Scales, int8 and int4): the same codes with the scales
//     stored as BFloat16 instead of Float32 — 4.5 instead of 5 bits per int4 weight.
//     Quantize rounds the scale to bf16 first and picks q against the rounded scale,
//     so the stored pair is self-consistent. The int4 profile's experts use it (Int4);
//     checkpoints with Float32 scales (Int4F32, the layout before) load unchanged.
//
//   - affine int4 (Spec{Bits: 4, GroupSize: 32, Format: Affine}): unsigned nibbles q ∈
//     0…15 (packed like int4) with a scale and a minimum per group: w = q·scale + min.
//     It is GGUF Q4_1's and Q4_K's form (per 32: d·q + m, and d·sc·q − dmin·m), which
//     engine/gguf converts into it exactly (Float32 scales and minimums) or to within
//     bf16 rounding of them (BF16Scales).
//
//   - GGUF blocks kept as stored (Q2K … IQ4XS, one format a block type, and int8 with
//     binary16 scales, Spec.F16Scales, for Q8_0): a GGUF file's blocks taken apart
//     into dense codes, scales and a third part, the bytes unchanged, so that the
//     graph path holds the file's own numbers in its own bits and unpacks them per
//     matmul block (blocks.go). Darkroom does not produce them (Quantize refuses);
//     engine/weights loads a GGUF into them for the graph path.
//
//   - NVFP4 (Spec{Bits: 4, GroupSize: 16, Format: FP4}, the NVFP4 variable): NVIDIA's
//     4-bit float weights as ModelOpt exports them, kept as they are. Each nibble is an
//     FP4 E2M1 code (bit 3 sign, bits 0–2 the magnitude index into {0, 0.5, 1, 1.5, 2,
//     3, 4, 6}), packed like int4 (element 2j low nibble, 2j+1 high); each block of 16
//     has ModelOpt's FP8-E4M3 scale, times the tensor's float32 weight_scale_2:
//     w = e2m1(code)·float32(fp8·scale_2). Darkroom does not produce this format
//     (Quantize refuses it); it loads it (engine/weights) and saves it again.
//
// A quantized weight NAME is stored as two tensors (the block formats: their parts,
// blocks.go), NAME.qweight (Int8 or Uint8) and
// NAME.qscale: for int8/int4 Float32 (or BFloat16) with the weight's shape, the last
// axis replaced by the number of groups (1 for per-channel); for NVFP4 Uint8 [..., n/16
// + 4], each row the FP8 block-scale codes followed by the row's weight_scale_2
// (nvfp4.go). Affine int4 adds a third tensor, NAME.qmin, with qscale's shape and
// dtype: its presence marks the format. The format and the group size can be read
// back from the stored dtypes and shapes (SpecOf; a Uint8 qscale is NVFP4, a qmin is
// affine), so the tensors are self-describing; the
// checkpoint's config.json records the profile name in "quantization_config"
// ({"quant_method": "darkroom", "profile": "int4", "group_size": 32}).
//
// Dequantization happens in the graph (DequantizeGraph) right before the matmul: the
// weights are small at rest, compute stays float32.
package quant

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Suffixes of the stored tensors of a quantized weight (MinSuffix: affine int4 only).
const (
	WeightSuffix = ".qweight"
	ScaleSuffix  = ".qscale"
	MinSuffix    = ".qmin"
)

// Suffixes lists the stored tensors' suffixes, in the order loaders deliver them.
var Suffixes = []string{WeightSuffix, ScaleSuffix, MinSuffix}

// Format is how a weight's stored codes map to numbers.
type Format int

const (
	// Int codes are symmetric integers: w = q·scale.
	Int Format = iota
	// FP4 codes are FP4 E2M1 nibbles (NVFP4): w = e2m1(q)·scale.
	FP4
	// Affine codes are unsigned 4-bit integers with a scale and a minimum per group:
	// w = q·scale + min, q ∈ 0…15 (stored in NAME.qmin).
	Affine
	// Q2K … Q6K are GGUF's K-quant super-blocks of 256, Q40, Q41, Q50 and Q51 its
	// blocks of 32, IQ4NL and IQ4XS its non-linear 4-bit ones, kept as ggml stores
	// them (blocks.go).
	Q4K
	Q5K
	Q6K
	Q40
	Q41
	Q50
	Q51
	Q2K
	Q3K
	IQ4NL
	IQ4XS
)

// Spec is one weight's format.
type Spec struct {
	Bits      int // 8 or 4
	GroupSize int // inputs per scale along the last axis; 0 = the whole row (per-channel)
	Format    Format
	// BF16Scales stores qscale (and qmin) as BFloat16 instead of Float32 (Int and
	// Affine formats).
	BF16Scales bool
	// F16Scales stores qscale as IEEE binary16 bits in Uint16 (int8): GGUF Q8_0's
	// scales as the file has them (blocks.go).
	F16Scales bool
}

// Int8 is int8 per-channel (Float32 scales); Int4 is int4 with groups of 32 and
// BFloat16 scales, the int4 profile's format; Int4F32 is the same with Float32 scales
// (Darkroom's int4 before BF16 scales, and GGUF Q4_0 copied exactly); Int4Affine is
// affine int4 with groups of 32 and Float32 scales and minimums (GGUF Q4_1/Q4_K
// exactly); NVFP4 is FP4 E2M1 with groups of 16 (ModelOpt's NVFP4 layout).
var (
	Int8       = Spec{Bits: 8}
	Int4       = Spec{Bits: 4, GroupSize: 32, BF16Scales: true}
	Int4F32    = Spec{Bits: 4, GroupSize: 32}
	Int4Affine = Spec{Bits: 4, GroupSize: 32, Format: Affine}
	NVFP4      = Spec{Bits: 4, GroupSize: 16, Format: FP4}
)

func (s Spec) String() string {
	if s.Format == FP4 {
		return fmt.Sprintf("nvfp4 (fp4 e2m1) g%d", s.GroupSize)
	}
	if k, ok := blockLayouts[s.Format]; ok {
		return k.name + " blocks"
	}
	kind := fmt.Sprintf("int%d", s.Bits)
	if s.Format == Affine {
		kind += " affine"
	}
	if s.GroupSize == 0 {
		kind += " per-channel"
	} else {
		kind += fmt.Sprintf(" g%d", s.GroupSize)
	}
	if s.BF16Scales {
		kind += " (bf16 scales)"
	}
	if s.F16Scales {
		kind += " (f16 scales)"
	}
	return kind
}

// HasMin reports whether the format stores a NAME.qmin tensor: affine int4's
// minimums, a kept GGUF block's third part (blocks.go).
func (s Spec) HasMin() bool {
	k, ok := blockLayouts[s.Format]
	return s.Format == Affine || (ok && k.supers > 0)
}

func (s Spec) maxQ() float32 {
	if s.Bits == 4 {
		return 7
	}
	return 127
}

// group is the effective group size for a row of n inputs.
func (s Spec) group(n int) int {
	if s.GroupSize == 0 {
		return n
	}
	return s.GroupSize
}

// Check reports whether a weight of this logical shape can use the spec.
func (s Spec) Check(shape []int) error {
	if k, ok := blockLayouts[s.Format]; ok {
		if s.Bits != k.bits || s.GroupSize != k.group || s.BF16Scales || s.F16Scales {
			return fmt.Errorf("%s needs %d bits in groups of %d and its own scales, got %d bits, group %d", k.name, k.bits, k.group, s.Bits, s.GroupSize)
		}
		if len(shape) < 1 || shape[len(shape)-1] == 0 || shape[len(shape)-1]%k.block != 0 {
			return fmt.Errorf("%s needs rows of whole blocks of %d, got shape %v", k.name, k.block, shape)
		}
		return nil
	}
	if s.Bits != 8 && s.Bits != 4 {
		return fmt.Errorf("unsupported quantization bits %d", s.Bits)
	}
	if s.Format != Int && s.Format != FP4 && s.Format != Affine {
		return fmt.Errorf("unknown quantization format %d", s.Format)
	}
	if s.F16Scales && (s.Format != Int || s.Bits != 8 || s.BF16Scales) {
		return fmt.Errorf("f16 scales go with int8 codes, not %s", s)
	}
	if s.Format == FP4 && (s.Bits != 4 || s.GroupSize <= 0 || s.BF16Scales) {
		return fmt.Errorf("fp4 needs 4 bits, a positive group size and its own scale rows, got %d bits, group %d", s.Bits, s.GroupSize)
	}
	if s.Format == Affine && s.Bits != 4 {
		return fmt.Errorf("affine quantization needs 4 bits, got %d", s.Bits)
	}
	if len(shape) < 1 {
		return fmt.Errorf("cannot quantize a scalar")
	}
	n := shape[len(shape)-1]
	if n == 0 {
		return fmt.Errorf("cannot quantize shape %v (empty rows)", shape)
	}
	if s.GroupSize < 0 || (s.GroupSize > 0 && n%s.GroupSize != 0) {
		return fmt.Errorf("group size %d does not divide the last dimension of %v", s.GroupSize, shape)
	}
	if s.Bits == 4 && s.group(n)%2 != 0 {
		return fmt.Errorf("int4 needs an even group size, got %d for %v", s.group(n), shape)
	}
	return nil
}

// Shapes returns the stored shapes of qweight and qscale for a weight of the logical shape.
func (s Spec) Shapes(shape []int) (qweight, qscale []int) {
	n := shape[len(shape)-1]
	lead := shape[:len(shape)-1]
	if k, ok := blockLayouts[s.Format]; ok {
		nb := n / k.block
		return append(append([]int{}, lead...), nb*k.codes), append(append([]int{}, lead...), nb*k.scales)
	}
	qweight = append(append([]int{}, lead...), n)
	if s.Bits == 4 {
		qweight[len(qweight)-1] = n / 2
	}
	qscale = append(append([]int{}, lead...), n/s.group(n))
	if s.Format == FP4 {
		qscale[len(qscale)-1] += NVFP4ScaleBytes // block-scale codes, then weight_scale_2
	}
	return
}

// MinShape is the stored shape of qmin for a weight of the logical shape (HasMin
// formats): qscale's for affine int4, a kept GGUF block's third part (blocks.go).
func (s Spec) MinShape(shape []int) []int {
	if k, ok := blockLayouts[s.Format]; ok {
		d := append([]int{}, shape...)
		d[len(d)-1] = shape[len(shape)-1] / k.block * k.supers
		return d
	}
	_, sc := s.Shapes(shape)
	return sc
}

// ScaleDType is the stored dtype of qscale (and of an affine format's qmin): a
// block format's own (blocks.go), Uint8 for NVFP4, Uint16 (binary16 bits) with
// F16Scales, BFloat16 with BF16Scales, Float32 otherwise.
func (s Spec) ScaleDType() dtypes.DType {
	if k, ok := blockLayouts[s.Format]; ok {
		return k.scaleDType
	}
	switch {
	case s.Format == FP4:
		return dtypes.Uint8
	case s.F16Scales:
		return dtypes.Uint16
	case s.BF16Scales:
		return dtypes.BFloat16
	}
	return dtypes.Float32
}

// MinDType is the stored dtype of qmin: Uint16 (binary16 bits) for a kept GGUF
// block's, ScaleDType for affine int4.
func (s Spec) MinDType() dtypes.DType {
	if _, ok := blockLayouts[s.Format]; ok {
		return dtypes.Uint16
	}
	return s.ScaleDType()
}

// Bytes is the memory a weight of the logical shape takes in this format (qweight,
// qscale and qmin where it has one), for size estimates.
func (s Spec) Bytes(shape []int) int64 {
	w, sc := s.Shapes(shape)
	n := func(d []int) int64 {
		v := int64(1)
		for _, x := range d {
			v *= int64(x)
		}
		return v
	}
	b := n(w)*int64(s.DType().Size()) + n(sc)*int64(s.ScaleDType().Size())
	if s.HasMin() {
		b += n(s.MinShape(shape)) * int64(s.MinDType().Size())
	}
	return b
}

// DType is the stored dtype of qweight: Int8 for int8, Uint8 for every packed format.
func (s Spec) DType() dtypes.DType {
	if s.Bits == 8 {
		return dtypes.Int8
	}
	return dtypes.Uint8
}

// SpecOf infers the spec from stored tensors for a weight of the logical shape, and
// checks the stored shapes: it is how a loader accepts a quantized checkpoint. qmin is
// the weight's NAME.qmin when it has one (at most one): with a float qscale of its
// own shape and dtype it means affine int4. Kept GGUF blocks (blocks.go) are told
// by their dtypes and their parts' proportions (blockOf).
func SpecOf(logical []int, qweight, qscale shapes.Shape, qmin ...shapes.Shape) (Spec, error) {
	if len(logical) < 1 {
		return Spec{}, fmt.Errorf("cannot quantize a scalar")
	}
	if len(qmin) > 1 {
		return Spec{}, fmt.Errorf("%d qmin shapes, want at most one", len(qmin))
	}
	if f, _, ok := blockOf(qweight, qscale, qmin...); ok {
		s := blockLayouts[f].spec(f)
		if err := s.Check(logical); err != nil {
			return Spec{}, err
		}
		wantW, wantS := s.Shapes(logical)
		if !slices.Equal(qweight.Dimensions, wantW) || !slices.Equal(qscale.Dimensions, wantS) ||
			(s.HasMin() && !slices.Equal(qmin[0].Dimensions, s.MinShape(logical))) {
			return Spec{}, fmt.Errorf("stored shapes qweight %v, qscale %v do not fit logical shape %v (%s wants %v and %v)",
				qweight.Dimensions, qscale.Dimensions, logical, s, wantW, wantS)
		}
		return s, nil
	}
	n := logical[len(logical)-1]
	var s Spec
	switch {
	case qweight.DType == dtypes.Uint8 && qscale.DType == dtypes.Uint8:
		s = Spec{Bits: 4, Format: FP4}
	case qweight.DType == dtypes.Int8 && qscale.DType == dtypes.Uint16:
		s = Spec{Bits: 8, F16Scales: true}
	case qscale.DType != dtypes.Float32 && qscale.DType != dtypes.BFloat16:
		return Spec{}, fmt.Errorf("qscale has dtype %s, want Float32 or BFloat16 (int8, int4), Uint8 (nvfp4, with a Uint8 qweight) or a kept GGUF block's", qscale.DType)
	case qweight.DType == dtypes.Int8:
		s.Bits = 8
	case qweight.DType == dtypes.Uint8:
		s.Bits = 4
	default:
		return Spec{}, fmt.Errorf("qweight has dtype %s, want Int8 (int8) or Uint8 (int4, nvfp4, GGUF blocks)", qweight.DType)
	}
	s.BF16Scales = qscale.DType == dtypes.BFloat16
	if len(qmin) == 1 {
		if s.Bits != 4 || s.Format != Int {
			return Spec{}, fmt.Errorf("a qmin goes with a Uint8 qweight and a float qscale (affine int4) or a kept GGUF block's parts, not %s, %s and %s", qweight.DType, qscale.DType, qmin[0].DType)
		}
		if qmin[0].DType != qscale.DType || !slices.Equal(qmin[0].Dimensions, qscale.Dimensions) {
			return Spec{}, fmt.Errorf("qmin is %s, want qscale's %s", qmin[0], qscale)
		}
		s.Format = Affine
	}
	if s.Format == FP4 {
		if qscale.Rank() == len(logical) {
			if g := qscale.Dimensions[len(logical)-1] - NVFP4ScaleBytes; g > 0 && n%g == 0 {
				s.GroupSize = n / g
			}
		}
		if s.GroupSize == 0 {
			return Spec{}, fmt.Errorf("nvfp4 qscale %v does not fit logical shape %v", qscale.Dimensions, logical)
		}
	} else if qscale.Rank() == len(logical) {
		if g := qscale.Dimensions[len(logical)-1]; g > 1 && n%g == 0 {
			s.GroupSize = n / g
		}
	}
	if s.Bits == 4 && s.Format != FP4 && s.GroupSize == 0 && n > 0 {
		s.GroupSize = n // int4 with one group per row
	}
	if err := s.Check(logical); err != nil {
		return Spec{}, err
	}
	wantW, wantS := s.Shapes(logical)
	if !slices.Equal(qweight.Dimensions, wantW) || !slices.Equal(qscale.Dimensions, wantS) {
		return Spec{}, fmt.Errorf("stored shapes qweight %v, qscale %v do not fit logical shape %v (%s wants %v and %v)",
			qweight.Dimensions, qscale.Dimensions, logical, s, wantW, wantS)
	}
	return s, nil
}

// LogicalShape is the shape of the weight that stored tensors of these shapes
// hold (qweight's leading axes, the last one as many values as its codes and scales
// say): how the graph reads a weight's shape before SpecOf checks it.
func LogicalShape(qweight, qscale shapes.Shape, qmin ...shapes.Shape) []int {
	d := append([]int{}, qweight.Dimensions...)
	if len(d) == 0 {
		return d
	}
	if f, nb, ok := blockOf(qweight, qscale, qmin...); ok {
		d[len(d)-1] = nb * blockLayouts[f].block
	} else if qweight.DType == dtypes.Uint8 {
		d[len(d)-1] *= 2 // two codes a byte
	}
	return d
}

// floats returns a tensor's values as float32 (Float32, BFloat16 or Float64).
func floats(t *tensors.Tensor) ([]float32, error) {
	out := make([]float32, t.Shape().Size())
	var err error
	switch t.DType() {
	case dtypes.Float32:
		err = t.ConstFlatData(func(flat any) { copy(out, flat.([]float32)) })
	case dtypes.BFloat16:
		err = t.ConstFlatData(func(flat any) {
			for i, v := range flat.([]bfloat16.BFloat16) {
				out[i] = v.Float32()
			}
		})
	case dtypes.Float64:
		err = t.ConstFlatData(func(flat any) {
			for i, v := range flat.([]float64) {
				out[i] = float32(v)
			}
		})
	default:
		return nil, fmt.Errorf("cannot quantize dtype %s", t.DType())
	}
	return out, err
}

// Quantize quantizes a float weight (Float32, BFloat16 or Float64) on the host, to
// int8 or int4 with Float32 or BFloat16 scales (affine int4: QuantizeAffine; NVFP4
// weights only come from ModelOpt checkpoints).
func Quantize(t *tensors.Tensor, s Spec) (qweight, qscale *tensors.Tensor, err error) {
	shape := t.Shape().Dimensions
	if err := s.Check(shape); err != nil {
		return nil, nil, err
	}
	if s.Format != Int || s.F16Scales {
		if s.Format == Affine {
			return nil, nil, fmt.Errorf("quantize to %s: use QuantizeAffine (three tensors)", s)
		}
		return nil, nil, fmt.Errorf("cannot quantize to %s: Darkroom only loads that format", s)
	}
	w, err := floats(t)
	if err != nil {
		return nil, nil, err
	}
	n := shape[len(shape)-1]
	g := s.group(n)
	wShape, sShape := s.Shapes(shape)
	scales := make([]float32, len(w)/g)
	q := make([]int8, len(w))
	if bad := parallelGroups(len(scales), func(lo, hi int) int {
		return quantizeGroups(w, q, scales, lo, hi, g, s.maxQ(), s.BF16Scales)
	}); bad >= 0 {
		return nil, nil, fmt.Errorf("cannot quantize non-finite value %v at flat index %d", w[bad], bad)
	}
	qscale = scaleTensor(scales, s.BF16Scales, sShape)
	if s.Bits == 8 {
		return tensors.FromFlatDataAndDimensions(q, wShape...), qscale, nil
	}
	packed := make([]uint8, len(q)/2)
	for i := range packed {
		packed[i] = uint8(q[2*i]+8) | uint8(q[2*i+1]+8)<<4
	}
	return tensors.FromFlatDataAndDimensions(packed, wShape...), qscale, nil
}

// QuantizeBF16Rows quantizes a BFloat16 matrix of rows of cols values (src, little
// endian, as stored) to s, int8 with a Float32 scale per row (Int8) or per group of
// 32, into q [rows·cols] and scales — exactly what Quantize gives for the matrix
// widened to float32, without widening it whole (the 26B's embedding is 738M values:
// 3 GB as float32). Rows are split among the processors.
func QuantizeBF16Rows(q []int8, scales []float32, src []byte, cols int, s Spec) error {
	if s.Format != Int || s.Bits != 8 || s.BF16Scales || cols <= 0 {
		return fmt.Errorf("quantize bf16 rows of %d to %s: only int8 with Float32 scales", cols, s)
	}
	g := s.group(cols)
	if cols%g != 0 {
		return fmt.Errorf("quantize bf16 rows of %d to %s: groups of %d do not divide a row", cols, s, g)
	}
	rows := len(src) / (2 * cols)
	if len(src) != 2*rows*cols || len(q) != rows*cols || len(scales) != rows*cols/g {
		return fmt.Errorf("quantize bf16 rows of %d: %d bytes into %d codes and %d scales", cols, len(src), len(q), len(scales))
	}
	bad := parallelGroups(rows, func(lo, hi int) int {
		w := make([]float32, cols)
		for r := lo; r < hi; r++ {
			row := src[2*r*cols : 2*(r+1)*cols]
			row = row[:2*len(w)]
			for j := range w {
				w[j] = math.Float32frombits(uint32(row[2*j])<<16 | uint32(row[2*j+1])<<24)
			}
			if b := quantizeGroups(w, q[r*cols:(r+1)*cols], scales[r*cols/g:(r+1)*cols/g], 0, cols/g, g, s.maxQ(), false); b >= 0 {
				return r*cols + b
			}
		}
		return -1
	})
	if bad >= 0 {
		return fmt.Errorf("cannot quantize non-finite value at flat index %d", bad)
	}
	return nil
}

// scaleTensor stores scales (already representable in bf16 when bf16 is set) as
// Float32 or BFloat16.
func scaleTensor(scales []float32, bf16 bool, dims []int) *tensors.Tensor {
	if !bf16 {
		return tensors.FromFlatDataAndDimensions(scales, dims...)
	}
	b := make([]bfloat16.BFloat16, len(scales))
	for i, v := range scales {
		b[i] = RoundBF16(v)
	}
	return tensors.FromFlatDataAndDimensions(b, dims...)
}

// RoundBF16 rounds a float32 to the nearest BFloat16, ties to even (GoMLX's
// bfloat16.FromFloat32 truncates). NaN stays NaN.
func RoundBF16(x float32) bfloat16.BFloat16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return bfloat16.BFloat16(b>>16 | 0x40) // quiet NaN
	}
	b += 0x7fff + (b>>16)&1
	return bfloat16.BFloat16(b >> 16)
}

// roundEven is math.RoundToEven for float32 x with |x| ≤ 2²² — a code before it is
// clamped (|x| ≤ maxQ, but for the rounding of x·(1/scale)) — in float32 arithmetic:
// x + 1.5·2²³ lies where float32's step is 1, so the addition rounds x to an
// integer, ties to even, and the subtraction is exact. It is the float64 rounding's
// result bit for bit (TestRoundEven), at a third of its cost in the quantizer's loop.
func roundEven(x float32) float32 {
	const magic = 1 << 23 * 1.5
	return x + magic - magic
}

// quantizeGroups quantizes groups [lo, hi) of w into q and scales; it returns the flat
// index of a non-finite value, or -1. With bf16 the scale is rounded to BFloat16 first
// and q is chosen against the rounded scale.
func quantizeGroups(w []float32, q []int8, scales []float32, lo, hi, g int, maxQ float32, bf16 bool) int {
	for gi := lo; gi < hi; gi++ {
		vals := w[gi*g : (gi+1)*g]
		mBits := maxAbsBits(vals)
		if mBits >= 0x7f800000 {
			for j, v := range vals {
				if math.Float32bits(v)&0x7fffffff >= 0x7f800000 {
					return gi*g + j
				}
			}
		}
		sc := math.Float32frombits(mBits) / maxQ
		if bf16 {
			sc = RoundBF16(sc).Float32()
		}
		scales[gi] = sc
		if sc == 0 {
			continue
		}
		codesInt(q[gi*g:(gi+1)*g], vals, 1/sc, int32(maxQ))
	}
	return -1
}

// maxAbsBits is the largest of vals' magnitudes as float32 bits (for non-negative
// floats the bit patterns order like the values, and every NaN or infinity's is ≥
// 0x7f800000: one integer max finds both), in four independent chains.
func maxAbsBits(vals []float32) uint32 {
	var m0, m1, m2, m3 uint32
	j := 0
	for ; j+4 <= len(vals); j += 4 {
		v := vals[j : j+4 : j+4]
		m0 = max(m0, math.Float32bits(v[0])&0x7fffffff)
		m1 = max(m1, math.Float32bits(v[1])&0x7fffffff)
		m2 = max(m2, math.Float32bits(v[2])&0x7fffffff)
		m3 = max(m3, math.Float32bits(v[3])&0x7fffffff)
	}
	for ; j < len(vals); j++ {
		m0 = max(m0, math.Float32bits(vals[j])&0x7fffffff)
	}
	return max(m0, m1, m2, m3)
}

// codesInt writes each of vals (finite) times inv rounded to the nearest even integer
// and clamped to ±top into out: clamped as integers (two CMOVs), since Go's float min
// and max order NaNs and zeros' signs at a cost of their own. (It is inlined into
// quantizeGroups; with it and maxAbsBits a load's embedding conversion runs about 1.7×
// as fast: BenchmarkQuantizeBF16Rows.)
func codesInt(out []int8, vals []float32, inv float32, top int32) {
	out = out[:len(vals)]
	for j, v := range vals {
		out[j] = int8(max(-top, min(top, int32(roundEven(v*inv)))))
	}
}

// QuantizeAffine quantizes a float weight to affine int4 (s.Format == Affine): per
// group min = min(w), scale = (max(w) − min)/15 (each rounded to bf16 first with
// s.BF16Scales), q = round((w − min)/scale) ∈ 0…15. Darkroom's profiles do not use
// it; it exists so the format can be written and tested like the others (GGUF
// Q4_1/Q4_K tensors arrive in it already quantized, engine/gguf).
func QuantizeAffine(t *tensors.Tensor, s Spec) (qweight, qscale, qmin *tensors.Tensor, err error) {
	shape := t.Shape().Dimensions
	if err := s.Check(shape); err != nil {
		return nil, nil, nil, err
	}
	if s.Format != Affine {
		return nil, nil, nil, fmt.Errorf("QuantizeAffine to %s: not an affine format", s)
	}
	w, err := floats(t)
	if err != nil {
		return nil, nil, nil, err
	}
	n := shape[len(shape)-1]
	g := s.group(n)
	wShape, sShape := s.Shapes(shape)
	scales, mins := make([]float32, len(w)/g), make([]float32, len(w)/g)
	packed := make([]uint8, len(w)/2)
	round := func(x float32) float32 {
		if s.BF16Scales {
			return RoundBF16(x).Float32()
		}
		return x
	}
	bad := parallelGroups(len(scales), func(lo, hi int) int {
		q := make([]uint8, g)
		for gi := lo; gi < hi; gi++ {
			vals := w[gi*g : (gi+1)*g]
			vmin, vmax := vals[0], vals[0]
			for j, v := range vals {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return gi*g + j
				}
				vmin, vmax = min(vmin, v), max(vmax, v)
			}
			mn := round(vmin)
			sc := round((vmax - mn) / 15)
			scales[gi], mins[gi] = sc, mn
			clear(q)
			if sc > 0 {
				inv := 1 / sc
				for j, v := range vals {
					q[j] = uint8(max(0, min(15, math.RoundToEven(float64((v-mn)*inv)))))
				}
			}
			for j := 0; j < g; j += 2 {
				packed[(gi*g+j)/2] = q[j] | q[j+1]<<4
			}
		}
		return -1
	})
	if bad >= 0 {
		return nil, nil, nil, fmt.Errorf("cannot quantize non-finite value %v at flat index %d", w[bad], bad)
	}
	return tensors.FromFlatDataAndDimensions(packed, wShape...), scaleTensor(scales, s.BF16Scales, sShape),
		scaleTensor(mins, s.BF16Scales, sShape), nil
}

// parallelGroups runs fn over [0, n) split into contiguous chunks on all CPUs and
// returns the smallest non-negative result (or -1).
func parallelGroups(n int, fn func(lo, hi int) int) int {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/256))
	if workers <= 1 {
		return fn(0, n)
	}
	res := make([]int, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[k] = fn(n*k/workers, n*(k+1)/workers)
		}()
	}
	wg.Wait()
	bad := -1
	for _, r := range res {
		if r >= 0 && (bad < 0 || r < bad) {
			bad = r
		}
	}
	return bad
}

// Dequantize rebuilds the Float32 weight of the logical shape on the host. qmin is
// the affine format's minimums: exactly one for Affine, none otherwise.
func Dequantize(qweight, qscale *tensors.Tensor, s Spec, shape []int, qmin ...*tensors.Tensor) (*tensors.Tensor, error) {
	var minShape []shapes.Shape
	for _, m := range qmin {
		minShape = append(minShape, m.Shape())
	}
	got, err := SpecOf(shape, qweight.Shape(), qscale.Shape(), minShape...)
	if err != nil {
		return nil, err
	}
	if got.Bits != s.Bits || got.Format != s.Format {
		return nil, fmt.Errorf("stored tensors are %s, spec says %s", got, s)
	}
	if got.Kept() {
		return nil, fmt.Errorf("stored tensors are %s, GGUF blocks kept as stored: engine/weights decodes them (Set.Float32)", got)
	}
	n := shape[len(shape)-1]
	g := got.group(n)
	size := 1
	for _, d := range shape {
		size *= d
	}
	out := make([]float32, size)
	var scales, mins []float32
	if got.Format == FP4 {
		var rows []uint8
		if err := qscale.ConstFlatData(func(flat any) { rows = append(rows, flat.([]uint8)...) }); err != nil {
			return nil, err
		}
		groups := n / g
		w := groups + NVFP4ScaleBytes
		scales = make([]float32, size/g)
		for r := 0; r < size/n; r++ {
			NVFP4RowScales(scales[r*groups:(r+1)*groups], rows[r*w:(r+1)*w])
		}
	} else if scales, err = floats(qscale); err != nil {
		return nil, err
	}
	if got.Format == Affine {
		if mins, err = floats(qmin[0]); err != nil {
			return nil, err
		}
	}
	err = qweight.ConstFlatData(func(flat any) {
		switch q := flat.(type) {
		case []int8:
			for i, v := range q {
				out[i] = float32(v) * scales[i/g]
			}
		case []uint8:
			switch got.Format {
			case FP4:
				for i, b := range q {
					out[2*i] = E2M1[b&15] * scales[(2*i)/g]
					out[2*i+1] = E2M1[b>>4] * scales[(2*i+1)/g]
				}
			case Affine:
				// q·scale rounded to float32, then + min: the graph's Mul, Add (and
				// ggml's d·q + m) — the explicit conversion keeps Go from fusing them.
				for i, b := range q {
					j, k := (2*i)/g, (2*i+1)/g
					out[2*i] = float32(float32(b&15)*scales[j]) + mins[j]
					out[2*i+1] = float32(float32(b>>4)*scales[k]) + mins[k]
				}
			default:
				for i, b := range q {
					out[2*i] = float32(int(b&15)-8) * scales[(2*i)/g]
					out[2*i+1] = float32(int(b>>4)-8) * scales[(2*i+1)/g]
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return tensors.FromFlatDataAndDimensions(out, shape...), nil
}
