// Package weights owns the model's tensors on the host: the one table that maps the
// engine's canonical names to Hugging Face checkpoint names, GGUF names and shapes
// (Specs), loading a checkpoint into a Set (all-or-nothing, every tensor checked),
// writing one (Save), and random initialisation for tests and training (Random).
//
// Canonical names are HF's with the "model.decoder." prefix removed. HF checkpoints
// store the shared text weights once, under model.decoder.* (what Google ships) and/or
// under model.encoder.language_model.*; both map to the same canonical name. The
// encoder's own layer_scalar buffers (not tied upstream) become
// encoder.layers.{i}.layer_scalar. Vision tensors and lm_head.weight (tied) are ignored.
package weights

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
)

// HF name prefixes.
const (
	DecoderPrefix = "model.decoder."
	EncoderPrefix = "model.encoder.language_model."
)

// Ignored HF name prefixes (vision; the tied head).
var ignoredPrefixes = []string{"model.encoder.vision_tower.", "model.encoder.embed_vision.", "lm_head."}

// InitKind says how Random (and a trainer) initialises a tensor.
type InitKind int

const (
	InitOnes   InitKind = iota // norms, scales, layer scalars
	InitNormal                 // N(0, Std²)
)

// Spec is one tensor the model needs.
type Spec struct {
	Name  string // canonical
	Shape []int  // logical shape (HF's: Linear weights are [out, in])
	// HF is where a checkpoint stores it (and Save writes it); Alt is the other place a
	// checkpoint may store it instead ("" if none).
	HF, Alt string
	// GGUF is its name in llama.cpp's diffusion-gemma GGUF files; GGUFSplit, for the
	// fused experts.gate_up_proj only, the separate gate and up tensors some
	// converters write instead (each [E, F, D], gate first).
	GGUF      string
	GGUFSplit []string
	Layer     int // layer index, -1 for global tensors
	Init      InitKind
	Std       float64 // for InitNormal
	// Buffer marks non-trained tensors (the layer scalars).
	Buffer bool
	// Quantizable marks weights a quantization profile may store as int8/int4
	// (projections, experts, the embedding).
	Quantizable bool
}

// Elements is the tensor's element count: the product of its logical shape.
func (s Spec) Elements() int64 { return safetensors.Elements(s.Shape) }

// Fill sets vals — the tensor's values, or a run of them — by the spec's init rule:
// 1 for InitOnes, draws of N(0, Std²) from r, in order, for InitNormal.
func (s Spec) Fill(vals []float32, r *rand.Rand) error {
	switch s.Init {
	case InitOnes:
		for i := range vals {
			vals[i] = 1
		}
	case InitNormal:
		for i := range vals {
			vals[i] = float32(r.NormFloat64() * s.Std)
		}
	default:
		return fmt.Errorf("%s: unknown init kind %d", s.Name, s.Init)
	}
	return nil
}

// dims computes a shape from the text config for layer i.
type dims func(t *config.Text, i int) []int

// row is one entry of the name table. "{i}" stands for the layer index.
type row struct {
	name string
	hf   string // "" = DecoderPrefix+name
	alt  string // "" = EncoderPrefix+name; "-" = none
	// gguf is the GGUF name; for a layer's tensor, what follows "blk.{i}.". ggufSplit:
	// the split gate and up names standing in for a fused gate_up_proj.
	gguf      string
	ggufSplit []string
	shape     dims
	init      InitKind
	buf       bool
	quant     bool
	// sliding: only on sliding layers (v_proj: full layers use K as V).
	sliding bool
}

func d(t *config.Text, _ int) []int { return []int{t.HiddenSize} }

// The rows below are THE mapping between canonical names, HF names, GGUF names and
// shapes. HF names are the released checkpoint's (its converter,
// convert_diffusion_gemma_weights.py, and transformers' _tied_weights_keys). GGUF
// names are llama.cpp's diffusion-gemma layout (the unmerged PR #24423, which
// Unsloth's files are written by), from public sources that agree with each other:
//
//   - llama.cpp conversion/gemma.py, class Gemma4Model (the parent of the PR's
//     converter): router.scale → blk.N.ffn_gate_inp.scale, router.per_expert_scale →
//     blk.N.ffn_down_exps.scale, layer_scalar and experts.* get a ".weight" suffix,
//     norms are stored as they are (no Gemma-3 "+1"), rope_freqs is an extra
//     generated tensor (engine/gguf.RopeFreqs);
//   - the PR's conversion/diffusion_gemma.py: model.decoder.* → the Gemma 4 map; the
//     encoder's layer_scalar → enc_layer_output_scale; the other encoder tensors
//     (tied) and the vision tower are dropped; self_conditioning.* → self_cond_*;
//   - the PR's src/llama-model.cpp: layer_output_scale and enc_layer_output_scale
//     required per layer, attn_v optional (absent on full layers);
//   - the tensor inventory of the real Unsloth Q4_K_M file (692 tensors: these 691
//     and rope_freqs) recorded by independent ports.
//
// GGUF dims are innermost-first, so reversing them gives exactly the HF shapes
// (attn_q [2816, 8192] is q_proj [8192, 2816]); no tensor is transposed or permuted
// (Gemma's RoPE is NeoX-style, so llama.cpp does not permute Q/K rows for it).
//
// EmbeddingName is the canonical name of the token embedding (tied: the output head
// and the soft embedding multiply it too).
const EmbeddingName = "embed_tokens.weight"

// Global rows first, then per-layer rows, then decoder-only rows.
var globalRows = []row{
	{name: EmbeddingName, gguf: "token_embd.weight", shape: func(t *config.Text, _ int) []int { return []int{t.VocabSize, t.HiddenSize} }, init: InitNormal, quant: true},
	{name: "norm.weight", gguf: "output_norm.weight", shape: d},
}

var layerRows = []row{
	{name: "layers.{i}.input_layernorm.weight", gguf: "attn_norm.weight", shape: d},
	{name: "layers.{i}.post_attention_layernorm.weight", gguf: "post_attention_norm.weight", shape: d},
	{name: "layers.{i}.pre_feedforward_layernorm.weight", gguf: "ffn_norm.weight", shape: d},
	{name: "layers.{i}.post_feedforward_layernorm_1.weight", gguf: "post_ffw_norm_1.weight", shape: d},
	{name: "layers.{i}.pre_feedforward_layernorm_2.weight", gguf: "pre_ffw_norm_2.weight", shape: d},
	{name: "layers.{i}.post_feedforward_layernorm_2.weight", gguf: "post_ffw_norm_2.weight", shape: d},
	{name: "layers.{i}.post_feedforward_layernorm.weight", gguf: "post_ffw_norm.weight", shape: d},
	// The decoder's layer scalar; the encoder's own copy is the next row. Each falls
	// back to the other when a checkpoint stores only one.
	{name: "layers.{i}.layer_scalar", alt: EncoderPrefix + "layers.{i}.layer_scalar", gguf: "layer_output_scale.weight", shape: one, buf: true},
	{name: "encoder.layers.{i}.layer_scalar", hf: EncoderPrefix + "layers.{i}.layer_scalar", alt: DecoderPrefix + "layers.{i}.layer_scalar",
		gguf: "enc_layer_output_scale.weight", shape: one, buf: true},
	{name: "layers.{i}.self_attn.q_proj.weight", gguf: "attn_q.weight", shape: func(t *config.Text, i int) []int {
		return []int{t.NumAttentionHeads * t.LayerHeadDim(i), t.HiddenSize}
	}, init: InitNormal, quant: true},
	{name: "layers.{i}.self_attn.k_proj.weight", gguf: "attn_k.weight", shape: kvProj, init: InitNormal, quant: true},
	{name: "layers.{i}.self_attn.v_proj.weight", gguf: "attn_v.weight", shape: kvProj, init: InitNormal, quant: true, sliding: true},
	{name: "layers.{i}.self_attn.o_proj.weight", gguf: "attn_output.weight", shape: func(t *config.Text, i int) []int {
		return []int{t.HiddenSize, t.NumAttentionHeads * t.LayerHeadDim(i)}
	}, init: InitNormal, quant: true},
	{name: "layers.{i}.self_attn.q_norm.weight", gguf: "attn_q_norm.weight", shape: headDim},
	{name: "layers.{i}.self_attn.k_norm.weight", gguf: "attn_k_norm.weight", shape: headDim},
	{name: "layers.{i}.mlp.gate_proj.weight", gguf: "ffn_gate.weight", shape: mlpIn, init: InitNormal, quant: true},
	{name: "layers.{i}.mlp.up_proj.weight", gguf: "ffn_up.weight", shape: mlpIn, init: InitNormal, quant: true},
	{name: "layers.{i}.mlp.down_proj.weight", gguf: "ffn_down.weight", shape: mlpOut, init: InitNormal, quant: true},
	{name: "layers.{i}.router.proj.weight", gguf: "ffn_gate_inp.weight", shape: func(t *config.Text, _ int) []int { return []int{t.NumExperts, t.HiddenSize} }, init: InitNormal},
	{name: "layers.{i}.router.scale", gguf: "ffn_gate_inp.scale", shape: d},
	{name: "layers.{i}.router.per_expert_scale", gguf: "ffn_down_exps.scale", shape: func(t *config.Text, _ int) []int { return []int{t.NumExperts} }},
	{name: "layers.{i}.experts.gate_up_proj", gguf: "ffn_gate_up_exps.weight", ggufSplit: []string{"ffn_gate_exps.weight", "ffn_up_exps.weight"},
		shape: func(t *config.Text, _ int) []int {
			return []int{t.NumExperts, 2 * t.MoEIntermediateSize, t.HiddenSize}
		}, init: InitNormal, quant: true},
	{name: "layers.{i}.experts.down_proj", gguf: "ffn_down_exps.weight", shape: func(t *config.Text, _ int) []int {
		return []int{t.NumExperts, t.HiddenSize, t.MoEIntermediateSize}
	}, init: InitNormal, quant: true},
}

var decoderRows = []row{
	{name: "self_conditioning.pre_norm.weight", alt: "-", gguf: "self_cond_pre_norm.weight", shape: d},
	{name: "self_conditioning.gate_proj.weight", alt: "-", gguf: "self_cond_gate.weight", shape: mlpIn, init: InitNormal, quant: true},
	{name: "self_conditioning.up_proj.weight", alt: "-", gguf: "self_cond_up.weight", shape: mlpIn, init: InitNormal, quant: true},
	{name: "self_conditioning.down_proj.weight", alt: "-", gguf: "self_cond_down.weight", shape: mlpOut, init: InitNormal, quant: true},
}

func one(*config.Text, int) []int { return []int{1} }
func kvProj(t *config.Text, i int) []int {
	return []int{t.KVHeads(i) * t.LayerHeadDim(i), t.HiddenSize}
}
func headDim(t *config.Text, i int) []int { return []int{t.LayerHeadDim(i)} }
func mlpIn(t *config.Text, _ int) []int   { return []int{t.IntermediateSize, t.HiddenSize} }
func mlpOut(t *config.Text, _ int) []int  { return []int{t.HiddenSize, t.IntermediateSize} }

func (r row) spec(t *config.Text, layer int) Spec {
	sub := func(s string) string {
		if layer < 0 {
			return s
		}
		return strings.ReplaceAll(s, "{i}", fmt.Sprint(layer))
	}
	s := Spec{Name: sub(r.name), Shape: r.shape(t, layer), Layer: layer, Init: r.init, Buffer: r.buf, Quantizable: r.quant}
	s.GGUF = r.gguf
	for _, g := range r.ggufSplit {
		s.GGUFSplit = append(s.GGUFSplit, g)
	}
	if layer >= 0 {
		blk := fmt.Sprintf("blk.%d.", layer)
		s.GGUF = blk + s.GGUF
		for k := range s.GGUFSplit {
			s.GGUFSplit[k] = blk + s.GGUFSplit[k]
		}
	}
	s.HF = DecoderPrefix + s.Name
	if r.hf != "" {
		s.HF = sub(r.hf)
	}
	switch r.alt {
	case "":
		s.Alt = EncoderPrefix + s.Name
	case "-":
	default:
		s.Alt = sub(r.alt)
	}
	if r.init == InitNormal {
		// Fan-in scaling: unit-variance inputs give unit-variance outputs. The embedding
		// (fan-in = hidden as the tied head) gets 1/√D too: × √D on lookup gives unit
		// entries, and the head's logits have unit scale.
		s.Std = 1 / math.Sqrt(float64(s.Shape[len(s.Shape)-1]))
	}
	return s
}

// Specs lists every tensor of the model for cfg, in a stable order (global, then layer
// by layer, then self-conditioning): names, shapes, HF names and initialisation.
func Specs(cfg *config.Model) []Spec {
	t := &cfg.Text
	var out []Spec
	for _, r := range globalRows {
		out = append(out, r.spec(t, -1))
	}
	for i := 0; i < t.NumHiddenLayers; i++ {
		for _, r := range layerRows {
			if r.sliding && !t.IsSliding(i) {
				continue
			}
			out = append(out, r.spec(t, i))
		}
	}
	for _, r := range decoderRows {
		out = append(out, r.spec(t, -1))
	}
	return out
}

// HFName is where Save writes a canonical name (the quantization suffixes carry over).
func HFName(cfg *config.Model, canonical string) (string, bool) {
	base, suffix := splitQuant(canonical)
	for _, s := range Specs(cfg) {
		if s.Name == base {
			return s.HF + suffix, true
		}
	}
	return "", false
}

// Classify maps an HF checkpoint name to its canonical name. ignored is true for tensors
// the engine does not use (vision, lm_head); ok is false for names it does not know.
// A stored name used by two canonical names (a checkpoint with only one copy of the
// layer scalars) maps to the one it is the primary place of.
func Classify(cfg *config.Model, hf string) (canonical string, ignored, ok bool) {
	for _, p := range ignoredPrefixes {
		if strings.HasPrefix(hf, p) {
			return "", true, true
		}
	}
	base, suffix := splitQuant(hf)
	for _, s := range Specs(cfg) {
		if s.HF == base {
			return s.Name + suffix, false, true
		}
	}
	for _, s := range Specs(cfg) {
		if s.Alt == base {
			return s.Name + suffix, false, true
		}
	}
	return "", false, false
}

// ClassifyGGUF maps a GGUF tensor name to the canonical name it (or, for split
// experts, part of it) stands for, for any layer index. ignored is true for the
// tensors the engine derives itself (rope_freqs, and per-layer copies of it); ok is
// false for names the table does not know, which a loader refuses rather than guess.
func ClassifyGGUF(name string) (canonical string, ignored, ok bool) {
	if name == gguf.RopeFreqs {
		return "", true, true
	}
	for _, rows := range [][]row{globalRows, decoderRows} {
		for _, r := range rows {
			if r.gguf == name {
				return r.name, false, true
			}
		}
	}
	rest, found := strings.CutPrefix(name, "blk.")
	if !found {
		return "", false, false
	}
	i, suffix, found := strings.Cut(rest, ".")
	if _, err := strconv.Atoi(i); !found || err != nil {
		return "", false, false
	}
	if suffix == gguf.RopeFreqs {
		return "", true, true
	}
	for _, r := range layerRows {
		if r.gguf == suffix || slices.Contains(r.ggufSplit, suffix) {
			return strings.ReplaceAll(r.name, "{i}", i), false, true
		}
	}
	return "", false, false
}

func splitQuant(name string) (base, suffix string) {
	for _, suf := range quant.Suffixes {
		if strings.HasSuffix(name, suf) {
			return strings.TrimSuffix(name, suf), suf
		}
	}
	return name, ""
}
