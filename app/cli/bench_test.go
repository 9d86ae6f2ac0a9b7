package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// benchRates primes this test's calibration cache with known rates, so the bounds
// bench reports are checked against arithmetic, not against this machine's load:
// GEMM at 10 GFLOP/s at the largest shape and 2 at the others, memory reads at
// 2 GB/s.
func benchRates(t *testing.T) *speed.Rates {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r := speed.Uniform(2e9, 1e12, 2e9)
	m, k, n := speed.GridM[len(speed.GridM)-1], speed.GridK[len(speed.GridK)-1], speed.GridN[len(speed.GridN)-1]
	for i, g := range r.GEMM {
		if g.M == m && g.K == k && g.N == n {
			r.GEMM[i].FLOPS = 1e10
		}
	}
	if err := speed.Prime(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func benchJSON(t *testing.T, args ...string) (map[string]json.RawMessage, benchReport) {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"bench"}, args...)...)
	if code != 0 {
		t.Fatalf("bench %v: exit %d: %s", args, code, errOut)
	}
	var raw map[string]json.RawMessage
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return raw, rep
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestBenchModeAR: --mode ar runs the printer alone and reports it against the
// memory bound (the AR token's weight bytes at the calibration's read rate), the
// warm-up, the peak RSS beside the weight bytes, and the raw GEMM at a bounded
// slice of the head's shape.
func TestBenchModeAR(t *testing.T) {
	dir := tinyModelDir(t)
	rates := benchRates(t)
	raw, rep := benchJSON(t, "--model", dir, "--mode", "ar", "--runs", "1", "--max-new-tokens", "8", "--json")
	if _, ok := raw["diffusion"]; ok || rep.AR == nil || rep.Modes != "ar" {
		t.Fatalf("--mode ar: diffusion present %v, ar %+v, modes %q", ok, rep.AR, rep.Modes)
	}
	a := rep.AR
	// The host path compiles nothing: its warm-up is one token (the first use of
	// the weights), not a whole answer.
	if a.Runs != 1 || !(a.WarmupMS > 0) || rep.WarmupMS < a.WarmupMS || !(a.TokensPerS > 0) ||
		rep.Path != "host" || a.WarmupTokens != 1 || a.Tokens < 2 {
		t.Errorf("AR %+v, warm-up %v", a, rep.WarmupMS)
	}
	// The processors' time over the runs' wall time: some, and no more than the
	// processors the Go scheduler runs on (with the runtime's own threads' slack).
	if busy := a.ProcessorsBusy; !(busy > 0 && busy <= 1.5*float64(rep.GOMAXPROCS)) {
		t.Errorf("processors busy %v of %d", busy, rep.GOMAXPROCS)
	}
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	est, err := speed.Compute(cfg, speed.ProfileOf(cfg), rates, speed.Workload{Tokens: int(math.Round(a.Tokens)), Prompt: rep.PromptTokens})
	if err != nil {
		t.Fatal(err)
	}
	b := a.Bound
	if b == nil || !near(b.UnitBytes, est.AR.UnitBytes) || !near(b.BoundTokensPerS, rates.MemRead/est.AR.UnitBytes) ||
		!near(b.OfBound, b.MemoryMS/a.MedianCanvasMS) || !near(b.EstimateTokensPerS, est.AR.TokensPerS) ||
		!near(b.EstimateUnitMS, 1000*est.AR.UnitSeconds) ||
		!near(b.VsEstimate, a.TokensPerS/est.AR.TokensPerS) || rep.MemReadBytesPerS != rates.MemRead ||
		!near(b.EstimateTerms.Kernels, est.AR.Terms.Kernels) || b.EstimateTerms.Ops != est.AR.Terms.Ops || !(b.EstimateTerms.Ops > 0) {
		t.Errorf("AR bound %+v, want bytes %g at %g B/s (estimate %g tokens/s)", b, est.AR.UnitBytes, rates.MemRead, est.AR.TokensPerS)
	}
	if w := fit.WeightBytes(cfg, speed.ProfileOf(cfg)); rep.WeightBytes != w || rep.PeakRSSBytes == 0 ||
		rep.RSSOverWeights != int64(rep.PeakRSSBytes)-w {
		t.Errorf("weights %d (want %d), peak RSS %d, over weights %d", rep.WeightBytes, w, rep.PeakRSSBytes, rep.RSSOverWeights)
	}
	if m := rep.MatMul; m.M != rep.CanvasLength || m.K != cfg.Text.HiddenSize || m.N != min(cfg.Text.VocabSize, headColumns) ||
		!(rep.MatMulGFLOPS > 0) || rep.MatMulGFLOPS != rep.HostMatMulGFLOPS || m.Runs != 5 || !(m.Seconds > 0) ||
		!near(m.FLOPs, 2*float64(m.M*m.K*m.N)) {
		t.Errorf("raw matmul %+v at %v GFLOP/s (host %v)", m, rep.MatMulGFLOPS, rep.HostMatMulGFLOPS)
	}
}

// TestBenchModeDiffusion: --mode diffusion reports the denoising step's time against
// its compute bound, the step's counted FLOPs at the calibration's GEMM rate.
func TestBenchModeDiffusion(t *testing.T) {
	dir := tinyModelDir(t)
	benchRates(t)
	raw, rep := benchJSON(t, "--model", dir, "--mode", "diffusion", "--runs", "1", "--max-new-tokens", "16", "--max-steps", "3", "--json")
	if _, ok := raw["ar"]; ok || rep.Diffusion == nil {
		t.Fatalf("--mode diffusion: ar present %v, diffusion %+v", ok, rep.Diffusion)
	}
	d := rep.Diffusion
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	flops := model.FLOPs(&cfg.Text, rep.CanvasLength, rep.PromptTokens)
	// The step's compute bound is its FLOPs at the best GEMM rate, 10 GFLOP/s;
	// darkroom hw's step takes each product at its shape's rate, here 2 GFLOP/s.
	if b := d.Bound; b == nil || !near(b.UnitFLOPs, flops) || !near(b.ComputeMS, 1000*flops/1e10) ||
		!(b.EstimateStepMS > 4*b.ComputeMS) ||
		!(d.StepMS > 0) || !near(b.OfBound, math.Max(b.ComputeMS, b.MemoryMS)/d.StepMS) || !(b.EstimateTokensPerS > 0) {
		t.Errorf("diffusion %+v, bound %+v; want %g FLOPs a step", d, d.Bound, flops)
	}
	code, out, errOut := runCLI("bench", "--model", dir, "--mode", "diffusion", "--runs", "1", "--max-new-tokens", "16", "--max-steps", "3")
	if code != 0 || !strings.Contains(out, "diffusion step:") || strings.Contains(out, "AR token:") ||
		!strings.Contains(out, "memory read 2.0 GB/s") || !strings.Contains(out, "diffusion warm-up") ||
		!strings.Contains(out, "the estimated diffusion step: kernels") {
		t.Errorf("text report (exit %d):\n%s\n%s", code, out, errOut)
	}
}

// TestBenchPromptCache: with a prompt of the encoder's chunk or more, the warm-up keeps
// it and each timed run reads it from the prompt cache; the report says how much, and
// prices its bound's workload on the rest of the prompt, which the runs encoded.
func TestBenchPromptCache(t *testing.T) {
	dir := tinyModelDir(t)
	rates := benchRates(t)
	prompt := strings.Repeat("The history of the Unix operating system began at Bell Labs. ", 40)
	_, rep := benchJSON(t, "--model", dir, "--mode", "ar", "--runs", "2", "--max-new-tokens", "2", "--prompt", prompt, "--json")
	a := rep.AR
	if a == nil || rep.PromptTokens < 300 || a.PromptCached < 256 || int(a.PromptCached)%256 != 0 || int(a.PromptCached) >= rep.PromptTokens {
		t.Fatalf("prompt %d tokens, AR %+v: want whole chunks of it from the cache", rep.PromptTokens, a)
	}
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	est, err := speed.Compute(cfg, speed.ProfileOf(cfg), rates,
		speed.Workload{Tokens: int(math.Round(a.Tokens)), Prompt: rep.PromptTokens - int(a.PromptCached)})
	if err != nil {
		t.Fatal(err)
	}
	if b := a.Bound; b == nil || !near(b.EstimateTokensPerS, est.AR.TokensPerS) {
		t.Errorf("AR bound %+v, want the estimate of the uncached rest (%g tokens/s)", a.Bound, est.AR.TokensPerS)
	}
	code, out, errOut := runCLI("bench", "--model", dir, "--mode", "ar", "--runs", "1", "--max-new-tokens", "2", "--prompt", prompt)
	if want := fmt.Sprintf("ar: %d of the prompt's %d tokens a run came from the prompt cache", int(a.PromptCached), rep.PromptTokens); code != 0 || !strings.Contains(out, want) {
		t.Errorf("text report (exit %d), want %q:\n%s\n%s", code, want, out, errOut)
	}
	// Without it every run reads the whole prompt, and the same tokens come of it.
	_, off := benchJSON(t, "--model", dir, "--mode", "ar", "--runs", "2", "--max-new-tokens", "2", "--prompt", prompt, "--prompt-cache=false", "--json")
	if off.AR == nil || off.AR.PromptCached != 0 || off.AR.Tokens != a.Tokens || off.PromptTokens != rep.PromptTokens {
		t.Errorf("--prompt-cache=false: %+v, want no prompt cached and %v tokens", off.AR, a.Tokens)
	}
}

func TestBenchModeFlag(t *testing.T) {
	code, _, errOut := runCLI("bench", "--mode", "printer")
	if code != 1 || !strings.Contains(errOut, "--mode must be ar, diffusion or both") {
		t.Errorf("--mode printer: exit %d, %q", code, errOut)
	}
}

// TestMemPeakSample: the peak follows the runtime's heap through runtime/metrics
// (a 64 MiB live slice is counted), and the runtime's total covers the heap.
func TestMemPeakSample(t *testing.T) {
	runtime.GC() // the heap is then what is live, not what earlier tests left
	var m memPeak
	m.sample()
	before := m.heap
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	m.sample()
	if m.heap < before+48<<20 || m.sys < m.heap {
		t.Fatalf("heap %d → %d, sys %d: want the 64 MiB slice counted and sys ≥ heap", before, m.heap, m.sys)
	}
	runtime.KeepAlive(buf)
}

// TestBenchPageFaults: the fields are counted from the command name's last ')'
// (a name may hold spaces and parentheses); a short line is no count.
func TestBenchPageFaults(t *testing.T) {
	stat := "4242 (dr (x) 2) S 1 4242 4242 0 -1 4194560 1234 0 56 0 10 5 0 0 20 0 3 0 100 0 0"
	f, ok := parseStatFaults(stat)
	if !ok || f.minor != 1234 || f.major != 56 {
		t.Errorf("parseStatFaults = %+v, %v; want 1234 minor, 56 major", f, ok)
	}
	if _, ok := parseStatFaults("4242 (dr) S 1 2"); ok {
		t.Error("a short stat line parsed")
	}
}

// TestBenchTrace: --trace writes an execution trace of the timed runs (go tool trace
// reads it: a header, then the runs' events), and a path it cannot create is an error
// before anything runs.
func TestBenchTrace(t *testing.T) {
	dir := tinyModelDir(t)
	benchRates(t)
	path := filepath.Join(t.TempDir(), "runs.trace")
	if code, out, errOut := runCLI("bench", "--model", dir, "--mode", "ar", "--runs", "1", "--max-new-tokens", "4", "--trace", path); code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) || !bytes.Contains(b[:16], []byte(" trace")) || len(b) < 1024 {
		t.Errorf("trace: %d bytes beginning %q, want a Go execution trace", len(b), b[:min(len(b), 16)])
	}
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "runs.trace")
	if code, _, errOut := runCLI("bench", "--model", dir, "--mode", "ar", "--runs", "1", "--max-new-tokens", "2", "--trace", bad); code == 0 || !strings.Contains(errOut, "runs.trace") {
		t.Errorf("unwritable trace: exit %d, %q", code, errOut)
	}
}

// TestBenchSaysTheCalibrationIsSlow: a mode whose fastest unit ran well past its
// estimate (a calibration measured while the machine was busy, kept since) has the
// report say so and how to measure again; within calibrationSlack it says nothing.
func TestBenchSaysTheCalibrationIsSlow(t *testing.T) {
	for _, c := range []struct {
		ar, diffusion float64 // FastestVsEstimate
		want          float64
	}{{0.9, 1.1, 0}, {1.4, 0, 0}, {2.4, 1.1, 2.4}, {0, 3, 3}} {
		r := &benchReport{AR: &benchMode{Mode: engine.AR, Bound: &modeBound{FastestVsEstimate: c.ar}},
			Diffusion: &benchMode{Mode: engine.Diffusion, Bound: &modeBound{FastestVsEstimate: c.diffusion}}}
		var b strings.Builder
		printBench(&b, r)
		said := strings.Contains(b.String(), "darkroom hw --recalibrate")
		if got := r.outranCalibration(); got != c.want || said != (c.want > 0) {
			t.Errorf("fastest ÷ estimate AR %v, diffusion %v: outran %v (want %v), said so %v", c.ar, c.diffusion, got, c.want, said)
		}
	}
}

// TestBenchGGUFWeights: a GGUF model's report names its mix and counts its weights as
// the CPU holds the file's blocks (fit.GGUFWeightBytes), not as the bf16 checkpoint
// its config would describe (a Q6_K file of 5 GB was reported as 10.8 GB of weights).
func TestBenchGGUFWeights(t *testing.T) {
	benchRates(t)
	cfg := config.Tiny()
	cfg.Text.HiddenSize = 256 // whole 256-blocks: the K types, not only their fallbacks
	cfg.Text.VocabSize = 4096 // the built-in tokenizer's
	cfg.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	cfg.Generation.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	dir := filepath.Join(t.TempDir(), "q6k")
	if _, err := train.InitCheckpoint(context.Background(), cfg, dir, train.InitOptions{GGUF: gguf.Q6KM, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	_, rep := benchJSON(t, "--model", dir, "--mode", "ar", "--runs", "1", "--max-new-tokens", "4", "--json")
	got, err := engine.Load(context.Background(), engine.Dir(dir), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	loaded := got.Config()
	got.Close()
	if want := fit.GGUFWeightBytes(loaded, catalog.GGUFProfile(gguf.Q6KM), weights.MixLayout(gguf.Q6KM)); rep.GGUF != string(gguf.Q6KM) || rep.WeightBytes != want ||
		want == fit.WeightBytes(loaded, speed.ProfileOf(loaded)) {
		t.Errorf("GGUF %q, weights %d bytes; want Q6_K and %d (the bf16 checkpoint's %d)", rep.GGUF, rep.WeightBytes, want, fit.WeightBytes(loaded, speed.ProfileOf(loaded)))
	}
}

// TestBenchGPULayers: --gpu-layers splits the model after its first N layers
// (graphs on the pure-Go backend stand in for the GPU's here): the report says the
// path is "split" and how many layers ran in graphs; a negative count is refused.
func TestBenchGPULayers(t *testing.T) {
	dir := tinyModelDir(t)
	benchRates(t)
	raw, rep := benchJSON(t, "--model", dir, "--backend", "go", "--graph", "--gpu-layers", "1", "--mode", "diffusion",
		"--runs", "1", "--max-new-tokens", "16", "--max-steps", "2", "--json")
	if rep.Path != engine.PathSplit || rep.DeviceLayers != 1 || string(raw["device_layers"]) != "1" || rep.Diffusion == nil || !(rep.Diffusion.StepMS > 0) {
		t.Errorf("--gpu-layers 1: path %q, device layers %d (%v), diffusion %+v", rep.Path, rep.DeviceLayers, string(raw["device_layers"]), rep.Diffusion)
	}
	if code, _, errOut := runCLI("bench", "--model", dir, "--gpu-layers", "-2"); code == 0 || !strings.Contains(errOut, "--gpu-layers must be ≥ 0") {
		t.Errorf("--gpu-layers -2: exit %d, %s", code, errOut)
	}
}
