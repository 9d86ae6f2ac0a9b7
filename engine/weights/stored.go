package weights

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
)

// Stored is one of a model's tensors as it is held — a view of its bytes in the file's
// mapping or in a loaded tensor, nothing converted — for the host model, which
// multiplies weights in their stored format (kernels.Matrix) instead of widening them
// to float32.
type Stored struct {
	Name  string // canonical name
	File  string // the file it is read from, for messages ("" for one held in memory)
	Shape []int  // logical (Hugging Face) shape
	// DType is Float32 or BFloat16 for a plain tensor; with Quant set the tensor is
	// quantized in one of Darkroom's formats: Data holds NAME.qweight's bytes, Scales
	// NAME.qscale's and Mins NAME.qmin's (affine int4 only), DType the codes' dtype.
	// With Blocks set, Data holds the rows as GGUF blocks of type GGUF (Q4_K, Q6_K,
	// Q8_0, F16, …), DType Uint8.
	DType              dtypes.DType
	Quant              *quant.Spec
	Blocks             bool
	GGUF               gguf.Type
	Data, Scales, Mins []byte
	// Parts, when set, holds a matrix whose rows are not stored together as
	// consecutive row blocks, each a Stored of shape [rows, cols] with its own bytes
	// (and format: a GGUF file's gate and up experts may differ): a ModelOpt export's
	// experts, one module each, and a GGUF file's gate and up experts, two tensors,
	// left where they lie in the file instead of copied into the fused [E, 2F, D].
	// Data, Scales and Mins are then empty, and the format fields describe the first
	// part. Matrix declines a Stored in parts: PartMatrices reads it.
	Parts []Stored
}

func (s *Stored) where() string {
	if s.File == "" {
		return "tensor " + s.Name
	}
	return s.File + ": tensor " + s.Name
}

// Matrix is the tensor as a matrix [rows, cols] in its stored format: the leading axes
// flattened into rows, the last one the inputs (a stacked expert weight [E, F, D] is
// [E·F, D]). Its byte counts are checked: a truncated tensor or a wrong scale count is
// an error naming the file and tensor.
func (s *Stored) Matrix() (kernels.Matrix, error) {
	if len(s.Parts) > 0 {
		return kernels.Matrix{}, fmt.Errorf("%s: stored in %d parts apart, read it with PartMatrices", s.where(), len(s.Parts))
	}
	if len(s.Shape) < 2 {
		return kernels.Matrix{}, fmt.Errorf("%s: shape %v is not a matrix", s.where(), fmtShape(s.Shape))
	}
	cols := s.Shape[len(s.Shape)-1]
	rows := 1
	for _, d := range s.Shape[:len(s.Shape)-1] {
		rows *= d
	}
	m := kernels.Matrix{Rows: rows, Cols: cols, Data: s.Data, Scales: s.Scales, Mins: s.Mins}
	switch {
	case s.Blocks:
		m.GGUF = s.GGUF
	case s.Quant != nil:
		m.Spec = *s.Quant
	case s.DType == dtypes.BFloat16:
		m.GGUF = gguf.BF16
	case s.DType == dtypes.Float32:
		m.GGUF = gguf.F32
	default:
		return kernels.Matrix{}, fmt.Errorf("%s: dtype %s is not a stored weight format", s.where(), s.DType)
	}
	if err := m.Check(); err != nil {
		return kernels.Matrix{}, fmt.Errorf("%s: %w", s.where(), err)
	}
	return m, nil
}

// Float32 returns the values of a plain Float32 tensor — a view of Data when it is
// 4-byte aligned (Darkroom's platforms are little endian, as the files are), else a
// copy — and those of a BFloat16 tensor or of GGUF blocks widened into a new slice.
// Darkroom's quantized tensors are read through Matrix instead.
func (s *Stored) Float32() ([]float32, error) {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	if s.Quant != nil {
		return nil, fmt.Errorf("%s: quantized (%s), read it as a matrix", s.where(), s.Quant)
	}
	if s.Blocks {
		t := s.GGUF
		if !t.Supported() || n%t.BlockSize() != 0 || len(s.Data) != n/t.BlockSize()*t.BlockBytes() {
			return nil, fmt.Errorf("%s: %d bytes of %s do not hold shape %v", s.where(), len(s.Data), t, fmtShape(s.Shape))
		}
		out := make([]float32, n)
		if err := gguf.Dequantize(t, s.Data, out); err != nil {
			return nil, fmt.Errorf("%s: %w", s.where(), err)
		}
		return out, nil
	}
	want := n * s.DType.Size()
	if s.DType != dtypes.Float32 && s.DType != dtypes.BFloat16 {
		return nil, fmt.Errorf("%s: dtype %s, want Float32 or BFloat16", s.where(), s.DType)
	}
	if len(s.Data) != want {
		return nil, fmt.Errorf("%s: holds %d bytes, shape %v of %s needs %d", s.where(), len(s.Data), fmtShape(s.Shape), s.DType, want)
	}
	if n == 0 {
		return []float32{}, nil
	}
	if s.DType == dtypes.Float32 && uintptr(unsafe.Pointer(&s.Data[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&s.Data[0])), n), nil // little endian, as stored
	}
	out := make([]float32, n)
	for i := range out {
		if s.DType == dtypes.Float32 {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(s.Data[4*i:]))
		} else {
			out[i] = bfloat16.BFloat16(binary.LittleEndian.Uint16(s.Data[2*i:])).Float32()
		}
	}
	return out, nil
}

// PartMatrices is a matrix stored in parts as its row blocks in order, each checked
// as Matrix checks a whole one, and their rows checked to add up to the tensor's; a
// Stored held together is one block.
func (s *Stored) PartMatrices() ([]kernels.Matrix, error) {
	if len(s.Parts) == 0 {
		m, err := s.Matrix()
		if err != nil {
			return nil, err
		}
		return []kernels.Matrix{m}, nil
	}
	if len(s.Shape) < 2 {
		return nil, fmt.Errorf("%s: shape %v is not a matrix", s.where(), fmtShape(s.Shape))
	}
	rows, cols := 1, s.Shape[len(s.Shape)-1]
	for _, d := range s.Shape[:len(s.Shape)-1] {
		rows *= d
	}
	out := make([]kernels.Matrix, 0, len(s.Parts))
	got := 0
	for i := range s.Parts {
		p := &s.Parts[i]
		if len(p.Parts) > 0 || len(p.Shape) != 2 || p.Shape[1] != cols {
			return nil, fmt.Errorf("%s: part %d (%s) has shape %v, want [rows %d]", s.where(), i, p.Name, fmtShape(p.Shape), cols)
		}
		m, err := p.Matrix()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		got += m.Rows
	}
	if got != rows {
		return nil, fmt.Errorf("%s: its %d parts hold %d rows, shape %v has %d", s.where(), len(s.Parts), got, fmtShape(s.Shape), rows)
	}
	return out, nil
}

// Spans is the stored bytes of the tensor, of each part in order for one in parts.
func (s *Stored) Spans() [][]byte {
	var out [][]byte
	for _, b := range [][]byte{s.Data, s.Scales, s.Mins} {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	for i := range s.Parts {
		out = append(out, s.Parts[i].Spans()...)
	}
	return out
}

// Bytes is the memory the stored tensor takes (its parts' together).
func (s *Stored) Bytes() int64 {
	var n int64
	for _, b := range s.Spans() {
		n += int64(len(b))
	}
	return n
}
