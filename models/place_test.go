package models

import (
	"io"
	"os"
	"path/filepath"
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
)

// TestPlace: the 26B at int4 (about 18 GB on a GPU) runs on a 24 GB GPU; on a
// PC whose GPU holds 12 GB it runs on the CPU, from 64 GB of RAM, judged there
// and saying why — from 16 GB of RAM and the disk (fit.FromDisk); where neither
// holds it, it is the GPU's won't fit; a PC with
// no GPU judges the RAM, with nothing to explain.
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
		why     string
	}{
		{"24 GB GPU", gpu(24<<30, 64<<30), "gpu", fit.Fits, ""},
		{"12 GB GPU, 64 GB RAM", gpu(12<<30, 64<<30), "ram", fit.Fits, "too big for the RTX 4070's 12.9 GB of memory"},
		{"12 GB GPU, 16 GB RAM", gpu(12<<30, 16<<30), "ram", fit.FromDisk, "so it runs on the CPU, from RAM and the disk: slower"},
		{"12 GB GPU, 8 GB RAM", gpu(12<<30, 8<<30), "gpu", fit.WontFit, ""},
		{"no GPU, 64 GB RAM", hw.Info{RAMTotal: 64 << 30}, "ram", fit.Fits, ""},
	} {
		pl, err := Place(cfg, quant.Int4Profile, weights.GGUFLayout{}, c.info)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if pl.Budget.Kind != c.kind || pl.Verdict != c.verdict || (c.why == "") != (pl.CPUBecause == "") || !strings.Contains(pl.CPUBecause, c.why) {
			t.Errorf("%s: on %s, %s, %q; want %s, %s, %q", c.name, pl.Budget.Kind, pl.Verdict, pl.CPUBecause, c.kind, c.verdict, c.why)
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

// TestBackendForGGUF: the Library's GGUF download (a .gguf file beside Google's bf16
// config.json) on a 24 GB GPU runs there: it was estimated as bf16 (53 GB), too big
// for the GPU, and on a PC with 64 GB of RAM loaded on the CPU instead.
func TestBackendForGGUF(t *testing.T) {
	dir := filepath.Join(t.TempDir(), catalog.GGUFID)
	if err := catalog.DiffusionGemma26B().Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, catalog.GGUFFile(gguf.Q4KM)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gamer := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 23 << 30}}, RAMTotal: 64 << 30}
	if spec, why := BackendFor("auto", engine.Dir(dir), func() hw.Info { return gamer }); spec != "auto" || why != "" {
		t.Errorf("the GGUF on a 24 GB GPU: %q, %q; want it on the GPU", spec, why)
	}
	small := gamer
	small.GPUs = []hw.GPU{{Name: "RTX 4060", VRAMTotal: 8 << 30}}
	if spec, why := BackendFor("auto", engine.Dir(dir), func() hw.Info { return small }); spec != "go" || !strings.Contains(why, "too big for the RTX 4060's") {
		t.Errorf("the GGUF on an 8 GB GPU: %q, %q; want the CPU, saying why", spec, why)
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
		if spec, why := BackendFor("auto", engine.Dir(dir), func() hw.Info { return gamer }); spec != "auto" || why != "" {
			t.Errorf("the NVFP4 export (quantization in config.json: %v) on a 24 GB GPU: %q, %q; want it on the GPU", inConfig, spec, why)
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
	if spec, why := BackendFor("auto", src, func() hw.Info { return small }); spec != "go" || !strings.Contains(why, "too big for the Tiny GPU's") {
		t.Errorf("auto, too big for the GPU: %q, %q", spec, why)
	}
	busy := big
	busy.GPUs = []hw.GPU{{Name: "Big GPU", VRAMTotal: 80 << 30, VRAMFree: 1 << 20}} // a game holds the rest
	if spec, why := BackendFor("auto", src, func() hw.Info { return busy }); spec != "go" || !strings.Contains(why, "Only 1.0 MB of the Big GPU's 85.9 GB of memory are free now") {
		t.Errorf("auto, the GPU's memory taken: %q, %q", spec, why)
	}
	free := big
	free.GPUs = []hw.GPU{{Name: "Big GPU", VRAMTotal: 80 << 30, VRAMFree: 70 << 30}}
	if spec, why := BackendFor("auto", src, func() hw.Info { return free }); spec != "auto" || why != "" {
		t.Errorf("auto, the GPU free: %q, %q", spec, why)
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
		if spec, why := BackendFor(c.spec, src, func() hw.Info { detected = true; return c.info }); spec != c.spec || why != "" {
			t.Errorf("BackendFor(%q, %s GPU) = %q, %q; want it kept", c.spec, c.info.Device, spec, why)
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
// runs on the CPU, saying why — judged as the Q4_K_M every GGUF was, it loaded on the
// GPU and ran out of its memory; nor does its BF16 file, estimated as bf16.
func TestBackendForGGUFMix(t *testing.T) {
	gamer := hw.Info{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 23 << 30}}, RAMTotal: 64 << 30}
	cfg := catalog.DiffusionGemma26B()
	for _, c := range []struct {
		mix   gguf.Mix
		onGPU bool
	}{{gguf.Q4KM, true}, {gguf.Q5KM, true}, {gguf.Q80M, false}, {"", false}} {
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
		spec, why := BackendFor("auto", engine.Dir(dir), func() hw.Info { return gamer })
		if c.onGPU && (spec != "auto" || why != "") || !c.onGPU && (spec != "go" || !strings.Contains(why, "too big for the RTX 4090's")) {
			t.Errorf("%s on a 24 GB GPU: %q, %q", c.mix, spec, why)
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
	if spec, why := BackendFor("auto", engine.Dir(pure), func() hw.Info { return gamer }); spec != "auto" || why != "" {
		t.Errorf("a pure Q4_0 file on a 24 GB GPU: %q, %q; want it on the GPU", spec, why)
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
	if spec, why := BackendFor("auto", engine.Dir(two), func() hw.Info { return card }); spec != "auto" || why != "" {
		t.Errorf("the 2-bit file on a 16 GB GPU: %q, %q; want it on the GPU", spec, why)
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
// (its blocks as stored) and on the CPU (mapped, its Q6_K embedding held as int8) —
// and JudgeQuants places each quantization of Unsloth's repo by its size: on a 16 GB
// card the Q3_K_M tight on the GPU, the Q4_K_M on the CPU, a 52 GB BF16 on the CPU
// from the disk (32 GB of RAM);
// another publisher's repo, of dimensions unknown, is left unjudged.
func TestPlaceFile(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	l := weights.MixLayout(gguf.Q4KM)
	size := fit.GGUFFileBytes(cfg, quant.Int4Profile, l)
	for _, info := range []hw.Info{
		{Device: "gpu", GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30}}, RAMTotal: 32 << 30},
		{Device: "cpu", RAMTotal: 32 << 30},
	} {
		byLayout, err := Place(cfg, quant.Int4Profile, l, info)
		if err != nil {
			t.Fatal(err)
		}
		bySize, err := PlaceFile(cfg, size, info)
		if err != nil {
			t.Fatal(err)
		}
		a, b := byLayout.Estimate, bySize.Estimate
		if a.Total != b.Total || a.Pageable != b.Pageable || byLayout.Verdict != bySize.Verdict || byLayout.OnGPU() != bySize.OnGPU() {
			t.Errorf("%s: by size %d bytes (%d pageable, %s), by the Q4_K_M's layout %d (%d, %s)", info.Device,
				b.Total, b.Pageable, bySize.Verdict, a.Total, a.Pageable, byLayout.Verdict)
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
	case q4.OnGPU() || q4.CPUBecause == "" || q4.Verdict != fit.Fits:
		t.Errorf("Q4_K_M on a 16 GB card: on the GPU %v, %s (%q)", q4.OnGPU(), q4.Verdict, q4.CPUBecause)
	case bf16.OnGPU() || bf16.Verdict != fit.FromDisk:
		t.Errorf("BF16 on a 16 GB card and 32 GB of RAM: on the GPU %v, %s", bf16.OnGPU(), bf16.Verdict)
	}
	if msg := c.Error(); !strings.Contains(msg, "Q3_K_M (13.3 GB, tight on the GPU), Q4_K_M (16.8 GB, on the CPU: too big for the GPU), BF16 (51.6 GB, from the disk, slowly)") {
		t.Errorf("the choice says %q", msg)
	}
	other := &QuantChoice{Repo: "acme/other-GGUF", Quants: []Quant{{Name: "Q4_K_M", Size: size}}}
	if JudgeQuants(other, rtx4080); other.Quants[0].Fit != nil {
		t.Error("a repo of unknown dimensions judged")
	}
}
