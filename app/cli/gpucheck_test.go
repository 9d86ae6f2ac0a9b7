package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// asBinaryEnv, set to 1, makes this test binary run as the darkroom command line
// (TestMain), so a script under test calls the real CLI, not a stub.
const asBinaryEnv = "DARKROOM_CLI_TEST_AS_BINARY"

func TestMain(m *testing.M) {
	if os.Getenv(asBinaryEnv) == "1" {
		os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// darkroomBinary writes an executable that runs this test binary as darkroom.
func darkroomBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "darkroom")
	script := "#!/bin/sh\n" + asBinaryEnv + "=1 exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestGPUCheckRehearsal runs packaging/gpu-check.sh --rehearse on the CPU: the
// Darkroom half of the GPU check — `gpu logits`, `bench` with the script's flags,
// `quantize --profile int4`, `bench` again, and the report's readers over their
// real outputs — on a tiny model with the real 26B's canvas (256) and the Mini
// tokenizer's vocabulary, which the script copies in as it does on the GPU. A
// flag, a JSON field or a file size the report expects that the CLI no longer
// gives fails here rather than on the GPU.
func TestGPUCheckRehearsal(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the bench's speed calibration: known rates, not measured
	if err := speed.Prime(speed.Uniform(50e9, 20e9, 10e9)); err != nil {
		t.Fatal(err)
	}
	cfg := config.Tiny()
	cfg.CanvasLength, cfg.Text.VocabSize = 256, 4096
	model := filepath.Join(t.TempDir(), "model")
	if err := weights.Save(weights.Random(cfg, 5), cfg, model, weights.SaveOptions{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(bash, filepath.Join("..", "..", "packaging", "gpu-check.sh"), "--rehearse", model,
		"--darkroom", darkroomBinary(t), "--backend", "go", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-check.sh --rehearse: %v\n%s", err, b)
	}
	t.Logf("%s", b)
	var rep struct {
		Rehearsal bool   `json:"rehearsal"`
		Backend   string `json:"darkroom_backend"`
		Steps     int    `json:"canvas_steps"`
		BF16      struct {
			CanvasMS  float64 `json:"canvas_ms"`
			Diffusion float64 `json:"diffusion_tokens_s"`
			AR        float64 `json:"ar_tokens_s"`
		} `json:"darkroom_bf16"`
		Int4       map[string]float64 `json:"darkroom_int4"`
		LayerBytes int64              `json:"int4_layer_bytes"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "gpu-check.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("gpu-check.json %q: %v", raw, err)
	}
	if !rep.Rehearsal || rep.Backend != "go" || rep.Steps != 16 || !(rep.BF16.CanvasMS > 0) || !(rep.BF16.Diffusion > 0) ||
		!(rep.BF16.AR > 0) || !(rep.Int4["canvas_ms"] > 0) || !(rep.Int4["ar_tokens_s"] > 0) || rep.LayerBytes <= 0 {
		t.Errorf("report %s", raw)
	}
	// The int4 model's layers are its quantized experts and projections: well under bf16's.
	var bf16Layers int64
	for _, s := range weights.Specs(cfg) {
		if strings.HasPrefix(s.Name, "layers.") {
			n := int64(2)
			for _, d := range s.Shape {
				n *= int64(d)
			}
			bf16Layers += n
		}
	}
	if rep.LayerBytes >= bf16Layers*2/3 {
		t.Errorf("int4 layers hold %d B, bf16's %d B", rep.LayerBytes, bf16Layers)
	}
	if !strings.Contains(string(b), "gpu-check: rehearsal: Darkroom's half on go") || !strings.Contains(string(b), "| AR tokens/s |") {
		t.Errorf("output:\n%s", b)
	}
}
