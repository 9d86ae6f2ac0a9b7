package model

import (
	"testing"
	"unsafe"

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
		for _, s := range layerMatrices {
			m, err := h.w.load(layerPrefix(i) + s)
			if err != nil {
				continue // v_proj on a full layer
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
		for _, s := range layerMatrices {
			if m, err := h.w.load(layerPrefix(i) + s); err == nil {
				for _, a := range advised {
					if within(a, m.mat.q.Data) {
						t.Errorf("layer %d: %s advised again", i, s)
					}
				}
			}
		}
	}
}
