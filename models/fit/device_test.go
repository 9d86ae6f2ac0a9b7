package fit

import (
	"context"
	"strings"
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
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	gctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// TestEstimateCountsTheGraphBuffers writes an int4 checkpoint at the 26B model's real
// widths (hidden 2816, vocabulary 262,144, its attention and expert shapes) with two
// layers (one sliding, one full) and four experts, loads it as the graph path does,
// and sums the buffers the runner holds on its device — the weights' variables as
// stored and the KV cache reserved for the context — without running a graph. The
// estimate's weights and KV parts equal them to the byte, and its dequantization
// scratch equals the largest chunk of weight blocks the step's graph builds for its
// products (bf16, as the engine computes this bf16 model on an accelerator: it was
// counted in f32, twice that).
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
	b, err := backends.NewWithConfig("go:ops_sequential") // as engine/backend runs it: simplego's parallel ops race and can deadlock
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

	// The dequantization scratch: the blocks the step's graph builds for its
	// products, with the compute dtype the engine picks for this bf16 model on an
	// accelerator (bf16), grouped as they are converted at once.
	r.ComputeDType = model.ComputeDTypeFor(cfg.Text.DType, true)
	if r.ComputeDType != dtypes.BFloat16 {
		t.Fatalf("the 26B's config (dtype %q) computes in %s on an accelerator, want bf16", cfg.Text.DType, r.ComputeDType)
	}
	ops, err := r.StepWeightOperands(cfg.CanvasLength)
	if err != nil {
		t.Fatal(err)
	}
	largest, why := largestChunk(ops)
	t.Logf("step graph: %d weight blocks, the largest chunk %d B (%s); estimate %d B (%s)",
		len(ops), largest, why, e.Part(PartDequant), partNote(e, PartDequant))
	if largest != e.Part(PartDequant) {
		t.Errorf("dequantization scratch: the step graph's largest chunk is %d B (%s), the estimate counts %d B",
			largest, why, e.Part(PartDequant))
	}
}

// largestChunk is the largest set of weight blocks a step graph converts at once, in
// bytes: an expert group's gate, up and down blocks (made one after the other, the
// down block last), every other block alone (a whole weight, a vocabulary chunk).
func largestChunk(ops []model.WeightOperand) (most int64, what string) {
	var group int64
	var names []string
	for _, o := range ops {
		b := int64(o.Shape.Memory())
		name := strings.Join(o.Weights, "+")
		if !strings.Contains(name, ".experts.") {
			if b > most {
				most, what = b, o.String()
			}
			continue
		}
		group += b
		names = append(names, o.Shape.String())
		if strings.Contains(name, "down_proj") {
			if group > most {
				most, what = group, strings.Join(names, " + ")+" ← "+name
			}
			group, names = 0, nil
		}
	}
	return most, what
}

func partNote(e *Estimate, name string) string {
	for _, p := range e.Parts {
		if p.Name == name {
			return p.Note
		}
	}
	return ""
}

// TestScratchIsTheStepGraphsLargestChunk holds the GPU estimate's dequantization
// scratch to the blocks the step's graph builds, with the compute dtype the engine
// picks for each model on an accelerator: small bf16 checkpoints (`train init`; the
// embedding is converted whole there, not in chunks) in every profile, computed in
// bf16, and the built-in Darkroom Mini (float32 as stored), computed in float32. The
// largest chunk of blocks equals the estimate.
func TestScratchIsTheStepGraphsLargestChunk(t *testing.T) {
	type tc struct {
		name    string
		profile quant.Profile
		dir     func(t *testing.T) string
	}
	var cases []tc
	for _, p := range []quant.Profile{quant.BF16Profile, quant.Int8Profile, quant.Int4Profile} {
		cases = append(cases, tc{"bf16 checkpoint, " + string(p), p, func(t *testing.T) string {
			cfg, err := train.MiniConfig(train.DefaultMiniSize, 4096, []int{1}, 0, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir() + "/m"
			if _, err := train.InitCheckpoint(context.Background(), cfg, dir, train.InitOptions{Profile: p, Seed: 2}); err != nil {
				t.Fatal(err)
			}
			return dir
		}})
	}
	cases = append(cases, tc{"Darkroom Mini, float32", quant.BF16Profile, func(*testing.T) string { return "../../assets/mini" }})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir(t)
			cfg, err := config.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			set, err := weights.Load(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := gctx.New()
			if err := model.LoadSet(ctx, set); err != nil {
				t.Fatal(err)
			}
			b, err := backends.NewWithConfig("go:ops_sequential") // as engine/backend runs it: simplego's parallel ops race and can deadlock
			if err != nil {
				t.Fatal(err)
			}
			r, err := model.NewRunner(b, &cfg.Text, ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			r.HostDecoder, r.HostHead = false, false
			r.ComputeDType = model.ComputeDTypeFor(modelDType(cfg), true)
			ops, err := r.StepWeightOperands(cfg.CanvasLength)
			if err != nil {
				t.Fatal(err)
			}
			e, err := Compute(cfg, c.profile, Runtime{Context: 512, GPU: true})
			if err != nil {
				t.Fatal(err)
			}
			largest, why := largestChunk(ops)
			t.Logf("%s compute: %d weight blocks; the largest chunk %d B (%s)", r.ComputeDType, len(ops), largest, why)
			if largest != e.Part(PartDequant) || largest == 0 {
				t.Errorf("the step graph's largest chunk is %d B (%s), the estimate counts %d B (%s)",
					largest, why, e.Part(PartDequant), partNote(e, PartDequant))
			}
		})
	}
}
