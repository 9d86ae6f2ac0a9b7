package model

import (
	"fmt"
	"sort"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// hostWeights are the host model's weights in their stored format: nothing is widened
// to float32 but vectors (norms, scales, per-expert scales: rank ≤ 1, a few KB). A
// matrix (rank ≥ 2, its leading axes flattened into rows) is a hostMatrix over the
// stored bytes — Float32 values as they are, BF16 and every quantized format
// (int8, int4 g32 and affine, NVFP4) multiplied by package kernels, which decodes one
// row or packed panel at a time. The bytes are views: of the context variables'
// tensors (rebuilt only when a variable's value changes, e.g. a trainer updating it),
// or of a checkpoint's mapping (HostSource).
type hostWeights struct {
	src   HostSource
	cache map[string]hostWeight
	// advised holds the address of each matrix (or expert's rows) already read
	// ahead (prefetch.go): an address, not a pointer, so that a trainer's replaced
	// weights are not kept alive by it.
	advised   map[uintptr]bool
	ahead     [][]string // layerMatrices of the model (prefetch.go), made on first use
	populated bool       // every weight is in the process's memory (prefetch.go)
	paging    bool       // the mapped weights do not fit in the memory available (prefetch.go)
	// mappedBytes and availBytes are, where paging, the mapped weights' bytes and the
	// memory available when populate looked (Runner.FromDisk).
	mappedBytes, availBytes int64
	tried                   bool // populate has run (once: at the first pass, or ReadWeights)
	// from is the first layer the host runs (hostModel.from): where it is above 0 (a
	// model split with a device), populate reads only the layers from it on, the
	// device holding the rest.
	from int
}

// HostSource hands the host model its weights as stored. Lookup returns the canonical
// weight name as held, ok false when the model has none, and a version — a comparable
// value — that changes whenever the bytes do (the host model rebuilds its view of the
// weight then).
type HostSource interface {
	Lookup(name string) (s weights.Stored, version any, ok bool, err error)
}

type hostWeight struct {
	version any
	dims    []int
	storage dtypes.DType // the stored dtype (Int8, Uint8 for int4/NVFP4, BFloat16, Float32)
	vec     []float32    // rank ≤ 1
	mat     hostMatrix   // rank ≥ 2
}

// hostMatrix is a weight [rows, cols] for the host products: Float32 values used as
// they are (f32), and the stored format as a kernels.Matrix (always set). q is a
// pointer, made once per weight (and expert), so that passing a hostMatrix by value
// to a product does not copy the Matrix to the heap for its pointer methods: the
// embedding's rows alone did that 256 times a canvas step.
//
// A weight stored in parts (weights.Stored.Parts: a ModelOpt export's experts, a GGUF
// file's gate and up experts) has parts instead, its row blocks in order from row at[i]
// on, and q nil: sub gives a block within one part, which is all the experts multiply
// (one expert's gate, up or down rows).
type hostMatrix struct {
	rows, cols int
	f32        []float32
	q          *kernels.Matrix
	parts      []hostMatrix
	at         []int // parts[i]'s first row; len(parts)+1 entries
}

func newHostWeights(src HostSource) *hostWeights {
	return &hostWeights{src: src, cache: map[string]hostWeight{}}
}

// load returns the weight, from the cache while its version holds.
func (w *hostWeights) load(name string) (hostWeight, error) {
	s, version, ok, err := w.src.Lookup(name)
	if err != nil {
		return hostWeight{}, err
	}
	if !ok {
		return hostWeight{}, fmt.Errorf("weight %q is missing", name)
	}
	if c, ok := w.cache[name]; ok && c.version == version {
		return c, nil
	}
	out := hostWeight{version: version, dims: s.Shape, storage: s.DType}
	if s.Quant != nil {
		out.storage = s.Quant.DType()
	}
	if len(s.Shape) < 2 {
		if out.vec, err = s.Float32(); err != nil {
			return hostWeight{}, err
		}
	} else {
		ms, err := s.PartMatrices()
		if err != nil {
			return hostWeight{}, err
		}
		if len(s.Parts) > 0 {
			out.mat = partedMatrix(ms)
		} else {
			m := ms[0]
			out.mat = hostMatrix{rows: m.Rows, cols: m.Cols, q: &m}
		}
		if s.DType == dtypes.Float32 && s.Quant == nil && len(s.Parts) == 0 {
			if out.mat.f32, err = s.Float32(); err != nil {
				return hostWeight{}, err
			}
		}
	}
	w.cache[name] = out
	return out, nil
}

// get returns a vector weight's float32 values. It panics with an error naming the
// weight when it is missing, unreadable or a matrix (recovered at the Runner's API
// boundary).
func (w *hostWeights) get(name string) []float32 {
	d, err := w.load(name)
	if err == nil && len(d.dims) >= 2 {
		err = fmt.Errorf("weight %q has shape %v: a matrix, read with matrix", name, d.dims)
	}
	if err != nil {
		panic(err)
	}
	return d.vec
}

// matrix returns a matrix weight, panicking as get does.
func (w *hostWeights) matrix(name string) hostMatrix {
	d, err := w.load(name)
	if err == nil && len(d.dims) < 2 {
		err = fmt.Errorf("weight %q has shape %v: not a matrix", name, d.dims)
	}
	if err != nil {
		panic(err)
	}
	return d.mat
}

// has reports whether the model holds the weight.
func (w *hostWeights) has(name string) bool {
	_, _, ok, err := w.src.Lookup(name)
	return ok && err == nil
}

// embedScale is Params.EmbedScale for the stored embedding.
func (w *hostWeights) embedScale(cfg *config.Text) float64 {
	d, err := w.load(weights.EmbeddingName)
	if err != nil {
		panic(err)
	}
	return storedEmbedScale(cfg, d.storage)
}

// encoderScalar is Params.encoderScalar over these weights.
func (w *hostWeights) encoderScalar(i int) string { return encoderScalar(w.has, i) }

// partedMatrix is the hostMatrix of row blocks ms stored apart.
func partedMatrix(ms []kernels.Matrix) hostMatrix {
	out := hostMatrix{cols: ms[0].Cols, at: []int{0}}
	for i := range ms {
		m := ms[i]
		out.parts = append(out.parts, hostMatrix{rows: m.Rows, cols: m.Cols, q: &m})
		out.rows += m.Rows
		out.at = append(out.at, out.rows)
	}
	return out
}

// part is the index of the part holding rows [r0, r1), and panics with an error when
// they span two.
func (m hostMatrix) part(r0, r1 int) int {
	i := sort.SearchInts(m.at, r0+1) - 1 // the last part starting at or before r0
	if i < 0 || i >= len(m.parts) || r1 > m.at[i+1] {
		panic(fmt.Errorf("rows [%d, %d) of a %d-row weight stored in parts span parts stored apart", r0, r1, m.rows))
	}
	return i
}

// mulNTInto is x·mᵀ for x [n, cols] into out [n, rows] (overwritten).
func (m hostMatrix) mulNTInto(out, x []float32, n int) {
	if m.parts != nil { // each part's columns of out in turn (no product does this)
		for i, p := range m.parts {
			y := make([]float32, n*p.rows)
			p.mulNTInto(y, x, n)
			for r := range n {
				copy(out[r*m.rows+m.at[i]:r*m.rows+m.at[i+1]], y[r*p.rows:(r+1)*p.rows])
			}
		}
		return
	}
	if m.f32 != nil {
		kernels.MulNT(out, x, m.f32, n, m.rows, m.cols)
		return
	}
	if err := m.q.MulNT(out, x, n); err != nil {
		panic(err)
	}
}

// mulNN is p·m for p [n, rows] → new [n, cols] (the tied embedding's second product).
func (m hostMatrix) mulNN(p []float32, n int) []float32 {
	if m.parts != nil {
		panic(fmt.Errorf("a %d-row weight stored in parts multiplied as the tied embedding", m.rows))
	}
	out := make([]float32, n*m.cols)
	if err := m.q.MulNN(out, p, n); err != nil {
		panic(err)
	}
	return out
}

// sub is rows [r0, r1) (one expert of a stacked weight), sharing the bytes.
func (m hostMatrix) sub(r0, r1 int) hostMatrix {
	if m.parts != nil {
		i := m.part(r0, r1)
		return m.parts[i].sub(r0-m.at[i], r1-m.at[i])
	}
	q, err := m.q.RowRange(r0, r1)
	if err != nil {
		panic(err)
	}
	out := hostMatrix{rows: r1 - r0, cols: m.cols, q: &q}
	if m.f32 != nil {
		out.f32 = m.f32[r0*m.cols : r1*m.cols]
	}
	return out
}

// subs is rows [r0, r1) as one sub a part they touch (one for a matrix held whole).
func (m hostMatrix) subs(r0, r1 int) []hostMatrix {
	if m.parts == nil {
		return []hostMatrix{m.sub(r0, r1)}
	}
	var out []hostMatrix
	for i, p := range m.parts {
		if lo, hi := max(r0, m.at[i]), min(r1, m.at[i+1]); lo < hi {
			out = append(out, p.sub(lo-m.at[i], hi-m.at[i]))
		}
	}
	return out
}

// row decodes row r into dst[:cols].
func (m hostMatrix) row(dst []float32, r int) {
	if m.parts != nil {
		i := m.part(r, r+1)
		m.parts[i].row(dst, r-m.at[i])
		return
	}
	if m.f32 != nil {
		copy(dst[:m.cols], m.f32[r*m.cols:(r+1)*m.cols])
		return
	}
	if err := m.q.DecodeRow(dst, r); err != nil {
		panic(err)
	}
}

// contextSource reads the weights from the context variables in scope Scope: a plain
// variable NAME (Float32 or BFloat16), or a quantized one NAME.qweight with NAME.qscale
// (and NAME.qmin for affine int4), the format read back by quant.SpecOf. The bytes are
// views of the variables' tensors; the version is the tensor behind NAME or
// NAME.qweight.
type contextSource struct{ scope *context.Context }

// ContextSource is the HostSource over the weights in ctx (scope "dg").
func ContextSource(ctx *context.Context) HostSource { return contextSource{scope: ctx.In(Scope)} }

func (c contextSource) Lookup(name string) (weights.Stored, any, bool, error) {
	s := weights.Stored{Name: name}
	if v := c.scope.GetVariable(name); v != nil {
		t, err := v.Value()
		if err != nil {
			return s, nil, false, fmt.Errorf("weight %q: %w", name, err)
		}
		s.Shape, s.DType = t.Shape().Dimensions, t.DType()
		if s.Data, err = tensorBytes(t); err != nil {
			return s, nil, false, fmt.Errorf("weight %q: %w", name, err)
		}
		return s, t, true, nil
	}
	q := c.scope.GetVariable(name + QWeightSuffix)
	if q == nil {
		return s, nil, false, nil
	}
	fail := func(err error) (weights.Stored, any, bool, error) {
		return s, nil, false, fmt.Errorf("weight %q: %w", name, err)
	}
	qs := c.scope.GetVariable(name + QScaleSuffix)
	if qs == nil {
		return fail(fmt.Errorf("quantized without %s", QScaleSuffix))
	}
	qw, err := q.Value()
	if err != nil {
		return fail(err)
	}
	scale, err := qs.Value()
	if err != nil {
		return fail(err)
	}
	var mins *tensors.Tensor
	var minShapes []shapes.Shape
	if m := c.scope.GetVariable(name + QMinSuffix); m != nil {
		if mins, err = m.Value(); err != nil {
			return fail(err)
		}
		minShapes = append(minShapes, mins.Shape())
	}
	dims := quant.LogicalShape(qw.Shape(), scale.Shape(), minShapes...)
	spec, err := quant.SpecOf(dims, qw.Shape(), scale.Shape(), minShapes...)
	if err != nil {
		return fail(err)
	}
	if spec.Kept() {
		return fail(fmt.Errorf("held as %s, which only the graph path reads (the CPU path multiplies the GGUF file's blocks themselves)", spec))
	}
	s.Shape, s.Quant = dims, &spec
	if s.Data, err = tensorBytes(qw); err != nil {
		return fail(err)
	}
	if s.Scales, err = tensorBytes(scale); err != nil {
		return fail(err)
	}
	if mins != nil {
		if s.Mins, err = tensorBytes(mins); err != nil {
			return fail(err)
		}
	}
	return s, qw, true, nil
}

// tensorBytes is a view of t's bytes (not a copy), valid while t is.
func tensorBytes(t *tensors.Tensor) ([]byte, error) {
	if t.Shape().Size() == 0 {
		return []byte{}, nil
	}
	var b []byte
	err := t.ConstBytes(func(data []byte) { b = data })
	return b, err
}
