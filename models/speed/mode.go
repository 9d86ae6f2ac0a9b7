package speed

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// Choice is the mode a generation runs in when the user did not pick one, and why.
type Choice struct {
	Mode   engine.Mode `json:"mode"`
	Reason string      `json:"reason"`
}

// Choose picks the default mode of catalog entry e's chats and API answers.
// Where both modes write equally well (the catalog's ModesEqual, DiffusionGemma)
// it is the faster one on this machine by est, diffusion with no estimate;
// otherwise it is the mode the entry says its answers read better in (ChatMode:
// Darkroom Mini 2's printer), else diffusion, the mode Darkroom's models are made
// for.
func Choose(e catalog.Entry, est *Estimate) Choice {
	if !e.ModesEqual {
		if e.ChatMode == string(engine.AR) {
			return Choice{engine.AR, "the printer (AR): " + e.ChatModeWhy}
		}
		if e.ChatMode == string(engine.Diffusion) && e.ChatModeWhy != "" {
			return Choice{engine.Diffusion, "the polaroid (diffusion): " + e.ChatModeWhy}
		}
		return Choice{engine.Diffusion, "the polaroid (diffusion): this model writes better that way"}
	}
	if !est.Known() {
		why := "its speed here is unknown"
		if est != nil {
			why = est.Unknown
		}
		return Choice{engine.Diffusion, "the polaroid (diffusion), the default: " + why}
	}
	ar, d := est.AR.TokensPerS, est.Diffusion.TokensPerS
	if ar > d {
		return Choice{engine.AR, fmt.Sprintf("the printer (AR): faster on this machine, about %s tokens/s against %s for the polaroid",
			Rate(ar), Rate(d))}
	}
	return Choice{engine.Diffusion, fmt.Sprintf("the polaroid (diffusion): faster on this machine, about %s tokens/s against %s for the printer",
		Rate(d), Rate(ar))}
}

// Name is a mode's name on screen: "printer" or "polaroid".
func Name(m engine.Mode) string {
	if m == engine.AR {
		return "printer"
	}
	return "polaroid"
}

// Why says in one sentence why mode winner is the faster here, from the
// estimate's numbers: the canvas's compute against one token's memory read.
func Why(est *Estimate, winner engine.Mode) string {
	if !est.Known() {
		return ""
	}
	return fmt.Sprintf("The %s wins here: %s.", Name(winner), Because(est))
}

// Because is the estimate's numbers in a clause: what a canvas costs at this
// machine's GEMM rate, and what one token reads at its memory rate.
func Because(est *Estimate) string {
	if !est.Known() {
		return ""
	}
	d, ar := est.Diffusion, est.AR
	canvas := fmt.Sprintf("a %d-token canvas costs %s (%.0f steps, %s), %s a token", est.Canvas, seconds(d.UnitSeconds),
		est.Workload.Steps, flops(d.UnitFLOPs), seconds(d.UnitSeconds/float64(est.Canvas)))
	token := fmt.Sprintf("one token reads %s of weights in %s (%s/s; memory reads %s/s here)", bytes(ar.UnitBytes),
		seconds(ar.UnitSeconds), bytes(ar.UnitBytes/ar.UnitSeconds), bytes(est.MemRead))
	return fmt.Sprintf("this CPU does %s/s, so %s, while %s", flops(est.GEMM), canvas, token)
}

// Rate formats a tokens/s figure with the precision it deserves.
func Rate(tps float64) string {
	switch {
	case tps >= 10:
		return fmt.Sprintf("%.0f", tps)
	case tps >= 1:
		return fmt.Sprintf("%.1f", tps)
	}
	return fmt.Sprintf("%.2g", tps)
}

func seconds(s float64) string {
	switch {
	case s >= 10:
		return fmt.Sprintf("%.0f s", s)
	case s >= 1:
		return fmt.Sprintf("%.1f s", s)
	case s >= 0.01:
		return fmt.Sprintf("%.0f ms", s*1e3)
	}
	return fmt.Sprintf("%.2g ms", s*1e3)
}

func flops(f float64) string {
	switch {
	case f >= 1e12:
		return fmt.Sprintf("%.1f TFLOP", f/1e12)
	case f >= 1e9:
		return fmt.Sprintf("%.0f GFLOP", f/1e9)
	}
	return fmt.Sprintf("%.0f MFLOP", f/1e6)
}

func bytes(b float64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", b/1e6)
	}
	return fmt.Sprintf("%.0f kB", b/1e3)
}

// ForEntry estimates catalog entry e's model (dimensions cfg) under profile p, for
// an answer of tokens tokens (0: one canvas) with the entry's typical steps, on a
// machine whose model runs on device ("cpu" or "gpu", hw.Info.Device; Device of an
// engine's backend) at rates r. Anywhere but on the CPU's host kernels the
// estimate is unknown: the rates are theirs.
func ForEntry(e catalog.Entry, cfg *config.Model, p quant.Profile, device string, r *Rates, tokens int) (*Estimate, error) {
	return ForEntryFrom(e, cfg, p, device, r, tokens, nil)
}

// ForEntryFrom is ForEntry for a model that runs from the disk (d; nil: from
// memory, ForEntry).
func ForEntryFrom(e catalog.Entry, cfg *config.Model, p quant.Profile, device string, r *Rates, tokens int, d *FromDisk) (*Estimate, error) {
	return ForWeights(e, cfg, p, weights.MixLayout(e.Mix), device, r, tokens, d)
}

// ForWeights is ForEntryFrom for weights laid out as l in a GGUF file (zero: none):
// a local GGUF the catalog does not list, priced by its own types.
func ForWeights(e catalog.Entry, cfg *config.Model, p quant.Profile, l weights.GGUFLayout, device string, r *Rates, tokens int, d *FromDisk) (*Estimate, error) {
	if device != "cpu" {
		if device == "gpu" {
			device = "GPU"
		}
		return Unknown(fmt.Sprintf("unknown on the %s (Darkroom measures only its CPU kernels' rates)", device)), nil
	}
	return Compute(cfg, p, r, Workload{Tokens: tokens, Steps: e.Steps, GuidanceRounds: e.GuidanceRounds, GGUF: l, FromDisk: d})
}

// ForLoaded is the default mode of a model Darkroom loaded (name as the user gave
// it, its config), with the estimate behind it: the catalog says whether its modes
// write equally well (catalog.ForModel), its config.json which profile it is in, and
// layout, where its weights came from a GGUF file (engine.Engine.GGUFLayout), the
// file's own block types — a GGUF file's config.json is the bf16 checkpoint's, and a
// file the catalog does not list (any quantization of Unsloth's repo, another
// publisher's) is priced as it is; d, where its weights are read from the disk
// (LoadedFromDisk), prices the reads.
func ForLoaded(name string, cfg *config.Model, layout weights.GGUFLayout, device string, r *Rates, d *FromDisk) (Choice, *Estimate) {
	e, _ := catalog.ForModel(name, cfg)
	est, err := ForWeights(e, cfg, ProfileOf(cfg), layout, device, r, 0, d)
	if err != nil {
		est = Unknown(err.Error())
	}
	return Choose(e, est), est
}

// Device is where an engine on backend runs, as ForEntry and Here take it: "cpu"
// for the pure-Go backend's host kernels, else the backend's name.
func Device(backend string) string {
	if backend == "go" {
		return "cpu"
	}
	return backend + " backend"
}

// Here is this machine's rates for a model running on device: the cached
// calibration (measured now if there is none) on the CPU, nil elsewhere.
func Here(ctx context.Context, device string) (*Rates, error) { return here(ctx, device, (*Cache).Get) }

// HereAgain is Here measuring the rates again (Cache.Remeasure) in place of the
// cached ones.
func HereAgain(ctx context.Context, device string) (*Rates, error) {
	return here(ctx, device, (*Cache).Remeasure)
}

// here is Here and HereAgain: the default cache's rates by get, on the CPU.
func here(ctx context.Context, device string, get func(*Cache, context.Context) (*Rates, error)) (*Rates, error) {
	if device != "cpu" {
		return nil, nil
	}
	c, err := Default()
	if err != nil {
		return nil, err
	}
	return get(c, ctx)
}

// LoadedFromDisk is the FromDisk of the loaded engine e where its weights do not all
// fit in memory and are read from the disk as they are needed
// (engine.Engine.WeightsFromDisk): the memory the system had for them as it loaded,
// and the disk under the model's folder (its parent's, as `darkroom hw` measures the
// models folder), measured once (DiskHere). It is nil where the weights are in
// memory, or the disk cannot be measured.
func LoadedFromDisk(ctx context.Context, e *engine.Engine) *FromDisk {
	_, room, dir, ok := e.WeightsFromDisk()
	if !ok || dir == "" {
		return nil
	}
	d, err := DiskHere(ctx, filepath.Dir(filepath.Clean(dir)))
	if err != nil {
		return nil
	}
	return &FromDisk{Memory: float64(room), Rate: d.BytesPerS}
}
