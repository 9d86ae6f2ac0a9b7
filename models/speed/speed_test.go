package speed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// flat is a machine whose GEMM runs at gemm FLOP/s at every shape.
func flat(gemm, gemv, mem, samp float64) *Rates {
	r := &Rates{Key: "test", GEMV: map[string]float64{}, GEMVStream: map[string]float64{}, MemRead: mem, Sampler: samp}
	for _, m := range GridM {
		for _, k := range GridK {
			for _, n := range GridN {
				r.GEMM = append(r.GEMM, ShapeRate{M: m, K: k, N: n, FLOPS: gemm})
			}
		}
	}
	for _, f := range formats {
		r.GEMV[f] = gemv
		r.GEMVStream[f] = min(gemv, mem) // a weight a byte or more: no faster than memory
	}
	return r
}

// small is a one-layer float32 model whose weights are counted by hand below.
func small() *config.Model {
	m := &config.Model{ModelType: "diffusion_gemma", CanvasLength: 8, DType: "float32", Generation: config.DefaultGeneration()}
	t := &m.Text
	t.VocabSize, t.HiddenSize, t.IntermediateSize, t.MoEIntermediateSize = 1000, 64, 128, 32
	t.NumExperts, t.TopKExperts, t.NumHiddenLayers = 4, 1, 1
	t.NumAttentionHeads, t.NumKeyValueHeads, t.NumGlobalKVHeads = 2, 1, 1
	t.HeadDim, t.GlobalHeadDim, t.SlidingWindow = 32, 32, 16
	t.LayerTypes = []config.LayerType{config.SlidingAttention}
	t.DType = "float32"
	return m
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

// TestComputeByHand holds the estimate to numbers worked out by hand for a model
// whose every weight is listed, on a machine with given rates (no vector passes,
// decoding or overheads measured: only the products, the weights' reads and the
// sampler count).
func TestComputeByHand(t *testing.T) {
	cfg := small()
	const gemm, gemv, mem, samp = 1e10, 1e15, 1e9, 1e9
	r := flat(gemm, gemv, mem, samp) // a GEMV kernel so fast that AR is memory-bound
	for f := range r.GEMVStream {
		r.GEMVStream[f] = mem / 4 // float32 weights stream at the memory's rate
	}
	w := Workload{Tokens: 8, Prompt: 4, Steps: 10}
	est, err := Compute(cfg, quant.BF16Profile, r, w)
	if err != nil {
		t.Fatal(err)
	}
	// One AR token reads, in float32 weights: the tied embedding whole for the head
	// (1000·64), the final norm (64), the layer's 7 norms (7·64) and 2 scalars, q and o
	// (2·64·64), k and v (2·32·64), q/k norms (2·32), the dense MLP (3·128·64), the
	// router (4·64 + 64 + 4) and one expert of four: gate_up 64·64 and down 64·32.
	// The self-conditioning MLP is the decoder's: not read.
	weights := 1000*64 + 64 + 7*64 + 2 + 2*64*64 + 2*32*64 + 2*32 + 3*128*64 + (4*64 + 64 + 4) + 64*64 + 64*32
	near(t, "AR bytes per token", est.AR.UnitBytes, 4*float64(weights))
	// Its products stream the matrices among them from memory; at prefix 4 + 8/2 = 8
	// the sliding layer's two query heads (one K/V head) score and weigh 8 + 1 keys
	// of 32 in cache; the sampler draws from one row of 1000 logits.
	products := 1000*64 + 2*64*64 + 2*32*64 + 3*128*64 + 4*64 + 64*64 + 64*32
	token := 4*float64(products)/mem + 2*(2*9*32)/gemv + 1000/samp
	near(t, "AR seconds per token", est.AR.UnitSeconds, token)
	// The prompt's pass gives the first token; seven passes more.
	if !(est.PromptSeconds > 0) {
		t.Fatalf("prompt %g s", est.PromptSeconds)
	}
	near(t, "AR seconds", est.AR.Seconds-est.PromptSeconds, 1000/samp+7*token)
	near(t, "AR tokens/s", est.AR.TokensPerS, 8/est.AR.Seconds)
	// Rates without streaming GEMV rates (a calibration's caller may give only the
	// in-cache ones): each format takes the longer of its memory and kernel times.
	noStream := *r
	noStream.GEMVStream = nil
	if e, err := Compute(cfg, quant.BF16Profile, &noStream, w); err != nil {
		t.Fatal(err)
	} else {
		near(t, "AR seconds per token without streaming rates", e.AR.UnitSeconds, token)
	}
	// In a last-level cache twice its size, the weights run at the in-cache rate.
	cached := *r
	cached.Cache = 1 << 20
	inCache, err := Compute(cfg, quant.BF16Profile, &cached, w)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "AR seconds per token in cache", inCache.AR.UnitSeconds, float64(products)/gemv+2*(2*9*32)/gemv+1000/samp)
	if est.AR.Bound != "memory" || inCache.AR.Bound != "compute" {
		t.Errorf("AR bound %q, in cache %q", est.AR.Bound, inCache.AR.Bound)
	}

	// A canvas of 8 after the 4 prompt tokens: 10 steps, each its weights at the
	// memory rate (longer than its products here). Each expert is touched by one of
	// the 8 positions with probability 1 − (3/4)^8.
	touched := 1 - math.Pow(0.75, 8)
	stepWeights := float64(weights-(64*64+64*32)) + touched*4*(64*64+64*32) + 64 + 3*128*64
	near(t, "diffusion bytes per step", est.Diffusion.UnitBytes, 4*stepWeights)
	near(t, "diffusion step", est.Diffusion.StepSeconds, 4*stepWeights/mem)
	near(t, "diffusion seconds per canvas", est.Diffusion.UnitSeconds, 10*4*stepWeights/mem)
	near(t, "diffusion seconds", est.Diffusion.Seconds, est.PromptSeconds+est.Diffusion.UnitSeconds)
	// With fast memory the step is its products: FLOPs(8, 4) at the GEMM rate but
	// the experts', whose 8 routed rows (about 2.2 per touched expert, fewer than
	// MulNT packs) are dot products at the GEMV rate; plus the sampler over 8·1000
	// logits. The first step has no self-conditioning MLP (3 products of 128·64).
	fast := *r
	fast.MemRead = 1e15
	e, err := Compute(cfg, quant.BF16Profile, &fast, w)
	if err != nil {
		t.Fatal(err)
	}
	experts := float64(8 * 2 * (64*64 + 64*32))
	later := (model.FLOPs(&cfg.Text, 8, 4)-experts)/gemm + experts/2/gemv + 8*1000/samp
	first := later - 8*3*2*64*128/gemm
	near(t, "diffusion step, compute-bound", e.Diffusion.StepSeconds, later)
	near(t, "diffusion canvas, compute-bound", e.Diffusion.UnitSeconds, first+9*later)
	if e.Diffusion.Bound != "compute" || est.Diffusion.Bound != "memory" {
		t.Errorf("diffusion bounds %q, %q", e.Diffusion.Bound, est.Diffusion.Bound)
	}

	// Nine tokens need two canvases, the first committed by an encoder pass
	// before the second.
	est2, err := Compute(cfg, quant.BF16Profile, r, Workload{Tokens: 9, Prompt: 4, Steps: 10})
	if err != nil {
		t.Fatal(err)
	}
	if commit := est2.Diffusion.Seconds - est2.PromptSeconds - 2*est2.Diffusion.UnitSeconds; !(commit > 0) {
		t.Errorf("9 tokens: %g s of canvases, want 2 × %g and a commit", est2.Diffusion.Seconds-est2.PromptSeconds, est2.Diffusion.UnitSeconds)
	}
}

// TestEncoderPassFLOPs: an encoder pass's products are the engine's EncodeFLOPs
// count (logits for its last token) plus the keys its causal mask hides, which
// the host model multiplies all the same: query j of t sees prefix+j+1 of the
// prefix+t keys, so t(t−1)/2 key rows per head are masked, each 4·head_dim FLOPs.
func TestEncoderPassFLOPs(t *testing.T) {
	cfg := small() // one sliding layer of window 16, 2 heads of 32
	ps := newPasses(cfg, quant.BF16Profile)
	for _, c := range []struct{ tokens, prefix int }{{1, 0}, {1, 40}, {5, 3}, {8, 0}} {
		var sum float64
		for _, w := range ps.encoderPass(c.tokens, c.prefix, 1) {
			sum += w.flops()
		}
		// Within the window here: every cached row the layer keeps (at most 15) is a key.
		masked := float64(c.tokens*(c.tokens-1)/2) * 4 * 32 * 2
		near(t, fmt.Sprintf("encoder FLOPs of %d after %d", c.tokens, c.prefix), sum,
			model.EncodeFLOPs(&cfg.Text, c.tokens, min(c.prefix, 15))+masked)
	}
}

// TestOverheadPerOperation: the engine's overhead is charged once per operation of
// each pass: an AR token's encoder pass and a denoising step.
func TestOverheadPerOperation(t *testing.T) {
	cfg := small()
	w := Workload{Tokens: 8, Prompt: 4, Steps: 10}
	r := flat(1e10, 1e12, 1e12, 1e9)
	base, err := Compute(cfg, quant.BF16Profile, r, w)
	if err != nil {
		t.Fatal(err)
	}
	with := *r
	with.OpOverhead, with.StepOpOverhead = 1e-6, 3e-6
	e, err := Compute(cfg, quant.BF16Profile, &with, w)
	if err != nil {
		t.Fatal(err)
	}
	ps := newPasses(cfg, quant.BF16Profile)
	// An AR token at prefix 4 + 8/2: one sliding layer of 40 operations — the input
	// norm, q, k, v, the q norm and the K and V norms (2), RoPE, the cached rows' 2
	// passes, the attention's gather, scores, softmax and values, o, 7 sandwich
	// norms, 5 residual passes, the dense gate and up (2), GeGLU and down, the
	// router's product, softmax and top-k, the cache write, the experts' gather
	// and combine (2), the one routed expert's gate_up, GeGLU and down — plus the
	// embedding, the final norm, the head and its soft-cap.
	if n := calls(ps.encoderPass(1, 8, 1)); n != 44 {
		t.Errorf("%g operations in an AR token's pass, want 44", n)
	}
	near(t, "AR overhead", e.AR.UnitSeconds-base.AR.UnitSeconds, 44e-6)
	near(t, "step overhead", e.Diffusion.StepSeconds-base.Diffusion.StepSeconds, 3e-6*calls(ps.decoderStep(8, 4, true)))
}

// TestCurve: between the sizes timed a curve is linear, below them the smallest
// time (a call's fixed cost), above them the largest's rate.
func TestCurve(t *testing.T) {
	c := Curve{{N: 100, Seconds: 1}, {N: 200, Seconds: 1.5}, {N: 1000, Seconds: 5}}
	for _, x := range []struct{ n, want float64 }{{0, 0}, {10, 1}, {100, 1}, {150, 1.25}, {600, 3.25}, {1000, 5}, {4000, 20}} {
		near(t, fmt.Sprintf("At(%g)", x.n), c.At(x.n), x.want)
	}
	if (Curve{{N: 2, Seconds: 1}, {N: 1, Seconds: 1}}).valid() == nil || c.valid() != nil {
		t.Error("valid")
	}
}

// TestGEMVRows: a tall product pays each row beyond a square matrix's of as many
// weights; a wide one saves at most half its time.
func TestGEMVRows(t *testing.T) {
	r := flat(1, 1, 1, 1)
	r.GEMVTimes = map[string]Curve{"int4": {{N: 1 << 10, Seconds: 1e-6}, {N: 1 << 20, Seconds: 1e-3}}}
	r.GEMVRow = map[string]float64{"int4": 1e-9}
	sq, _ := r.gemv("int4", 256, 256, 0, true, false)
	tall, _ := r.gemv("int4", 4096, 16, 0, true, false)
	wide, _ := r.gemv("int4", 1, 65536, 0, true, false)
	at := r.GEMVTimes["int4"].At(65536)
	near(t, "square", sq, at)
	near(t, "tall", tall, at+(4096-256)*1e-9)
	near(t, "wide", wide, at-255*1e-9)
	r.GEMVRow["int4"] = 1e-6
	wide, _ = r.gemv("int4", 1, 65536, 0, true, false)
	near(t, "wide at most halved", wide, at/2)
}

// TestStepProductsAreFLOPs: the decoder step's products, timed one by one, are
// exactly the engine's FLOPs count, for the Mini's shape of model and the 26B's.
func TestStepProductsAreFLOPs(t *testing.T) {
	for _, cfg := range []*config.Model{small(), catalog.DiffusionGemma26B()} {
		ps := newPasses(cfg, quant.Int4Profile)
		for _, prefix := range []int{0, 100, 5000} {
			var sum float64
			for _, w := range ps.decoderStep(256, prefix, true) {
				sum += w.flops()
			}
			near(t, "products' FLOPs", sum, model.FLOPs(&cfg.Text, 256, prefix))
		}
	}
}

// TestGEMMAt interpolates between grid points on a log scale and holds the edges.
func TestGEMMAt(t *testing.T) {
	r := flat(1, 1, 1, 1)
	for i := range r.GEMM {
		r.GEMM[i].FLOPS = float64(r.GEMM[i].K) // rate = depth
	}
	near(t, "on the grid", r.GEMMAt(256, 256, 64), 256)
	near(t, "between", r.GEMMAt(100, 128, 100), 64+0.5*(256-64)) // 128 is halfway from 64 to 256 on a log scale
	near(t, "below", r.GEMMAt(1, 1, 1), 64)
	near(t, "above", r.GEMMAt(9999, 9999, 9999), 2048)
}

// TestChoose: the Mini runs in the mode its card names; a model flagged as writing equally well
// both ways gets the printer on a slow CPU and the polaroid on GPU-like rates; with
// no estimate it keeps diffusion and says why.
func TestChoose(t *testing.T) {
	dg, _ := catalog.Find(catalog.DiffusionGemmaID)
	mini, _ := catalog.Find(catalog.MiniID)
	if !dg.ModesEqual || mini.ModesEqual {
		t.Fatalf("catalog flags: 26B %v, Mini %v", dg.ModesEqual, mini.ModesEqual)
	}
	cfg := catalog.DiffusionGemma26B()
	cpu := flat(150e9, 10e9, 20e9, 300e6)  // this PC: 150 GFLOP/s, 20 GB/s
	gpu := flat(400e12, 5e12, 3e12, 100e9) // an H100-class device
	slow, err := ForEntry(dg, cfg, quant.Int4Profile, "cpu", cpu, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := Choose(dg, slow); c.Mode != engine.AR || !strings.Contains(c.Reason, "printer") {
		t.Errorf("26B on a slow CPU: %+v (AR %.2f, diffusion %.2f tokens/s)", c, slow.AR.TokensPerS, slow.Diffusion.TokensPerS)
	}
	fast, err := ForEntry(dg, cfg, quant.Int4Profile, "cpu", gpu, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := Choose(dg, fast); c.Mode != engine.Diffusion {
		t.Errorf("26B on GPU-like rates: %+v (AR %.0f, diffusion %.0f tokens/s)", c, fast.AR.TokensPerS, fast.Diffusion.TokensPerS)
	}
	// The built-in Mini: the mode its card says its answers read better in, for
	// its reason; a model that says nothing keeps diffusion.
	want := engine.Mode(mini.ChatMode)
	if want == "" {
		want = engine.Diffusion
	}
	if c := Choose(mini, slow); c.Mode != want || (mini.ChatModeWhy != "" && !strings.HasSuffix(c.Reason, mini.ChatModeWhy)) {
		t.Errorf("Mini (card: %q, %q): %+v", mini.ChatMode, mini.ChatModeWhy, c)
	}
	printer := catalog.Entry{ChatMode: "ar", ChatModeWhy: "its answers read better that way"}
	if c := Choose(printer, slow); c.Mode != engine.AR || c.Reason != "the printer (AR): its answers read better that way" {
		t.Errorf("an entry whose answers read better in AR: %+v", c)
	}
	if c := Choose(catalog.Entry{}, slow); c.Mode != engine.Diffusion || !strings.Contains(c.Reason, "polaroid") {
		t.Errorf("an entry that says nothing: %+v", c)
	}
	onGPU, _ := ForEntry(dg, cfg, quant.Int4Profile, Device("xla:cuda"), cpu, 0)
	if c := Choose(dg, onGPU); onGPU.Known() || c.Mode != engine.Diffusion || !strings.Contains(c.Reason, "unknown") {
		t.Errorf("on a GPU backend: %+v, %+v", onGPU, c)
	}
	// A folder holding the 26B's architecture under a name the catalog does not know.
	if c, _ := ForLoaded("/work/dg26b-int4", cfg, weights.GGUFLayout{}, "cpu", cpu, nil); c.Mode != engine.AR {
		t.Errorf("26B folder: %+v", c)
	}
}

// TestWhy says the winner's reason with this machine's numbers.
func TestWhy(t *testing.T) {
	dg, _ := catalog.Find(catalog.DiffusionGemmaID)
	est, err := ForEntry(dg, catalog.DiffusionGemma26B(), quant.Int4Profile, "cpu", flat(150e9, 50e9, 20e9, 300e6), 0)
	if err != nil {
		t.Fatal(err)
	}
	why := Why(est, engine.AR)
	for _, want := range []string{"The printer wins here", "GFLOP/s", "256-token canvas", "16 steps", "GB of weights in", "memory reads 20.0 GB/s here"} {
		if !strings.Contains(why, want) {
			t.Errorf("missing %q in %q", want, why)
		}
	}
	if Why(Unknown("no"), engine.AR) != "" {
		t.Error("an unknown estimate explains nothing")
	}
}

// TestCacheRemeasure: Remeasure measures again in place of the rates the file holds
// for this machine (a calibration taken while it was busy), in this process and in
// the next, and leaves the other machines' entries alone.
func TestCacheRemeasure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "darkroom", "calibration.json")
	gemm := 1e9 // the GEMM rate the next measurement reads: low, as on a busy machine
	measured := 0
	measure := func(context.Context) (*Rates, error) {
		measured++
		return flat(gemm, 1e10, 2e10, 3e8), nil
	}
	ctx := context.Background()
	if _, err := (&Cache{Path: path, Measure: measure, Key: "cpu B"}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	c := &Cache{Path: path, Measure: measure, Key: "cpu A"}
	if r, err := c.Get(ctx); err != nil || r.GEMM[0].FLOPS != 1e9 {
		t.Fatal(r, err)
	}
	gemm = 1e11
	if r, err := c.Get(ctx); err != nil || r.GEMM[0].FLOPS != 1e9 || measured != 2 {
		t.Fatalf("Get measured again (%d times): %v, %v", measured, r, err)
	}
	if r, err := c.Remeasure(ctx); err != nil || r.GEMM[0].FLOPS != 1e11 || measured != 3 || r.Key != "cpu A" {
		t.Fatalf("Remeasure: %v, %v (measured %d times)", r, err, measured)
	}
	if r, err := c.Get(ctx); err != nil || r.GEMM[0].FLOPS != 1e11 {
		t.Fatalf("this process after Remeasure: %v, %v", r, err)
	}
	for key, want := range map[string]float64{"cpu A": 1e11, "cpu B": 1e9} {
		if r, err := (&Cache{Path: path, Measure: measure, Key: key}).Get(ctx); err != nil || r.GEMM[0].FLOPS != want || measured != 3 {
			t.Errorf("the next process, %s: %v, %v (measured %d times); want GEMM %g from the file", key, r, err, measured, want)
		}
	}
}

// TestCache: rates are measured once and read back after; a corrupt file or
// another machine's entry is measured again, not an error.
func TestCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "darkroom", "calibration.json")
	measured := 0
	measure := func(context.Context) (*Rates, error) {
		measured++
		return flat(1e11, 1e10, 2e10, 3e8), nil
	}
	c := &Cache{Path: path, Measure: measure, Key: "cpu A"}
	for range 2 {
		if r, err := c.Get(context.Background()); err != nil || r.Key != "cpu A" {
			t.Fatal(r, err)
		}
	}
	if measured != 1 {
		t.Fatalf("measured %d times in one process", measured)
	}
	// A new process reads the file.
	if _, err := (&Cache{Path: path, Measure: measure, Key: "cpu A"}).Get(context.Background()); err != nil || measured != 1 {
		t.Fatalf("second process: measured %d times, %v", measured, err)
	}
	// Another machine (or build) is measured and kept beside the first.
	if _, err := (&Cache{Path: path, Measure: measure, Key: "cpu B"}).Get(context.Background()); err != nil || measured != 2 {
		t.Fatalf("other key: measured %d times, %v", measured, err)
	}
	if _, err := (&Cache{Path: path, Measure: measure, Key: "cpu A"}).Get(context.Background()); err != nil || measured != 2 {
		t.Fatalf("first key after the second: measured %d times, %v", measured, err)
	}
	for _, bad := range []string{"{not json", `{"rates": {"cpu A": {"gemm": [], "mem_read": 1}}}`} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		before := measured
		r, err := (&Cache{Path: path, Measure: measure, Key: "cpu A"}).Get(context.Background())
		if err != nil || r == nil || measured != before+1 {
			t.Fatalf("corrupt file %q: measured %d → %d, %v", bad, before, measured, err)
		}
	}
	// Rates an older calibration measured on this machine and build are measured
	// again, and the entries the file held (other machines', newer fields and all)
	// are written back as they were.
	old := flat(1e11, 1e10, 2e10, 3e8)
	old.Key = keyAt(calibrationVersion - 1)
	oldRaw, _ := json.Marshal(old)
	alien := json.RawMessage(`{"key":"cpu C","future_field":[1,2]}`)
	b, _ := json.Marshal(map[string]any{"rates": map[string]json.RawMessage{old.Key: oldRaw, "cpu C": alien}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := measured
	if r, err := (&Cache{Path: path, Measure: measure}).Get(context.Background()); err != nil || measured != before+1 || r.Key != Key() {
		t.Fatalf("an older calibration's entry: measured %d → %d, key %q, %v", before, measured, r.Key, err)
	}
	var back struct{ Rates map[string]json.RawMessage }
	if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &back) != nil {
		t.Fatal(err)
	}
	var kept map[string]any
	if json.Unmarshal(back.Rates["cpu C"], &kept) != nil || kept["future_field"] == nil || back.Rates[old.Key] == nil || back.Rates[Key()] == nil {
		t.Errorf("file after measuring: %v", back.Rates)
	}

	// An unwritable place still gives rates.
	ro := &Cache{Path: filepath.Join(t.TempDir(), "file", "x.json"), Measure: measure, Key: "k"}
	os.WriteFile(filepath.Dir(ro.Path), nil, 0o644)
	if _, err := ro.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMeasure runs the real calibration: every rate is measured and positive.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the CPU for a few seconds")
	}
	r, err := Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.valid(); err != nil {
		t.Fatal(err)
	}
	for _, f := range formats {
		if r.GEMV[f] <= 0 || r.GEMVStream[f] <= 0 || r.GEMVJob[f] <= 0 {
			t.Errorf("%s GEMV %g, streaming %g, in a job %g", f, r.GEMV[f], r.GEMVStream[f], r.GEMVJob[f])
		}
	}
	// Every integer format but int4 has its rate relative to int4's (valid: positive).
	for _, f := range slices.Concat(r.IntFormats, r.IntGGUF) {
		if _, ok := r.IntRelative[f]; ok == (f == "int4") {
			t.Errorf("%s: relative integer rate %v (%v)", f, r.IntRelative[f], ok)
		}
	}
	// Each rate lies within its probes' spread, the memory's over every probe.
	if s := r.Spread["mem_read"]; s.N != calibrationPasses*streamProbesPerPass || r.MemRead < s.Lo || r.MemRead > s.Hi {
		t.Errorf("memory read %g, spread %+v", r.MemRead, s)
	}
	if s := r.Spread["gemv/int4"]; s.N != calibrationPasses || r.GEMV["int4"] < s.Lo || r.GEMV["int4"] > s.Hi {
		t.Errorf("int4 GEMV %g, spread %+v", r.GEMV["int4"], s)
	}
	// A wake-up is timed (never 0: the second part starts after the call does), and
	// never waited for past a millisecond; with one worker nothing is handed off.
	if kernels.Workers() < 2 && r.Wake != 0 || kernels.Workers() >= 2 && !(r.Wake > 0 && r.Wake <= 1.1e-3) {
		t.Errorf("wake-up %g s with %d workers", r.Wake, kernels.Workers())
	}
	if !strings.Contains(Key(), "calibration") {
		t.Error(Key())
	}
}

// TestSteady: calibration passes merge into each rate's median pass, so one pass
// far off either way moves no rate (the fastest of them did: the old merge).
func TestSteady(t *testing.T) {
	a, b, c := flat(1e10, 1e9, 2e9, 1e8), flat(2e10, 5e8, 3e9, 2e8), flat(1.5e10, 9e10, 4e9, 3e8)
	a.GEMM[3].FLOPS, c.GEMM[3].FLOPS = 5e10, 7e10 // b's 2e10 is the slow outlier
	a.Decode, b.Decode, c.Decode = map[string]float64{"int4": 1e-9}, map[string]float64{"int4": 2e-9}, map[string]float64{"int4": 9e-9}
	a.Vec = map[string]Curve{VecLoop: {{N: 1, Seconds: 3}, {N: 2, Seconds: 4}}}
	b.Vec = map[string]Curve{VecLoop: {{N: 1, Seconds: 2}, {N: 2, Seconds: 5}}}
	c.Vec = map[string]Curve{VecLoop: {{N: 1, Seconds: 1}, {N: 2, Seconds: 6}}}
	a.OpOverhead, b.OpOverhead, c.OpOverhead = 1e-6, 2e-6, 9e-6
	m := steady([]*Rates{a, b, c})
	if m.GEMM[0].FLOPS != 1.5e10 || m.GEMM[3].FLOPS != 5e10 || m.GEMV["f32"] != 1e9 || m.Sampler != 2e8 ||
		m.Decode["int4"] != 2e-9 || m.Vec[VecLoop][0].Seconds != 2 || m.Vec[VecLoop][1].Seconds != 5 || m.OpOverhead != 2e-6 {
		t.Errorf("merged %+v", m)
	}
	// c's 90 G weights/s is one pass's burst: kept in the spread, not the rate.
	if s := m.Spread["gemv/int4"]; s != (Spread{Lo: 5e8, Hi: 9e10, N: 3}) {
		t.Errorf("int4 GEMV spread %+v", s)
	}
	if s := m.Spread["gemm_peak"]; s != (Spread{Lo: 2e10, Hi: 7e10, N: 3}) {
		t.Errorf("GEMM peak spread %+v", s)
	}
}

// TestNoisyProbe: Measure's streaming probes run on a clock that reads every sweep
// at 1 ms but one at 0.1 ms (a moment of memory ten times faster), and its passes
// return rates of which one is far off; the cached rates are the typical ones, and
// the spreads show the outliers.
func TestNoisyProbe(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	saved := probes
	defer func() { probes = saved }()
	var sweeps int
	var layerW float64
	probes.span = func() int64 { return 1 << 20 }
	probes.sweep = func(ws []*kernels.Matrix, job bool, x, out []float32) float64 {
		sweeps++
		// A probe sweeps each format's set twice (layer, job), f32's first: the fifth
		// probe's f32 layer sweep is the outlier.
		if sweeps == 4*2*len(streamFormats)+1 {
			return 1e-4
		}
		return 1e-3
	}
	pass := 0
	probes.pass = func(ctx context.Context, st *streams) (*Rates, error) {
		pass++
		for range streamProbesPerPass {
			st.probe()
		}
		r := flat(1e10, 1e9, 1, 1e8)
		if pass == 2 {
			r.GEMV["int4"] = 1e11 // the outlier pass
		}
		return r, nil
	}
	st, err := newStreams(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	layerW = st.sets[0].layerW
	path, err := DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&Cache{Path: path}).Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if pass != calibrationPasses || sweeps != 2*calibrationPasses*streamProbesPerPass*len(streamFormats) {
		t.Fatalf("%d passes, %d sweeps", pass, sweeps)
	}
	// The f32 set is probed first: its layer rate is its weights a millisecond in
	// every probe but the outlier's.
	for _, f := range streamFormats { // GGUF's types too: their kernels outrun the memory
		if !(r.GEMVStream[f] > 0) || !(r.GEMVJob[f] > 0) {
			t.Errorf("%s streams at %g, in a job at %g", f, r.GEMVStream[f], r.GEMVJob[f])
		}
	}
	near(t, "f32 streaming rate", r.GEMVStream["f32"], layerW/1e-3)
	near(t, "memory read", r.MemRead, st.sets[0].layerB/1e-3)
	if s := r.Spread["gemv_stream/f32"]; s.N != calibrationPasses*streamProbesPerPass || s.Hi != layerW/1e-4 {
		t.Errorf("f32 streaming spread %+v", s)
	}
	if r.GEMV["int4"] != 1e9 || r.Spread["gemv/int4"].Hi != 1e11 {
		t.Errorf("int4 GEMV %g, spread %+v", r.GEMV["int4"], r.Spread["gemv/int4"])
	}
	// What was cached is what Get returned.
	notMeasured := func(context.Context) (*Rates, error) { return nil, fmt.Errorf("measured again") }
	again, err := (&Cache{Path: path, Measure: notMeasured}).Get(context.Background())
	if err != nil || again.MemRead != r.MemRead || again.Spread["mem_read"] != r.Spread["mem_read"] {
		t.Errorf("cached %+v (%v)", again, err)
	}
}

// TestStreamSets: every format's streaming probe holds its span of distinct bytes in
// matrices of a real layer's and an expert's shapes, as the model multiplies them.
func TestStreamSets(t *testing.T) {
	for _, f := range formats {
		s, err := newStreamSet(f, 8<<20, streamData(streamBytes(8<<20)))
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range []struct {
			ws     []*kernels.Matrix
			shapes [][2]int
		}{{s.layer, layerShapes}, {s.experts, expertShapes}} {
			var bytes int
			seen := map[*byte]bool{}
			for i, w := range set.ws {
				if sh := set.shapes[i%len(set.shapes)]; w.Rows != sh[0] || w.Cols != sh[1] {
					t.Errorf("%s matrix %d is [%d, %d], want %v", f, i, w.Rows, w.Cols, sh)
				}
				if seen[&w.Data[0]] {
					t.Errorf("%s matrix %d shares its bytes with another", f, i)
				}
				seen[&w.Data[0]] = true
				bytes += len(w.Data) + len(w.Scales)
			}
			if bytes < 8<<20 {
				t.Errorf("%s: %d bytes, want 8 MiB", f, bytes)
			}
		}
	}
}

// TestStreamData: the shared bytes read as plain float32s and plain bf16s — no
// denormal, infinity or NaN to slow a product — in their period of 13 values.
func TestStreamData(t *testing.T) {
	b := streamData(4*1000 + 2)
	for i := 0; i+4 <= len(b); i += 4 {
		u := binary.LittleEndian.Uint32(b[i:])
		if want := math.Float32bits(float32(i/4%13)/13) &^ 0xffff; u != want {
			t.Fatalf("float %d: %#x, want %#x", i/4, u, want)
		}
		for _, h := range []uint32{u >> 16, u & 0xffff} { // its bf16 halves
			if e := h >> 7 & 0xff; h != 0 && (e == 0 || e == 0xff) {
				t.Fatalf("float %d: half %#x is not a plain bf16", i/4, h)
			}
		}
	}
}

// TestExpertsJobRate: an AR token's routed experts, one parallel job, stream at the
// job's measured rate; the other products, and a calibration without it, at the
// products' streaming rate.
func TestExpertsJobRate(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	r := flat(1e11, 1e12, 20e9, 1e9)
	base, err := Compute(cfg, quant.Int4Profile, r, Workload{Tokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	r.GEMVJob = map[string]float64{"int4": r.GEMVStream["int4"] * 2}
	fast, err := Compute(cfg, quant.Int4Profile, r, Workload{Tokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	// The experts' int4 weights an AR token reads, at either rate.
	t4 := &cfg.Text
	perLayer := float64(t4.TopKExperts) * float64(2*t4.MoEIntermediateSize*t4.HiddenSize+t4.HiddenSize*t4.MoEIntermediateSize)
	want := float64(t4.NumHiddenLayers) * perLayer / r.GEMVStream["int4"] / 2
	near(t, "the experts' time saved", base.AR.Terms.Kernels-fast.AR.Terms.Kernels, want)
}

// TestFusedHead: a denoising step's head reads a small embedding as the float32
// panels kernels.Head packs it into, a large one in its stored format, and costs
// its logits at the calibrated rate of its kind.
func TestFusedHead(t *testing.T) {
	for _, c := range []struct {
		cfg    *config.Model
		format string
		packed bool
	}{{small(), "f32", true}, {catalog.DiffusionGemma26B(), "int8", false}} {
		var head, logits *work
		ws := newPasses(c.cfg, quant.Int4Profile).decoderStep(256, 0, true)
		for i := range ws {
			switch {
			case ws[i].what == "LM head":
				head = &ws[i]
			case ws[i].logits > 0:
				logits = &ws[i]
			}
		}
		if head == nil || logits == nil || head.format != c.format || logits.packed != c.packed ||
			logits.logits != 256*float64(c.cfg.Text.VocabSize) {
			t.Fatalf("vocabulary %d: head %+v, logits %+v", c.cfg.Text.VocabSize, head, logits)
		}
	}
	r := flat(1, 1, 1, 1)
	r.HeadLogit = map[string]float64{"packed": 1e-10, "unpacked": 2e-9}
	near(t, "packed", r.headAt(1e6, true), 1e-4)
	near(t, "unpacked", r.headAt(1e6, false), 2e-3)
}

// TestIntGEMMPricing: where the integer products were calibrated (Rates.IntGEMM), an
// int4 or int8 canvas product, and the soft embedding of an int8 embedding, cost their
// FLOPs at IntGEMM's rate and nothing for decoding; an int4 soft embedding (MulNN
// decodes it), a bf16 product and an AR row keep their float prices; without IntGEMM
// int4 is GEMM's rate plus its decoding.
func TestIntGEMMPricing(t *testing.T) {
	const gemm, intGEMM = 1e10, 3e10
	r := flat(gemm, 1e12, 1e12, 1e9)
	r.Decode = map[string]float64{"int4": 1e-9, "int8": 2e-9, "bf16": 3e-9}
	for _, g := range r.GEMM {
		r.IntGEMM = append(r.IntGEMM, ShapeRate{M: g.M, K: g.K, N: g.N, FLOPS: intGEMM})
	}
	r.IntFormats, r.IntKernel = []string{"int4", "int8"}, "avx512-vnni"
	if err := r.valid(); err != nil {
		t.Fatal(err)
	}
	product := func(format string, m float64, soft bool) work {
		return work{what: "p", m: m, k: 2816, n: 704, count: 1, format: format, soft: soft}
	}
	flops := 2 * 256 * 2816 * 704.0
	for _, c := range []struct {
		w    work
		want float64
	}{
		{product("int4", 256, false), flops / intGEMM},
		{product("int8", 256, false), flops / intGEMM},
		{product("int8", 256, true), flops / intGEMM},
		{product("int4", 256, true), flops/r.softEmbedAt(704, gemm) + 2816*704*1e-9},
		{product("bf16", 256, false), flops/gemm + 2816*704*3e-9},
	} {
		if got, _ := r.kernelSeconds(c.w, false); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("%s soft=%v: %g s, want %g", c.w.format, c.w.soft, got, c.want)
		}
	}
	// A format's rate relative to int4's scales its products' (MulNT), not the soft
	// embedding's MulNN; a relative rate of a format the integer path did not take, or
	// not positive, fails valid.
	rel := *r
	rel.IntRelative = map[string]float64{"int8": 0.5}
	if err := rel.valid(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w    work
		want float64
	}{
		{product("int8", 256, false), flops / (intGEMM * 0.5)},
		{product("int8", 256, true), flops / intGEMM},
		{product("int4", 256, false), flops / intGEMM},
	} {
		if got, _ := rel.kernelSeconds(c.w, false); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("int8 at half int4's rate: %s soft=%v: %g s, want %g", c.w.format, c.w.soft, got, c.want)
		}
	}
	for _, bad := range []map[string]float64{{"nvfp4": 0.7}, {"int8": 0}} {
		rel.IntRelative = bad
		if rel.valid() == nil {
			t.Errorf("relative rates %v pass valid", bad)
		}
	}
	floatOnly := *r
	floatOnly.IntGEMM = nil
	if got, _ := floatOnly.kernelSeconds(product("int4", 256, false), false); math.Abs(got-(flops/gemm+2816*704*1e-9)) > 1e-18 {
		t.Errorf("int4 without IntGEMM: %g s", got)
	}
	ar, _ := r.kernelSeconds(product("int4", 1, false), false)
	arFloat, _ := floatOnly.kernelSeconds(product("int4", 1, false), false)
	if ar != arFloat {
		t.Errorf("an AR row priced %g with IntGEMM, %g without", ar, arFloat)
	}
	bad := *r
	bad.IntGEMM = bad.IntGEMM[:3]
	if bad.valid() == nil {
		t.Error("rates with a partial IntGEMM grid pass valid")
	}
	bad = *r
	bad.IntFormats = nil
	if bad.valid() == nil {
		t.Error("rates with IntGEMM and no formats pass valid")
	}
	// AVX2's integer path takes int4 alone: int8 keeps the float price, and the int8
	// profile's compute bound is GEMM's.
	avx2 := *r
	avx2.IntFormats, avx2.IntKernel = []string{"int4"}, "avx2"
	for _, c := range []struct {
		w    work
		want float64
	}{
		{product("int4", 256, false), flops / intGEMM},
		{product("int8", 256, false), flops/gemm + 2816*704*2e-9},
		{product("int8", 256, true), flops/r.softEmbedAt(704, gemm) + 2816*704*2e-9},
	} {
		if got, _ := avx2.kernelSeconds(c.w, false); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("avx2: %s soft=%v: %g s, want %g", c.w.format, c.w.soft, got, c.want)
		}
	}
	if avx2.PeakFor(quant.Int8Profile) != avx2.Peak() || avx2.PeakFor(quant.Int4Profile) != avx2.IntPeak() || r.PeakFor(quant.Int8Profile) != r.IntPeak() {
		t.Error("PeakFor does not follow IntFormats")
	}
}

// TestGGUFFormats: a GGUF entry's tensors are priced in the types llama.cpp's Q4_K_M
// gives the 26B (Q6_K embedding; Q5_0, or Q8_0 in the layers given more bits, where a
// down projection's rows are no whole 256-block; Q6_K value projections in those
// layers, Q4_K elsewhere) at their own bytes — the Q6_K ones as Q8_0 at the bytes of
// the int8 the CPU holds them in (weights.HostHeld) — and its printer at their measured
// rates: GGUF blocks' AR products at a quarter of int4's rate make its token about
// that much slower than the int4 profile's on the same rates.
func TestGGUFFormats(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	want := map[string]string{
		"embed_tokens.weight":                         int8G32, // Q6_K, held as int8
		"layers.0.experts.down_proj":                  "q8_0",  // the first eighth
		"layers.4.experts.down_proj":                  "q5_0",  // (4 − 3) mod 3 = 1
		"layers.5.experts.down_proj":                  "q8_0",  // (5 − 3) mod 3 = 2
		"layers.4.experts.gate_up_proj":               "q4_k",
		"layers.4.mlp.down_proj.weight":               "q5_0", // 2,112 inputs
		"layers.0.self_attn.v_proj.weight":            "q6_k", // Q6_K, multiplied as stored
		"layers.4.self_attn.v_proj.weight":            "q4_k",
		"layers.29.self_attn.o_proj.weight":           "q4_k",
		"layers.29.post_feedforward_layernorm.weight": "f32",
	}
	if spec, ok := weights.HostHeld(gguf.Q6_K, weights.EmbeddingName); !ok || spec != (quant.Spec{Bits: 8, GroupSize: 32}) {
		t.Fatalf("Q6_K held as %+v (%v): int8G32 prices int8 in groups of 32", spec, ok)
	}
	held := map[string]bool{"embed_tokens.weight": true}
	seen := 0
	for _, s := range weights.Specs(cfg) {
		w, ok := want[s.Name]
		if !ok {
			continue
		}
		seen++
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		f, b := storedAs(cfg, quant.Int4Profile, weights.MixLayout(gguf.Q4KM), s, n)
		if f != w && !(w == "f32" && f == "bf16") {
			t.Errorf("%s: %s, want %s", s.Name, f, w)
		}
		wantB := int64(-1)
		if tt, ok := ggufTypeOf(f); ok {
			wantB = int64(n / tt.BlockSize() * tt.BlockBytes())
		}
		if held[s.Name] {
			wantB = int64(n * 9 / 8) // int8 and a float32 scale per 32
		}
		if wantB >= 0 && b != wantB {
			t.Errorf("%s: %d bytes as %s, want %d", s.Name, b, f, wantB)
		}
	}
	if seen != len(want) {
		t.Fatalf("%d of the %d names are the 26B's", seen, len(want))
	}

	r := flat(1e10, 1e10, 1e12, 1e9)
	for _, f := range ggufFormats {
		r.GEMV[f] = 2.5e9 // a quarter of int4's
	}
	gguf, _ := catalog.Find(catalog.GGUFID)
	dg, _ := catalog.Find(catalog.DiffusionGemmaID)
	g, err := ForEntry(gguf, cfg, quant.Int4Profile, "cpu", r, 0)
	if err != nil {
		t.Fatal(err)
	}
	i4, err := ForEntry(dg, cfg, quant.Int4Profile, "cpu", r, 0)
	if err != nil {
		t.Fatal(err)
	}
	// (A Q4_K_M file reads fewer bytes a token: the int4 profile keeps the attention,
	// the shared MLP and the embedding int8.)
	if ratio := g.AR.UnitSeconds / i4.AR.UnitSeconds; ratio < 2.5 {
		t.Errorf("GGUF token %.3g s (%.3g GB) against int4's %.3g s (%.3g GB): %.2f×, want most of the 4× its rates give",
			g.AR.UnitSeconds, g.AR.UnitBytes/1e9, i4.AR.UnitSeconds, i4.AR.UnitBytes/1e9, ratio)
	}
}

// TestGGUFIntProducts: a GGUF's canvas products are priced at the integer rate for
// the block types the integer path took when the rates were measured (Rates.IntGGUF)
// and on the float path for the rest — its soft embedding (int8 in groups of 32)
// always so, which keeps its step above the int4 profile's, whose int8 embedding
// takes the integer path both ways.
func TestGGUFIntProducts(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	withInt := func(gguf ...string) *Rates {
		r := flat(1e11, 1e10, 1e12, 1e9)
		for _, d := range r.GEMM {
			r.IntGEMM = append(r.IntGEMM, ShapeRate{M: d.M, K: d.K, N: d.N, FLOPS: 4 * d.FLOPS})
		}
		r.IntFormats, r.IntGGUF = []string{"int4", "int8"}, gguf
		return r
	}
	step := func(r *Rates, g gguf.Mix) float64 {
		e, err := Compute(cfg, quant.Int4Profile, r, Workload{GGUF: weights.MixLayout(g)})
		if err != nil {
			t.Fatal(err)
		}
		return e.Diffusion.StepSeconds
	}
	float := step(withInt(), gguf.Q4KM)
	q4k := step(withInt("q4_k"), gguf.Q4KM)
	all := step(withInt("q4_k", "q5_0", "q8_0"), gguf.Q4KM)
	int4 := step(withInt(), "")
	if !(all < q4k && q4k < float/1.5) {
		t.Errorf("GGUF step %.3g s with no GGUF type on the integer path, %.3g with Q4_K, %.3g with all three: want each faster", float, q4k, all)
	}
	if !(all > int4 && all < 1.5*int4) {
		t.Errorf("GGUF step %.3g s with its types on the integer path, the int4 profile's %.3g: want a little slower (its soft embedding on the float path)", all, int4)
	}
}

// TestNVFP4Embedding: NVIDIA's NVFP4 export's BF16 embedding is priced as the CPU
// holds it (weights.HostEmbedding): int8 with a scale per row, as the int4 profile's,
// where the integer products run, and BF16 where they are off.
func TestNVFP4Embedding(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	i := slices.IndexFunc(weights.Specs(cfg), func(s weights.Spec) bool { return s.Name == weights.EmbeddingName })
	s := weights.Specs(cfg)[i]
	n := s.Shape[0] * s.Shape[1]
	for _, on := range []bool{true, false} {
		func() {
			defer kernels.SetIntProducts(kernels.SetIntProducts(on))
			f, b := storedAs(cfg, quant.NVFP4Profile, weights.GGUFLayout{}, s, n)
			want, wantB := "bf16", int64(2*n)
			if kernels.IntProducts() {
				want, wantB = "int8", int64(n+4*s.Shape[0])
			}
			if f != want || b != wantB {
				t.Errorf("integer products %v: %s, %d bytes; want %s, %d", kernels.IntProducts(), f, b, want, wantB)
			}
			if i4, _ := storedAs(cfg, quant.Int4Profile, weights.GGUFLayout{}, s, n); kernels.IntProducts() && f != i4 {
				t.Errorf("held as %s, the int4 profile's embedding as %s", f, i4)
			}
		}()
	}
}

// TestForLoadedGGUF: a model loaded from a GGUF file is priced by the file's own
// blocks (engine.Engine.GGUFLayout) — a GGUF's config.json is the bf16 checkpoint's,
// and a file the catalog does not list (a folder, another quantization of the repo)
// was priced as that: three times the bytes a token of a Q4_K_M file reads.
func TestForLoadedGGUF(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	r := flat(1e10, 1e10, 1e12, 1e9)
	l := weights.MixLayout(gguf.Q4KM)
	_, asBF16 := ForLoaded("/work/my-gguf", cfg, weights.GGUFLayout{}, "cpu", r, nil)
	_, got := ForLoaded("/work/my-gguf", cfg, l, "cpu", r, nil)
	e, _ := catalog.ForModel("/work/my-gguf", cfg)
	want, err := Compute(cfg, ProfileOf(cfg), r, Workload{Steps: e.Steps, GuidanceRounds: e.GuidanceRounds, GGUF: l})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Known() || got.AR.UnitBytes != want.AR.UnitBytes || got.Diffusion.UnitBytes != want.Diffusion.UnitBytes ||
		got.AR.UnitBytes > asBF16.AR.UnitBytes/2 {
		t.Errorf("a loaded Q4_K_M file reads %.3g GB a token (its layout's estimate %.3g, as bf16 %.3g)",
			got.AR.UnitBytes/1e9, want.AR.UnitBytes/1e9, asBF16.AR.UnitBytes/1e9)
	}
}
