package train

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// growLogits runs the encoder over prompt (its logits at every position) and one
// decoder step over canvas after it, on the pure-Go backend.
func growLogits(t *testing.T, cfg *config.Model, set *weights.Set, prompt, canvas []int) (enc, dec []float32) {
	t.Helper()
	ctx := gctx.New()
	if err := model.LoadSet(ctx, set); err != nil {
		t.Fatal(err)
	}
	run, err := model.NewRunner(goBackend(t), &cfg.Text, ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	e, err := run.Score(prompt, 0)
	if err != nil {
		t.Fatal(err)
	}
	enc = slices.Clone(e)
	if _, err := run.Encode(prompt); err != nil {
		t.Fatal(err)
	}
	d, soft, err := run.Decode(canvas, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if soft != nil {
		soft.FinalizeAll()
	}
	return enc, slices.Clone(d)
}

// TestGrowComputesWhatTheSourceDoes: a model grown from 3 layers to 7 gives the
// source's encoder and decoder logits bit for bit; switching one added layer on
// changes them, so the added layers are in the computation.
func TestGrowComputesWhatTheSourceDoes(t *testing.T) {
	src := enginetest.WriteTinyModel(t, enginetest.Options{})
	dst := filepath.Join(t.TempDir(), "grown")
	grown, err := Grow(src, dst, 7)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Text.NumHiddenLayers; l != 3 || !cfg.Text.IsSliding(0) || cfg.Text.IsSliding(2) {
		t.Fatalf("the tiny model changed (%d layers, types %v): this test assumes sliding, sliding, full", l, cfg.Text.LayerTypes)
	}
	again, err := config.Load(dst)
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []config.LayerType{config.SlidingAttention, config.SlidingAttention, config.FullAttention,
		config.SlidingAttention, config.SlidingAttention, config.FullAttention, config.SlidingAttention}
	if again.Text.NumHiddenLayers != 7 || !slices.Equal(again.Text.LayerTypes, wantTypes) || grown.Text.NumHiddenLayers != 7 {
		t.Fatalf("grown config: %d layers %v, want 7 %v", again.Text.NumHiddenLayers, again.Text.LayerTypes, wantTypes)
	}
	for _, f := range []string{"tokenizer.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Errorf("grown folder: %v", err)
		}
	}
	srcSet, err := weights.Load(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dstSet, err := weights.Load(dst, again)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{2, 40, 41, 42, 43, 44, 45, 46}
	canvas := make([]int, cfg.CanvasLength)
	for i := range canvas {
		canvas[i] = (i*37 + 11) % cfg.Text.VocabSize
	}
	enc0, dec0 := growLogits(t, cfg, srcSet, prompt, canvas)
	enc1, dec1 := growLogits(t, again, dstSet, prompt, canvas)
	if !slices.Equal(enc0, enc1) || !slices.Equal(dec0, dec1) {
		t.Fatalf("the grown model's logits differ from the source's (encoder %v, decoder %v)",
			slices.Equal(enc0, enc1), slices.Equal(dec0, dec1))
	}
	// Switch on layer 4's attention branch (a copy of layer 1): the logits move.
	name := "layers.4.post_attention_layernorm.weight"
	ones := make([]float32, again.Text.HiddenSize)
	for i := range ones {
		ones[i] = 1
	}
	dstSet.Tensors[name] = tensors.FromFlatDataAndDimensions(ones, len(ones))
	enc2, dec2 := growLogits(t, again, dstSet, prompt, canvas)
	if slices.Equal(enc0, enc2) || slices.Equal(dec0, dec2) {
		t.Fatal("switching an added layer on did not change the logits: the added layers are not run")
	}
}

func TestGrowRefuses(t *testing.T) {
	src := enginetest.WriteTinyModel(t, enginetest.Options{})
	if _, err := Grow(src, filepath.Join(t.TempDir(), "g"), 3); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("growing to the same depth: %v, want an error saying to give more layers", err)
	}
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Grow(src, busy, 6); err == nil {
		t.Error("growing into a folder that holds files: no error")
	}
	if b, err := os.ReadFile(filepath.Join(busy, "keep.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the folder's file was touched: %q, %v", b, err)
	}
}

func TestGrowLayers(t *testing.T) {
	from, copied := GrowLayers(6, 12)
	if !slices.Equal(from, []int{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}) ||
		!slices.Equal(copied, []bool{false, false, false, false, false, false, true, true, true, true, true, true}) {
		t.Errorf("GrowLayers(6, 12) = %v %v", from, copied)
	}
	for name, want := range map[string]int{"layers.3.mlp.up_proj.weight": 3, "encoder.layers.11.layer_scalar": 11,
		"embed_tokens.weight": -1, "self_conditioning.up_proj.weight": -1, "xlayers.1.a": -1} {
		if got := layerOf(name); got != want {
			t.Errorf("layerOf(%q) = %d, want %d", name, got, want)
		}
	}
}
