// Package speed estimates how fast each of Darkroom's two modes writes a model on
// this machine — the printer (AR, one token per forward pass) and the polaroid
// (diffusion, a canvas in a few denoising passes) — and picks the faster one for a
// model that writes equally well both ways.
//
// The estimate is arithmetic over two things, both counted, not guessed:
//
//   - the model's work, from its dimensions: FLOPs per denoising step, per encoder
//     pass and per AR token (engine/model's FLOPs, EncodeFLOPs and ScoreFLOPs, the
//     counts the engine reports after a run) and the weight bytes each reads (each
//     tensor as the profile stores it, models/fit's TensorBytes): an AR token reads
//     every layer's attention, router, shared MLP and the top-k of its experts, the
//     tied embedding whole for the LM head, and the KV cache; a denoising step reads
//     every weight the 256 positions' experts touch;
//   - this machine's rates (Rates), measured once with Darkroom's own kernels
//     (engine/kernels: the canvas GEMM on a grid of shapes, the AR product by
//     weight format, the memory read rate, the sampler) and cached per CPU, core
//     count and build in the user's cache folder (Cache, DefaultPath).
//
// AR: each token takes, per weight format, its weights at the GEMV kernel's
// measured streaming rate (from memory: decoding and reading overlap only in
// part), or at its in-cache rate for a model small enough to stay in the
// last-level cache, plus the KV cache's read and the sampler's pass over the
// vocabulary. Diffusion: each canvas takes its expected denoising steps (each the
// longer of its products — model.FLOPs term by term,
// each at its own shape's GEMM rate — and reading the weights its positions'
// experts touch, plus the sampler over canvas × vocabulary), the AR guidance
// rounds the model runs, and the encoder pass that commits it (at the step's
// effective rate); a canvas yields its real tokens, so an answer of N tokens
// costs ⌈N/256⌉ canvases. Both include the prompt's encoder pass.
//
// What it does not count is what an engine spends outside its arithmetic and
// weight reads: allocating and clearing buffers, norms and activations between
// the products, dispatching small operations, and cores left idle. So the estimate
// is a bound the engine approaches, optimistic by what the engine wastes: measured
// on a 2-core AMD EPYC (2026-12-01, darkroom bench in the same minute as the
// calibration), a real-width 2-layer int4 model's canvas took 1.7× the estimate
// and its AR token 1.9× (its bench kept about one of the two cores busy); the
// Mini's canvas 1.9× and its AR token 10× (a token of so small a model is nearly
// all overhead). Which mode is faster is decided by ratios far larger than these.
//
// The steps a canvas takes are the sampler's adaptive choice: the catalog records
// the typical count per model (models/catalog), and a model without one is assumed
// to take its generation config's maximum.
//
// The rates are the CPU's. On a GPU backend Darkroom measures nothing of the
// device, so the estimate there is unknown, and says so, rather than a CPU number.
//
// This package lives in models, beside the fit estimator, because it answers the
// same kind of question about a catalog model before anything is downloaded ("how
// fast would it be here"), from the same dimensions and profiles; the engine runs
// whichever mode it is asked to.
package speed

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/fit"
)

// Workload is the generation an estimate is for. Zero values pick defaults.
type Workload struct {
	Tokens int // answer tokens (default: one canvas, the config's canvas_length, else 256)
	Prompt int // prompt tokens encoded first (default 32)
	// Steps is the expected denoising steps per canvas (default: the generation
	// config's max_denoising_steps) and GuidanceRounds the AR guidance rounds per
	// canvas (default: the generation config's maximum when guidance is on).
	Steps          float64
	GuidanceRounds float64
}

func (w Workload) withDefaults(cfg *config.Model) Workload {
	if w.Tokens <= 0 {
		w.Tokens = canvas(cfg)
	}
	if w.Prompt <= 0 {
		w.Prompt = 32
	}
	if w.Steps <= 0 {
		w.Steps = float64(max(cfg.Generation.MaxDenoisingSteps, 1))
	}
	if w.GuidanceRounds <= 0 && cfg.Generation.ARGuidance > 0 {
		w.GuidanceRounds = float64(cfg.Generation.ARGuidanceRounds)
	}
	return w
}

func canvas(cfg *config.Model) int {
	if cfg.CanvasLength > 0 {
		return cfg.CanvasLength
	}
	return 256
}

// Mode is one mode's estimate.
type Mode struct {
	Mode       engine.Mode `json:"mode"`
	TokensPerS float64     `json:"tokens_per_s"`
	Seconds    float64     `json:"seconds"` // the whole answer, prompt included
	// Unit is one token (AR) or one canvas (diffusion): its seconds, its FLOPs and
	// the weight bytes read (AR: per token; diffusion: per denoising step).
	UnitSeconds float64 `json:"unit_seconds"`
	UnitFLOPs   float64 `json:"unit_flops"`
	UnitBytes   float64 `json:"unit_bytes"`
	// Bound says what limits it: "memory" (reading the weights), "compute" (the
	// GEMM or GEMV kernel's arithmetic and decoding).
	Bound string `json:"bound"`
}

// Estimate is both modes' speed for one model, profile and workload on one machine.
type Estimate struct {
	// Unknown says why there is no estimate ("" when there is one).
	Unknown   string   `json:"unknown,omitempty"`
	Workload  Workload `json:"workload"`
	Canvas    int      `json:"canvas"`
	AR        Mode     `json:"ar"`
	Diffusion Mode     `json:"diffusion"`
	// GEMM is the effective rate of a denoising step's products (FLOP/s, each
	// product at its own shape's measured rate), MemRead the memory read rate
	// (bytes/s).
	GEMM    float64 `json:"gemm_flops"`
	MemRead float64 `json:"mem_read"`
}

// Known reports whether e holds numbers.
func (e *Estimate) Known() bool { return e != nil && e.Unknown == "" }

// Of returns mode m's estimate.
func (e *Estimate) Of(m engine.Mode) Mode {
	if m == engine.AR {
		return e.AR
	}
	return e.Diffusion
}

// Faster is the mode with the higher estimated tokens/s.
func (e *Estimate) Faster() engine.Mode {
	if e.AR.TokensPerS > e.Diffusion.TokensPerS {
		return engine.AR
	}
	return engine.Diffusion
}

// Unknown is an estimate that has no numbers, and why.
func Unknown(why string) *Estimate { return &Estimate{Unknown: why} }

// Compute estimates cfg under profile p on a machine with rates r. A nil r is an
// unknown estimate (see Unknown); a config without dimensions is an error.
func Compute(cfg *config.Model, p quant.Profile, r *Rates, w Workload) (*Estimate, error) {
	t := &cfg.Text
	if t.HiddenSize <= 0 || t.VocabSize <= 0 || t.NumHiddenLayers <= 0 || len(t.LayerTypes) < t.NumHiddenLayers {
		return nil, errors.New("speed estimate: the config lacks dimensions")
	}
	if r == nil {
		return Unknown("this machine's speed was not measured"), nil
	}
	if err := r.valid(); err != nil {
		return nil, fmt.Errorf("speed estimate: %w", err)
	}
	w = w.withDefaults(cfg)
	c := canvas(cfg)
	canvases := (w.Tokens + c - 1) / c
	mid := w.Prompt + c*(canvases-1)/2
	// The step's products each at its shape's rate; the encoder passes (prompt,
	// guidance, commit) at the step's effective rate.
	stepFLOPs := model.FLOPs(t, c, mid)
	compute := stepSeconds(t, c, mid, r)
	gemm := stepFLOPs / compute
	e := &Estimate{Workload: w, Canvas: c, GEMM: gemm, MemRead: r.MemRead,
		AR: Mode{Mode: engine.AR}, Diffusion: Mode{Mode: engine.Diffusion}}
	prefill := model.EncodeFLOPs(t, w.Prompt, 0) / gemm
	v := float64(t.VocabSize)

	// AR: one token at the answer's middle.
	ar := readSet(cfg, p, func(s weights.Spec) float64 {
		switch {
		case strings.HasPrefix(s.Name, "self_conditioning."):
			return 0 // the decoder's only
		case strings.Contains(s.Name, ".experts."):
			return float64(t.TopKExperts) / float64(max(t.NumExperts, 1))
		}
		return 1 // the embedding too: the tied LM head reads it whole
	})
	prefix := w.Prompt + w.Tokens/2
	kv := float64(kvReadBytes(t, prefix))
	for _, b := range ar {
		e.AR.UnitBytes += b.bytes
	}
	// Weights that fit in the last-level cache stay there from token to token and
	// run at the kernel's in-cache rate; a real model's stream from memory at the
	// kernel's measured streaming rate (decoding and reading overlap only in part).
	inCache := r.Cache > 0 && e.AR.UnitBytes <= float64(r.Cache)/2
	var memBound, kernBound float64 // the seconds of the formats each limits
	for f, b := range ar {
		mem, kern := b.bytes/r.MemRead, b.weights/rate(r.GEMV, f)
		sec := max(mem, kern)
		if v := r.GEMVStream[f]; v > 0 {
			sec = b.weights / v
		}
		if inCache {
			sec = kern
		}
		if kern > mem || inCache {
			kernBound += sec
		} else {
			memBound += sec
		}
	}
	e.AR.Bound = "memory"
	if kernBound > memBound {
		e.AR.Bound = "compute"
	}
	tok := memBound + kernBound + kv/r.MemRead + v/r.Sampler
	e.AR.UnitSeconds, e.AR.UnitFLOPs = tok, model.EncodeFLOPs(t, 1, prefix)
	e.AR.Seconds = prefill + float64(w.Tokens)*tok
	e.AR.TokensPerS = float64(w.Tokens) / e.AR.Seconds

	// Diffusion: whole canvases, each after the ones before it.
	touched := 1 - math.Pow(1-float64(t.TopKExperts)/float64(max(t.NumExperts, 1)), float64(c))
	step := readSet(cfg, p, func(s weights.Spec) float64 {
		if strings.Contains(s.Name, ".experts.") {
			return touched
		}
		return 1
	})
	var stepBytes float64
	for _, b := range step {
		stepBytes += b.bytes
	}
	memory := stepBytes / r.MemRead
	e.Diffusion.Bound = "compute"
	if memory > compute {
		e.Diffusion.Bound = "memory"
	}
	samp := float64(c) * v / r.Sampler
	guide := model.ScoreFLOPs(t, c, 0, mid)
	commit := model.EncodeFLOPs(t, c, mid)
	e.Diffusion.UnitSeconds = w.Steps*(max(compute, memory)+samp) + w.GuidanceRounds*(guide/gemm+samp) + commit/gemm
	e.Diffusion.UnitFLOPs = w.Steps*stepFLOPs + w.GuidanceRounds*guide + commit
	e.Diffusion.UnitBytes = stepBytes
	e.Diffusion.Seconds = prefill + float64(canvases)*e.Diffusion.UnitSeconds
	e.Diffusion.TokensPerS = float64(w.Tokens) / e.Diffusion.Seconds
	return e, nil
}

// read is the weights of one format a pass reads.
type read struct{ weights, bytes float64 }

// readSet sums, by stored format, the share share(s) of each tensor a pass reads.
func readSet(cfg *config.Model, p quant.Profile, share func(weights.Spec) float64) map[string]read {
	out := map[string]read{}
	for _, s := range weights.Specs(cfg) {
		f := share(s)
		if f == 0 {
			continue
		}
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		b := fit.TensorBytes(cfg, p, s)
		k := formatOf(cfg, p, s, b, n)
		x := out[k]
		x.weights += f * float64(n)
		x.bytes += f * float64(b)
		out[k] = x
	}
	return out
}

// formatOf names the stored format of a tensor of n weights taking b bytes.
func formatOf(cfg *config.Model, p quant.Profile, s weights.Spec, b int64, n int) string {
	spec, q := p.SpecFor(s.Name, s.Shape, s.Quantizable)
	switch {
	case !q && b >= 4*int64(n):
		return "f32"
	case !q:
		return "bf16"
	case spec.Format == quant.FP4:
		return "nvfp4"
	case spec.Bits == 4:
		return "int4"
	}
	return "int8"
}

// rate is format f's rate in rates, the f32 one for a format not measured.
func rate(rates map[string]float64, f string) float64 {
	if v := rates[f]; v > 0 {
		return v
	}
	return rates["f32"]
}

// kvReadBytes is the f32 KV cache one token's attention reads at prefix tokens:
// K and V of the last sliding_window−1 on sliding layers, V of all on full layers
// (K = V).
func kvReadBytes(t *config.Text, prefix int) int64 {
	var b int64
	for i := range t.NumHiddenLayers {
		row := int64(t.KVHeads(i)) * int64(t.LayerHeadDim(i)) * 4
		if t.IsSliding(i) {
			n := prefix
			if t.SlidingWindow > 0 {
				n = min(prefix, t.SlidingWindow-1)
			}
			b += 2 * int64(n) * row
		} else {
			b += int64(prefix) * row
		}
	}
	return b
}

// ProfileOf is the profile a loaded model's weights are stored in: its
// config.json's quantization_config, else the checkpoint's float dtype (bf16).
func ProfileOf(cfg *config.Model) quant.Profile {
	if q := cfg.Quantization; q != nil && q.Profile != "" {
		return quant.Profile(q.Profile)
	}
	return quant.BF16Profile
}

// product is count matrix products [m, k]×[k, n] (float64 m: an expert's share of
// the canvas need not be whole).
type product struct {
	m     float64
	k, n  int
	count float64
	what  string
}

func (p product) flops() float64 { return 2 * p.m * float64(p.k) * float64(p.n) * p.count }

// stepProducts lists the matrix products of one denoising step over tokens
// positions after prefix cached ones, the terms of model.FLOPs one by one (a test
// holds their sum to it), so each is timed at its own shape.
func stepProducts(t *config.Text, tokens, prefix int) []product {
	n, d, in := float64(tokens), t.HiddenSize, t.IntermediateSize
	ps := []product{
		{n, d, in, 2, "self-conditioning gate, up"}, {n, in, d, 1, "self-conditioning down"},
		{n, d, t.VocabSize, 1, "LM head"}, {n, t.VocabSize, d, 1, "soft embedding"},
	}
	for i := range t.NumHiddenLayers {
		h, kv, hd := t.NumAttentionHeads, t.KVHeads(i), t.LayerHeadDim(i)
		ps = append(ps, product{n, d, h * hd, 1, "q"}, product{n, d, kv * hd, 1, "k"}, product{n, h * hd, d, 1, "o"},
			product{n, d, in, 2, "dense gate, up"}, product{n, in, d, 1, "dense down"}, product{n, d, t.NumExperts, 1, "router"})
		if t.IsSliding(i) {
			ps = append(ps, product{n, d, kv * hd, 1, "v"})
		}
		if e := t.NumExperts; e > 0 && t.TopKExperts > 0 {
			rows := n * float64(t.TopKExperts) / float64(e) // routed rows per expert, on average
			ps = append(ps, product{rows, d, 2 * t.MoEIntermediateSize, float64(e), "experts gate_up"},
				product{rows, t.MoEIntermediateSize, d, float64(e), "experts down"})
		}
		keys := tokens + prefix
		if t.IsSliding(i) && t.SlidingWindow > 0 {
			keys = tokens + min(prefix, t.SlidingWindow-1)
		}
		ps = append(ps, product{n, hd, keys, float64(h), "attention scores"}, product{n, keys, hd, float64(h), "attention values"})
	}
	return ps
}

// stepSeconds is the time of one denoising step's products at rates r.
func stepSeconds(t *config.Text, tokens, prefix int, r *Rates) float64 {
	var s float64
	for _, p := range stepProducts(t, tokens, prefix) {
		s += p.flops() / r.GEMMAt(int(math.Round(p.m)), p.k, p.n)
	}
	return s
}
