package weights_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// TestGGUFSplitBetweenDeviceAndHost: a GGUF split after its first layer (engine.Load's
// DeviceLayers) puts on the device only what Mapped.SetOf accepts — the global
// tensors and layer 0's, their blocks kept as stored — while the host reads the other
// layers' from the mapping; its progress counts the device's bytes only; and the
// split runner's logits are the whole graph's on the same file.
func TestGGUFSplitBetweenDeviceAndHost(t *testing.T) {
	defer kernels.SetIntProducts(kernels.SetIntProducts(false)) // the host's float32 products, as the graph's
	cfg := ggufConfig()
	fx, whole := graphSet(t, cfg, false)
	m, ok, err := weights.Map(filepath.Dir(fx.path), cfg, nil)
	if err != nil || !ok {
		t.Fatalf("map: %v, %v", ok, err)
	}
	defer m.Close()
	var last [2]int64
	front, err := m.SetOf(func(s weights.Spec) bool { return s.Layer < 1 }, func(done, total int64) { last = [2]int64{done, total} })
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for name := range whole.Tensors {
		if strings.HasPrefix(name, "layers.") && !strings.HasPrefix(name, "layers.0.") || strings.HasPrefix(name, "encoder.layers.") && !strings.HasPrefix(name, "encoder.layers.0.") {
			if _, on := front.Tensors[name]; on {
				t.Errorf("%s (the host's) is in the device's set", name)
			}
			continue
		}
		if _, on := front.Tensors[name]; !on {
			t.Errorf("%s is missing from the device's set", name)
		}
		want += int64(whole.Tensors[name].Shape().Memory())
	}
	if front.Bytes() != want || last[0] != last[1] || last[1] <= 0 {
		t.Errorf("device set %d B, want %d; progress ended at %v", front.Bytes(), want, last)
	}

	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	ctx := mlctx.New()
	if err := model.LoadSet(ctx, front); err != nil {
		t.Fatal(err)
	}
	r, err := model.NewSplitRunner(b, &cfg.Text, ctx, m, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.DeviceMemory().Weights; got != front.Bytes() {
		t.Errorf("the device holds %d B of weights, the set is %d B", got, front.Bytes())
	}
	split, graph := passLogits(t, cfg, r), runnerLogits(t, b, cfg, whole, false)
	var worst, scale float64
	for i := range graph {
		worst = max(worst, math.Abs(float64(split[i]-graph[i])))
		scale = max(scale, math.Abs(float64(graph[i])))
	}
	t.Logf("split vs whole graph: max |Δ| %.3g (scale %.3g)", worst, scale)
	if worst > 1e-4*scale || math.IsNaN(worst) {
		t.Errorf("the split model's logits differ from the whole graph's by %.3g (scale %.3g)", worst, scale)
	}
}
