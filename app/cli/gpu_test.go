package cli

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/gpuruntime"
	"github.com/darkroomlabs/darkroom/models/gpuruntime/gpuruntimetest"
	gctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// fakeGPU makes the CLI see gpus (none: no GPU) for the test's duration.
func fakeGPU(t *testing.T, gpus ...nvidia.GPU) {
	old := findGPUs
	findGPUs = func(context.Context) ([]nvidia.GPU, string) {
		if len(gpus) == 0 {
			return nil, "NVML: the NVIDIA driver is not installed; nvidia-smi: not installed"
		}
		return gpus, ""
	}
	t.Cleanup(func() { findGPUs = old })
}

// TestGPUInstallStatusRemove: install against a fake index on a machine whose GPU
// cannot run the plugin (here: no real plugin, no GPU) downloads and extracts,
// then ends "not verified" in one plain line, exit 1, not marked installed;
// status says so; where the test graph runs, install again verifies without
// downloading and status says installed; remove frees the folder.
func TestGPUInstallStatusRemove(t *testing.T) {
	rt := t.TempDir()
	t.Setenv(backend.RuntimeDirEnvVar, rt)
	fakeGPU(t, nvidia.GPU{Name: "NVIDIA GeForce RTX 4090", Driver: "550.54.15", ComputeCapability: "8.9"})
	old := gpuVerify
	gpuVerify = func() func(context.Context, string) error { return gpuruntime.RunTinyGraph }
	t.Cleanup(func() { gpuVerify = old })
	index := gpuruntimetest.New(t)

	code, out, errOut := runCLI("gpu", "install", "--index", index.API())
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	last := lines[len(lines)-1]
	if code != 1 || !strings.Contains(last, "GPU support was downloaded to ") || !strings.Contains(last, "not verified") ||
		!strings.Contains(last, "CPU: the CUDA plugin did not start") {
		t.Fatalf("install: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "the CUDA 12 plugin of JAX 0.7.2 and 2 NVIDIA libraries") {
		t.Errorf("no plan line: %q", errOut)
	}
	if backend.Runtime().Installed() {
		t.Fatal("marked installed without a verified run")
	}
	if _, err := os.Stat(filepath.Join(rt, "cuda", "nvidia", "cublas", "lib", "libcublas.so.12")); err != nil {
		t.Errorf("library not extracted: %v", err)
	}
	if code, out, _ := runCLI("gpu", "status"); code != 0 || !strings.Contains(out, "not verified") || !strings.Contains(out, "GPU support is not installed") {
		t.Errorf("status: %d %q", code, out)
	}
	code, out, _ = runCLI("gpu", "status", "--json")
	var st gpuruntime.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Installed || !st.Downloaded || st.Plan.JAX != "0.7.2" {
		t.Errorf("status --json: %d %q", code, out)
	}
	// A GPU where the test graph runs: the same install verifies the unpacked files
	// without downloading again, and GPU support is installed.
	gpuVerify = func() func(context.Context, string) error { return func(context.Context, string) error { return nil } }
	sent := index.Sent()
	if code, out, errOut := runCLI("gpu", "install", "--index", index.API()); code != 0 ||
		!strings.Contains(out, "GPU support installed and verified on the NVIDIA GeForce RTX 4090") || index.Sent() != sent {
		t.Errorf("install on a working GPU: exit %d, %q %q, %d bytes fetched again", code, out, errOut, index.Sent()-sent)
	}
	if code, out, _ := runCLI("gpu", "status"); code != 0 || !strings.Contains(out, "GPU support: installed and verified") ||
		!strings.Contains(out, "CUDA 12 plugin of JAX 0.7.2") || !backend.Runtime().Installed() {
		t.Errorf("status once verified: %d %q", code, out)
	}
	if code, out, _ := runCLI("gpu", "remove"); code != 0 || !strings.Contains(out, "removed") {
		t.Errorf("remove: %d %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(rt, "cuda")); !os.IsNotExist(err) {
		t.Errorf("runtime left after remove: %v", err)
	}
	if code, out, _ := runCLI("gpu", "status"); code != 0 || !strings.Contains(out, "not installed (`darkroom gpu install`") {
		t.Errorf("status after remove: %d %q", code, out)
	}
}

func TestGPUInstallRefusals(t *testing.T) {
	t.Setenv(backend.RuntimeDirEnvVar, t.TempDir())
	fakeGPU(t)
	code, _, errOut := runCLI("gpu", "install", "--index", "http://127.0.0.1:1/pypi")
	if code != 1 || !strings.Contains(errOut, "No NVIDIA GPU found") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("no GPU: %d %q", code, errOut)
	}
	fakeGPU(t, nvidia.GPU{Name: "Tesla K40", Driver: "470.1"})
	if code, _, errOut := runCLI("gpu", "install"); code != 1 || !strings.Contains(errOut, "driver 470.1 is too old") {
		t.Errorf("old driver: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI("gpu", "verify", filepath.Join(t.TempDir(), "missing.so")); code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("verify a missing plugin: %d %q", code, errOut)
	}
	if code, _, _ := runCLI("gpu", "frobnicate"); code != 1 {
		t.Error("unknown subcommand accepted")
	}
}

// TestHWShowsPlugins: `darkroom hw` says what runs and lists the PJRT plugins found
// and where; Darkroom's own GPU support counts (and is listed) only once verified.
func TestHWShowsPlugins(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", dir)
	t.Setenv(backend.RuntimeDirEnvVar, t.TempDir())
	t.Setenv(backend.EnvVar, "")
	plugin := filepath.Join(dir, "pjrt_c_api_cpu_plugin.so")
	os.WriteFile(plugin, []byte("x"), 0o644)
	rt := backend.Runtime()
	os.MkdirAll(rt.NVIDIA(), 0o755)
	os.WriteFile(rt.Plugin(), []byte("x"), 0o644)
	ours := fmt.Sprintf("cuda  %s (%s)", rt.Plugin(), backend.FromRuntime)
	hw := func() string {
		t.Helper()
		code, out, errOut := runLibCLI("hw", "--models-dir", t.TempDir())
		if code != 0 {
			t.Fatalf("hw: %s", errOut)
		}
		return out
	}
	out := hw()
	for _, want := range []string{"Backend: ", "Darkroom's GPU support: not installed", fmt.Sprintf("cpu   %s (%s)", plugin, backend.FromEnv)} {
		if !strings.Contains(out, want) {
			t.Errorf("hw output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, ours) {
		t.Errorf("hw lists the unverified runtime's plugin:\n%s", out)
	}
	os.WriteFile(rt.Marker(), []byte("{}"), 0o644)
	out = hw()
	for _, want := range []string{"Darkroom's GPU support: installed, " + rt.Dir, ours} {
		if !strings.Contains(out, want) {
			t.Errorf("verified runtime: hw output lacks %q:\n%s", want, out)
		}
	}
}

// TestGPULogits: `gpu logits` writes the encoder's logits over the prompt and the
// first decoder step's over the canvas, row-major float32, equal to what the
// model's runner returns for the same ids.
func TestGPULogits(t *testing.T) {
	dir := tinyModelDir(t)
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := logitsInput{Prompt: []int{2, 17, 40, 99, 5}}
	for i := 0; i < cfg.CanvasLength; i++ {
		in.Canvas = append(in.Canvas, (i*37+11)%cfg.Text.VocabSize)
	}
	b, _ := json.Marshal(in)
	ids := filepath.Join(t.TempDir(), "ids.json")
	os.WriteFile(ids, b, 0o644)
	out := t.TempDir()
	code, stdout, errOut := runCLI("gpu", "logits", "--model", dir, "--ids", ids, "--out", out, "--backend", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep logitsReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Vocab != cfg.Text.VocabSize || rep.PromptTokens != 5 {
		t.Fatalf("report %q: %v", stdout, err)
	}
	read := func(path string) []float32 {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return v
	}
	enc, dec := read(rep.Encoder), read(rep.Decoder)
	V := cfg.Text.VocabSize
	if len(enc) != 5*V || len(dec) != cfg.CanvasLength*V {
		t.Fatalf("sizes %d, %d", len(enc), len(dec))
	}
	// The reference: the runner itself.
	set, err := weights.Load(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.New("go")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Finalize()
	ctx := gctx.New()
	if err := model.LoadSet(ctx, set); err != nil {
		t.Fatal(err)
	}
	run, err := model.NewRunner(be.Backend, &cfg.Text, ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	last, err := run.Encode(in.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := run.Decode(in.Canvas, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < V; i++ {
		if d := math.Abs(float64(enc[4*V+i] - last[i])); d > 1e-4 {
			t.Fatalf("encoder row 4, id %d: %g vs %g", i, enc[4*V+i], last[i])
		}
	}
	for i := range want {
		if d := math.Abs(float64(dec[i] - want[i])); d > 1e-4 {
			t.Fatalf("decoder logit %d: %g vs %g", i, dec[i], want[i])
		}
	}
}

// TestGPUCheckScriptCPUPart runs packaging/gpu-check.sh as far as a machine
// without a GPU or torch can: the dry run prints the plan and a "skipped:" line,
// and with an NVIDIA GPU reported but no torch the probe skips too; both exit 0
// and write the JSON. The Python half must at least compile.
func TestGPUCheckScriptCPUPart(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join("..", "..", "packaging", "gpu-check.sh")
	run := func(env []string, args ...string) (string, map[string]any) {
		out := t.TempDir()
		cmd := exec.Command(bash, append([]string{script, "--out", out}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gpu-check.sh %v: %v\n%s", args, err, b)
		}
		var doc map[string]any
		raw, _ := os.ReadFile(filepath.Join(out, "gpu-check.json"))
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("gpu-check.json %q: %v", raw, err)
		}
		return string(b), doc
	}
	out, doc := run(nil, "--dry-run")
	for _, want := range []string{"gpu logits --backend auto", "quantize --model", "--max-steps 16", "gpu-check: skipped: dry run"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if doc["skipped"] != "dry run" {
		t.Errorf("json %v", doc)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 for the probe")
	}
	parse := "import ast, sys; ast.parse(open(sys.argv[1]).read())"
	if b, err := exec.Command(py, "-c", parse, filepath.Join("..", "..", "packaging", "gpu_check.py")).CombinedOutput(); err != nil {
		t.Fatalf("gpu_check.py does not parse: %s", b)
	}
	// A GPU as nvidia-smi reports it, and a Python without site-packages (no torch).
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "python-bare"), []byte("#!/bin/sh\nexec "+py+" -I -S \"$@\"\n"), 0o755)
	out, doc = run([]string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "PYTHON=" + filepath.Join(bin, "python-bare")})
	if !strings.Contains(out, "gpu-check: skipped: no GPU/torch (no torch/transformers (torch))") ||
		!strings.HasPrefix(doc["skipped"].(string), "no GPU/torch") {
		t.Errorf("no torch:\n%s\n%v", out, doc)
	}
}

// fixtureScript writes the files gpu_check.py report reads, for a vocabulary of
// 50: transformers' logits, Darkroom's (the encoder's a little off, the decoder's
// first row with another argmax), both engines' timings and an int4 checkpoint
// of 600 bytes of layers.
const fixtureScript = `
import json, struct, sys
import numpy as np
w = sys.argv[1]
rng = np.random.default_rng(0)
enc = rng.standard_normal((4, 50)).astype(np.float32)
dec = rng.standard_normal((8, 50)).astype(np.float32)
np.save(w + "/hf_encoder.npy", enc)
np.save(w + "/hf_decoder.npy", dec)
(enc + 1e-3).astype("<f4").tofile(w + "/dr/encoder.f32")
bad = dec.copy()
bad[0, (dec[0].argmax() + 1) % 50] = 100
bad.astype("<f4").tofile(w + "/dr/decoder.f32")
json.dump({"gpu": "NVIDIA H200", "transformers": "5.1", "torch": "2.9", "diffusion_canvas_ms": 400.0,
           "diffusion_tokens_s": 640.0, "ar_tokens_s": 50.0, "max_memory_bytes": 12e9}, open(w + "/hf.json", "w"))
json.dump({"encoder_logits": w + "/dr/encoder.f32", "decoder_logits": w + "/dr/decoder.f32", "vocab": 50,
           "prompt_tokens": 4, "canvas_length": 8}, open(w + "/dr_logits.json", "w"))
b = {"backend": "xla:/x/cuda.so", "diffusion": {"median_canvas_ms": 100.0, "tokens_per_s": 2560.0}, "ar": {"tokens_per_s": 200.0}}
json.dump(b, open(w + "/dr_bench_bf16.json", "w"))
json.dump(b, open(w + "/dr_bench_int4.json", "w"))
json.dump({"bf16_peak_bytes": 13e9, "int4_peak_bytes": 4e9}, open(w + "/dr_memory.json", "w"))
h = json.dumps({"model.decoder.layers.0.x": {"dtype": "U8", "shape": [600], "data_offsets": [0, 600]},
                "model.decoder.embed_tokens.weight": {"dtype": "U8", "shape": [100], "data_offsets": [600, 700]}}).encode()
open(w + "/model-int4/model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + bytes(700))
`

// TestGPUCheckReport runs gpu_check.py's report on fixture files where a Python
// with numpy is found: the agreement, the speed ratios and the 30-layer
// extrapolation come out as computed by hand.
func TestGPUCheckReport(t *testing.T) {
	var py string
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import numpy").Run() == nil {
			py = path
			break
		}
	}
	if py == "" {
		t.Skip("no Python with numpy")
	}
	w := t.TempDir()
	os.MkdirAll(filepath.Join(w, "dr"), 0o755)
	os.MkdirAll(filepath.Join(w, "model-int4"), 0o755)
	if b, err := exec.Command(py, "-c", fixtureScript, w).CombinedOutput(); err != nil {
		t.Fatalf("fixtures: %v\n%s", err, b)
	}
	out := filepath.Join(w, "gpu-check.json")
	b, err := exec.Command(py, filepath.Join("..", "..", "packaging", "gpu_check.py"), "report", w, out).CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "| diffusion tokens/s | 2560 (int4 2560) | 640 | Darkroom ≥ 1.5× transformers: 4.00× |") {
		t.Errorf("table:\n%s", b)
	}
	type agreement struct {
		Agree float64 `json:"argmax_agree"`
		Rel   float64 `json:"max_rel_diff"`
	}
	var r struct {
		Enc      agreement `json:"encoder_logits"`
		Dec      agreement `json:"decoder_logits"`
		DiffVsAR float64   `json:"darkroom_diffusion_vs_ar_bf16"`
		Ext      struct {
			Mem    float64 `json:"device_memory_bytes"`
			Canvas float64 `json:"canvas_ms_upper_bound"`
		} `json:"extrapolated_30_layers_int4"`
	}
	raw, _ := os.ReadFile(out)
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Enc.Agree != 1 || r.Enc.Rel <= 0 || r.Enc.Rel > 0.01 || r.Dec.Agree != 7.0/8 || r.DiffVsAR != 12.8 ||
		r.Ext.Mem != 4e9+600*24/6 || r.Ext.Canvas != 500 {
		t.Errorf("report %+v", r)
	}
}

// TestBackendFlagsDefaultToAuto: every command that runs a model leaves --backend
// empty by default, which the engine resolves to $GOMLX_BACKEND, else auto
// (backend.TestAutoIsDefault): none names a backend of its own, so a GPU with GPU
// support installed is used without the flag.
func TestBackendFlagsDefaultToAuto(t *testing.T) {
	for _, cmd := range [][]string{{"generate"}, {"wiki"}, {"serve"}, {"bench"}, {"quantize"}, {"gpu", "logits"}, {"train", "eval"}} {
		_, out, errOut := runCLI(append(cmd, "--help")...)
		help := out + errOut
		i := strings.Index(help, "  -backend string\n")
		if i < 0 {
			t.Errorf("%s --help has no --backend flag:\n%s", strings.Join(cmd, " "), help)
			continue
		}
		usage, _, _ := strings.Cut(help[i+len("  -backend string\n"):], "\n  -")
		if strings.Contains(usage, `(default "`) || !(strings.Contains(usage, "else auto") || strings.Contains(usage, "the engine's")) {
			t.Errorf("%s --backend: %q", strings.Join(cmd, " "), strings.TrimSpace(usage))
		}
	}
}
