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
// `quantize --profile int4`, `bench` again, split (`--gpu-layers`), and the report's readers over their
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
		Split      *struct {
			Path         string  `json:"path"`
			DeviceLayers int     `json:"device_layers"`
			CanvasMS     float64 `json:"canvas_ms"`
		} `json:"darkroom_int4_split"`
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
	// The split (--gpu-layers half the layers; the go backend's graphs standing in for the GPU's).
	if sp := rep.Split; sp == nil || sp.Path != "split" || sp.DeviceLayers != cfg.Text.NumHiddenLayers/2 || !(sp.CanvasMS > 0) {
		t.Errorf("the int4 split's report: %+v", sp)
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

// TestGPUCheckPreflight: on a GPU machine gpu-check.sh asks Darkroom first
// whether it will run on the GPU — `hw --json`'s device for auto, then `gpu
// verify` on the plugin it would use — and stops in seconds with the reason
// where it will not, before transformers' minutes of building (the stand-ins
// here: an nvidia-smi, a python that passes the probe and records the build,
// and a darkroom whose hw and verify answer as each case says).
func TestGPUCheckPreflight(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("nvidia-smi", `case "$1" in -L) echo "GPU 0: NVIDIA H200";; *) echo 0;; esac`+"\n")
	py := write("py", `case "$2" in
probe) echo "torch 2.9, transformers 5.1, NVIDIA H200" ;;
build) echo build >>"$STUB_LOG"; exit 1 ;;
*) exec `+python+` "$@" ;;
esac
`)
	bin := write("darkroom", `echo "$*" >>"$STUB_LOG"
case "$1 $2" in
"hw --json") printf '{"hardware": {"device": "%s", "backend": "%s", "summary": "%s"}}\n' "$STUB_DEVICE" "$STUB_BACKEND" "$STUB_SUMMARY" ;;
"gpu verify") if [ -n "$STUB_VERIFY_FAILS" ]; then echo "$STUB_VERIFY_FAILS" >&2; exit 1; fi; echo "a test graph ran on the GPU with $3" ;;
*) exit 3 ;;
esac
`)
	for _, tc := range []struct {
		name, backend, device, spec, verifyFails string
		want                                     []string // in the output
		calls                                    []string // in the stubs' log, in order
		built                                    bool
	}{
		{name: "no plugin found", backend: "auto", device: "cpu", spec: "go",
			want:  []string{"Darkroom would run on the CPU here: no plugin, so the CPU", "--backend xla:/path/to/xla_cuda_plugin.so"},
			calls: []string{"hw --json"}},
		{name: "plugin does not start", backend: "auto", device: "gpu", spec: "xla:/venv/xla_cuda_plugin.so", verifyFails: "PJRT_Api version 0.61 is older than 0.67",
			want:  []string{"the CUDA plugin /venv/xla_cuda_plugin.so does not start: PJRT_Api version 0.61 is older than 0.67"},
			calls: []string{"hw --json", "gpu verify /venv/xla_cuda_plugin.so"}},
		{name: "plugin starts", backend: "auto", device: "gpu", spec: "xla:/venv/xla_cuda_plugin.so",
			want:  []string{"preflight: a test graph ran on the GPU with /venv/xla_cuda_plugin.so"},
			calls: []string{"hw --json", "gpu verify /venv/xla_cuda_plugin.so"}, built: true},
		{name: "plugin given", backend: "xla:/opt/p.so",
			want:  []string{"preflight: a test graph ran on the GPU with /opt/p.so"},
			calls: []string{"gpu verify /opt/p.so"}, built: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			cmd := exec.Command(bash, filepath.Join("..", "..", "packaging", "gpu-check.sh"), "--darkroom", bin, "--out", t.TempDir(), "--backend", tc.backend)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "PYTHON="+py, "STUB_LOG="+log,
				"STUB_DEVICE="+tc.device, "STUB_BACKEND="+tc.spec, "STUB_SUMMARY=no plugin, so the CPU", "STUB_VERIFY_FAILS="+tc.verifyFails)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("gpu-check.sh exited 0 (the stand-in build fails):\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the output lacks %q:\n%s", w, out)
				}
			}
			b, _ := os.ReadFile(log)
			calls := strings.Split(strings.TrimSpace(string(b)), "\n")
			built := len(calls) > 0 && calls[len(calls)-1] == "build"
			if built {
				calls = calls[:len(calls)-1]
			}
			if strings.Join(calls, "|") != strings.Join(tc.calls, "|") || built != tc.built {
				t.Errorf("calls %q, built %v; want %q, built %v\n%s", calls, built, tc.calls, tc.built, out)
			}
		})
	}
}
