package weights_test

import (
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"math"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// float32Source is a model.HostSource over float32 weights of the given shapes (the
// reference).
type float32Source struct {
	vals   map[string][]float32
	shapes map[string][]int
}

func (s float32Source) Lookup(name string) (weights.Stored, any, bool, error) {
	v, ok := s.vals[name]
	if !ok {
		return weights.Stored{}, nil, false, nil
	}
	return weights.Stored{Name: name, Shape: s.shapes[name], DType: dtypes.Float32,
		Data: unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))}, "float32", true, nil
}

// hostRun drives a host runner: a prompt, two decoder steps with self-conditioning, the
// canvas committed and an AR token; it returns every logit and soft embedding.
func hostRun(t *testing.T, r *model.Runner) [][]float32 {
	t.Helper()
	var outs [][]float32
	last, err := r.Encode([]int{2, 17, 40, 99, 7, 300, 12, 5, 61})
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, last)
	canvas := []int{3, 9, 27, 81, 243, 220, 150, 77}
	var soft *tensors.Tensor
	for _, temp := range []float64{0.8, 0.6} {
		logits, next, err := r.Decode(canvas, soft, temp)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, logits, tensors.MustCopyFlatData[float32](next))
		soft = next
	}
	for _, toks := range [][]int{canvas, {44}} {
		last, err := r.Encode(toks)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, last)
	}
	return outs
}

// TestGGUFStoredOnHost: a GGUF file read by weights.Map keeps each matrix in its GGUF
// type (Q4_K, Q6_K, Q5_K, Q8_0, Q4_0, Q4_1, Q5_1, Q5_0; split gate and up experts
// interleaved), and the host model over it gives the logits and soft embeddings of
// the float32 host path on the GGUF's own dequantization, within float32 rounding.
func TestGGUFStoredOnHost(t *testing.T) {
	defer kernels.SetIntProducts(kernels.SetIntProducts(false)) // the float32 path, within its rounding (engine/kernels TestMulNTInt: the integer one)
	for _, split := range []bool{false, true} {
		cfg := ggufConfig()
		fx := writeGGUF(t, t.TempDir(), cfg, split, nil)
		m, ok, err := weights.Map(filepath.Dir(fx.path), cfg)
		if err != nil || !ok {
			t.Fatalf("Map = %v, %v", ok, err)
		}
		defer m.Close()
		for _, sp := range weights.Specs(cfg) {
			s, _, ok, err := m.Lookup(sp.Name)
			if err != nil || !ok {
				t.Fatalf("Lookup(%s) = %v, %v", sp.Name, ok, err)
			}
			if typ := fx.types[sp.Name]; len(sp.Shape) >= 2 && typ != gguf.F32 && typ != gguf.BF16 && (!s.Blocks || s.GGUF != typ) {
				t.Errorf("%s: held as %v (blocks %v), want the file's %s", sp.Name, s.GGUF, s.Blocks, typ)
			}
		}
		got, err := model.NewHostRunner(&cfg.Text, m)
		if err != nil {
			t.Fatal(err)
		}
		shapes := map[string][]int{}
		for _, sp := range weights.Specs(cfg) {
			shapes[sp.Name] = sp.Shape
		}
		ref, err := model.NewHostRunner(&cfg.Text, float32Source{fx.stored, shapes})
		if err != nil {
			t.Fatal(err)
		}
		g, w := hostRun(t, got), hostRun(t, ref)
		for i := range w {
			var diff, scale float64
			for j := range w[i] {
				diff = max(diff, math.Abs(float64(g[i][j]-w[i][j])))
				scale = max(scale, math.Abs(float64(w[i][j])))
			}
			if diff > 2e-5*scale || math.IsNaN(diff) || scale == 0 {
				t.Errorf("split %v, output %d: max difference %.3g against the float32 path (scale %.3g)", split, i, diff, scale)
			}
		}
	}
}
