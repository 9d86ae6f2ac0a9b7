package weights_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
)

func TestCfgPatchEngineLoad(t *testing.T) {
	_, nvDir, _, m := tinyModelOpt(t)
	raw := must(os.ReadFile(filepath.Join(nvDir, config.ConfigFile)))
	var cj map[string]any
	json.Unmarshal(raw, &cj)
	cj["quantization_config"] = map[string]any{"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": []string{"lm_head"},
		"config_groups": map[string]any{"group_0": map[string]any{"weights": map[string]any{"group_size": 16}}}, "producer": map[string]any{"name": "modelopt"}}
	raw, _ = json.Marshal(cj)
	os.WriteFile(filepath.Join(nvDir, config.ConfigFile), raw, 0o644)
	writeModelOpt(t, nvDir, m.entries, hfQuantNVFP4) // both files, as ModelOpt writes
	e, err := engine.Load(context.Background(), engine.Dir(nvDir), engine.Options{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Generate(context.Background(), engine.Request{Prompt: "What is Unix?", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d tokens (%s), %d canvases", len(res.Tokens), res.StopReason, len(res.Canvases))
}
