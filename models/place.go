package models

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/speed"
	"github.com/darkroomlabs/darkroom/models/store"
)

// Placement is where a model runs on a PC, and its memory estimate there: on the
// GPU where the PC has an NVIDIA GPU and the model is not too big for its memory
// (judged against the first GPU's VRAM, tight included), else in RAM, on the
// CPU. Most gaming GPUs hold 8–16 GB, and the 26B at int4 needs about 18 there:
// such a PC runs it on the CPU, from RAM, where it fits — the app's auto backend
// loads it so (CPUBecause said on its model line) and the Library judges it
// against the RAM, instead of "won't fit" on a PC that runs it, and an engine
// that would load it on the GPU and run out of memory.
type Placement struct {
	Estimate *fit.Estimate
	Budget   fit.Budget
	Verdict  fit.Verdict
	// CPUBecause, where the model runs on the CPU of a PC with a GPU because it is
	// too big for the GPU, says so in one sentence; "" otherwise.
	CPUBecause string
}

// OnGPU reports whether the placement is the GPU's.
func (p Placement) OnGPU() bool { return p.Budget.Kind == "gpu" }

// Where says in a few words where the model would run and how it fits: on the GPU,
// fitting or tight; on the CPU where the PC's GPU is too small for it; in the RAM,
// from the disk, or nowhere (a quantization's button, a choice's line).
func (p Placement) Where() string {
	switch {
	case p.Verdict == fit.WontFit:
		return "too big for this PC"
	case p.OnGPU() && p.Verdict == fit.Tight:
		return "tight on the GPU"
	case p.OnGPU():
		return "fits the GPU"
	case p.Verdict == fit.FromDisk:
		return "from the disk, slowly"
	case p.CPUBecause != "":
		return "on the CPU: too big for the GPU"
	case p.Verdict == fit.Tight:
		return "tight in the RAM"
	}
	return "fits the RAM"
}

// Place is cfg under profile p — a GGUF file's blocks laid out as l where it is one
// (a mix's rule, or the file's own types), p its stand-in (catalog.GGUFProfile) — on
// the PC info describes (see Placement). A model too big for both the GPU and the RAM
// is placed on the GPU, judged won't fit.
func Place(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, info hw.Info) (Placement, error) {
	return place(cfg, p, fit.Runtime{GGUF: l}, info)
}

// PlaceFile is Place for a GGUF file of cfg known only by its size (fit.Runtime's
// FileBytes): a quantization of a repo offered before any of it downloads.
func PlaceFile(cfg *config.Model, size int64, info hw.Info) (Placement, error) {
	if size <= 0 {
		return Placement{}, errors.New("the file's size is unknown")
	}
	return place(cfg, quant.Int4Profile, fit.Runtime{FileBytes: size}, info)
}

// place is Place with what rt says of the weights (its GPU set here).
func place(cfg *config.Model, p quant.Profile, rt fit.Runtime, info hw.Info) (Placement, error) {
	budgets := Budgets(info)
	if len(budgets) == 0 {
		return Placement{}, errors.New("this PC's memory is unknown")
	}
	first := budgets[0]
	rt.GPU = first.Kind == "gpu"
	est, err := fit.Compute(cfg, p, rt)
	if err != nil {
		return Placement{}, err
	}
	pl := Placement{Estimate: est, Budget: first, Verdict: fit.JudgeEstimate(est, first)}
	if first.Kind != "gpu" || pl.Verdict != fit.WontFit {
		return pl, nil
	}
	if cpu, ok := inRAM(cfg, p, rt, budgets); ok {
		from := "from RAM"
		if cpu.Verdict == fit.FromDisk {
			from = "from RAM and the disk"
		}
		cpu.CPUBecause = fmt.Sprintf("It is too big for the %s's %s of memory (it needs about %s there), so it runs on the CPU, %s: slower",
			first.Name, store.FormatBytes(first.Bytes), store.FormatBytes(est.Total), from)
		return cpu, nil
	}
	return pl, nil
}

// inRAM is cfg under p (its weights as rt says) placed in the RAM, the last of
// budgets (Budgets), on the CPU's estimate, where it runs there (tight and from the disk included); ok false
// where it does not, or the PC's RAM is unknown.
func inRAM(cfg *config.Model, p quant.Profile, rt fit.Runtime, budgets []fit.Budget) (pl Placement, ok bool) {
	ram := budgets[len(budgets)-1]
	if ram.Kind != "ram" {
		return Placement{}, false
	}
	rt.GPU = false
	cpu, err := fit.Compute(cfg, p, rt)
	if err != nil {
		return Placement{}, false
	}
	v := fit.JudgeEstimate(cpu, ram)
	if v == fit.WontFit {
		return Placement{}, false
	}
	return Placement{Estimate: cpu, Budget: ram, Verdict: v}, true
}

// BackendFor is the backend a model loads with on the PC detect describes
// (called only where spec is auto): spec as given, but where spec is auto,
// Darkroom runs on the GPU (hw.Info.Device) and the model is too big for it but
// fits the RAM (Place), the CPU's ("go"), with the sentence saying why
// (Placement.CPUBecause) — and so too where the GPU holds it but has too little
// free now (its VRAMFree, when known: a game running beside Darkroom, or the
// Race's first copy of the model), where loading it there would run out of
// memory. A model whose dimensions cannot be read before loading (a GGUF without
// config.json) keeps spec.
func BackendFor(spec string, src engine.Source, detect func() hw.Info) (string, string) {
	if backend.Resolve(spec) != backend.Auto {
		return spec, ""
	}
	info := detect()
	if info.Device != "gpu" {
		return spec, ""
	}
	files, err := src.Files()
	if err != nil {
		return spec, ""
	}
	cfg, err := config.LoadFS(files, ".")
	if err != nil {
		return spec, ""
	}
	p, l := sourceProfile(cfg, files)
	pl, err := Place(cfg, p, l, info)
	switch {
	case err != nil:
		return spec, ""
	case pl.CPUBecause != "":
		return "go", pl.CPUBecause
	case !pl.OnGPU() || len(info.GPUs) == 0 || info.GPUs[0].VRAMFree <= 0 || pl.Estimate.Total <= info.GPUs[0].VRAMFree:
		return spec, ""
	}
	// It fits the GPU, but not what is free of it now: the RAM, if it fits there.
	g := info.GPUs[0]
	if _, ok := inRAM(cfg, p, fit.Runtime{GGUF: l}, Budgets(info)); !ok {
		return spec, ""
	}
	return "go", fmt.Sprintf("Only %s of the %s's %s of memory are free now (the rest is in use: by another program, a game perhaps, or by a model Darkroom holds there already) "+
		"and it needs about %s there, so it runs on the CPU, from RAM: slower; close that program and start Darkroom again to run it on the GPU",
		store.FormatBytes(g.VRAMFree), g.Name, store.FormatBytes(g.VRAMTotal), store.FormatBytes(pl.Estimate.Total))
}

// sourceProfile is the profile a model's files are estimated in, and the layout of
// their GGUF file's blocks (zero: none): a directory holding a .gguf file (the
// Library's GGUF download, whose config.json is Google's bf16 one; any other GGUF of
// the model) is priced by its tensors' own types (weights.ReadGGUFLayout), with
// catalog.GGUFProfile's stand-in for the mix nearest them — a file of float tensors
// is estimated as bf16, one that cannot be read as the Library's Q4_K_M —; any
// other, its config.json's profile (speed.ProfileOf). Estimated as bf16, a 17 GB GGUF
// on a 24 GB GPU read as 53 GB, too big for the GPU, and ran on the CPU where the RAM
// held that much; estimated as its nearest mix, a 2-bit file was priced as a 4-bit
// one, and a pure Q4_0 file, near no mix, as bf16.
func sourceProfile(cfg *config.Model, files fs.FS) (quant.Profile, weights.GGUFLayout) {
	if m, _ := fs.Glob(files, "*.gguf"); len(m) > 0 {
		for _, name := range m {
			if weights.IsProjectorGGUF(name) {
				continue
			}
			switch l, err := weights.ReadGGUFLayout(files, name, cfg); {
			case err != nil:
				return catalog.GGUFProfile(gguf.Q4KM), weights.MixLayout(gguf.Q4KM) // unreadable here: as the Library's own download
			case !l.Quantized():
				return quant.BF16Profile, weights.GGUFLayout{} // float tensors: as the bf16 checkpoint it holds
			default:
				return catalog.GGUFProfile(l.Mix), l
			}
		}
	}
	return speed.ProfileOf(cfg), weights.GGUFLayout{}
}
