package weights

import (
	"fmt"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
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
		for _, t := range p.parts {
			m.bytes += int64(t.Size)
		}
	}
	return m, true, nil
}

// readGGUF reads one planned tensor as stored: a matrix keeps its GGUF blocks (Q4_K,
// Q6_K, Q4_0, Q4_1, Q8_0, F16, …) or its BF16/F32 values — split gate and up experts
// interleaved per expert into the canonical [E, 2F, D], one row block after the other
// — with its byte counts checked; a vector (norms, scales) is widened to float32. The
// file is read rather than mapped: its tensors are not aligned for the kernels' views,
// and the heap then holds exactly the stored bytes.
func (m *Mapped) readGGUF(p ggufPlan) (Stored, error) {
	f := m.gf
	s := Stored{Name: p.spec.Name, File: f.Path, Shape: p.spec.Shape}
	if len(s.Shape) < 2 {
		v, err := f.Float32(p.parts[0], 0, -1)
		if err != nil {
			return s, err
		}
		s.DType = dtypes.Float32
		if len(v) > 0 {
			s.Data = unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
		}
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
	if len(p.parts) == 2 {
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

// ggufSet converts the GGUF file into a Set as LoadGGUF does (the graph path), after
// dropping the tensors read as stored, so the two copies never coexist.
func (m *Mapped) ggufSet() (*Set, error) {
	clear(m.tensors)
	s, err := collect(func(fn func(string, *tensors.Tensor, *quant.Spec) error) error {
		return EachFromGGUF(m.gf, m.cfg, fn)
	})
	if err != nil {
		return nil, fmt.Errorf("load weights: %w", err)
	}
	return s, nil
}
