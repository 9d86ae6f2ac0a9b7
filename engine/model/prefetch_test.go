package model

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// TestHostReadsAhead: the host model advises the kernel of each layer's matrices
// before it first multiplies them and, for one token, of exactly its routed
// experts' rows (k of E per layer, gate_up and down), not of every expert; what it
// advised once it does not advise again.
func TestHostReadsAhead(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 1, dtypes.Float32)
	ctx := newContext(t, w)
	h := &hostModel{cfg: cfg, w: newHostWeights(ContextSource(ctx)), embedScale: 1}
	type span struct{ p, n uintptr }
	var advised []span
	defer func(f func([]byte)) { adviseWillNeed = f }(adviseWillNeed)
	adviseWillNeed = func(b []byte) {
		if len(b) > 0 {
			advised = append(advised, span{uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))})
		}
		willNeedBytes(b) // the system call, on memory that is not a file's mapping: no effect, no harm
	}
	within := func(s span, b []byte) bool {
		p := uintptr(unsafe.Pointer(&b[0]))
		return s.p >= p && s.p+s.n <= p+uintptr(len(b))
	}
	scalar := NewParams(ctx, nil, cfg).encoderScalar
	cache := &hostCache{}
	err := try("encode", func() { h.encode(cache, []int32{11}, 0, scalar) })
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.NumHiddenLayers {
		for _, s := range layerMatrices(cfg)[i] {
			m, err := h.w.load(s)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, a := range advised {
				found = found || (a.p == uintptr(unsafe.Pointer(&m.mat.q.Data[0])) && a.n == uintptr(len(m.mat.q.Data)))
			}
			if !found {
				t.Errorf("layer %d: %s was not read ahead", i, s)
			}
		}
		for _, s := range []string{"experts.gate_up_proj", "experts.down_proj"} {
			m, err := h.w.load(layerPrefix(i) + s)
			if err != nil {
				t.Fatal(err)
			}
			var n, bytes uintptr
			for _, a := range advised {
				if within(a, m.mat.q.Data) {
					n, bytes = n+1, bytes+a.n
				}
			}
			if want := uintptr(len(m.mat.q.Data) * cfg.TopKExperts / cfg.NumExperts); n != uintptr(cfg.TopKExperts) || bytes != want {
				t.Errorf("layer %d %s: %d spans, %d bytes read ahead; want the token's %d experts, %d bytes", i, s, n, bytes, cfg.TopKExperts, want)
			}
		}
	}
	// The same token again: its matrices and experts were advised already.
	advised = nil
	if err := try("encode", func() { h.encode(cache, []int32{11}, cache.n, scalar) }); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.NumHiddenLayers {
		for _, s := range layerMatrices(cfg)[i] {
			if m, err := h.w.load(s); err == nil {
				for _, a := range advised {
					if within(a, m.mat.q.Data) {
						t.Errorf("layer %d: %s advised again", i, s)
					}
				}
			}
		}
	}
}

// TestHostReadsAheadParts: experts held in parts stored apart (weights.Stored.Parts:
// a ModelOpt export's modules) are read ahead part by part — a token's k experts'
// gate and up parts and down parts, exactly those bytes.
func TestHostReadsAheadParts(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 1, dtypes.Float32)
	ctx := newContext(t, w)
	h := &hostModel{cfg: cfg, w: newHostWeights(partedSource{ContextSource(ctx)}), embedScale: 1}
	var advised [][]byte
	defer func(f func([]byte)) { adviseWillNeed = f }(adviseWillNeed)
	adviseWillNeed = func(b []byte) { advised = append(advised, b) }
	scalar := NewParams(ctx, nil, cfg).encoderScalar
	if err := try("encode", func() { h.encode(&hostCache{}, []int32{11}, 0, scalar) }); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.NumHiddenLayers {
		for _, c := range []struct {
			name  string
			parts int // an expert's
		}{{"experts.gate_up_proj", 2}, {"experts.down_proj", 1}} {
			m, err := h.w.load(layerPrefix(i) + c.name)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.mat.parts) != cfg.NumExperts*c.parts {
				t.Fatalf("layer %d %s: %d parts, want %d", i, c.name, len(m.mat.parts), cfg.NumExperts*c.parts)
			}
			var n, bytes, total int
			for _, p := range m.mat.parts {
				total += len(p.q.Data)
				for _, a := range advised {
					if len(a) > 0 && &a[0] == &p.q.Data[0] && len(a) == len(p.q.Data) {
						n, bytes = n+1, bytes+len(a)
					}
				}
			}
			if want := total * cfg.TopKExperts / cfg.NumExperts; n != cfg.TopKExperts*c.parts || bytes != want {
				t.Errorf("layer %d %s: %d parts, %d bytes read ahead; want the token's %d experts' %d parts, %d bytes",
					i, c.name, n, bytes, cfg.TopKExperts, cfg.TopKExperts*c.parts, want)
			}
		}
	}
}

// linearNames are arch.Ops that do nothing but record the weights a layer multiplies
// (Linear and LinearF32), in order.
type linearNames struct{ names []string }

func (o *linearNames) StartLayer(int) {}
func (o *linearNames) Linear(_ struct{}, w string) struct{} {
	o.names = append(o.names, w)
	return struct{}{}
}
func (o *linearNames) LinearF32(_ struct{}, w string) struct{} {
	o.names = append(o.names, w)
	return struct{}{}
}
func (o *linearNames) Norm(x struct{}, _ int, _ string) struct{}        { return x }
func (o *linearNames) NormInPlace(x struct{}, _ int, _ string) struct{} { return x }
func (o *linearNames) Add(a, _ struct{}) struct{}                       { return a }
func (o *linearNames) Scale(x struct{}, _ float64) struct{}             { return x }
func (o *linearNames) ScaleBy(x struct{}, _ string) struct{}            { return x }
func (o *linearNames) GeGLU(g, _ struct{}) struct{}                     { return g }
func (o *linearNames) RoPE(_ int, x struct{}, _ int) struct{}           { return x }
func (o *linearNames) Attend(_ int, q, _, _ struct{}) struct{}          { return q }
func (o *linearNames) Experts(_ int, x, _ struct{}) struct{}            { return x }

// TestLayerMatricesAreTheRecipes: what the host reads ahead for a layer, taken from
// the weight table, is exactly the set of matrices the layer recipe multiplies before
// its experts, on a sliding layer (with v_proj) and a full one (K=V, without).
func TestLayerMatricesAreTheRecipes(t *testing.T) {
	cfg := tinyConfig()
	ahead := layerMatrices(cfg)
	kinds := map[bool]bool{}
	for i := range cfg.NumHiddenLayers {
		o := &linearNames{}
		arch.Layer[struct{}](o, cfg, i, struct{}{}, arch.DecoderScalar(i))
		got, want := slices.Sorted(slices.Values(ahead[i])), slices.Sorted(slices.Values(o.names))
		if !slices.Equal(got, want) {
			t.Errorf("layer %d (sliding %v): read ahead %v, the recipe multiplies %v", i, cfg.IsSliding(i), got, want)
		}
		kinds[cfg.IsSliding(i)] = true
	}
	if !kinds[true] || !kinds[false] {
		t.Fatalf("the test config has no sliding or no full layer: %v", kinds)
	}
}
