package models

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/store"
)

// TestPlace: the 26B at int4 (about 18 GB on a GPU) runs on a 24 GB GPU; on a
// PC whose GPU holds 12 GB it is split, 17 of its 30 layers on the GPU and the rest
// on the CPU, from 64 GB of RAM or from 8 and the disk (fit.FromDisk), saying why;
// on one whose GPU holds 2 GB, too little for one layer beside the embedding and the
// step, it runs on the CPU, from RAM, judged there and saying why; where neither
// holds it, it is the GPU's won't fit; a PC with no GPU judges the RAM, with nothing
// to explain.
func TestPlace(t *testing.T) {
	e, _ := catalog.Find(catalog.DiffusionGemmaID)
	cfg, err := EntryConfig(e)
	if err != nil || cfg == nil {
		t.Fatalf("config: %v", err)
	}
	gpu := func(vram, ram int64) hw.Info {
		return hw.Info{GPUs: []hw.GPU{{Name: "RTX 4070", VRAMTotal: vram}}, RAMTotal: ram}
	}
	for _, c := range []struct {
		name    string
		info    hw.Info
		kind    string
		verdict fit.Verdict
		where   string
		why     string
	}{
		{"24 GB GPU", gpu(24<<30, 64<<30), "gpu", fit.Fits, "fits the GPU", ""},
		{"12 GB GPU, 64 GB RAM", gpu(12<<30, 64<<30), "gpu", fit.Fits, "17 of 30 layers on the GPU",
			"It is too big for the RTX 4070's 12.9 GB of memory (it needs about 17.9 GB there), so 17 of its 30 layers run on the GPU and the rest on the CPU, from RAM: slower than all on the GPU, faster than all on the CPU"},
		{"12 GB GPU, 6 GB RAM", gpu(12<<30, 6<<30), "gpu", fit.Fits, "17 of 30 layers on the GPU, the rest from the disk",
			"so 17 of its 30 layers run on the GPU and the rest on the CPU, from RAM and the disk"},
		{"2 GB GPU, 64 GB RAM", gpu(2<<30, 64<<30), "ram", fit.Fits, "on the CPU: too big for the GPU",
			"It is too big for the RTX 4070's 2.1 GB of memory (it needs about 17.9 GB there), so it runs on the CPU, from RAM: slower"},
		{"2 GB GPU, 16 GB RAM", gpu(2<<30, 16<<30), "ram", fit.FromDisk, "from the disk, slowly", "so it runs on the CPU, from RAM and the disk: slower"},
		{"4 GB GPU, 8 GB RAM", gpu(4<<30, 8<<30), "gpu", fit.WontFit, "too big for this PC", ""},
		{"no GPU, 64 GB RAM", hw.Info{RAMTotal: 64 << 30}, "ram", fit.Fits, "fits the RAM", ""},
	} {
		pl, err := Place(cfg, quant.Int4Profile, weights.GGUFLayout{}, c.info)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if pl.Budget.Kind != c.kind || pl.Verdict != c.verdict || pl.Where() != c.where || (c.why == "") != (pl.Because() == "") || !strings.Contains(pl.Because(), c.why) {
			t.Errorf("%s: on %s, %s, %q, %q; want %s, %s, %q, %q", c.name, pl.Budget.Kind, pl.Verdict, pl.Where(), pl.Because(), c.kind, c.verdict, c.where, c.why)
		}
		overall := c.verdict // the whole model's: a split's worse part's
		if strings.HasSuffix(c.where, "the rest from the disk") {
			overall = fit.FromDisk
		}
		if pl.Overall() != overall {
			t.Errorf("%s: overall %s, want %s", c.name, pl.Overall(), overall)
		}
	}
	if _, err := Place(cfg, quant.Int4Profile, weights.GGUFLayout{}, hw.Info{}); err == nil {
		t.Error("a PC whose memory is unknown was placed")
	}
	// The GGUF download on the CPU holds its file's blocks (its Q6_K embedding as
	// int8 in groups of 32): more than the int4 profile it stands on, as darkroom hw
	// says — tight in 24 GiB of RAM where the int4 profile fits. The Library judged
	// it as the int4 profile.
	ram := hw.Info{RAMTotal: 24 << 30}
	asInt4, err := Place(cfg, catalog.GGUFProfile(gguf.Q4KM), weights.GGUFLayout{}, ram)
	if err != nil {
		t.Fatal(err)
	}
	q4km, err := Place(cfg, catalog.GGUFProfile(gguf.Q4KM), weights.MixLayout(gguf.Q4KM), ram)
	if err != nil {
		t.Fatal(err)
	}
	if asInt4.Verdict != fit.Fits || q4km.Verdict != fit.Tight || q4km.Estimate.Total <= asInt4.Estimate.Total {
		t.Errorf("in 24 GiB of RAM: the int4 profile %s (%d B), the GGUF %s (%d B)", asInt4.Verdict, asInt4.Estimate.Total, q4km.Verdict, q4km.Estimate.Total)
	}
}

// TestPlaceSplit: the 26B's Q4_K_M GGUF (19.5 GB on a GPU) on PCs with 32 GB of
// RAM: a 12 GB RTX 4070 and an 8 GB RTX 4060 each hold as many of its layers as fit
// their memory beside the embedding and the step (fit.Runtime.DeviceLayers: k layers
// fit, k + 1 do not), the rest in RAM, the Placement's estimate the GPU's part and
// its Split's the RAM's, as fit.Compute gives them; a 24 GB RTX 4090 holds all of it;
// a 2 GB card, too small for one layer, leaves it to the CPU.
func TestPlaceSplit(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	p, l := catalog.GGUFProfile(gguf.Q4KM), weights.MixLayout(gguf.Q4KM)
	side := func(gpu bool, k int) *fit.Estimate {
		t.Helper()
		e, err := fit.Compute(cfg, p, fit.Runtime{GGUF: l, GPU: gpu, DeviceLayers: k})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		name   string
		vram   int64
		layers int // 0: all of them, −1: none (the CPU)
	}{
		{"RTX 4090", 24 << 30, 0},
		{"RTX 4070", 12 << 30, 16},
		{"RTX 4060", 8 << 30, 9},
		{"GT 1030", 2 << 30, -1},
	} {
		info := hw.Info{GPUs: []hw.GPU{{Name: c.name, VRAMTotal: c.vram}}, RAMTotal: 32 << 30}
		pl, err := Place(cfg, p, l, info)
		if err != nil {
			t.Fatal(err)
		}
		gpu := Budgets(info)[0]
		switch {
		case c.layers == 0:
			if pl.Split != nil || !pl.OnGPU() || pl.Verdict != fit.Fits || pl.Because() != "" {
				t.Errorf("%s: %s, %s, %q; want the whole model on the GPU", c.name, pl.Where(), pl.Verdict, pl.Because())
			}
			continue
		case c.layers < 0:
			if pl.Split != nil || pl.OnGPU() || !strings.Contains(pl.CPUBecause, "so it runs on the CPU, from RAM") {
				t.Errorf("%s: %s, %q; want it on the CPU, saying why", c.name, pl.Where(), pl.Because())
			}
			if v := fit.JudgeEstimate(side(true, 1), gpu); v != fit.WontFit {
				t.Errorf("%s: one layer's GPU part is %s there", c.name, v)
			}
			continue
		}
		sp := pl.Split
		if sp == nil {
			t.Errorf("%s: %s, %q; want a split", c.name, pl.Where(), pl.Because())
			continue
		}
		k := sp.DeviceLayers
		dev, next, host := side(true, k), side(true, k+1), side(false, k)
		t.Logf("%s: %d of %d layers on the GPU: %.2f GB there (%d layers: %.2f), %.2f GB in RAM", c.name, k, sp.Layers,
			float64(dev.Total)/1e9, k+1, float64(next.Total)/1e9, float64(host.Total)/1e9)
		switch {
		case k != c.layers || sp.Layers != 30:
			t.Errorf("%s: %d of %d layers on the GPU, want %d of 30", c.name, k, sp.Layers, c.layers)
		case fit.JudgeEstimate(dev, gpu) != fit.Fits || fit.JudgeEstimate(next, gpu) == fit.Fits:
			t.Errorf("%s: %d layers %s on the GPU, %d %s", c.name, k, fit.JudgeEstimate(dev, gpu), k+1, fit.JudgeEstimate(next, gpu))
		case !reflect.DeepEqual(pl.Estimate, dev) || !reflect.DeepEqual(sp.Host, host) || pl.Budget != gpu || sp.RAM != Budgets(info)[1]:
			t.Errorf("%s: the placement's estimates are not fit.Compute's sides of %d layers", c.name, k)
		case !pl.OnGPU() || pl.Verdict != fit.Fits || sp.Verdict != fit.Fits:
			t.Errorf("%s: on the GPU %v, %s there, %s in RAM; want both fitting", c.name, pl.OnGPU(), pl.Verdict, sp.Verdict)
		case pl.Where() != fmt.Sprintf("%d of 30 layers on the GPU", k):
			t.Errorf("%s: %q", c.name, pl.Where())
		case !strings.Contains(pl.Because(), fmt.Sprintf("It is too big for the %s's %s of memory (it needs about 19.5 GB there), so %d of its 30 layers run on the GPU and the rest on the CPU, from RAM: slower than all on the GPU, faster than all on the CPU",
			c.name, store.FormatBytes(c.vram), k)):
			t.Errorf("%s: %q", c.name, pl.Because())
		}
	}
}

// TestBackendForGGUF: the Library's GGUF download (a .gguf file beside Google's bf16
// config.json) on a 24 GB GPU runs there: it was estimated as bf16 (53 GB), too big
// for the GPU, and on a PC with 64 GB of RAM loaded on the CPU instead. On an 8 GB
// GPU it is split, its first 9 layers on the GPU (TestPlaceSplit).
func TestBackendForGGUF(t *testing.T) {
	dir := filepath.Join(t.TempDir(), catalog.GGUFID)
	if err := catalog.DiffusionGemma26B().Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, catalog.GGUFFile(gguf.Q4KM)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gamer := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 23 << 30}}, RAMTotal: 64 << 30}
	if b := BackendFor("auto", engine.Dir(dir), func() hw.Info { return gamer }); b.Backend != "auto" || b.Why != "" {
		t.Errorf("the GGUF on a 24 GB GPU: %q, %q; want it on the GPU", b.Backend, b.Why)
	}
	small := gamer
	small.GPUs = []hw.GPU{{Name: "RTX 4060", VRAMTotal: 8 << 30}}
	if b := BackendFor("auto", engine.Dir(dir), func() hw.Info { return small }); b.Backend != "auto" || b.DeviceLayers != 9 ||
		!strings.Contains(b.Why, "too big for the RTX 4060's 8.6 GB of memory (it needs about 19.5 GB there), so 9 of its 30 layers run on the GPU") {
		t.Errorf("the GGUF on an 8 GB GPU: %+v; want it split, saying why", b)
	}
}

// TestBackendForSplit: auto loads the Library's Q4_K_M GGUF of the 26B split where
// the GPU is too small for it (engine.Options.DeviceLayers: TestPlaceSplit's 16
// layers on a 12 GB card); where the GPU holds it, or the split's part, but a game
// holds much of its memory now (VRAMFree), split to what is free — the most layers
// that fit it — and where too little is free for one layer, on the CPU.
func TestBackendForSplit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), catalog.GGUFID)
	cfg := catalog.DiffusionGemma26B()
	if err := cfg.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, catalog.GGUFFile(gguf.Q4KM)), nil, 0o644); err != nil {
		t.Fatal(err) // unreadable here: estimated as the Library's Q4_K_M (sourceProfile)
	}
	p, l := catalog.GGUFProfile(gguf.Q4KM), weights.MixLayout(gguf.Q4KM)
	// fitting is the most layers whose GPU part fits free bytes.
	fitting := func(free int64) int {
		k := 0
		for n := 1; n < cfg.Text.NumHiddenLayers; n++ {
			e, err := fit.Compute(cfg, p, fit.Runtime{GGUF: l, GPU: true, DeviceLayers: n})
			if err != nil {
				t.Fatal(err)
			}
			if fit.Judge(e.Total, fit.Budget{Kind: "gpu", Bytes: free}) == fit.Fits {
				k = n
			}
		}
		return k
	}
	pc := func(name string, total, free int64) hw.Info {
		return hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: name, VRAMTotal: total, VRAMFree: free}}, RAMTotal: 32 << 30}
	}
	for _, c := range []struct {
		name    string
		info    hw.Info
		backend string
		layers  int
		why     string
	}{
		{"a 24 GB card, free", pc("RTX 4090", 24<<30, 23<<30), "auto", 0, ""},
		{"a 12 GB card, free", pc("RTX 4070", 12<<30, 12<<30), "auto", 16,
			"It is too big for the RTX 4070's 12.9 GB of memory (it needs about 19.5 GB there), so 16 of its 30 layers run on the GPU and the rest on the CPU, from RAM: slower than all on the GPU, faster than all on the CPU"},
		{"a 24 GB card, 10 GB free", pc("RTX 4090", 24<<30, 10<<30), "auto", fitting(10 << 30),
			fmt.Sprintf("Only 10.7 GB of the RTX 4090's 25.8 GB of memory are free now (the rest is in use: by another program, a game perhaps, or by a model Darkroom holds there already) and it needs about 19.5 GB there, so %d of its 30 layers run on the GPU and the rest on the CPU, from RAM: slower; close that program and start Darkroom again to run more of it on the GPU", fitting(10<<30))},
		{"a 12 GB card, 6 GB free", pc("RTX 4070", 12<<30, 6<<30), "auto", fitting(6 << 30),
			fmt.Sprintf("Only 6.4 GB of the RTX 4070's 12.9 GB of memory are free now (the rest is in use: by another program, a game perhaps, or by a model Darkroom holds there already), so %d of its 30 layers run on the GPU", fitting(6<<30))},
		{"a 24 GB card, 1 GB free", pc("RTX 4090", 24<<30, 1<<30), "go", 0,
			"Only 1.1 GB of the RTX 4090's 25.8 GB of memory are free now (the rest is in use: by another program, a game perhaps, or by a model Darkroom holds there already) and it needs about 19.5 GB there, so it runs on the CPU, from RAM: slower; close that program and start Darkroom again to run it on the GPU"},
	} {
		b := BackendFor("auto", engine.Dir(dir), func() hw.Info { return c.info })
		if b.Backend != c.backend || b.DeviceLayers != c.layers || (c.why == "") != (b.Why == "") || !strings.Contains(b.Why, c.why) {
			t.Errorf("%s: %+v; want %s, %d layers on the GPU, %q", c.name, b, c.backend, c.layers, c.why)
		}
	}
	if k := fitting(10 << 30); k < 10 || k > 15 {
		t.Errorf("10 GB free hold %d layers; want between the 8 GB card's 9 and the 12 GB card's 16", k)
	}
}

// TestBackendForNVFP4: the Library's NVFP4 download (ModelOpt's export, described by
// hf_quant_config.json or by config.json's quantization_config) on a 24 GB GPU runs
// there: it was estimated as bf16 (54.5 GB), too big for the GPU, and loaded on the
// CPU of a PC with 64 GB of RAM.
func TestBackendForNVFP4(t *testing.T) {
	gamer := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 23 << 30}}, RAMTotal: 64 << 30}
	for _, inConfig := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), catalog.NVFP4ID)
		cfg := catalog.DiffusionGemma26B()
		if inConfig {
			cfg.Quantization = &config.Quantization{QuantMethod: config.ModelOptMethod, QuantAlgo: "NVFP4"}
		}
		if err := cfg.Save(dir); err != nil {
			t.Fatal(err)
		}
		if !inConfig {
			hq := `{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16}}`
			if err := os.WriteFile(filepath.Join(dir, config.HFQuantConfigFile), []byte(hq), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if b := BackendFor("auto", engine.Dir(dir), func() hw.Info { return gamer }); b.Backend != "auto" || b.Why != "" {
			t.Errorf("the NVFP4 export (quantization in config.json: %v) on a 24 GB GPU: %q, %q; want it on the GPU", inConfig, b.Backend, b.Why)
		}
	}
}

// TestBackendFor: auto on a PC that runs on its GPU loads a model too big for the
// GPU on the CPU ("go"), saying why; one that fits, a backend given (which
// detects no hardware), or a PC that runs on the CPU anyway keep the backend
// asked for.
func TestBackendFor(t *testing.T) {
	cfg := config.Tiny()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := weights.Save(weights.Random(cfg, 1), cfg, dir, weights.SaveOptions{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	src := engine.Dir(dir)
	small := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "Tiny GPU", VRAMTotal: 1 << 20}}, RAMTotal: 16 << 30}
	big := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "Big GPU", VRAMTotal: 80 << 30}}, RAMTotal: 16 << 30}
	if b := BackendFor("auto", src, func() hw.Info { return small }); b.Backend != "go" || !strings.Contains(b.Why, "too big for the Tiny GPU's") {
		t.Errorf("auto, too big for the GPU: %q, %q", b.Backend, b.Why)
	}
	busy := big
	busy.GPUs = []hw.GPU{{Name: "Big GPU", VRAMTotal: 80 << 30, VRAMFree: 1 << 20}} // a game holds the rest
	if b := BackendFor("auto", src, func() hw.Info { return busy }); b.Backend != "go" || !strings.Contains(b.Why, "Only 1.0 MB of the Big GPU's 85.9 GB of memory are free now") {
		t.Errorf("auto, the GPU's memory taken: %q, %q", b.Backend, b.Why)
	}
	free := big
	free.GPUs = []hw.GPU{{Name: "Big GPU", VRAMTotal: 80 << 30, VRAMFree: 70 << 30}}
	if b := BackendFor("auto", src, func() hw.Info { return free }); b.Backend != "auto" || b.Why != "" {
		t.Errorf("auto, the GPU free: %q, %q", b.Backend, b.Why)
	}
	for _, c := range []struct {
		spec string
		info hw.Info
	}{
		{"auto", big},
		{"xla", small},
		{"go", small},
		{"auto", hw.Info{Device: "cpu", RAMTotal: 16 << 30}},
	} {
		detected := false
		if b := BackendFor(c.spec, src, func() hw.Info { detected = true; return c.info }); b != (BackendChoice{Backend: c.spec}) {
			t.Errorf("BackendFor(%q, %s GPU) = %+v; want it kept", c.spec, c.info.Device, b)
		}
		if detected && c.spec != "auto" {
			t.Errorf("BackendFor(%q) detected the hardware: only auto needs it", c.spec)
		}
	}
}

// headerOnly writes the first headerBytes of what it is given to f and counts the
// rest: a GGUF file's header, its data left a hole (f truncated to the count).
type headerOnly struct {
	f *os.File
	n int64
}

const headerBytes = 4 << 20

func (h *headerOnly) Write(p []byte) (int, error) {
	if h.n < headerBytes {
		if _, err := h.f.Write(p[:min(int64(len(p)), headerBytes-h.n)]); err != nil {
			return 0, err
		}
	}
	h.n += int64(len(p))
	return len(p), nil
}

// writeGGUFOf writes at path a GGUF file of cfg in mix m — its tensors' names,
// shapes and the mix's types (weights.GGUFType; "": BF16 matrices) — whose data is a
// hole: what the placement reads of a download (its header), at the download's size.
func writeGGUFOf(t *testing.T, path string, cfg *config.Model, m gguf.Mix) {
	t.Helper()
	writeGGUFTyped(t, path, cfg, func(s weights.Spec) gguf.Type {
		typ, ok := weights.GGUFType(cfg, m, s)
		switch {
		case !ok && m == "" && len(s.Shape) >= 2:
			typ = gguf.BF16 // a float file: Unsloth's BF16 GGUF
		case !ok:
			typ = gguf.F32
		}
		return typ
	})
}

// writeGGUFTyped is writeGGUFOf with each tensor in the type typeOf gives it.
func writeGGUFTyped(t *testing.T, path string, cfg *config.Model, typeOf func(weights.Spec) gguf.Type) {
	t.Helper()
	zero := make([]byte, 1<<22)
	var ts []gguf.WriteTensor
	for _, s := range weights.Specs(cfg) {
		wt := gguf.WriteTensor{Name: s.GGUF, Shape: s.Shape, Type: typeOf(s)}
		size, err := wt.Size()
		if err != nil {
			t.Fatal(err)
		}
		wt.Stream = func(w io.Writer) error {
			for left := size; left > 0; left -= int64(len(zero)) {
				if _, err := w.Write(zero[:min(left, int64(len(zero)))]); err != nil {
					return err
				}
			}
			return nil
		}
		ts = append(ts, wt)
	}
	// The full layers' proportional RoPE factors, as llama.cpp's converter writes them
	// (read with the header: the placement checks the file's config as the loader does).
	rf := gguf.RopeFreqValues(cfg)
	raw, err := gguf.Quantize(gguf.F32, rf)
	if err != nil {
		t.Fatal(err)
	}
	ts = append([]gguf.WriteTensor{{Name: gguf.RopeFreqs, Shape: []int{len(rf)}, Type: gguf.F32, Data: raw}}, ts...) // first: its data in the header's 4 MB
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := &headerOnly{f: f}
	if err := gguf.Write(h, gguf.Metadata(cfg, "test"), ts, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(h.n); err != nil {
		t.Fatal(err)
	}
}

// TestBackendForGGUFMix: the placement reads a GGUF download's types from its header
// (weights.ReadGGUFLayout), recognizes its mix, and estimates it as a GPU converts
// it: on a 24 GB GPU Unsloth's Q4_K_M and Q5_K_M run there (int4 and int8, about 17
// GB), its Q8_0 (int8 throughout, about 28 GB) does not, and on a PC with 64 GB of RAM
// is split between the GPU and the CPU, saying why — judged as the Q4_K_M every GGUF
// was, it loaded on the GPU and ran out of its memory; nor does its BF16 file,
// estimated as bf16, which holds fewer layers there.
func TestBackendForGGUFMix(t *testing.T) {
	gamer := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 23 << 30}}, RAMTotal: 64 << 30}
	cfg := catalog.DiffusionGemma26B()
	for _, c := range []struct {
		mix    gguf.Mix
		layers int // on the GPU: 0 all of them
	}{{gguf.Q4KM, 0}, {gguf.Q5KM, 0}, {gguf.Q80M, 22}, {"", 11}} {
		dir := filepath.Join(t.TempDir(), catalog.GGUFIDs[c.mix])
		if err := cfg.Save(dir); err != nil {
			t.Fatal(err)
		}
		writeGGUFOf(t, filepath.Join(dir, catalog.GGUFFile(c.mix)), cfg, c.mix)
		files := os.DirFS(dir)
		want := catalog.GGUFProfile(c.mix)
		if c.mix == "" {
			want = quant.BF16Profile // Unsloth's BF16 GGUF, 51 GB: it was estimated as the 17 GB Q4_K_M
		}
		if p, l := sourceProfile(cfg, files); l.Mix != c.mix || l.IsMix(cfg) != (c.mix != "") || l.IsGGUF() != (c.mix != "") || p != want {
			t.Errorf("%q: read as %q (its mix's own types %v) in profile %s", c.mix, l.Mix, l.IsMix(cfg), p)
		}
		b := BackendFor("auto", engine.Dir(dir), func() hw.Info { return gamer })
		whole := c.layers == 0 && b == BackendChoice{Backend: "auto"}
		split := c.layers > 0 && b.Backend == "auto" && b.DeviceLayers == c.layers && strings.Contains(b.Why, "too big for the RTX 4090's 25.8 GB of memory") &&
			strings.Contains(b.Why, fmt.Sprintf("so %d of its 30 layers run on the GPU", c.layers))
		if !whole && !split {
			t.Errorf("%q on a 24 GB GPU: %+v", c.mix, b)
		}
	}
}

// TestBackendForGGUFOwnTypes: a GGUF file no llama.cpp mix made is placed by its own
// tensors' types. A pure Q4_0 file (llama-quantize --pure), near no mix, was
// estimated as bf16 (53 GB) and sent from a 24 GB GPU to the CPU; it holds its blocks
// there as stored (14.2 GB) and runs on the GPU. A 2-bit file (Q2_K, its embedding Q6_K) was
// priced as the Q4_K_M its embedding matched (17 GB on the CPU: from the disk in 16 GB
// of RAM); it holds about 10.7 there, in memory (tight).
func TestBackendForGGUFOwnTypes(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	pure := filepath.Join(t.TempDir(), "pure")
	if err := cfg.Save(pure); err != nil {
		t.Fatal(err)
	}
	writeGGUFTyped(t, filepath.Join(pure, "model-Q4_0.gguf"), cfg, func(s weights.Spec) gguf.Type {
		if s.Quantizable && len(s.Shape) >= 2 {
			return gguf.Q4_0
		}
		return gguf.F32
	})
	gamer := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 23 << 30}}, RAMTotal: 64 << 30}
	if b := BackendFor("auto", engine.Dir(pure), func() hw.Info { return gamer }); b.Backend != "auto" || b.Why != "" {
		t.Errorf("a pure Q4_0 file on a 24 GB GPU: %q, %q; want it on the GPU", b.Backend, b.Why)
	}
	p, l := sourceProfile(cfg, os.DirFS(pure))
	if !l.IsGGUF() || l.Mix != "" || l.Describe(cfg) != "Q4_0" {
		t.Errorf("the pure Q4_0 file read as mix %q, %q", l.Mix, l.Describe(cfg))
	}
	onGPU, err := Place(cfg, p, l, gamer)
	if err != nil {
		t.Fatal(err)
	}
	if w, file := onGPU.Estimate.Part(fit.PartWeights), fit.GGUFFileBytes(cfg, p, l); w != file || w < 13e9 || w > 15e9 {
		t.Errorf("a pure Q4_0 file's weights on a GPU: %.2f GB, want the file's %.2f (its blocks as stored, 4.5 bits a weight)", float64(w)/1e9, float64(file)/1e9)
	}

	two := filepath.Join(t.TempDir(), "two")
	if err := cfg.Save(two); err != nil {
		t.Fatal(err)
	}
	writeGGUFTyped(t, filepath.Join(two, "model-Q2_K.gguf"), cfg, func(s weights.Spec) gguf.Type {
		switch {
		case s.Name == weights.EmbeddingName:
			return gguf.Q6_K
		case s.Quantizable && len(s.Shape) >= 2 && s.Shape[len(s.Shape)-1]%gguf.QK_K == 0:
			return gguf.Q2_K
		case s.Quantizable && len(s.Shape) >= 2:
			return gguf.Q4_0 // rows no 256-block: llama.cpp's fallback
		}
		return gguf.F32
	})
	p, l = sourceProfile(cfg, os.DirFS(two))
	if l.IsMix(cfg) || l.Describe(cfg) != "Q2_K, Q4_0, Q6_K" {
		t.Errorf("the 2-bit file read as mix %q (its own %v), %q", l.Mix, l.IsMix(cfg), l.Describe(cfg))
	}
	pc := hw.Info{RAMTotal: 16 << 30}
	pl, err := Place(cfg, p, l, pc)
	if err != nil {
		t.Fatal(err)
	}
	w := pl.Estimate.Part(fit.PartWeights)
	if (pl.Verdict != fit.Fits && pl.Verdict != fit.Tight) || w < 9e9 || w > 12e9 {
		t.Errorf("the 2-bit file in 16 GiB of RAM: %s, weights %.2f GB; want it in memory, about 10.7 GB", pl.Verdict, float64(w)/1e9)
	}
	// On a 16 GB GPU it runs with its blocks as stored (the file's 10.5 GB; converted
	// to int4 they had taken 14.4).
	card := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4080", VRAMTotal: 16 << 30, VRAMFree: 15 << 30}}, RAMTotal: 32 << 30}
	if b := BackendFor("auto", engine.Dir(two), func() hw.Info { return card }); b.Backend != "auto" || b.Why != "" {
		t.Errorf("the 2-bit file on a 16 GB GPU: %q, %q; want it on the GPU", b.Backend, b.Why)
	}
	onCard, err := Place(cfg, p, l, card)
	if err != nil {
		t.Fatal(err)
	}
	if w, file := onCard.Estimate.Part(fit.PartWeights), fit.GGUFFileBytes(cfg, p, l); w != file {
		t.Errorf("the 2-bit file's weights on a GPU: %.2f GB, want the file's %.2f", float64(w)/1e9, float64(file)/1e9)
	}
}

// TestPlaceFile: a GGUF file known by its size alone is placed as its layout would
// place it — a Q4_K_M's size gives the Q4_K_M rule's estimate to the byte, on a GPU
// (its blocks as stored) and on the CPU (mapped, its Q6_K embedding held as int8),
// and split between a 12 GB GPU and the CPU the same layers on each and each side's
// estimate (but for rounding) — and JudgeQuants places each quantization of
// Unsloth's repo by its size: on a 16 GB card the Q3_K_M tight on the GPU, the Q4_K_M
// split, 23 of its 30 layers on the GPU, a 52 GB BF16 split too, 6 layers on the GPU
// and the rest on the CPU from the disk (32 GB of RAM); another publisher's repo, of
// dimensions unknown, is left unjudged.
func TestPlaceFile(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	l := weights.MixLayout(gguf.Q4KM)
	size := fit.GGUFFileBytes(cfg, quant.Int4Profile, l)
	for _, info := range []hw.Info{
		{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30}}, RAMTotal: 32 << 30},
		{Device: "cpu", RAMTotal: 32 << 30},
		{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4070", VRAMTotal: 12 << 30}}, RAMTotal: 32 << 30},
	} {
		byLayout, err := Place(cfg, quant.Int4Profile, l, info)
		if err != nil {
			t.Fatal(err)
		}
		bySize, err := PlaceFile(cfg, size, info)
		if err != nil {
			t.Fatal(err)
		}
		near := func(a, b int64) bool { return a-b >= -1 && a-b <= 1 } // a split's shares of the size, rounded
		a, b := byLayout.Estimate, bySize.Estimate
		if !near(a.Total, b.Total) || a.Pageable != b.Pageable || byLayout.Verdict != bySize.Verdict || byLayout.OnGPU() != bySize.OnGPU() {
			t.Errorf("%s: by size %d bytes (%d pageable, %s), by the Q4_K_M's layout %d (%d, %s)", info.Device,
				b.Total, b.Pageable, bySize.Verdict, a.Total, a.Pageable, byLayout.Verdict)
		}
		if sa, sb := byLayout.Split, bySize.Split; (sa != nil) != (len(info.GPUs) > 0 && info.GPUs[0].VRAMTotal < 16<<30) || (sa == nil) != (sb == nil) ||
			sa != nil && (sa.DeviceLayers != sb.DeviceLayers || !near(sa.Host.Total, sb.Host.Total) || !near(sa.Host.Pageable, sb.Host.Pageable) || sa.Verdict != sb.Verdict) {
			t.Errorf("%s: split by size %+v, by the Q4_K_M's layout %+v", info.Device, sb, sa)
		}
	}
	if _, err := PlaceFile(cfg, 0, hw.Info{RAMTotal: 32 << 30}); err == nil {
		t.Error("a file of unknown size placed")
	}

	rtx4080 := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4080", VRAMTotal: 16 << 30}}, RAMTotal: 32 << 30}
	c := &QuantChoice{Repo: "unsloth/diffusiongemma-26B-A4B-it-GGUF", Quants: []Quant{
		{Name: "Q3_K_M", Size: fit.GGUFFileBytes(cfg, quant.Int4Profile, weights.MixLayout(gguf.Q3KM))},
		{Name: "Q4_K_M", Size: size}, {Name: "BF16", Size: 51_600_000_000}}}
	JudgeQuants(c, rtx4080)
	q3, q4, bf16 := c.Quants[0].Fit, c.Quants[1].Fit, c.Quants[2].Fit
	switch {
	case q3 == nil || q4 == nil || bf16 == nil:
		t.Fatalf("unjudged: %+v", c.Quants)
	case !q3.OnGPU() || q3.Verdict != fit.Tight:
		t.Errorf("Q3_K_M on a 16 GB card: on the GPU %v, %s", q3.OnGPU(), q3.Verdict)
	case q4.Split == nil || q4.Split.DeviceLayers != 23 || q4.Verdict != fit.Fits || q4.Split.Verdict != fit.Fits:
		t.Errorf("Q4_K_M on a 16 GB card: %s, %s (%q)", q4.Where(), q4.Verdict, q4.Because())
	case bf16.Split == nil || bf16.Split.DeviceLayers != 6 || bf16.Split.Verdict != fit.FromDisk:
		t.Errorf("BF16 on a 16 GB card and 32 GB of RAM: %s, %s (%q)", bf16.Where(), bf16.Verdict, bf16.Because())
	}
	if msg := c.Error(); !strings.Contains(msg, "Q3_K_M (13.3 GB, tight on the GPU), Q4_K_M (16.8 GB, 23 of 30 layers on the GPU), BF16 (51.6 GB, 6 of 30 layers on the GPU, the rest from the disk)") {
		t.Errorf("the choice says %q", msg)
	}
	other := &QuantChoice{Repo: "acme/other-GGUF", Quants: []Quant{{Name: "Q4_K_M", Size: size}}}
	if JudgeQuants(other, rtx4080); other.Quants[0].Fit != nil {
		t.Error("a repo of unknown dimensions judged")
	}
}

// TestFitTableSaysWhereItRuns: `darkroom hw`'s fit table says where auto runs each
// catalog model on the PC, as Place does: on a 12 GB card with 32 GB of RAM the 26B
// Q4_K_M splits ("16 of 30 layers on the GPU"), the Mini fits the GPU whole.
func TestFitTableSaysWhereItRuns(t *testing.T) {
	info := hw.Info{GPUs: []hw.GPU{{Name: "RTX 4070", VRAMTotal: 12 << 30}}, RAMTotal: 32 << 30}
	rows, err := FitTable(info, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var split, mini bool
	for _, r := range rows {
		switch {
		case r.Model == catalog.GGUFID:
			split = true
			if r.Where != "16 of 30 layers on the GPU" {
				t.Errorf("%s %s: %q", r.Model, r.Profile, r.Where)
			}
		case r.Model == catalog.MiniID:
			mini = true
			if r.Where != "fits the GPU" {
				t.Errorf("the Mini: %q", r.Where)
			}
		}
		if r.Where == "" {
			t.Errorf("%s %s: no placement", r.Model, r.Profile)
		}
	}
	if !split || !mini {
		t.Errorf("rows for the 26B Q4_K_M %v, the Mini %v", split, mini)
	}
}
