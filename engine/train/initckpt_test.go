package train

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// initTiny is config.Tiny with a vocabulary of 8192 and the built-in tokenizer's
// end-of-generation ids: the checkpoint carries that tokenizer (4096 ids), and the
// model may generate the ids beyond it, as the 26B's config with it does.
func initTiny() *config.Model {
	cfg := config.Tiny()
	cfg.Text.VocabSize = 8192
	cfg.EOSTokenIDs = []int{1, 6}
	cfg.Generation.EOSTokenIDs = []int{1, 6}
	cfg.Generation.MaxNewTokens, cfg.Generation.MaxDenoisingSteps = 16, 3
	return cfg
}

// checkInitValues loads dir for cfg and checks every tensor of the table against its
// init rule: exactly 1 for InitOnes; mean ≈ 0 and standard deviation ≈ Spec.Std for
// InitNormal (within the sampling error, and the quantization error: int4's is about
// 15% of a weight's RMS). It returns the loaded set.
func checkInitValues(t *testing.T, dir string, cfg *config.Model, p quant.Profile) *weights.Set {
	t.Helper()
	got, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p == quant.BF16Profile && got.Quantization != nil || p != quant.BF16Profile && (got.Quantization == nil || got.Quantization.Profile != string(p)) {
		t.Errorf("config.json quantization_config = %+v, want profile %s", got.Quantization, p)
	}
	set, err := weights.Load(dir, got)
	if err != nil {
		t.Fatalf("the loader refuses the checkpoint: %v", err)
	}
	for _, sp := range weights.Specs(cfg) {
		want, quantized := p.SpecFor(sp.Name, sp.Shape, sp.Quantizable)
		if q, ok := set.Quant[sp.Name]; ok != quantized || ok && q != want {
			t.Errorf("%s: stored as %v (quantized %v), profile %s wants %v (%v)", sp.Name, q, ok, p, want, quantized)
		}
		f, err := set.Float32(sp.Name)
		if err != nil {
			t.Fatal(err)
		}
		var vals []float32
		f.ConstFlatData(func(flat any) { vals = flat.([]float32) })
		switch sp.Init {
		case weights.InitOnes:
			for i, v := range vals {
				if v != 1 {
					t.Fatalf("%s[%d] = %v, want 1", sp.Name, i, v)
				}
			}
		case weights.InitNormal:
			if len(vals) < 4096 {
				continue
			}
			var sum, sq float64
			for _, v := range vals {
				sum += float64(v)
				sq += float64(v) * float64(v)
			}
			mean := sum / float64(len(vals))
			std := math.Sqrt(sq/float64(len(vals)) - mean*mean)
			if math.Abs(mean) > 4*sp.Std/math.Sqrt(float64(len(vals))) || math.Abs(std/sp.Std-1) > 0.2 {
				t.Errorf("%s: mean %.3g, std %.4g, want 0 and %.4g", sp.Name, mean, std, sp.Std)
			}
		}
	}
	return set
}

// TestInitCheckpointProfiles: at each profile the checkpoint loads through the
// loader with every tensor in the profile's format and initialized by the table's
// rule, and the engine loads it and generates in both modes.
func TestInitCheckpointProfiles(t *testing.T) {
	cfg := initTiny()
	for _, p := range quant.Profiles {
		t.Run(string(p), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			res, err := InitCheckpoint(context.Background(), cfg, dir, InitOptions{Profile: p, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 1 || res.Files[0] != safetensors.SingleFile || res.Params == 0 {
				t.Errorf("result %+v", res)
			}
			plan, err := PlanInit(cfg, InitOptions{Profile: p, Seed: 3})
			if plan.Dir = dir; err != nil || fmt.Sprint(plan) != fmt.Sprint(res) {
				t.Errorf("PlanInit = %+v (%v), InitCheckpoint wrote %+v", plan, err, res)
			}
			var onDisk int64
			for _, f := range res.Files {
				sf, err := safetensors.Open(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range sf.Names() {
					info, _ := sf.Info(n)
					onDisk += info.End - info.Begin
				}
				sf.Close()
			}
			if onDisk != res.Bytes {
				t.Errorf("%d bytes of tensor data on disk, the result says %d", onDisk, res.Bytes)
			}
			checkInitValues(t, dir, cfg, p)
			for _, f := range []string{"tokenizer.json", "tokenizer_config.json", config.GenerationConfigFile} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			e, err := engine.Load(context.Background(), engine.Dir(dir), engine.Options{Backend: "go"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			largest := 0 // generated id: the vocabulary is twice the tokenizer's
			for _, mode := range []engine.Mode{engine.AR, engine.Diffusion} {
				r, err := e.Generate(context.Background(), engine.Request{Prompt: "What is Unix?", Mode: mode, Seed: 1,
					Sampling: engine.Sampling{MaxNewTokens: 8}})
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if r.ForwardPasses == 0 || r.StopReason == "" {
					t.Errorf("%s: %+v", mode, r)
				}
				for _, id := range r.Tokens {
					largest = max(largest, id)
				}
			}
			if largest < 4096 {
				t.Errorf("no generated id beyond the tokenizer's 4096 (largest %d): that path is untested", largest)
			}
		})
	}
}

// TestInitCheckpointDeterministic: the same seed writes the same bytes whatever the
// number of goroutines generating them; another seed other bytes; sharded files
// hold the same tensors as one file.
func TestInitCheckpointDeterministic(t *testing.T) {
	cfg := initTiny()
	root := t.TempDir()
	write := func(name string, seed uint64, procs int, maxShard int64) (string, InitResult) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dir := filepath.Join(root, name)
		res, err := InitCheckpoint(context.Background(), cfg, dir, InitOptions{Profile: quant.Int4Profile, Seed: seed, MaxShardBytes: maxShard})
		if err != nil {
			t.Fatal(err)
		}
		return dir, res
	}
	file := func(dir string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, safetensors.SingleFile))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, _ := write("a", 5, 1, 0)
	b, _ := write("b", 5, 4, 0)
	c, _ := write("c", 6, 4, 0)
	if !bytes.Equal(file(a), file(b)) {
		t.Error("the same seed wrote different bytes with 1 and 4 goroutines")
	}
	if bytes.Equal(file(a), file(c)) {
		t.Error("seeds 5 and 6 wrote the same bytes")
	}

	s, res := write("sharded", 5, 2, 200_000)
	if len(res.Files) < 3 || res.Files[0] != "model-00001-of-"+strings.TrimPrefix(res.Files[0], "model-00001-of-") {
		t.Fatalf("files %v, want several shards", res.Files)
	}
	if _, err := os.Stat(filepath.Join(s, safetensors.IndexFile)); err != nil {
		t.Fatal(err)
	}
	one, err := weights.Load(a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	many, err := weights.Load(s, cfg)
	if err != nil {
		t.Fatalf("the loader refuses the sharded checkpoint: %v", err)
	}
	for name, x := range one.Tensors {
		y := many.Tensors[name]
		if y == nil || !x.Shape().Equal(y.Shape()) {
			t.Fatalf("%s: %v in one file, %v in shards", name, x.Shape(), y)
		}
		var bx, by []byte
		x.ConstBytes(func(b []byte) { bx = bytes.Clone(b) })
		y.ConstBytes(func(b []byte) { by = bytes.Clone(b) })
		if !bytes.Equal(bx, by) {
			t.Errorf("%s differs between one file and shards", name)
		}
	}
}

// TestInitCheckpointRealDims writes the 26B-A4B's widths (hidden 2816, 16 heads of
// 256 and 512, dense MLP 2112, experts 704) with 2 layers (one sliding, one full)
// and 4 experts at int4, and reads it back through the loader, while sampling the
// heap: the generator holds a few chunks, never a whole tensor. The vocabulary is
// 8192 instead of 262,144: it only sizes the embedding, one [V, 2816] tensor written
// by the same chunked code at any V, which at the real V would be 738 M values (most
// of this test's time and memory for nothing new; the 26B itself is a benchmark).
func TestInitCheckpointRealDims(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 180 MB checkpoint")
	}
	cfg := initTiny()
	tx := &cfg.Text
	tx.HiddenSize, tx.IntermediateSize, tx.MoEIntermediateSize = 2816, 2112, 704
	tx.NumExperts, tx.TopKExperts, tx.NumHiddenLayers = 4, 2, 2
	tx.NumAttentionHeads, tx.NumKeyValueHeads, tx.NumGlobalKVHeads, tx.HeadDim, tx.GlobalHeadDim = 16, 8, 2, 256, 512
	tx.LayerTypes = []config.LayerType{config.SlidingAttention, config.FullAttention}
	tx.SlidingWindow = 1024
	dir := filepath.Join(t.TempDir(), "m")
	var peak uint64
	var ms runtime.MemStats
	// HeapAlloc counts garbage until the next collection, and at the default
	// GOGC the heap may reach twice what is live before one: collect early, so
	// the peak is about what the writer holds, not when the collector ran.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	start := time.Now()
	res, err := InitCheckpoint(context.Background(), cfg, dir, InitOptions{Profile: quant.Int4Profile, Seed: 1,
		Progress: func(done, total int64) {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc-min(ms.HeapAlloc, base))
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tensors, %.1f M parameters, %.1f MB in %v; heap peak %.1f MB above the start",
		res.Tensors, float64(res.Params)/1e6, float64(res.Bytes)/1e6, time.Since(start).Round(time.Millisecond), float64(peak)/1e6)
	var largest int64
	for _, sp := range weights.Specs(cfg) {
		n := int64(4)
		for _, d := range sp.Shape {
			n *= int64(d)
		}
		largest = max(largest, n)
	}
	// The largest float32 tensor (the full layer's q_proj, 92 MB) never exists; a
	// few 4 MB chunks and their quantized copies do.
	if int64(peak) > largest/2 {
		t.Errorf("heap grew by %.1f MB while writing; the largest tensor in float32 is %.1f MB", float64(peak)/1e6, float64(largest)/1e6)
	}
	start = time.Now()
	checkInitValues(t, dir, cfg, quant.Int4Profile)
	t.Logf("loaded and checked in %v", time.Since(start).Round(time.Millisecond))
}

// TestInitCheckpointErrors: a bad config, an output that exists, a tokenizer that
// does not fit and a cancelled run fail with a clear error and leave nothing behind.
func TestInitCheckpointErrors(t *testing.T) {
	root := t.TempDir()
	bad := initTiny()
	bad.Text.NumKeyValueHeads = 3
	notEmpty := filepath.Join(root, "full")
	os.MkdirAll(notEmpty, 0o755)
	os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o644)
	aFile := filepath.Join(root, "file")
	os.WriteFile(aFile, nil, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		cfg  *config.Model
		ctx  context.Context
		out  string
		opts InitOptions
		want string
	}{
		{"bad config", bad, context.Background(), filepath.Join(root, "a"), InitOptions{}, "num_key_value_heads (3) does not divide"},
		{"bad profile", initTiny(), context.Background(), filepath.Join(root, "a"), InitOptions{Profile: "int3"}, `unknown quantization profile "int3"`},
		{"not empty", initTiny(), context.Background(), notEmpty, InitOptions{}, "is not empty"},
		{"under a file", initTiny(), context.Background(), filepath.Join(aFile, "m"), InitOptions{}, "not a directory"},
		{"tokenizer too big", config.Tiny(), context.Background(), filepath.Join(root, "a"), InitOptions{}, "tokenizer has 4096 ids but the config's vocab_size is 512"},
		{"cancelled", initTiny(), ctx, filepath.Join(root, "a"), InitOptions{}, "context canceled"},
		{"gguf with a profile", initTiny(), context.Background(), filepath.Join(root, "a"), InitOptions{GGUF: gguf.Q4KM, Profile: quant.Int4Profile}, "Q4_K_M mix, not profile int4"},
		{"cancelled gguf", initTiny(), ctx, filepath.Join(root, "a"), InitOptions{GGUF: gguf.Q4KM}, "context canceled"},
		{"cancelled nvfp4", initTiny(), ctx, filepath.Join(root, "a"), InitOptions{Profile: quant.NVFP4Profile}, "context canceled"},
	} {
		_, err := InitCheckpoint(c.ctx, c.cfg, c.out, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Errorf("left behind: %v", ents)
	}
	if ents, _ := os.ReadDir(notEmpty); len(ents) != 1 {
		t.Errorf("the non-empty directory changed: %v", ents)
	}
	// An empty directory is fine (and is replaced by the checkpoint).
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := InitCheckpoint(context.Background(), initTiny(), empty, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(empty); err != nil {
		t.Error(err)
	}
}

func TestLoadInitConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := initTiny()
	cfg.Generation.MaxDenoisingSteps = 7
	if err := cfg.Save(dir); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, config.ConfigFile))
	other := filepath.Join(t.TempDir(), "26b.json")
	os.WriteFile(other, raw, 0o644)
	for _, c := range []struct {
		path  string
		steps int
	}{{dir, 7}, {filepath.Join(dir, config.ConfigFile), 7}, {other, config.DefaultGeneration().MaxDenoisingSteps}} {
		m, err := LoadInitConfig(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if m.Text.VocabSize != 8192 || m.Generation.MaxDenoisingSteps != c.steps {
			t.Errorf("%s: vocab %d, steps %d, want 8192 and %d", c.path, m.Text.VocabSize, m.Generation.MaxDenoisingSteps, c.steps)
		}
	}
	os.WriteFile(other, []byte(`{"model_type": "diffusion_gemma"}`), 0o644)
	if _, err := LoadInitConfig(other); err == nil || !strings.Contains(err.Error(), "text_config is missing") {
		t.Errorf("bad config: %v", err)
	}
}

// TestInitCheckpointGGUF: a GGUF checkpoint is one file in the llama.cpp mix asked
// for (weights.GGUFType: each mix's block types, its fallbacks too) with the tokenizer
// and no config.json; its metadata gives the config back and its tensors the mix
// (weights.ReadGGUFLayout); every tensor holds the values the bf16 profile writes for
// the same seed, within its block type's quantization error (a mixed-up row or
// tensor would be off by about √2); and the engine loads it from the folder and
// generates in both modes.
func TestInitCheckpointGGUF(t *testing.T) {
	kindsOf := map[gguf.Mix][]gguf.Type{
		gguf.Q3KM: {gguf.F32, gguf.Q3_K, gguf.Q5_K, gguf.Q6_K, gguf.Q4_0, gguf.Q5_0},
		gguf.Q4KM: {gguf.F32, gguf.Q4_K, gguf.Q6_K, gguf.Q5_0, gguf.Q8_0},
		gguf.Q5KM: {gguf.F32, gguf.Q5_K, gguf.Q6_K, gguf.Q5_1, gguf.Q8_0},
		gguf.Q6KM: {gguf.F32, gguf.Q6_K, gguf.Q8_0},
		gguf.Q80M: {gguf.F32, gguf.Q8_0},
	}
	for _, m := range gguf.Mixes {
		t.Run(string(m), func(t *testing.T) { testInitGGUF(t, m, kindsOf[m]) })
	}
}

func testInitGGUF(t *testing.T, m gguf.Mix, wantKinds []gguf.Type) {
	cfg := initTiny()
	cfg.Text.HiddenSize = 256 // the k-quants' 256-value blocks apply to what reads the hidden state
	dir, ref, res := initBesideBF16(t, cfg, InitOptions{GGUF: m, Seed: 3})
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != fmt.Sprint([]string{InitGGUFFile(m), "tokenizer.json", "tokenizer_config.json"}) {
		t.Errorf("files %v", names)
	}

	f, err := gguf.Open(filepath.Join(dir, InitGGUFFile(m)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := weights.CheckGGUFConfig(f, cfg); err != nil {
		t.Errorf("the metadata gives another model: %v", err)
	}
	// The file's own layout is its mix's rule (weights.MixLayout, which prices a
	// download before it is read): the same types, bytes as stored and as a GPU
	// holds them.
	l, err := weights.ReadGGUFLayout(os.DirFS(dir), InitGGUFFile(m), cfg)
	if err != nil || l.Mix != m || !l.IsMix(cfg) || l.Describe(cfg) != string(m) {
		t.Errorf("the file's mix read as %q (its own types %v, %q; %v), want %s", l.Mix, l.IsMix(cfg), l.Describe(cfg), err, m)
	}
	rule := weights.MixLayout(m)
	for _, s := range weights.Specs(cfg) {
		ft, _ := l.Type(cfg, s)
		rt, _ := rule.Type(cfg, s)
		fb, _ := l.StoredBytes(cfg, s)
		rb, _ := rule.StoredBytes(cfg, s)
		fd, _ := l.DeviceBytes(cfg, s)
		rd, _ := rule.DeviceBytes(cfg, s)
		if ft != rt || fb != rb || fd != rd {
			t.Errorf("%s: the file has %s, %d B (%d B on a GPU); the %s rule %s, %d B (%d B)", s.Name, ft, fb, fd, m, rt, rb, rd)
		}
	}
	got, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.EOSTokenIDs, got.Generation.MaxDenoisingSteps, got.CanvasLength, got.Text.LayerTypes) !=
		fmt.Sprint(cfg.EOSTokenIDs, cfg.Generation.MaxDenoisingSteps, cfg.CanvasLength, cfg.Text.LayerTypes) {
		t.Errorf("config from the metadata %+v, want %+v", got, cfg)
	}
	bf16, err := weights.Load(ref, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk int64
	kinds := map[gguf.Type]bool{}
	for _, sp := range weights.Specs(cfg) {
		info, ok := f.Lookup(sp.GGUF)
		want, quantized := weights.GGUFType(cfg, m, sp)
		if !quantized {
			want = gguf.F32
		}
		if !ok || info.Type != want || fmt.Sprint(info.Shape()) != fmt.Sprint(sp.Shape) {
			t.Fatalf("%s: %+v (found %v), want %s %v", sp.GGUF, info, ok, want, sp.Shape)
		}
		kinds[info.Type] = true
		size, _ := gguf.WriteTensor{Shape: sp.Shape, Type: info.Type}.Size()
		onDisk += size
		vals, err := f.Float32(info, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		ft, err := bf16.Float32(sp.Name)
		if err != nil {
			t.Fatal(err)
		}
		var ref []float32
		ft.ConstFlatData(func(a any) { ref = a.([]float32) })
		bound := map[gguf.Type]float64{gguf.F32: 0.004, gguf.Q8_0: 0.01, gguf.Q6_K: 0.03, gguf.Q5_0: 0.06, gguf.Q5_1: 0.06, gguf.Q5_K: 0.06, gguf.Q4_K: 0.12,
			gguf.Q4_0: 0.12, gguf.Q3_K: 0.2}[info.Type]
		if rel := relRMS(vals, ref); !(rel <= bound) {
			t.Errorf("%s (%s): relative RMS difference from the bf16 checkpoint %.4f, want ≤ %.3f", sp.GGUF, info.Type, rel, bound)
		}
	}
	if rf, ok := f.Lookup(gguf.RopeFreqs); ok {
		onDisk += int64(4 * rf.Elements())
	}
	if onDisk != res.Bytes {
		t.Errorf("%d bytes of tensor data in the file, the result says %d", onDisk, res.Bytes)
	}
	if len(kinds) != len(wantKinds) {
		t.Errorf("block types %v, want %v", kinds, wantKinds)
	}
	for _, k := range wantKinds {
		if !kinds[k] {
			t.Errorf("block types %v, want %v", kinds, wantKinds)
		}
	}

	generatesBoth(t, dir)
	// The graph path (a GPU's) converts the mix's blocks while loading (weights.Load's
	// GGUF conversion: Q5_K and Q5_1 to int4, Q6_K and Q8_0 to int8) and generates.
	e, err := engine.Load(context.Background(), engine.Dir(dir), engine.Options{Backend: "go", InGraph: true})
	if err != nil {
		t.Fatalf("the graph path refuses the %s file: %v", m, err)
	}
	defer e.Close()
	if l := e.GGUFLayout(); e.Path() != engine.PathGraph || l.Mix != m || !l.IsMix(cfg) {
		t.Errorf("loaded on the %s path, mix %q (its own types %v)", e.Path(), l.Mix, l.IsMix(cfg))
	}
	if r, err := e.Generate(context.Background(), engine.Request{Prompt: "What is Unix?", Mode: engine.AR, Seed: 1,
		Sampling: engine.Sampling{MaxNewTokens: 4}}); err != nil || r.ForwardPasses == 0 {
		t.Errorf("graph path: %+v, %v", r, err)
	}
}

// TestInitCheckpointNVFP4: an nvfp4 checkpoint is in ModelOpt's export layout — the
// loader reads it as a ModelOpt checkpoint (hf_quant_config.json, no Darkroom
// quantization_config, experts split per expert), every weight the profile quantizes
// NVFP4 in memory and the rest BF16 — and every tensor holds the values the bf16
// profile writes for the same seed, BF16 ones exactly and NVFP4 ones within FP4's
// error (a mixed-up expert or row would be off by about √2); the engine loads it and
// generates in both modes.
func TestInitCheckpointNVFP4(t *testing.T) {
	cfg := initTiny()
	dir, ref, res := initBesideBF16(t, cfg, InitOptions{Profile: quant.NVFP4Profile, Seed: 3})
	got, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Quantization; q == nil || q.QuantMethod != config.ModelOptMethod || q.QuantAlgo != "NVFP4" {
		t.Errorf("quantization %+v, want ModelOpt's NVFP4 (from %s)", q, weights.HFQuantConfigFile)
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if !weights.IsModelOpt(ck) {
		t.Fatal("not read as a ModelOpt checkpoint")
	}
	mq, err := weights.ReadModelOptQuant(ck)
	if err != nil || mq.QuantAlgo != "NVFP4" || mq.GroupSize != 16 {
		t.Fatalf("%s: %+v, %v", weights.HFQuantConfigFile, mq, err)
	}
	var onDisk int64
	for _, n := range ck.Names() {
		_, info, _ := ck.Lookup(n)
		onDisk += info.End - info.Begin
	}
	if onDisk != res.Bytes {
		t.Errorf("%d bytes of tensor data on disk, the result says %d", onDisk, res.Bytes)
	}
	set, err := weights.Load(dir, got)
	if err != nil {
		t.Fatalf("the loader refuses the checkpoint: %v", err)
	}
	bf16, err := weights.Load(ref, cfg)
	if err != nil {
		t.Fatal(err)
	}
	quantized := 0
	for _, sp := range weights.Specs(cfg) {
		want, q := quant.NVFP4Profile.SpecFor(sp.Name, sp.Shape, sp.Quantizable)
		if s, ok := set.Quant[sp.Name]; ok != q || ok && s != want {
			t.Errorf("%s: stored as %v (quantized %v), want %v (%v)", sp.Name, s, ok, want, q)
		}
		if q {
			quantized++
			if _, _, ok := ck.Lookup(weights.ModelOptModules(sp)[0].Name + ".weight_scale_2"); !ok {
				t.Errorf("%s: no module %s", sp.Name, weights.ModelOptModules(sp)[0].Name)
			}
		}
		a, err := set.Float32(sp.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := bf16.Float32(sp.Name)
		if err != nil {
			t.Fatal(err)
		}
		var vals, refs []float32
		a.ConstFlatData(func(x any) { vals = x.([]float32) })
		b.ConstFlatData(func(x any) { refs = x.([]float32) })
		// FP4 E2M1 with FP8 block scales: a normal weight's relative RMS error is about
		// 10%; BF16 values are the bf16 profile's exactly.
		if rel := relRMS(vals, refs); q && !(rel <= 0.14) || !q && rel != 0 {
			t.Errorf("%s (quantized %v): relative RMS difference from the bf16 checkpoint %.4f", sp.Name, q, rel)
		}
	}
	if quantized == 0 {
		t.Fatal("nothing quantized")
	}

	generatesBoth(t, dir)
}

// initBesideBF16 writes cfg's checkpoint with opts, and the bf16 profile's of the same
// seed beside it (the reference its values are held to), checks PlanInit against
// what was written, and returns both directories and the result.
func initBesideBF16(t *testing.T, cfg *config.Model, opts InitOptions) (dir, ref string, res InitResult) {
	t.Helper()
	root := t.TempDir()
	dir, ref = filepath.Join(root, "m"), filepath.Join(root, "bf16")
	res, err := InitCheckpoint(context.Background(), cfg, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InitCheckpoint(context.Background(), cfg, ref, InitOptions{Seed: opts.Seed}); err != nil {
		t.Fatal(err)
	}
	plan, err := PlanInit(cfg, opts)
	if plan.Dir = dir; err != nil || fmt.Sprint(plan) != fmt.Sprint(res) {
		t.Errorf("PlanInit = %+v (%v), InitCheckpoint wrote %+v", plan, err, res)
	}
	return dir, ref, res
}

// relRMS is the RMS of got − want relative to want's.
func relRMS(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num, den = num+d*d, den+float64(want[i])*float64(want[i])
	}
	return math.Sqrt(num / den)
}

// generatesBoth loads the checkpoint in dir on the CPU and generates in both modes.
func generatesBoth(t *testing.T, dir string) {
	t.Helper()
	e, err := engine.Load(context.Background(), engine.Dir(dir), engine.Options{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, mode := range []engine.Mode{engine.AR, engine.Diffusion} {
		r, err := e.Generate(context.Background(), engine.Request{Prompt: "What is Unix?", Mode: mode, Seed: 1,
			Sampling: engine.Sampling{MaxNewTokens: 8}})
		if err != nil || r.ForwardPasses == 0 || r.StopReason == "" {
			t.Errorf("%s: %+v, %v", mode, r, err)
		}
	}
}
