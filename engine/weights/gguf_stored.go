package weights

import (
	"fmt"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// openGGUFStored opens the GGUF model file at path for cfg, to be read as stored by
// the host model: names, shapes and types are checked now (planGGUF, as LoadGGUF
// checks them), and each tensor is read when it is first looked up (readGGUF), so a
// graph path that converts the file instead (Set) reads nothing twice. ok is false for
// a file whose gate and up experts have different types, which LoadGGUF converts.
func openGGUFStored(path string, cfg *config.Model) (m *Mapped, ok bool, err error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, false, err
	}
	plans, err := planGGUF(f, cfg, GGUFOptions{})
	if err != nil {
		f.Close()
		return nil, false, err
	}
	m = &Mapped{cfg: cfg, tensors: map[string]Stored{}, gf: f, plans: map[string]ggufPlan{}}
	for _, p := range plans {
		if len(p.parts) == 2 && p.parts[0].Type != p.parts[1].Type {
			f.Close()
			return nil, false, nil
		}
		m.plans[p.spec.Name] = p
		if p.hostConverted() {
			m.bytes += p.quant.Bytes(p.spec.Shape)
			continue
		}
		for _, t := range p.parts {
			m.bytes += int64(t.Size)
		}
	}
	return m, true, nil
}

// HostHeld is the Darkroom format the host model holds tensor name, a quantizable
// matrix of GGUF block type t, in, and false for the tensors it holds and multiplies
// as stored. A Q6_K embedding (the tied output head, in every mix but Q8_0) is held
// as the graph path converts it (decideGGUF: int8 with a float32 scale per 32 inputs,
// gguf.Requantize), the same numbers on the CPU as on a GPU: Q6_K keeps a scale per 16
// inputs, which no integer canvas product takes (the kernels' groups are of 32), and
// the embedding's two products a denoising step (the output head and the soft
// embedding, a MulNN with no stored-format path) were three quarters of a 6-layer
// 26B's step on the float path, twice the int4 profile's. 1.125 bytes a weight for
// Q6_K's 0.82, a relative error about 4% above Q6_K's own (0.0227 against 0.0218 on
// random normal weights with outliers; int8 with a scale per row, which would take
// the integer soft embedding too, 0.0336). Every other Q6_K matrix — a Q4_K_M's
// value and down projections in some layers, a whole Q6_K file — is multiplied as
// stored: the printer's products in integer arithmetic (kernels' dotQ6KIntAVX2, at
// the memory's rate for 0.82 bytes a weight), the canvas's decoded (as fast as int8's
// with AVX2 alone: BenchmarkMatrixMulNT), mapped from the file rather than held at
// 1.4 times its size (a Q6_K file's 21 GB would be 29).
func HostHeld(t gguf.Type, name string) (quant.Spec, bool) {
	if t == gguf.Q6_K && name == EmbeddingName {
		return quant.Spec{Bits: 8, GroupSize: gguf.Group}, true
	}
	return quant.Spec{}, false
}

// hostConverted reports whether the host model holds p converted (HostHeld): every
// part of such a type, and the graph path's conversion of p the same format.
func (p ggufPlan) hostConverted() bool {
	if p.quant == nil {
		return false
	}
	for _, t := range p.parts {
		if spec, ok := HostHeld(t.Type, p.spec.Name); !ok || spec != *p.quant {
			return false
		}
	}
	return true
}

// readGGUF reads one planned tensor as stored: a matrix keeps its GGUF blocks (Q4_K,
// Q4_0, Q4_1, Q8_0, F16, …) or its BF16/F32 values — in place, a view of the file
// mapped into memory (gguf.File.View) where the file is mapped, as a safetensors
// checkpoint's tensors are, split gate and up experts held in parts (viewGGUF); else
// read onto the heap, split experts interleaved per expert into the canonical
// [E, 2F, D], one row block after the other — with its byte counts checked, except a
// type HostHeld converts, held in its Darkroom format on the heap; a vector (norms,
// scales) is widened to float32. A view
// need not be aligned: the kernels read GGUF blocks at any address, and F32 values
// one by one where they are not 4-byte aligned.
func (m *Mapped) readGGUF(p ggufPlan) (Stored, error) {
	f := m.gf
	s := Stored{Name: p.spec.Name, File: f.Path, Shape: p.spec.Shape}
	if p.hostConverted() {
		spec := *p.quant
		wShape, sShape := spec.Shapes(p.spec.Shape)
		q := make([]byte, safetensors.Elements(wShape)*int64(spec.DType().Size()))
		scales := make([]float32, safetensors.Elements(sShape))
		var mins []float32
		if spec.HasMin() {
			mins = make([]float32, len(scales))
		}
		if err := ggufRequant(f, p, q, scales, mins); err != nil {
			return s, err
		}
		if spec.BF16Scales {
			return s, fmt.Errorf("tensor %s: %s converted with BFloat16 scales", p.spec.Name, p.parts[0].Type) // decideGGUF gives int8 Float32 ones
		}
		s.DType, s.Quant, s.Data, s.Scales, s.Mins = spec.DType(), &spec, q, f32Bytes(scales), f32Bytes(mins)
		if _, err := s.Matrix(); err != nil {
			return s, err
		}
		return s, nil
	}
	if len(s.Shape) < 2 {
		v, err := f.Float32(p.parts[0], 0, -1)
		if err != nil {
			return s, err
		}
		s.DType, s.Data = dtypes.Float32, f32Bytes(v)
		return s, nil
	}
	switch typ := p.parts[0].Type; typ {
	case gguf.F32:
		s.DType = dtypes.Float32
	case gguf.BF16:
		s.DType = dtypes.BFloat16
	default:
		s.DType, s.Blocks, s.GGUF = dtypes.Uint8, true, typ
	}
	if m.inPlace(p) {
		if v, ok, err := m.viewGGUF(p, s); err != nil || ok {
			return v, err
		}
	}
	if len(p.parts) > 1 {
		s.Data = make([]byte, 0, p.parts[0].Size+p.parts[1].Size)
	}
	for _, seg := range p.segments() {
		raw, err := f.ReadRaw(seg.t, seg.row0, seg.rows)
		if err != nil {
			return s, err
		}
		if len(p.parts) == 1 {
			s.Data = raw
		} else {
			s.Data = append(s.Data, raw...)
		}
	}
	if _, err := s.Matrix(); err != nil {
		return s, err
	}
	return s, nil
}

// viewGGUF is readGGUF's matrix s (its format fields set) in place: a view of the
// mapped file; split gate and up experts are held in parts (Stored.Parts), expert e's
// gate rows then its up rows, each a view of its tensor's rows. ok is false where the
// file is not mapped.
func (m *Mapped) viewGGUF(p ggufPlan, s Stored) (_ Stored, ok bool, err error) {
	f := m.gf
	if len(p.parts) == 1 {
		if s.Data, ok, err = f.View(p.parts[0], 0, -1); err != nil || !ok {
			return s, false, err
		}
		_, err = s.Matrix()
		return s, err == nil, err
	}
	cols := p.spec.Shape[len(p.spec.Shape)-1]
	for _, seg := range p.segments() {
		part := Stored{Name: seg.t.Name, File: f.Path, Shape: []int{int(seg.rows), cols},
			DType: s.DType, Blocks: s.Blocks, GGUF: s.GGUF}
		if part.Data, ok, err = f.View(seg.t, seg.row0, seg.rows); err != nil || !ok {
			return s, false, err
		}
		s.Parts = append(s.Parts, part)
	}
	_, err = s.PartMatrices()
	return s, err == nil, err
}

// inPlace reports whether readGGUF keeps p's tensor where it lies in the file: a
// matrix as stored (split experts in parts), in a file Open mapped.
func (m *Mapped) inPlace(p ggufPlan) bool {
	return !p.hostConverted() && len(p.spec.Shape) >= 2 && m.gf.Mapped()
}

// FirstRead is how many bytes of the file the first Lookup of the canonical tensor
// name reads onto the heap: a GGUF tensor's blocks where readGGUF does not keep it in
// place (converted, a vector, or the whole file where it is not mapped:
// DARKROOM_NO_MMAP), and a safetensors tensor the host holds converted (Mapped.held), so a
// caller can count a read that is not a mapping's. It is 0 for a view of a mapping, a
// tensor already looked up, a name the checkpoint lacks, and a safetensors
// checkpoint's other tensors (mapped, or read whole when it was opened).
func (m *Mapped) FirstRead(name string) int64 {
	if _, held := m.held[name]; held {
		s := m.tensors[name]
		return s.Bytes()
	}
	if m.gf == nil {
		return 0
	}
	p, planned := m.plans[name]
	if _, read := m.tensors[name]; read || !planned || m.inPlace(p) {
		return 0
	}
	var n int64
	for _, t := range p.parts {
		n += int64(t.Size)
	}
	return n
}

// f32Bytes is v's memory as bytes (nil for none).
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
