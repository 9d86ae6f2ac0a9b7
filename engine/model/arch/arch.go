// Package arch is the DiffusionGemma layer recipe, written once: sandwich norms,
// sliding and full (K=V) attention with QK-norm, scale-free V-norm and partial RoPE,
// the router with its experts beside the dense shared MLP, layer_scalar, the
// self-conditioning input block and the final norm. It says which operation runs on
// which weight in which order, and nothing about how: that is Ops, which each engine
// implements over its own values — the host's float32 rows (engine/model's host path,
// inference), the same rows on a reverse-mode tape (engine/train/hostgrad, training),
// and GoMLX graph nodes.
//
// Weights are named by their canonical names (the table of engine/weights.Specs):
// the recipe passes the names, the implementation looks them up. What differs between
// the two modes of the shared stack — the causal encoder that writes the K/V cache,
// the bidirectional decoder that reads it — is which keys Ops.Attend lets the queries
// see, and which layer_scalar the stack multiplies by (Layers' scalar).
//
// The float64 reference in engine/model/naive is deliberately NOT written over this
// recipe: it is the independent oracle the implementations are tested against.
package arch

import (
	"fmt"
	"math"

	"github.com/darkroomlabs/darkroom/engine/config"
)

// Ops are the operations the recipe is written over, on values of type T: row-major
// activations whose rows are tokens. Widths are given where a value is read in groups
// (a norm over the hidden size or over one head's dimension); the rest follows from the
// weights.
//
// Ownership: an operation may write its result into the storage of an operand that
// the recipe marks as consumed — Add's a, Scale's and ScaleBy's x, GeGLU's gate,
// NormInPlace's and RoPE's x, Attend's q, Experts' logits — and the recipe never
// reads a consumed operand again. Norm and Linear leave their operands as they are.
// An implementation whose values are immutable (graphs) or must stay readable (a
// tape's backward pass) simply returns new values.
type Ops[T any] interface {
	// StartLayer announces layer i before the recipe runs it (an implementation may
	// read its weights ahead or select the layer's cache).
	StartLayer(i int)

	// Linear is x·Wᵀ with the named HF Linear weight W [out, in], no bias:
	// [rows, in] → [rows, out].
	Linear(x T, weight string) T
	// LinearF32 is Linear with float32 operands whatever the engine's compute dtype:
	// the router's projection, whose top-k choice must not turn on the rounding of
	// bf16 products.
	LinearF32(x T, weight string) T

	// Norm is RMSNorm over groups of width values, in float32:
	// x·(mean(x²)+eps)^-½·w, with w the named [width] weight ("" for none: the
	// scale-free variant). Gemma 4's norm: a plain multiplicative weight, not (1 + w).
	Norm(x T, width int, weight string) T
	// NormInPlace is Norm of a consumed x.
	NormInPlace(x T, width int, weight string) T

	// Add is a + b (a consumed).
	Add(a, b T) T
	// Scale is x·s for a constant s (x consumed).
	Scale(x T, s float64) T
	// ScaleBy is x times the named one-value weight (a buffer, never trained: the
	// layer_scalar), x consumed.
	ScaleBy(x T, weight string) T
	// GeGLU is gelu_tanh(gate)·up, elementwise (gate consumed).
	GeGLU(gate, up T) T

	// RoPE rotates x [rows, heads·Hd] (layer's head width Hd, rotate-half layout) by
	// the rows' positions with layer's frequencies (partial on full layers; see
	// engine/model.InvFreq). x consumed.
	RoPE(layer int, x T, heads int) T
	// Attend is layer's grouped-query attention with scale 1.0 and the softmax in
	// float32: q [rows, H·Hd] against the visible keys — the mode's cached or
	// earlier keys, then the rows' own k and v [rows, Kv·Hd] (k after k_norm and
	// RoPE, v after v_norm) — → [rows, H·Hd]. Query head h reads KV head h/(H/Kv).
	// Which keys are visible is the mode's: causal (within the sliding window on
	// sliding layers) in the encoder, which also keeps k and v for later; the whole
	// canvas and the visible cached prefix in the decoder. q consumed.
	Attend(layer int, q, k, v T) T
	// Experts is layer's mixture of experts on x [rows, D], routed by the router's
	// logits [rows, E]: per row, softmax over all E experts in float32, the top k
	// (ties to the lower index), renormalised to sum 1 and multiplied by
	// router.per_expert_scale; expert e computes down_e(gelu_tanh(gate)·up) with
	// [gate | up] = x·experts.gate_up_proj[e]ᵀ and down_e = experts.down_proj[e];
	// the output is the weighted sum over the row's k experts. Exact: no row is ever
	// dropped. logits consumed. → [rows, D]
	Experts(layer int, x, logits T) T
}

// LayerPrefix is the canonical name prefix of layer i's weights.
func LayerPrefix(i int) string { return fmt.Sprintf("layers.%d.", i) }

// Layer is layer i of the shared stack, in either mode (scalar names the mode's
// layer_scalar buffer):
//
//	h = h + post_attention_layernorm(attn(input_layernorm(h)))
//	dense = post_feedforward_layernorm_1(mlp(pre_feedforward_layernorm(h)))
//	moe   = post_feedforward_layernorm_2(experts(pre_feedforward_layernorm_2(h), router(h)))
//	h = (h + post_feedforward_layernorm(dense + moe)) · layer_scalar
//
// h: [rows, D] (consumed) → [rows, D]
func Layer[T any](o Ops[T], cfg *config.Text, i int, h T, scalar string) T {
	d := cfg.HiddenSize
	pre := LayerPrefix(i)
	a := Attention(o, cfg, i, o.Norm(h, d, pre+"input_layernorm.weight"))
	h = o.Add(o.NormInPlace(a, d, pre+"post_attention_layernorm.weight"), h)
	dense := o.NormInPlace(MLP(o, o.Norm(h, d, pre+"pre_feedforward_layernorm.weight"), pre+"mlp"),
		d, pre+"post_feedforward_layernorm_1.weight")
	moe := o.NormInPlace(MoE(o, cfg, i, o.Norm(h, d, pre+"pre_feedforward_layernorm_2.weight"), h),
		d, pre+"post_feedforward_layernorm_2.weight")
	h = o.Add(o.NormInPlace(o.Add(dense, moe), d, pre+"post_feedforward_layernorm.weight"), h)
	return o.ScaleBy(h, scalar)
}

// Attention is layer i's self-attention block, without the surrounding norms:
//
//	q = RoPE(q_norm(q_proj(x)))
//	k = RoPE(k_norm(k_proj(x)))
//	v = v_norm(v_proj(x))      sliding layers
//	v = v_norm(k_proj(x))      full layers (K=V: the raw keys, before k_norm and RoPE)
//	o_proj(attend(q, k, v))
//
// QK-norm has learned weights over the head dim, v_norm none, and the attention scale
// is 1.0 (Gemma 4 folds it into the norms); there is no attention soft-cap.
//
// x: [rows, D] → [rows, D]
func Attention[T any](o Ops[T], cfg *config.Text, i int, x T) T {
	nh, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(i), cfg.LayerHeadDim(i)
	pre := LayerPrefix(i) + "self_attn."
	q := o.Linear(x, pre+"q_proj.weight")
	kRaw := o.Linear(x, pre+"k_proj.weight")
	var v T
	if cfg.IsSliding(i) {
		v = o.NormInPlace(o.Linear(x, pre+"v_proj.weight"), hd, "")
	} else {
		v = o.Norm(kRaw, hd, "") // before k_norm consumes kRaw
	}
	q = o.RoPE(i, o.NormInPlace(q, hd, pre+"q_norm.weight"), nh)
	k := o.RoPE(i, o.NormInPlace(kRaw, hd, pre+"k_norm.weight"), kvh)
	return o.Linear(o.Attend(i, q, k, v), pre+"o_proj.weight")
}

// MLP is the dense GeGLU MLP under prefix, down(gelu_tanh(gate(x))·up(x)): every
// layer's shared MLP ("layers.{i}.mlp") and the self-conditioning MLP
// ("self_conditioning").
//
// x: [rows, D] → [rows, D]
func MLP[T any](o Ops[T], x T, prefix string) T {
	gate := o.Linear(x, prefix+".gate_proj.weight")
	up := o.Linear(x, prefix+".up_proj.weight")
	return o.Linear(o.GeGLU(gate, up), prefix+".down_proj.weight")
}

// MoE is layer i's expert block: the router reads the raw residual r (no layer
// pre-norm), RMSNorm_noscale(r)·scale·D^-½ projected to one logit per expert, and the
// experts run on x (the pre_feedforward_layernorm_2 output); see Ops.Experts.
//
// x, r: [rows, D] → [rows, D]
func MoE[T any](o Ops[T], cfg *config.Text, i int, x, r T) T {
	pre := LayerPrefix(i) + "router."
	d := cfg.HiddenSize
	h := o.Scale(o.Norm(r, d, pre+"scale"), 1/math.Sqrt(float64(d)))
	return o.Experts(i, x, o.LinearF32(h, pre+"proj.weight"))
}

// DecoderInput is the decoder's input block, its only own weights:
//
//	RMSNorm_noscale(x + down(gelu_tanh(gate(n))·up(n))),  n = pre_norm(soft)
//
// with x the canvas's embedding (×√D). Without soft (the first step of a canvas, whose
// soft embedding is zero, so the MLP term is exactly zero) it is RMSNorm_noscale(x).
//
// x: [C, D] (consumed), soft: [C, D] when withSoft → [C, D]
func DecoderInput[T any](o Ops[T], cfg *config.Text, x, soft T, withSoft bool) T {
	d := cfg.HiddenSize
	if withSoft {
		x = o.Add(x, MLP(o, o.Norm(soft, d, "self_conditioning.pre_norm.weight"), "self_conditioning"))
	}
	return o.NormInPlace(x, d, "")
}

// Layers runs the whole stack over h [rows, D] (consumed), layer i multiplying by the
// buffer scalar(i) (DecoderScalar, or the encoder's), and returns the last layer's
// output, before the final norm (Output).
func Layers[T any](o Ops[T], cfg *config.Text, h T, scalar func(i int) string) T {
	return LayerRange(o, cfg, 0, cfg.NumHiddenLayers, h, scalar)
}

// LayerRange runs layers lo…hi−1 of the stack over h [rows, D] (consumed), the output
// of layer lo−1 (the embedding's where lo is 0), as Layers does: the part of the
// stack one device runs where a model is split between two (a GPU too small for all
// of it, and the CPU).
func LayerRange[T any](o Ops[T], cfg *config.Text, lo, hi int, h T, scalar func(i int) string) T {
	for i := lo; i < hi; i++ {
		o.StartLayer(i)
		h = Layer(o, cfg, i, h, scalar(i))
	}
	return h
}

// Output is the final norm, the LM head's input: h [rows, D] (consumed) → [rows, D].
// The head itself (the tied embedding, no embedding scale, then the soft-cap) is each
// engine's own: it is where the vocabulary-sized work is, fused with the sampler.
func Output[T any](o Ops[T], cfg *config.Text, h T) T {
	return o.NormInPlace(h, cfg.HiddenSize, "norm.weight")
}

// DecoderScalar is the decoder's layer_scalar of layer i.
func DecoderScalar(i int) string { return LayerPrefix(i) + "layer_scalar" }

// EncoderScalar is the name of layer i's encoder layer_scalar in a model whose
// weights has reports: the encoder's own buffer when the checkpoint stores one, else
// the decoder's.
func EncoderScalar(has func(string) bool, i int) string {
	if name := fmt.Sprintf("encoder.layers.%d.layer_scalar", i); has(name) {
		return name
	}
	return DecoderScalar(i)
}
