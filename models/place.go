package models

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"

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
// (judged against the first GPU's VRAM, tight included); else split between the
// GPU and the CPU where its first layers fit the GPU and the rest the RAM (Split,
// as llama.cpp's --n-gpu-layers runs a model too big for a GPU); else in RAM, on
// the CPU. Most gaming GPUs hold 8–16 GB, and the 26B at int4 needs about 18
// there: such a PC runs most of its layers on the GPU and the rest on the CPU —
// the app's auto backend loads it so (the Split's sentence said on its model line)
// and the Library judges both parts — instead of "won't fit" on a PC that runs it,
// an engine that would load it on the GPU and run out of memory, or all of it on
// the CPU, many times slower.
type Placement struct {
	// Estimate, Budget and Verdict are the model's memory where it runs, judged: the
	// GPU's or the RAM's, or for a split the GPU's part (Split has the RAM's).
	Estimate *fit.Estimate
	Budget   fit.Budget
	Verdict  fit.Verdict
	// CPUBecause, where the model runs on the CPU of a PC with a GPU because it is
	// too big for the GPU, says so in one sentence; "" otherwise.
	CPUBecause string
	// Split, where the model is too big for the GPU but its first layers fit there
	// and the rest in RAM, is how it is split between the two; nil otherwise.
	Split *Split
}

// Split is a model split between a GPU and the CPU (engine.Options.DeviceLayers):
// the GPU holds its first DeviceLayers of its Layers layers and everything not a
// layer's (the embedding and the head tied to it, the self-conditioning MLP, the
// final norm), and runs the sampler; the CPU runs the other layers, from RAM. Each
// denoising step passes the canvas's hidden state from one to the other and back.
type Split struct {
	DeviceLayers, Layers int
	// Host is the CPU's part's estimate (fit.Runtime.DeviceLayers), judged Verdict
	// against RAM: fits, tight, or from the disk.
	Host    *fit.Estimate
	RAM     fit.Budget
	Verdict fit.Verdict
	// Because says in one sentence that the model is split and why, as
	// Placement.CPUBecause says a move to the CPU.
	Because string
}

// OnGPU reports whether the placement is the GPU's: the whole model on it, or a
// split's first layers (Split).
func (p Placement) OnGPU() bool { return p.Budget.Kind == "gpu" }

// Because is why a model that would run on a PC's GPU runs on the CPU
// (CPUBecause), all of it or the layers a split leaves it (Split.Because); "" where
// it runs all on the GPU, or the PC has none.
func (p Placement) Because() string {
	if p.Split != nil {
		return p.Split.Because
	}
	return p.CPUBecause
}

// Overall is the verdict on the whole model where it runs: Verdict, or for a split
// the worse of its GPU part's and its RAM part's (fits, then tight, then from the
// disk).
func (p Placement) Overall() fit.Verdict {
	if p.Split == nil {
		return p.Verdict
	}
	rank := map[fit.Verdict]int{fit.Fits: 0, fit.Tight: 1, fit.FromDisk: 2, fit.WontFit: 3}
	if rank[p.Split.Verdict] > rank[p.Verdict] {
		return p.Split.Verdict
	}
	return p.Verdict
}

// Where says in a few words where the model would run and how it fits: on the GPU,
// fitting or tight; split between the GPU and the CPU; on the CPU where the PC's GPU
// is too small for it; in the RAM, from the disk, or nowhere (a quantization's
// button, a choice's line).
func (p Placement) Where() string {
	switch {
	case p.Verdict == fit.WontFit:
		return "too big for this PC"
	case p.Split != nil && p.Split.Verdict == fit.FromDisk:
		return fmt.Sprintf("%d of %d layers on the GPU, the rest from the disk", p.Split.DeviceLayers, p.Split.Layers)
	case p.Split != nil:
		return fmt.Sprintf("%d of %d layers on the GPU", p.Split.DeviceLayers, p.Split.Layers)
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
	tooBig := fmt.Sprintf("It is too big for the %s's %s of memory (it needs about %s there)",
		first.Name, store.FormatBytes(first.Bytes), store.FormatBytes(est.Total))
	split, ok, err := splitOn(cfg, p, rt, first, budgets)
	if err != nil {
		return Placement{}, err
	}
	if ok {
		split.Split.Because = tooBig + ", so " + split.Split.runs() + ": slower than all on the GPU, faster than all on the CPU"
		return split, nil
	}
	if cpu, ok := inRAM(cfg, p, rt, budgets); ok {
		cpu.CPUBecause = fmt.Sprintf("%s, so it runs on the CPU, %s: slower", tooBig, fromRAM(cpu.Verdict))
		return cpu, nil
	}
	return pl, nil
}

// fromRAM says where the CPU reads weights a RAM verdict v leaves it: from RAM, or
// from RAM and the disk (fit.FromDisk).
func fromRAM(v fit.Verdict) string {
	if v == fit.FromDisk {
		return "from RAM and the disk"
	}
	return "from RAM"
}

// runs says where a split's layers run: "17 of its 30 layers run on the GPU and
// the rest on the CPU, from RAM".
func (s *Split) runs() string {
	verb := "run"
	if s.DeviceLayers == 1 {
		verb = "runs"
	}
	return fmt.Sprintf("%d of its %d layers %s on the GPU and the rest on the CPU, %s", s.DeviceLayers, s.Layers, verb, fromRAM(s.Verdict))
}

// splitOn is cfg under p (its weights as rt says) split between the GPU gpu and the
// RAM, the last of budgets (Budgets): the most layers whose GPU part fits gpu — or,
// where no number of them fits, is tight there — with the rest's CPU part running
// in RAM (fits, tight, or from the disk, as inRAM takes it). The GPU part grows with
// its layers and the CPU part shrinks, so the most that fit the GPU are the ones the
// RAM holds best. ok false where the GPU holds not even one layer beside the rest of
// the model, the RAM not the rest, the PC's RAM is unknown, or the model has one
// layer.
func splitOn(cfg *config.Model, p quant.Profile, rt fit.Runtime, gpu fit.Budget, budgets []fit.Budget) (pl Placement, ok bool, err error) {
	ram := budgets[len(budgets)-1]
	layers := cfg.Text.NumHiddenLayers
	if ram.Kind != "ram" || layers < 2 {
		return Placement{}, false, nil
	}
	device := func(k int) (*fit.Estimate, error) {
		rt.GPU, rt.DeviceLayers = true, k
		return fit.Compute(cfg, p, rt)
	}
	// most is the largest k in [1, layers) whose GPU part is judged good, 0 for
	// none: the part grows with k, so the good ones are a prefix.
	most := func(good func(fit.Verdict) bool) int {
		return sort.Search(layers-1, func(i int) bool {
			e, cerr := device(i + 1)
			if cerr != nil {
				err = cerr
				return true
			}
			return !good(fit.JudgeEstimate(e, gpu))
		})
	}
	k := most(func(v fit.Verdict) bool { return v == fit.Fits })
	if k == 0 && err == nil {
		k = most(func(v fit.Verdict) bool { return v != fit.WontFit })
	}
	if k == 0 || err != nil {
		return Placement{}, false, err
	}
	dev, err := device(k)
	if err != nil {
		return Placement{}, false, err
	}
	rt.GPU, rt.DeviceLayers = false, k
	host, err := fit.Compute(cfg, p, rt)
	if err != nil {
		return Placement{}, false, err
	}
	v := fit.JudgeEstimate(host, ram)
	if v == fit.WontFit {
		return Placement{}, false, nil
	}
	return Placement{Estimate: dev, Budget: gpu, Verdict: fit.JudgeEstimate(dev, gpu),
		Split: &Split{DeviceLayers: k, Layers: layers, Host: host, RAM: ram, Verdict: v}}, true, nil
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

// BackendChoice is how BackendFor has a model load: the fields of engine.Options it
// sets, and why where it does not run the whole model on the GPU auto would use.
type BackendChoice struct {
	Backend string // engine.Options.Backend
	// DeviceLayers is engine.Options.DeviceLayers: the layers on the GPU where the
	// model is split between it and the CPU (Placement.Split); 0 for all of them.
	DeviceLayers int
	// Why, where the model runs on the CPU, all of it or the layers a split leaves
	// it, on a PC whose GPU auto would run it on, says why in one sentence; ""
	// otherwise.
	Why string
}

// BackendFor is how a model loads on the PC detect describes (called only where
// spec is auto): spec as given, but where spec is auto, Darkroom runs on the GPU
// (hw.Info.Device) and the model is too big for it, split between the GPU and the
// CPU where its first layers fit the GPU and the rest the RAM (Placement.Split),
// else the CPU's ("go") where it fits the RAM, with the sentence saying why — and
// so too where the GPU holds it, or the split's part, but has too little free now
// (its VRAMFree, when known: a game running beside Darkroom, or the Race's first
// copy of the model), where loading it there would run out of memory: then split
// to what is free, else on the CPU. A model whose dimensions cannot be read before
// loading (a GGUF without config.json) keeps spec.
func BackendFor(spec string, src engine.Source, detect func() hw.Info) BackendChoice {
	keep := BackendChoice{Backend: spec}
	if backend.Resolve(spec) != backend.Auto {
		return keep
	}
	info := detect()
	if info.Device != "gpu" {
		return keep
	}
	files, err := src.Files()
	if err != nil {
		return keep
	}
	cfg, err := config.LoadFS(files, ".")
	if err != nil {
		return keep
	}
	p, l := sourceProfile(cfg, files)
	pl, err := Place(cfg, p, l, info)
	switch {
	case err != nil:
		return keep
	case pl.CPUBecause != "":
		return BackendChoice{Backend: "go", Why: pl.CPUBecause}
	case pl.Split != nil:
		keep = BackendChoice{Backend: spec, DeviceLayers: pl.Split.DeviceLayers, Why: pl.Split.Because}
	}
	if !pl.OnGPU() || len(info.GPUs) == 0 || info.GPUs[0].VRAMFree <= 0 || pl.Estimate.Total <= info.GPUs[0].VRAMFree {
		return keep
	}
	// It fits the GPU, or its split's part does, but not what is free of it now: a
	// split to what is free, else the RAM, if it fits there (else as placed).
	g := info.GPUs[0]
	busy := fmt.Sprintf("Only %s of the %s's %s of memory are free now (the rest is in use: by another program, a game perhaps, or by a model Darkroom holds there already)",
		store.FormatBytes(g.VRAMFree), g.Name, store.FormatBytes(g.VRAMTotal))
	if pl.Split == nil {
		busy += " and it needs about " + store.FormatBytes(pl.Estimate.Total) + " there"
	}
	rt, budgets := fit.Runtime{GGUF: l}, Budgets(info)
	free := fit.Budget{Kind: "gpu", Name: g.Name, Bytes: g.VRAMFree}
	if split, ok, err := splitOn(cfg, p, rt, free, budgets); err == nil && ok {
		s := split.Split
		return BackendChoice{Backend: spec, DeviceLayers: s.DeviceLayers,
			Why: busy + ", so " + s.runs() + ": slower; close that program and start Darkroom again to run more of it on the GPU"}
	}
	cpu, ok := inRAM(cfg, p, rt, budgets)
	if !ok {
		return keep
	}
	return BackendChoice{Backend: "go", Why: busy + ", so it runs on the CPU, " + fromRAM(cpu.Verdict) +
		": slower; close that program and start Darkroom again to run it on the GPU"}
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
