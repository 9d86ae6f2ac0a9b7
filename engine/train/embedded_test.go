package train

import (
	stdctx "context"
	"errors"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// TestEmbeddedMiniGeneratesPage loads the Darkroom Mini built into the binary
// (assets.Mini, the same loader as a download) and generates an encyclopedia
// page in diffusion mode and a few tokens in AR mode. It fails if the model is
// missing: the shipped binary must carry one.
func TestEmbeddedMiniGeneratesPage(t *testing.T) {
	fsys, err := assets.Mini()
	if errors.Is(err, assets.ErrMiniNotBuilt) {
		t.Fatalf("assets/mini holds no trained model: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := stdctx.Background()
	eng, err := engine.Load(ctx, engine.FS(fsys, "Darkroom Mini"), engine.Options{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cfg := eng.Config()
	if cfg.CanvasLength != 256 || cfg.Text.NumExperts < 4 || cfg.Text.TopKExperts != 2 ||
		cfg.Text.LayerTypes[cfg.Text.NumHiddenLayers-1] != "full_attention" || cfg.Text.VocabSize < 4000 {
		t.Fatalf("embedded model is not the Darkroom Mini architecture: %+v", cfg.Text)
	}
	// A tiny model sometimes ends a page at once; a page from one of three seeds is required.
	var page string
	for seed := uint64(1); seed <= 3 && page == ""; seed++ {
		steps := 0
		res, err := eng.Generate(ctx, engine.Request{Prompt: assets.EncyclopediaPrompt("Unix"), Mode: engine.Diffusion, Seed: seed,
			OnEvent: func(ev engine.Event) {
				if ev.Kind == engine.EventStep {
					steps++
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("diffusion seed %d: %d tokens, %d steps, %.0f ms: %q", seed, len(res.Tokens), steps, res.ElapsedMS, res.Text)
		if steps == 0 || len(res.Canvases) == 0 {
			t.Fatalf("no canvas was developed (%d steps, stop %q)", steps, res.StopReason)
		}
		page = res.Text
	}
	if page == "" {
		t.Fatal("no page generated with seeds 1..3")
	}
	ar, err := eng.Generate(ctx, engine.Request{Prompt: assets.EncyclopediaPrompt("Unix"), Mode: engine.AR,
		Sampling: engine.Sampling{MaxNewTokens: 16}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Tokens) == 0 {
		t.Fatalf("AR mode generated nothing (stop %q)", ar.StopReason)
	}
	t.Logf("AR: %q", ar.Text)
}
