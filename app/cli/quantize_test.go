package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models"
)

func TestQuantizeCommand(t *testing.T) {
	cfg := config.Tiny()
	src := filepath.Join(t.TempDir(), "tiny")
	if err := weights.Save(weights.Random(cfg, 1), cfg, src, weights.SaveOptions{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	code, out, errOut := runLibCLI("quantize", "--model", src, "--profile", "int4", "--models-dir", store, "--json")
	if code != 0 {
		t.Fatalf("quantize: %d %s", code, errOut)
	}
	var res quantizeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Model != "tiny-int4" || res.SizeRatio <= 0 || res.SizeRatio >= 1 {
		t.Fatalf("result %+v (%v)", res, err)
	}
	m, _ := models.New(models.Options{Dir: store})
	dir, err := m.Resolve("tiny-int4")
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := weights.Load(dir, cfg2); err != nil {
		t.Fatalf("engine cannot load the result: %v", err)
	}
	if code, _, _ := runLibCLI("quantize", "--model", src, "--profile", "int4", "--models-dir", store); code != 1 {
		t.Errorf("second conversion to the same name succeeded")
	}
	if code, _, _ := runLibCLI("quantize", "--model", src, "--profile", "fp3", "--models-dir", store); code != 1 {
		t.Errorf("bad profile accepted")
	}
}

// TestQuantizeCompareCommand runs the quantization report on a tiny random model
// (the real numbers come from the trained Darkroom Mini).
func TestQuantizeCompareCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	dir := enginetest.WriteTinyModel(t, enginetest.Options{MaxSteps: 3, Seed: 2,
		Save: weights.SaveOptions{DType: "bf16"}})
	code, out, errOut := runLibCLI("quantize", "--compare", "--model", dir, "--n", "2", "--steps", "2",
		"--max-new-tokens", "8", "--backend", "go", "--json", "--models-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("compare: %d %s", code, errOut)
	}
	var r compareReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Rows) != 2 || r.Prompts != 2 {
		t.Fatalf("report %s (%v)", out, err)
	}
	for _, c := range r.Rows {
		if c.SizeRatio <= 0 || c.SizeRatio >= 1 || c.MeanKL <= 0 || c.Positions != 2*2*16 || c.RefTokensPS <= 0 || c.QuantTokensS <= 0 {
			t.Errorf("%+v", c)
		}
	}
}

// TestQuantizeCtrlC: Ctrl-C in the middle of a conversion says it was
// interrupted and that nothing half made is left; it said 'darkroom quantize:
// context canceled'.
func TestQuantizeCtrlC(t *testing.T) {
	cfg := config.Tiny()
	src := filepath.Join(t.TempDir(), "tiny")
	if err := weights.Save(weights.Random(cfg, 1), cfg, src, weights.SaveOptions{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	withInterrupt(t, ctx)
	store := t.TempDir()
	code, _, errOut := runLibCLI("quantize", "--model", src, "--profile", "int4", "--models-dir", store)
	if want := "darkroom quantize: " + quantizeInterrupted + "\n"; code != 1 || errOut != want {
		t.Errorf("Ctrl-C: exit %d, %q; want 1, %q", code, errOut, want)
	}
	// (The store's .locks folder, where every process takes a model's hold, is
	// not a model.)
	left, _ := filepath.Glob(filepath.Join(store, "*"))
	left = slices.DeleteFunc(left, func(p string) bool { return filepath.Base(p) == ".locks" })
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
