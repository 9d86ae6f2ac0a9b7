// Package speed estimates how fast each of Darkroom's two modes writes a model on
// this machine — the printer (AR, one token per forward pass) and the polaroid
// (diffusion, a canvas in a few denoising passes) — and picks the faster one for a
// model that writes equally well both ways.
//
// The estimate is arithmetic over two things, both counted or measured, not
// guessed:
//
//   - the model's work, from its dimensions, as the host model (engine/model's
//     host path) does it, operation by operation (cost.go): each product with its
//     shape and its weight's stored format (models/fit's TensorBytes; a GGUF file's
//     tensors in the block types llama.cpp's mix gives them, weights.GGUFType), each pass
//     over activations (norms, RoPE, the attention's gathers and softmax, GeGLU,
//     the router, the residuals, the head's soft-cap and softmax over the
//     vocabulary, the sampler), for a denoising step, an encoder pass (the prompt,
//     an AR token, a committed canvas, an AR guidance round) and the weights each
//     reads; the products add up to engine/model's FLOPs, EncodeFLOPs and
//     ScoreFLOPs, the counts the engine reports after a run;
//   - this machine's rates (Rates), measured once with Darkroom's own kernels and
//     cached per CPU, core count, build and calibration version in the user's cache
//     folder (Cache, DefaultPath): the canvas GEMM on a grid of shapes, decoding each
//     stored format while packing (GGUF's blocks too: Q4_K, Q5_K, Q6_K, Q5_0, Q5_1, Q8_0), the
//     soft embedding's product, the AR product per format at small sizes in cache
//     (GGUF's blocks at one size), per row, and streaming from memory (a real
//     layer's matrices one after another, an AR step's experts as one job), each pass
//     over activations at a few sizes, the sampler, and what the engine pays beyond
//     the kernels (probe.go).
//
// An AR token's or a denoising step's time is four named terms (Terms), each a
// count of its work times a measured rate:
//
//   - Kernels: every product and pass at its kernel's fastest measured rate — the
//     arithmetic and the memory, which kernel speedups change, through the
//     calibration, and nothing else;
//   - WakeUps: each call that hands parts to the worker pool (a product the kernels
//     split, kernels.Parts; a pass over rows split across the workers; an AR step's
//     experts' job; the fused head) waits for the pool's workers to start them — the
//     typical wake-up (Rates.Wake), or the call's own time when that is shorter (the
//     caller then runs the parts itself). The kernels' rates are timed one call
//     after another with the workers awake, so they do not hold it;
//   - Engine: the engine's typical cost per operation outside the kernels and the
//     wake-ups — looking weights up, allocating and clearing outputs, the collector,
//     the calls between the layers' steps — measured on the engine itself
//     (Rates.OpOverhead, StepOpOverhead);
//   - Events: the event the engine sends after each token, step and guidance round
//     carries the answer's text so far, decoded again each time (Rates.DecodeToken
//     per token): an AR answer's last token decodes all of it.
//
// The kernels' rates are fastest runs (their arithmetic); the wake-up and the
// engine's cost are the typical — median — run, as an answer pays them, counting
// only runs no other program interrupted (typical), so that a busy machine's
// calibration does not charge its neighbours' work to the engine. Every rate is then
// the median of its calibration's passes, and the streaming rates of probes spread
// over them, so that a moment of another program's work or of faster memory moves
// none (steady.go); Rates.Spread keeps how the probes ranged.
//
// AR: a token is one encoder pass after the answer's middle plus one draw; its
// matrices stream from memory at the kernels' streaming rates unless the weights
// an AR token reads fit in half the last-level cache. Diffusion: a canvas is its
// expected denoising steps (each at least its weights' bytes at the read rate), its
// AR guidance rounds (an encoder pass over the canvas's text and the pick over the
// vocabulary each), and, before the next canvas, the encoder pass that commits it; a
// canvas yields its real tokens, so an answer of N tokens costs ⌈N/256⌉ canvases.
// Both include the prompt's encoder pass. A model that runs from the disk, its
// mapped weights more than memory keeps (Workload.FromDisk), adds to each token and
// step, beyond the four terms, what it reads from the disk at the disk's measured
// rate (disk.go: the models folder's disk, measured once).
//
// What it does not count: other programs sharing the cores and the memory, the
// collector's pauses beyond those the probe's allocation rate brings, and what a
// caller does with each event. A wake-up is measured where the calibration runs: a machine busy then
// records the wake-ups it had. `darkroom bench` prints the estimate and its terms
// beside the median and the fastest token or step it measured.
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
	// GGUF: the weights are a GGUF file's blocks, multiplied as stored, laid out as
	// this says (zero: not a GGUF file; a llama.cpp mix's rule or the file's own
	// types: weights.GGUFLayout; a Q6_K embedding held as int8 in groups of 32,
	// int8G32) — each tensor's AR product priced at its block type's measured rate and
	// bytes, its canvas products at IntGEMM's rate where the integer path took that
	// type when the rates were measured (Rates.IntGGUF), else on the float path.
	GGUF weights.GGUFLayout
	// FromDisk, where the model's mapped weights do not all fit in memory
	// (models/fit's FromDisk), prices the disk's reads: nil where they fit.
	FromDisk *FromDisk
}

// FromDisk is a run whose mapped weights do not all fit in memory. The layers'
// matrices before the experts (attention, shared MLP, router), read for every token,
// are taken to stay in memory, and the experts to share the rest of Memory evenly:
// each token then reads from the disk the share of its routed experts that memory
// cannot keep, and a denoising step, which touches nearly every expert, at least
// the bytes of them beyond Memory. Measured against it: models/fit's package
// comment (the NVFP4 26B under memory limits of 12 and 16 GiB, within 20%).
type FromDisk struct {
	// Memory is what the system can keep of the mapped weights (bytes): models/fit's
	// tight share of the RAM less what must stay in memory (fit.Estimate.Resident).
	Memory float64
	// Rate is the disk's read rate (bytes/s; DiskRate).
	Rate float64
}

// diskBytes is, for a run from the disk, what an AR token (perToken: its routed
// experts' bytes) and a denoising step (perStep) read from the disk: the
// experts' shares memory cannot keep (FromDisk). hot is the mapped weights read for
// every token, experts all the experts' bytes.
func (d *FromDisk) diskBytes(hot, experts, perToken, perStep float64) (token, step float64) {
	if d == nil || experts <= 0 {
		return 0, 0
	}
	room := max(0, d.Memory-hot)
	miss := max(0, 1-room/experts)
	return perToken * miss, max(0, perStep-room)
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
	// StepSeconds is one denoising step after a canvas's first (diffusion).
	StepSeconds float64 `json:"step_seconds,omitempty"`
	// Terms is what the unit's pass pays for: an AR token's encoder pass (its draw
	// is in UnitSeconds, not here), a denoising step after a canvas's first.
	Terms Terms `json:"terms"`
	// Bound says what limits it: "memory" (reading the weights), "compute" (the
	// GEMM or GEMV kernel's arithmetic and decoding), "disk" (reading the weights
	// memory cannot keep: Workload.FromDisk).
	Bound string `json:"bound"`
	// DiskBytes is what the unit reads from the disk (AR: a token; diffusion: a
	// denoising step), for a run from the disk.
	DiskBytes float64 `json:"disk_bytes,omitempty"`
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
	// PromptSeconds is the prompt's encoder pass, in both modes' Seconds.
	PromptSeconds float64 `json:"prompt_seconds"`
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
	ps := newPassesOf(cfg, p, w.GGUF)
	e := &Estimate{Workload: w, Canvas: c, MemRead: r.MemRead,
		AR: Mode{Mode: engine.AR}, Diffusion: Mode{Mode: engine.Diffusion}}

	// AR: one token at the answer's middle reads every layer's attention, router,
	// shared MLP and the top-k of its experts, and the tied embedding whole for the
	// LM head. Weights that fit in the last-level cache stay there from token to
	// token; a real model's stream from memory at the kernels' measured rates.
	ar := readSet(cfg, p, w.GGUF, func(s weights.Spec) float64 {
		switch {
		case strings.HasPrefix(s.Name, "self_conditioning."):
			return 0 // the decoder's only
		case strings.Contains(s.Name, ".experts."):
			return float64(t.TopKExperts) / float64(max(t.NumExperts, 1))
		}
		return 1
	})
	for _, b := range ar {
		e.AR.UnitBytes += b.bytes
	}
	// From the disk: the mapped weights read for every token, every expert, and a
	// token's and a step's experts (FromDisk).
	var hot, experts float64
	share := touched(t.NumExperts, t.TopKExperts, c) / float64(max(t.NumExperts, 1))
	if w.FromDisk != nil {
		mapped := func(expert bool) float64 { // the mapped tensors' bytes, the experts' or the rest's
			var b float64
			for _, r := range readSet(cfg, p, w.GGUF, func(s weights.Spec) float64 {
				if fit.HostOnHeap(cfg, p, w.GGUF, s) || strings.HasPrefix(s.Name, "self_conditioning.") ||
					strings.Contains(s.Name, ".experts.") != expert {
					return 0
				}
				return 1
			}) {
				b += r.bytes
			}
			return b
		}
		hot, experts = mapped(false), mapped(true)
	}
	tokenExperts := experts * float64(t.TopKExperts) / float64(max(t.NumExperts, 1))
	diskToken, diskStep := w.FromDisk.diskBytes(hot, experts, tokenExperts, experts*share)
	e.AR.DiskBytes, e.Diffusion.DiskBytes = diskToken, diskStep
	inCache := r.Cache > 0 && e.AR.UnitBytes <= float64(r.Cache)/2
	// The prompt in the host encoder's passes, the LM head over the last one's last row.
	var prefill float64
	for at := 0; at < w.Prompt; at += model.HostPassTokens {
		n, head := min(model.HostPassTokens, w.Prompt-at), 0
		if at+n == w.Prompt {
			head = 1
		}
		s, _ := r.encoderSeconds(ps.encoderPass(n, at, head), inCache)
		prefill += s
	}
	e.PromptSeconds = prefill
	prefix := w.Prompt + w.Tokens/2
	// Token i's event carries the answer's first i tokens: (N+1)/2 on average.
	e.AR.Terms = r.encoderTerms(ps.encoderPass(1, prefix, 1), inCache).withEvent(r, float64(w.Tokens+1)/2)
	pass, streamed := e.AR.Terms.Seconds(), e.AR.Terms.streamed
	draw := r.vecAt(VecSampler, float64(t.VocabSize)) // one row: the token's draw
	tok := pass + draw
	e.AR.Bound = "compute"
	if streamed > tok/2 {
		e.AR.Bound = "memory"
	}
	if disk := diskToken / diskRate(w.FromDisk); disk > 0 {
		tok += disk
		if disk > tok/2 {
			e.AR.Bound = "disk"
		}
	}
	e.AR.UnitSeconds, e.AR.UnitFLOPs = tok, model.EncodeFLOPs(t, 1, prefix)
	// The prompt's pass gives the first token's logits; each later token is a pass.
	e.AR.Seconds = prefill + draw + float64(w.Tokens-1)*tok
	e.AR.TokensPerS = float64(w.Tokens) / e.AR.Seconds

	// Diffusion: whole canvases, each after the ones before it. A step reads every
	// weight its positions' experts touch, at least its bytes at the read rate.
	step := readSet(cfg, p, w.GGUF, func(s weights.Spec) float64 {
		if strings.Contains(s.Name, ".experts.") {
			return share
		}
		return 1
	})
	for _, b := range step {
		e.Diffusion.UnitBytes += b.bytes
	}
	memory := e.Diffusion.UnitBytes / r.MemRead
	// A step's event carries the answer so far (the middle canvas's committed text)
	// and the canvas's text; so does each guidance round's.
	text := min(w.Tokens, c)
	event := float64(c*(canvases-1)/2 + text)
	first := r.stepTerms(ps.decoderStep(c, mid, false)).withEvent(r, event).Seconds()
	e.Diffusion.Terms = r.stepTerms(ps.decoderStep(c, mid, true)).withEvent(r, event)
	later := e.Diffusion.Terms.Seconds()
	stepFLOPs := model.FLOPs(t, c, mid)
	var products []work
	for _, w := range ps.decoderStep(c, mid, true) {
		if w.flops() > 0 {
			products = append(products, w)
		}
	}
	e.GEMM = stepFLOPs / r.cost(products, true).Kernels
	e.Diffusion.Bound = "compute"
	if memory > later {
		e.Diffusion.Bound = "memory"
	}
	first, later = max(first, memory), max(later, memory)
	if disk := diskStep / diskRate(w.FromDisk); disk > 0 {
		first, later = first+disk, later+disk
		if disk > later/2 {
			e.Diffusion.Bound = "disk"
		}
	}
	e.Diffusion.StepSeconds = later
	// AR guidance: each round scores the canvas's text (up to its end) in one
	// encoder pass over a copy of the cache, then picks each position's token
	// against both heads' logits, and sends its event.
	var round, guide float64
	if text > 1 {
		round, _ = r.encoderSeconds(ps.encoderPass(text-1, mid, text-1), true)
		round += r.seconds1(vec("cache copy", VecLoop, float64(ps.cacheFloats(mid)), 1)) +
			r.seconds1(vec("guidance pick", VecGuide, float64(text)*float64(t.VocabSize), 1)) + event*r.DecodeToken
		guide = model.ScoreFLOPs(t, text-1, 0, mid)
	}
	commit, _ := r.encoderSeconds(ps.encoderPass(c, mid, 1), true)
	steps := max(w.Steps, 1)
	e.Diffusion.UnitSeconds = first + (steps-1)*later + w.GuidanceRounds*round
	e.Diffusion.UnitFLOPs = steps*stepFLOPs + w.GuidanceRounds*guide
	e.Diffusion.Seconds = prefill + float64(canvases)*e.Diffusion.UnitSeconds + float64(canvases-1)*commit
	e.Diffusion.TokensPerS = float64(w.Tokens) / e.Diffusion.Seconds
	return e, nil
}

// diskRate is d's read rate (+Inf where there is no disk to read: d nil).
func diskRate(d *FromDisk) float64 {
	if d == nil || d.Rate <= 0 {
		return math.Inf(1)
	}
	return d.Rate
}

// read is the weights of one format a pass reads.
type read struct{ weights, bytes float64 }

// readSet sums, by stored format, the share share(s) of each tensor a pass reads
// (under profile p, or in a GGUF file's types: storedAs).
func readSet(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, share func(weights.Spec) float64) map[string]read {
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
		k, b := storedAs(cfg, p, l, s, n)
		x := out[k]
		x.weights += f * float64(n)
		x.bytes += f * float64(b)
		out[k] = x
	}
	return out
}

// storedAs names the stored format of tensor s (n weights) and its bytes: under
// profile p (formatOf), or in a GGUF file laid out as l as the host path holds it
// (fit.GGUFHeldBytes): its block type as stored (ggufFormat), a tensor held converted
// (weights.HostHeld: a Q6_K embedding as int8 in groups of 32) int8G32, a file the host
// holds converted throughout (GGUFLayout.HostConverted) in int8 or int4. NVFP4's
// embedding, held in int8 (weights.HostEmbedding), is int8.
func storedAs(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, s weights.Spec, n int) (string, int64) {
	if !l.IsGGUF() {
		if held, ok := weights.HostEmbedding(p, s); ok {
			return "int8", held.Bytes(s.Shape)
		}
		b := fit.TensorBytes(cfg, p, s)
		return formatOf(cfg, p, s, b, n), b
	}
	b := fit.GGUFHeldBytes(cfg, p, l, s)
	if l.HostConverted() {
		switch q, ok := l.Converted(cfg, s); {
		case ok && q.Bits == 8:
			return "int8", b
		case ok:
			return "int4", b
		case b >= 4*int64(n):
			return "f32", b
		}
		return "bf16", b
	}
	if _, held := l.HostHeld(cfg, s); held { // int8 g32 (TestGGUFFormats holds it so)
		return int8G32, b
	}
	if t, ok := l.Type(cfg, s); ok {
		return ggufFormat(t), b
	}
	return formatOf(cfg, p, s, b, n), b
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

// ProfileOf is the profile a loaded model's weights are stored in: its
// quantization_config's (config.Quantization.StoredProfile: nvfp4 for a ModelOpt
// export, whose config.json may have none, its hf_quant_config.json saying it), else
// the checkpoint's float dtype (bf16).
func ProfileOf(cfg *config.Model) quant.Profile {
	if q := cfg.Quantization; q != nil && q.StoredProfile() != "" {
		return quant.Profile(q.StoredProfile())
	}
	return quant.BF16Profile
}
