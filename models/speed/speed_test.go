package speed

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
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
// whose every weight is listed, on a machine with given rates.
func TestComputeByHand(t *testing.T) {
	cfg := small()
	const gemm, mem, samp = 1e10, 1e9, 1e9
	r := flat(gemm, 1e15, mem, samp) // a GEMV kernel so fast that AR is memory-bound
	for f := range r.GEMVStream {
		r.GEMVStream[f] = mem / 4 // float32 weights stream at the memory's rate
	}
	est, err := Compute(cfg, quant.BF16Profile, r, Workload{Tokens: 8, Prompt: 4, Steps: 10})
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
	// At prefix 4 + 8/2 = 8 the sliding layer reads K and V of 8 positions (32 floats
	// each), and the sampler one row of 1000 logits.
	token := 4*float64(weights)/mem + 2*8*32*4/mem + 1000/samp
	near(t, "AR seconds per token", est.AR.UnitSeconds, token)
	prefill := model.EncodeFLOPs(&cfg.Text, 4, 0) / gemm
	near(t, "AR tokens/s", est.AR.TokensPerS, 8/(prefill+8*token))
	// Rates without streaming GEMV rates (a calibration's caller may give only the
	// in-cache ones): each format takes the longer of its memory and kernel times.
	noStream := *r
	noStream.GEMVStream = nil
	if e, err := Compute(cfg, quant.BF16Profile, &noStream, Workload{Tokens: 8, Prompt: 4, Steps: 10}); err != nil {
		t.Fatal(err)
	} else {
		near(t, "AR seconds per token without streaming rates", e.AR.UnitSeconds, token)
	}
	// In a last-level cache twice its size, the weights run at the in-cache rate.
	cached := *r
	cached.Cache = 1 << 20
	inCache, err := Compute(cfg, quant.BF16Profile, &cached, Workload{Tokens: 8, Prompt: 4, Steps: 10})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "AR seconds per token in cache", inCache.AR.UnitSeconds, float64(weights)/1e15+2*8*32*4/mem+1000/samp)
	if est.AR.Bound != "memory" {
		t.Errorf("AR bound %q", est.AR.Bound)
	}

	// A canvas of 8 after the 4 prompt tokens: 10 steps of FLOPs(8, 4) at the GEMM rate
	// (or its weights at the memory rate, whichever is longer) plus the sampler over
	// 8·1000 logits, then the commit's encoder pass. Each expert is touched by one of
	// the 8 positions with probability 1 − (3/4)^8.
	touched := 1 - math.Pow(0.75, 8)
	stepWeights := float64(weights-(64*64+64*32)) + touched*4*(64*64+64*32) + 64 + 3*128*64
	stepSec := max(model.FLOPs(&cfg.Text, 8, 4)/gemm, 4*stepWeights/mem) + 8*1000/samp
	canvas := 10*stepSec + model.EncodeFLOPs(&cfg.Text, 8, 4)/gemm
	near(t, "diffusion bytes per step", est.Diffusion.UnitBytes, 4*stepWeights)
	near(t, "diffusion seconds per canvas", est.Diffusion.UnitSeconds, canvas)
	near(t, "diffusion tokens/s", est.Diffusion.TokensPerS, 8/(prefill+canvas))

	// Nine tokens need two canvases.
	est2, err := Compute(cfg, quant.BF16Profile, r, Workload{Tokens: 9, Prompt: 4, Steps: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := est2.Diffusion.Seconds - prefill; math.Abs(got-2*est2.Diffusion.UnitSeconds) > 1e-12 {
		t.Errorf("9 tokens: %g s of canvases, want 2 × %g", got, est2.Diffusion.UnitSeconds)
	}
}

// TestStepProductsAreFLOPs: the products timed one by one are exactly the engine's
// FLOPs count, for the Mini's shape of model and the 26B's.
func TestStepProductsAreFLOPs(t *testing.T) {
	for _, cfg := range []*config.Model{small(), catalog.DiffusionGemma26B()} {
		for _, prefix := range []int{0, 100, 5000} {
			var sum float64
			for _, p := range stepProducts(&cfg.Text, 256, prefix) {
				sum += p.flops()
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

// TestChoose: the Mini keeps diffusion; a model flagged as writing equally well
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
	if c := Choose(dg.ModesEqual, slow); c.Mode != engine.AR || !strings.Contains(c.Reason, "printer") {
		t.Errorf("26B on a slow CPU: %+v (AR %.2f, diffusion %.2f tokens/s)", c, slow.AR.TokensPerS, slow.Diffusion.TokensPerS)
	}
	fast, err := ForEntry(dg, cfg, quant.Int4Profile, "cpu", gpu, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := Choose(dg.ModesEqual, fast); c.Mode != engine.Diffusion {
		t.Errorf("26B on GPU-like rates: %+v (AR %.0f, diffusion %.0f tokens/s)", c, fast.AR.TokensPerS, fast.Diffusion.TokensPerS)
	}
	if c := Choose(mini.ModesEqual, slow); c.Mode != engine.Diffusion {
		t.Errorf("Mini: %+v", c)
	}
	onGPU, _ := ForEntry(dg, cfg, quant.Int4Profile, Device("xla:cuda"), cpu, 0)
	if c := Choose(dg.ModesEqual, onGPU); onGPU.Known() || c.Mode != engine.Diffusion || !strings.Contains(c.Reason, "unknown") {
		t.Errorf("on a GPU backend: %+v, %+v", onGPU, c)
	}
	// A folder holding the 26B's architecture under a name the catalog does not know.
	if c, _ := ForLoaded("/work/dg26b-int4", cfg, "cpu", cpu); c.Mode != engine.AR {
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
		if r.GEMV[f] <= 0 {
			t.Errorf("%s GEMV not measured", f)
		}
	}
	if !strings.Contains(Key(), "calibration") {
		t.Error(Key())
	}
}
