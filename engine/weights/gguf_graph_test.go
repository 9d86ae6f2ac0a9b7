package weights_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// graphSet writes the test GGUF of cfg (its experts split or fused) and returns it
// with the set the graph path loads from it (the mapped file's Set).
func graphSet(t *testing.T, cfg *config.Model, split bool) (*ggufFixture, *weights.Set) {
	t.Helper()
	fx := writeGGUF(t, t.TempDir(), cfg, split, nil)
	m, ok, err := weights.Map(filepath.Dir(fx.path), cfg, nil)
	if err != nil || !ok {
		t.Fatalf("map: %v, %v", ok, err)
	}
	set, err := m.Set(nil)
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	return fx, set
}

// TestGGUFOnTheGraphPath: a GGUF (Q4_K, Q8_0, Q6_K, … matrices) loaded for the graph
// path (engine.Load's InGraph, XLA on a GPU: the mapped file's Set) keeps every
// block-quantized matrix in its own bits (GGUFKeptTypes), no float32 copy — so the
// runner's buffers on its device are exactly the set's bytes, a fraction of the
// float32 model's; and the graph's logits, dequantized next to each product, are
// those of the float32 twin of the same values.
func TestGGUFOnTheGraphPath(t *testing.T) {
	cfg := ggufConfig()
	fx, set := graphSet(t, cfg, false)
	var f32Bytes int64
	kept := map[gguf.Type]int{}
	for _, sp := range weights.Specs(cfg) {
		n := int64(4)
		for _, d := range sp.Shape {
			n *= int64(d)
		}
		f32Bytes += n
		typ := fx.types[sp.Name]
		if len(sp.Shape) < 2 || typ == gguf.F32 || typ == gguf.F16 || typ == gguf.BF16 {
			continue
		}
		q, ok := set.Quant[sp.Name]
		if !ok {
			t.Errorf("%s (%s in the file) is not kept quantized for the graph", sp.Name, typ)
		}
		if want, kept := weights.GGUFKeptTypes[typ]; kept && q != want {
			t.Errorf("%s (%s in the file) is held as %s, want its blocks as stored (%s)", sp.Name, typ, q, want)
		}
		kept[typ]++
	}
	if kept[gguf.Q4_K] == 0 || kept[gguf.Q8_0]+kept[gguf.Q6_K] == 0 {
		t.Fatalf("the fixture's quantized matrices by type: %v (want Q4_K and Q8_0 or Q6_K)", kept)
	}
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	ctx := mlctx.New()
	if err := model.LoadSet(ctx, set); err != nil {
		t.Fatal(err)
	}
	r, err := model.NewRunner(b, &cfg.Text, ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.HostDecoder, r.HostHead = false, false
	got := r.DeviceMemory().Weights
	t.Logf("quantized matrices by GGUF type %v; on the device %d B, the set %d B, float32 %d B", kept, got, set.Bytes(), f32Bytes)
	if got != set.Bytes() || got > f32Bytes/3 {
		t.Errorf("the runner holds %d B of weights; the set is %d B, the float32 model %d B", got, set.Bytes(), f32Bytes)
	}

	graph, twin := runnerLogits(t, b, cfg, set, false), runnerLogits(t, b, cfg, dequantizedTwin(t, cfg, set), false)
	var worst, scale float64
	for i := range twin {
		worst = max(worst, math.Abs(float64(graph[i]-twin[i])))
		scale = max(scale, math.Abs(float64(twin[i])))
	}
	if worst > 1e-5*scale || math.IsNaN(worst) {
		t.Errorf("graph logits on the GGUF's codes differ from its float32 twin's by %.3g (scale %.3g)", worst, scale)
	}
}

// TestGGUFKeptFloat32: the graph path's set of a GGUF of every block type (split
// experts too) decodes on the host (Set.Float32: the parts joined back into the
// file's blocks) to the GGUF's own dequantization, bit for bit, for every tensor
// kept as stored.
func TestGGUFKeptFloat32(t *testing.T) {
	cfg := ggufConfig()
	for _, split := range []bool{false, true} {
		fx, set := graphSet(t, cfg, split)
		kept := 0
		for _, sp := range weights.Specs(cfg) {
			if q, ok := set.Quant[sp.Name]; !ok || !q.Kept() {
				continue
			}
			kept++
			got, err := set.Float32(sp.Name)
			if err != nil {
				t.Fatal(err)
			}
			var vals []float32
			got.ConstFlatData(func(f any) { vals = f.([]float32) })
			want := fx.stored[sp.Name]
			if len(vals) != len(want) {
				t.Fatalf("%s: %d values, want %d", sp.Name, len(vals), len(want))
			}
			for i := range want {
				if math.Float32bits(vals[i]) != math.Float32bits(want[i]) {
					t.Fatalf("split %v: %s (%s) element %d: %v, the GGUF's %v", split, sp.Name, set.Quant[sp.Name], i, vals[i], want[i])
				}
			}
		}
		if kept < 20 {
			t.Errorf("split %v: only %d tensors kept as stored", split, kept)
		}
	}
}
