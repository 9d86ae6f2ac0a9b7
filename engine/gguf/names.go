package gguf

import (
	"fmt"
	"strconv"
	"strings"
)

// Arch is general.architecture of DiffusionGemma GGUFs: llama.cpp's
// LLM_ARCH_DIFFUSION_GEMMA ("diffusion-gemma"), added by the unmerged PR #24423
// (ggml-org/llama.cpp) that Unsloth's files are written by.
const Arch = "diffusion-gemma"

// The tensor names below come from public sources that agree with each other:
//
//   - llama.cpp conversion/gemma.py, class Gemma4Model (the parent of the PR's
//     converter): router.scale → blk.N.ffn_gate_inp.scale, router.per_expert_scale →
//     blk.N.ffn_down_exps.scale, layer_scalar and experts.* get a ".weight" suffix,
//     norms are stored as they are (norm_shift 0.0, no Gemma-3 "+1"), rope_freqs is
//     an extra generated tensor (64 ones then 192 × 1e30 for the full layers'
//     proportional RoPE);
//   - the PR's conversion/diffusion_gemma.py (DiffusionGemmaModel): model.decoder.* →
//     the Gemma4 map; the encoder's layer_scalar → ENC_LAYER_OUT_SCALE; the other
//     encoder tensors (tied) and the vision tower are dropped;
//     model.decoder.self_conditioning.{pre_norm,gate_proj,up_proj,down_proj}.weight →
//     SC_PRE_NORM, SC_GATE, SC_UP, SC_DOWN;
//   - the PR's src/llama-model.cpp (diffusion-gemma create_tensor calls, stored in
//     forks): LLM_TENSOR_LAYER_OUT_SCALE and LLM_TENSOR_ENC_LAYER_OUT_SCALE both
//     required per layer, ATTN_V optional (absent on full layers), ROPE_FREQS on full
//     layers;
//   - gguf-py tensor_mapping.py / llama-arch.cpp string names for the Gemma 4 tensors
//     (attn_norm, post_attention_norm, ffn_norm, post_ffw_norm, pre_ffw_norm_2,
//     post_ffw_norm_1, post_ffw_norm_2, ffn_gate_inp, ffn_gate_up_exps,
//     ffn_down_exps, layer_output_scale) as reproduced in several stored reverse
//     mappings;
//   - the tensor inventory of the real unsloth Q4_K_M file (692 tensors) recorded by
//     independent ports: token_embd (Q6_K, tied head), output_norm, rope_freqs [256],
//     self_cond_pre_norm/self_cond_gate/self_cond_up/self_cond_down,
//     blk.N.enc_layer_output_scale.weight, fused ffn_gate_up_exps [2816, 1408, 128],
//     no attn_v on layers 5, 11, 17, 23, 29.
//
// GGUF dims are innermost-first, so reversing them gives exactly the Hugging Face
// (row-major) shapes: attn_q [2816, 8192] is q_proj [8192, 2816], ffn_gate_up_exps
// [2816, 1408, 128] is experts.gate_up_proj [128, 1408, 2816] (gate = first 704 rows
// of each expert, as in HF). No tensor is transposed or permuted: Gemma uses NeoX
// RoPE, so llama.cpp does not permute Q/K rows for it.

// layerNames maps a canonical per-layer name (after "layers.{i}.") to its GGUF name
// (after "blk.{i}.").
var layerNames = map[string]string{
	"input_layernorm.weight":              "attn_norm.weight",
	"post_attention_layernorm.weight":     "post_attention_norm.weight",
	"pre_feedforward_layernorm.weight":    "ffn_norm.weight",
	"post_feedforward_layernorm_1.weight": "post_ffw_norm_1.weight",
	"pre_feedforward_layernorm_2.weight":  "pre_ffw_norm_2.weight",
	"post_feedforward_layernorm_2.weight": "post_ffw_norm_2.weight",
	"post_feedforward_layernorm.weight":   "post_ffw_norm.weight",
	"layer_scalar":                        "layer_output_scale.weight",
	"self_attn.q_proj.weight":             "attn_q.weight",
	"self_attn.k_proj.weight":             "attn_k.weight",
	"self_attn.v_proj.weight":             "attn_v.weight",
	"self_attn.o_proj.weight":             "attn_output.weight",
	"self_attn.q_norm.weight":             "attn_q_norm.weight",
	"self_attn.k_norm.weight":             "attn_k_norm.weight",
	"mlp.gate_proj.weight":                "ffn_gate.weight",
	"mlp.up_proj.weight":                  "ffn_up.weight",
	"mlp.down_proj.weight":                "ffn_down.weight",
	"router.proj.weight":                  "ffn_gate_inp.weight",
	"router.scale":                        "ffn_gate_inp.scale",
	"router.per_expert_scale":             "ffn_down_exps.scale",
	"experts.gate_up_proj":                "ffn_gate_up_exps.weight",
	"experts.down_proj":                   "ffn_down_exps.weight",
}

// encoderScalar is the encoder's own layer scalar (canonical
// "encoder.layers.{i}.layer_scalar").
const encoderScalar = "enc_layer_output_scale.weight"

// Split expert names: some converters write gate and up separately
// (LLM_TENSOR_FFN_GATE_EXPS / FFN_UP_EXPS, "ffn_gate_exps" / "ffn_up_exps", each
// [E, F, D] row-major); the canonical gate_up_proj is their concatenation along F,
// gate first (HF's .chunk(2) order).
const (
	splitGate = "ffn_gate_exps.weight"
	splitUp   = "ffn_up_exps.weight"
)

var globalNames = map[string]string{
	"embed_tokens.weight":                "token_embd.weight",
	"norm.weight":                        "output_norm.weight",
	"self_conditioning.pre_norm.weight":  "self_cond_pre_norm.weight",
	"self_conditioning.gate_proj.weight": "self_cond_gate.weight",
	"self_conditioning.up_proj.weight":   "self_cond_up.weight",
	"self_conditioning.down_proj.weight": "self_cond_down.weight",
}

// RopeFreqs is the generated proportional-RoPE factor tensor; the engine computes RoPE
// from the config, so the loader only reads it to derive the config (Config) and
// otherwise skips it.
const RopeFreqs = "rope_freqs.weight"

// Name returns the GGUF tensor name of a canonical tensor. For
// layers.{i}.experts.gate_up_proj it is the fused name; SplitNames gives the split
// alternative.
func Name(canonical string) (string, bool) {
	if g, ok := globalNames[canonical]; ok {
		return g, true
	}
	enc := strings.HasPrefix(canonical, "encoder.layers.")
	rest := strings.TrimPrefix(strings.TrimPrefix(canonical, "encoder."), "layers.")
	if rest == canonical {
		return "", false
	}
	i, suffix, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	if _, err := strconv.Atoi(i); err != nil {
		return "", false
	}
	if enc {
		if suffix == "layer_scalar" {
			return "blk." + i + "." + encoderScalar, true
		}
		return "", false
	}
	g, ok := layerNames[suffix]
	if !ok {
		return "", false
	}
	return "blk." + i + "." + g, true
}

// SplitNames returns the separate gate and up expert tensors that may stand in for
// layers.{i}.experts.gate_up_proj.
func SplitNames(canonical string) (gate, up string, ok bool) {
	rest, found := strings.CutPrefix(canonical, "layers.")
	if !found {
		return "", "", false
	}
	i, suffix, _ := strings.Cut(rest, ".")
	if suffix != "experts.gate_up_proj" {
		return "", "", false
	}
	return "blk." + i + "." + splitGate, "blk." + i + "." + splitUp, true
}

// Canonical maps a GGUF tensor name to the canonical name it (or, for split experts,
// part of it) stands for. ignored is true for tensors the engine derives itself
// (rope_freqs); ok is false for names this mapping does not know, which the loader
// refuses rather than guess.
func Canonical(name string) (canonical string, ignored, ok bool) {
	if name == RopeFreqs {
		return "", true, true
	}
	for c, g := range globalNames {
		if g == name {
			return c, false, true
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
	switch suffix {
	case encoderScalar:
		return "encoder.layers." + i + ".layer_scalar", false, true
	case splitGate, splitUp:
		return "layers." + i + ".experts.gate_up_proj", false, true
	case "rope_freqs.weight": // a per-layer copy of rope_freqs
		return "", true, true
	}
	for c, g := range layerNames {
		if g == suffix {
			return "layers." + i + "." + c, false, true
		}
	}
	return "", false, false
}

// checkArch refuses files of another architecture.
func (f *File) checkArch() error {
	a, ok := f.Metadata["general.architecture"].Str()
	if !ok {
		return fmt.Errorf("no general.architecture")
	}
	if a != Arch {
		if a == "gemma4" {
			return fmt.Errorf("architecture %q is autoregressive Gemma 4, not DiffusionGemma (%q)", a, Arch)
		}
		return fmt.Errorf("architecture %q is not DiffusionGemma (%q)", a, Arch)
	}
	return nil
}
