package models

import (
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
		pl, err := Place(cfg, quant.Int4Profile, "", c.info)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if pl.Budget.Kind != c.kind || pl.Verdict != c.verdict || (c.why == "") != (pl.CPUBecause == "") || !strings.Contains(pl.CPUBecause, c.why) {
			t.Errorf("%s: on %s, %s, %q; want %s, %s, %q", c.name, pl.Budget.Kind, pl.Verdict, pl.CPUBecause, c.kind, c.verdict, c.why)
		}
	}
	if _, err := Place(cfg, quant.Int4Profile, "", hw.Info{}); err == nil {
		t.Error("a PC whose memory is unknown was placed")
	}
	// The GGUF download on the CPU holds its file's blocks (its Q6_K embedding as
	// int8 in groups of 32): more than the int4 profile it stands on, as darkroom hw
	// says — tight in 24 GiB of RAM where the int4 profile fits. The Library judged
	// it as the int4 profile.
	ram := hw.Info{RAMTotal: 24 << 30}
	asInt4, err := Place(cfg, catalog.GGUFProfile, "", ram)
	if err != nil {
		t.Fatal(err)
	}
	gguf, err := Place(cfg, catalog.GGUFProfile, gguf.Q4KM, ram)
	if err != nil {
		t.Fatal(err)
	}
	if asInt4.Verdict != fit.Fits || gguf.Verdict != fit.Tight || gguf.Estimate.Total <= asInt4.Estimate.Total {
		t.Errorf("in 24 GiB of RAM: the int4 profile %s (%d B), the GGUF %s (%d B)", asInt4.Verdict, asInt4.Estimate.Total, gguf.Verdict, gguf.Estimate.Total)
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
