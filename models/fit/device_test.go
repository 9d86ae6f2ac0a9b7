package fit

import (
	"context"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	gctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// TestEstimateCountsTheGraphBuffers writes an int4 checkpoint at the 26B model's real
// widths (hidden 2816, vocabulary 262,144, its attention and expert shapes) with two
// layers (one sliding, one full) and four experts, loads it as the graph path does,
// and sums the buffers the runner holds on its device — the weights' variables as
// stored and the KV cache reserved for the context — without running a graph. The
// estimate's weights and KV parts equal them to the byte.
func TestEstimateCountsTheGraphBuffers(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads a ~0.9 GB checkpoint")
	}
	cfg := catalog.DiffusionGemma26B()
	cfg.Text.NumHiddenLayers = 2
	cfg.Text.LayerTypes = []config.LayerType{config.SlidingAttention, config.FullAttention}
	cfg.Text.NumExperts, cfg.Text.TopKExperts = 4, 2
	dir := t.TempDir() + "/m"
	t0 := time.Now()
	if _, err := train.InitCheckpoint(context.Background(), cfg, dir, train.InitOptions{Profile: quant.Int4Profile, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	set, err := weights.Load(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote and loaded the checkpoint in %v", time.Since(t0).Round(time.Millisecond))
	ctx := gctx.New()
	if err := model.LoadSet(ctx, set); err != nil {
		t.Fatal(err)
	}
	b, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	r, err := model.NewRunner(b, &cfg.Text, ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.HostDecoder, r.HostHead = false, false
	const contextLen = 3000
	if err := r.Reserve(contextLen); err != nil {
		t.Fatal(err)
	}
	got := r.DeviceMemory()
	e, err := Compute(cfg, quant.Int4Profile, Runtime{Context: contextLen, GPU: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device buffers: weights %d B, KV cache %d B (capacity %d); estimate: weights %d B, KV %d B",
		got.Weights, got.Cache, r.Capacity(), e.Part(PartWeights), e.Part(PartKV))
	if got.Weights != e.Part(PartWeights) || got.Weights != set.Bytes() {
		t.Errorf("weights: runner holds %d B (the set %d B), the estimate counts %d B", got.Weights, set.Bytes(), e.Part(PartWeights))
	}
	if got.Cache != e.Part(PartKV) || r.Capacity() != model.CacheCapacity(contextLen) {
		t.Errorf("KV cache: runner holds %d B at capacity %d, the estimate counts %d B", got.Cache, r.Capacity(), e.Part(PartKV))
	}
	// The embedding stays in its stored int8, not widened: the weights are what
	// the file holds, about a quarter of an f32 copy of the embedding alone.
	if f32Embed := int64(cfg.Text.VocabSize) * int64(cfg.Text.HiddenSize) * 4; got.Weights > f32Embed/3 {
		t.Errorf("weights %d B: more than a third of an f32 embedding (%d B)", got.Weights, f32Embed)
	}
}
