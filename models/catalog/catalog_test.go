package catalog

import (
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

func TestCatalog(t *testing.T) {
	if e, ok := Find("google/DiffusionGemma-26B-A4B-it"); !ok || e.ID != DiffusionGemmaID {
		t.Errorf("find by repo: %+v", e)
	}
	if e, ok := Find(MiniID); !ok || !e.Builtin {
		t.Errorf("mini: %+v", e)
	}
	cfg := DiffusionGemma26B()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Text.LayerTypes[5] != "full_attention" || cfg.Text.LayerTypes[29] != "full_attention" || cfg.Text.LayerTypes[28] != "sliding_attention" {
		t.Errorf("layer pattern %v", cfg.Text.LayerTypes)
	}
	// NVIDIA's NVFP4 export loads (engine/weights' ModelOpt loader): a catalog entry
	// with the nvfp4 profile, no longer refused.
	if e, ok := Find("nvidia/diffusiongemma-26B-A4B-it-NVFP4"); !ok || e.ID != NVFP4ID ||
		len(e.Profiles) != 1 || e.Profiles[0] != quant.NVFP4Profile || e.Config == nil {
		t.Errorf("NVFP4 entry: %+v", e)
	}
	if err := CheckLoadable("nvidia/diffusiongemma-26B-A4B-it-NVFP4"); err != nil {
		t.Errorf("NVFP4: %v", err)
	}
	if err := CheckLoadable("google/diffusiongemma-26B-A4B-it"); err != nil {
		t.Error(err)
	}
	// Unsloth's GGUF loads (engine/gguf): one quant file plus the base repo's
	// tokenizer and config.
	e, ok := Find("unsloth/diffusiongemma-26B-A4B-it-GGUF")
	if !ok || e.ID != GGUFID || len(e.Include) != 1 || e.Include[0] != GGUFFile(gguf.Q4KM) || e.Config == nil ||
		e.Companion == nil || e.Companion.Repo != "google/diffusiongemma-26B-A4B-it" {
		t.Errorf("GGUF entry: %+v", e)
	}
	if e.Companion != nil && !slices.Contains(e.Companion.Include, "tokenizer.json") {
		t.Errorf("GGUF companion files %v lack tokenizer.json", e.Companion.Include)
	}
	if err := CheckLoadable("unsloth/diffusiongemma-26B-A4B-it-GGUF"); err != nil {
		t.Errorf("GGUF: %v", err)
	}
}

// TestForModel finds a loaded model's entry by name, by a profile made from it, or by
// the 26B's dimensions in a folder of any name; the Mini's flag says its modes
// differ and the 26B's that they write equally well.
func TestForModel(t *testing.T) {
	for _, name := range []string{"diffusiongemma-26b", "google/diffusiongemma-26B-A4B-it", "diffusiongemma-26b-int4"} {
		if e, ok := ForModel(name, nil); !ok || e.ID != DiffusionGemmaID || !e.ModesEqual || e.Steps <= 0 {
			t.Errorf("%s: %v %+v", name, ok, e)
		}
	}
	if e, ok := ForModel("/scratch/dg26b-int4", DiffusionGemma26B()); !ok || !e.ModesEqual {
		t.Errorf("26B folder: %v %+v", ok, e)
	}
	other := DiffusionGemma26B()
	other.Text.NumHiddenLayers = 2
	if _, ok := ForModel("/scratch/dg26b-2l", other); ok {
		t.Error("a 2-layer model is not the 26B")
	}
	if e, ok := ForModel(MiniID, nil); !ok || e.ModesEqual {
		t.Errorf("Mini: %v %+v", ok, e)
	}
}

// TestAnswerTokens: an answer from DiffusionGemma — by its catalog name, a
// profile made from it, or its dimensions under another name (a fine-tune) —
// may run to 2048 tokens where its generation config says 256; the Mini and a
// model the catalog does not know keep their own.
func TestAnswerTokens(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  func() *config.Model
		want int
	}{
		{DiffusionGemmaID, nil, 2048},
		{"diffusiongemma-26b-int4", nil, 2048},
		{NVFP4ID, nil, 2048},
		{GGUFID, nil, 2048},
		{"acme/diffusiongemma-26b-ft", DiffusionGemma26B, 2048},
		{MiniID, nil, 0},
		{"acme/tiny", func() *config.Model { m := DiffusionGemma26B(); m.Text.NumHiddenLayers = 2; return m }, 0},
	} {
		var cfg *config.Model
		if c.cfg != nil {
			cfg = c.cfg()
		}
		if got := AnswerTokens(c.name, cfg); got != c.want {
			t.Errorf("AnswerTokens(%s) = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestFindGGUFMix: Unsloth's GGUF repo named alone is its Q4_K_M entry; with a
// quantization, as ollama names a Hugging Face GGUF, the entry of that mix; one the
// catalog does not offer, or a repo without GGUFs so named, is no entry.
func TestFindGGUFMix(t *testing.T) {
	const repo = "unsloth/diffusiongemma-26B-A4B-it-GGUF"
	for name, want := range map[string]string{
		repo:                                    GGUFID,
		repo + ":Q6_K":                          GGUFIDs[gguf.Q6KM],
		strings.ToLower(repo) + ":q5_k_m":       GGUFIDs[gguf.Q5KM],
		repo + ":Q8_0":                          GGUFIDs[gguf.Q80M],
		repo + ":q3_k_m":                        GGUFIDs[gguf.Q3KM],
		repo + ":IQ2_XXS":                       "",
		"google/diffusiongemma-26B-A4B-it:Q6_K": "",
		GGUFIDs[gguf.Q6KM]:                      GGUFIDs[gguf.Q6KM],
	} {
		e, ok := Find(name)
		if ok != (want != "") || e.ID != want {
			t.Errorf("Find(%q) = %q (%v), want %q", name, e.ID, ok, want)
		}
	}
	for _, m := range gguf.Mixes {
		e, _ := Find(GGUFIDs[m])
		if e.Mix != m || e.Include[0] != GGUFFile(m) || !strings.Contains(e.Name, string(m)) {
			t.Errorf("%s: entry %s downloads %v", m, e.ID, e.Include)
		}
	}
}
