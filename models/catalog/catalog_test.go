package catalog

import (
	"strings"
	"testing"
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
	if err := CheckLoadable("nvidia/diffusiongemma-26B-A4B-it-NVFP4"); err == nil || !strings.Contains(err.Error(), "NVFP4") {
		t.Errorf("NVFP4: %v", err)
	}
	if err := CheckLoadable("google/diffusiongemma-26B-A4B-it"); err != nil {
		t.Error(err)
	}
}
