package weights

import (
	"fmt"
	"hash/fnv"
	"iter"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Set is a model's weights on the host, keyed by canonical name.
type Set struct {
	// Tensors holds Float32 or BFloat16 weights; a quantized weight NAME is absent and
	// stored as NAME.qweight + NAME.qscale (+ NAME.qmin for affine int4) instead (see
	// Quant).
	Tensors map[string]*tensors.Tensor
	// Quant lists the quantized weights (by canonical name without suffix).
	Quant map[string]quant.Spec
}

// NewSet returns an empty Set.
func NewSet() *Set {
	return &Set{Tensors: map[string]*tensors.Tensor{}, Quant: map[string]quant.Spec{}}
}

// collect gathers a tensor stream (Each's callback protocol: a quantized weight's
// NAME.qweight arrives with its spec) into a new Set; on an error it returns none.
func collect(stream func(fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error) (*Set, error) {
	set := NewSet()
	err := stream(func(name string, t *tensors.Tensor, q *quant.Spec) error {
		if q != nil {
			set.Quant[strings.TrimSuffix(name, quant.WeightSuffix)] = *q
		}
		set.Tensors[name] = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// Names lists the stored tensor names, sorted.
func (s *Set) Names() []string {
	ns := make([]string, 0, len(s.Tensors))
	for n := range s.Tensors {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// All iterates over the stored tensors in name order.
func (s *Set) All() iter.Seq2[string, *tensors.Tensor] {
	return func(yield func(string, *tensors.Tensor) bool) {
		for _, n := range s.Names() {
			if !yield(n, s.Tensors[n]) {
				return
			}
		}
	}
}

// Bytes is the memory the stored tensors take.
func (s *Set) Bytes() int64 {
	var n int64
	for _, t := range s.Tensors {
		n += int64(t.Memory())
	}
	return n
}

// Float32 returns weight name as a Float32 tensor of its logical shape: stored Float32
// tensors as they are, BFloat16 converted, quantized weights dequantized (GGUF blocks
// kept as stored by engine/gguf, keptFloat32). For tests and plain-Go reference code;
// the graph dequantizes in place.
func (s *Set) Float32(name string) (*tensors.Tensor, error) {
	if spec, ok := s.Quant[name]; ok {
		qw, qs := s.Tensors[name+quant.WeightSuffix], s.Tensors[name+quant.ScaleSuffix]
		if qw == nil || qs == nil {
			return nil, fmt.Errorf("weights: quantized tensor %s lacks its qweight/qscale", name)
		}
		if spec.Kept() {
			return keptFloat32(name, spec, qw, qs, s.Tensors[name+quant.MinSuffix])
		}
		var mins []*tensors.Tensor
		var minShapes []shapes.Shape
		if spec.HasMin() {
			qm := s.Tensors[name+quant.MinSuffix]
			if qm == nil {
				return nil, fmt.Errorf("weights: %s tensor %s lacks its qmin", spec, name)
			}
			mins, minShapes = append(mins, qm), append(minShapes, qm.Shape())
		}
		logical := quant.LogicalShape(qw.Shape(), qs.Shape(), minShapes...)
		return quant.Dequantize(qw, qs, spec, logical, mins...)
	}
	t, ok := s.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("weights: no tensor %s", name)
	}
	return toDType(t, dtypes.Float32)
}

// Convert returns a Set whose float weights have dtype dt (Float32 or BFloat16);
// quantized tensors are kept as they are. Tensors already in dt are shared, not copied.
func (s *Set) Convert(dt dtypes.DType) (*Set, error) {
	out := NewSet()
	for k, v := range s.Quant {
		out.Quant[k] = v
	}
	for name, t := range s.Tensors {
		base, suffix := splitQuant(name)
		if _, q := s.Quant[base]; q && suffix != "" {
			out.Tensors[name] = t
			continue
		}
		c, err := toDType(t, dt)
		if err != nil {
			return nil, fmt.Errorf("weights: %s: %w", name, err)
		}
		out.Tensors[name] = c
	}
	return out, nil
}

// Quantize returns a Set where every weight the profile selects is quantized (the
// others shared with s): the int4 profile's experts get int4 g32 with BFloat16 scales
// (quant.Int4), int8 keeps Float32 per-row scales.
func (s *Set) Quantize(cfg *config.Model, p quant.Profile) (*Set, error) {
	out := NewSet()
	for k, v := range s.Quant {
		out.Quant[k] = v
	}
	for k, v := range s.Tensors {
		out.Tensors[k] = v
	}
	for _, sp := range Specs(cfg) {
		t, ok := s.Tensors[sp.Name]
		if !ok {
			continue // already quantized, or absent
		}
		qs, ok := p.SpecFor(sp.Name, sp.Shape, sp.Quantizable)
		if !ok {
			continue
		}
		qw, sc, err := quant.Quantize(t, qs)
		if err != nil {
			return nil, fmt.Errorf("weights: quantize %s: %w", sp.Name, err)
		}
		delete(out.Tensors, sp.Name)
		out.Tensors[sp.Name+quant.WeightSuffix] = qw
		out.Tensors[sp.Name+quant.ScaleSuffix] = sc
		out.Quant[sp.Name] = qs
	}
	return out, nil
}

// toDType converts a float tensor between Float32 and BFloat16.
func toDType(t *tensors.Tensor, dt dtypes.DType) (*tensors.Tensor, error) {
	if t.DType() == dt {
		return t, nil
	}
	dims := t.Shape().Dimensions
	n := t.Shape().Size()
	var out *tensors.Tensor
	var err error
	switch {
	case t.DType() == dtypes.BFloat16 && dt == dtypes.Float32:
		f := make([]float32, n)
		err = t.ConstFlatData(func(flat any) {
			for i, v := range flat.([]bfloat16.BFloat16) {
				f[i] = v.Float32()
			}
		})
		out = tensors.FromFlatDataAndDimensions(f, dims...)
	case t.DType() == dtypes.Float32 && dt == dtypes.BFloat16:
		b := make([]bfloat16.BFloat16, n)
		err = t.ConstFlatData(func(flat any) {
			for i, v := range flat.([]float32) {
				b[i] = bfloat16.FromFloat32(v)
			}
		})
		out = tensors.FromFlatDataAndDimensions(b, dims...)
	default:
		return nil, fmt.Errorf("cannot convert %s to %s", t.DType(), dt)
	}
	return out, err
}

// Random returns deterministic random Float32 weights for cfg: norms, scales and layer
// scalars 1; projections, experts and the embedding N(0, 1/fan_in). Each tensor's
// values depend only on (seed, name), so a tiny random model gives finite,
// non-degenerate logits and the same seed always gives the same model.
func Random(cfg *config.Model, seed uint64) *Set {
	s := NewSet()
	for _, sp := range Specs(cfg) {
		n := 1
		for _, d := range sp.Shape {
			n *= d
		}
		vals := make([]float32, n)
		h := fnv.New64a()
		h.Write([]byte(sp.Name))
		sp.Fill(vals, rand.New(rand.NewPCG(seed, h.Sum64()))) // the table's kinds only
		s.Tensors[sp.Name] = tensors.FromFlatDataAndDimensions(vals, sp.Shape...)
	}
	return s
}
