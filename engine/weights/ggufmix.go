package weights

import (
	"slices"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// GGUFType is the block type llama.cpp's quantization mix m gives cfg's tensor s
// (llama-quant.cpp's llama_tensor_get_type), and false for a tensor it keeps in a float
// type (norms, scales and the router: llama.cpp's quantizer leaves 1-D tensors and
// ffn_gate_inp as they are). Each mix has a default type — Q3_K, Q4_K, Q5_K, Q6_K,
// Q8_0 — which some tensors trade for more bits (mixType): the tied embedding (the
// output head's type) Q6_K; in Q4_K_M and Q5_K_M, Q6_K for the value projections and
// the down projections (dense and experts) of the layers given more bits (the first
// and last eighth and every third between: useMoreBits); in Q3_K_M, Q5_K for the
// first two value projections and the first sixteenth's down projections, Q4_K for
// the other value, down and output projections; in a model of 8 experts (Darkroom
// Mini), as llama.cpp does for Mixtral, Q8_0 for the key and value projections and
// Q5_K for Q3_K_M's and Q4_K_M's output projections. Where a row is no whole block of
// 256 (the 26B's 704- and 2,112-input down projections, a small model's every
// tensor) a K type takes its fallback (ggufFallback). Unsloth's GGUFs are built by
// llama.cpp's quantizer; by these rules the 26B's weights take 13.28, 16.79, 19.13,
// 22.64 and 26.86 GB; the last four are 15.6, 17.8, 21.1 and 25.0 GiB, which the
// model card rounds to 16, 18, 21 and 25, and the Q4_K_M download is 16.8 GB
// (models/fit's TestGGUFWeights). engine/weights' TestGGUFTypeAsLlamaCpp holds it to
// llama.cpp's rules restated over the file's tensor names.
//
// It is the one statement of the mixes: the fit and speed estimates price a GGUF
// download by it, GGUFMixOf recognizes a file's, and `darkroom train init --profile
// q4_k_m` (or another mix) writes it.
func GGUFType(cfg *config.Model, m gguf.Mix, s Spec) (gguf.Type, bool) {
	if !s.Quantizable || len(s.Shape) < 2 || !slices.Contains(gguf.Mixes, m) {
		return 0, false // a float tensor, or no mix ("": not a GGUF file)
	}
	t := mixType(&cfg.Text, m, s)
	if s.Shape[len(s.Shape)-1]%t.BlockSize() == 0 {
		return t, true
	}
	return ggufFallback(t, s.Shape[len(s.Shape)-1]), true
}

// mixType is the type mix m gives tensor s before a row that is no whole block falls
// back (GGUFType): llama_tensor_get_type_impl's branches for the tensors of
// DiffusionGemma, told apart as llama.cpp tells them, by their GGUF names.
func mixType(t *config.Text, m gguf.Mix, s Spec) gguf.Type {
	def := mixDefault[m]
	if m == gguf.Q80M {
		return gguf.Q8_0 // the embedding too: llama.cpp gives the output Q6_K only where it is not Q8_0
	}
	eight := t.NumExperts == 8
	name := s.GGUF
	switch {
	case s.Name == EmbeddingName:
		return gguf.Q6_K // tied: the output head's type
	case strings.Contains(name, "attn_v.weight"):
		if eight {
			return gguf.Q8_0
		}
		i, n := vOrdinal(t, s.Layer)
		switch {
		case m == gguf.Q3KM && i < 2:
			return gguf.Q5_K
		case m == gguf.Q3KM:
			return gguf.Q4_K
		case (m == gguf.Q4KM || m == gguf.Q5KM) && useMoreBits(i, n):
			return gguf.Q6_K
		}
	case strings.Contains(name, "attn_k.weight"):
		if eight {
			return gguf.Q8_0
		}
	case strings.Contains(name, "ffn_down"): // the dense MLP's and the experts' (not the self-conditioning MLP's)
		i, n := s.Layer, t.NumHiddenLayers
		switch {
		case m == gguf.Q3KM && i < n/16:
			return gguf.Q5_K
		case m == gguf.Q3KM:
			return gguf.Q4_K
		case (m == gguf.Q4KM || m == gguf.Q5KM) && useMoreBits(i, n):
			return gguf.Q6_K
		}
	case strings.Contains(name, "attn_output.weight"):
		switch {
		case eight && (m == gguf.Q3KM || m == gguf.Q4KM):
			return gguf.Q5_K
		case !eight && m == gguf.Q3KM:
			return gguf.Q4_K
		}
	}
	return def
}

// mixDefault is each K mix's default type (llama_ftype_get_default_type).
var mixDefault = map[gguf.Mix]gguf.Type{gguf.Q3KM: gguf.Q3_K, gguf.Q4KM: gguf.Q4_K, gguf.Q5KM: gguf.Q5_K, gguf.Q6KM: gguf.Q6_K}

// useMoreBits is llama.cpp's use_more_bits: tensor i of n is among those a mix gives
// more bits — the first and last eighth, and every third between.
func useMoreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

// vOrdinal is layer's place among the layers that have a value projection (the
// sliding ones: full layers use K as V) and how many there are: llama.cpp counts its
// attn_v tensors in layer order (i_attention_wv of n_attention_wv), not the layers.
func vOrdinal(t *config.Text, layer int) (i, n int) {
	for j := range t.NumHiddenLayers {
		if t.IsSliding(j) {
			if j < layer {
				i++
			}
			n++
		}
	}
	return i, n
}

// kFallback is each K type's fallback of blocks of 32 (ggufFallback).
var kFallback = map[gguf.Type]gguf.Type{gguf.Q2_K: gguf.Q4_0, gguf.Q3_K: gguf.Q4_0, gguf.Q4_K: gguf.Q5_0,
	gguf.Q5_K: gguf.Q5_1, gguf.Q6_K: gguf.Q8_0}

// ggufFallback is the type llama.cpp writes a tensor of type t in where its rows of
// cols values are no whole block of t (tensor_type_fallback): a K type's nearest of
// blocks of 32 — Q4_0 for Q2_K and Q3_K (llama.cpp's source now; older releases wrote
// IQ4_NL, of the same bytes), Q5_0 for Q4_K, Q5_1 for Q5_K, Q8_0 for Q6_K — and F16
// where even that does not divide the rows.
func ggufFallback(t gguf.Type, cols int) gguf.Type {
	f, ok := kFallback[t]
	if !ok || cols%f.BlockSize() != 0 {
		return gguf.F16
	}
	return f
}

// GGUFMixOf is the mix of f's tensors for cfg: the one whose rule (GGUFType) gives
// the most of them their stored type, and more than half of its quantized tensors —
// llama.cpp's files name their ftype in general.file_type, but a type chosen by hand
// (--tensor-type) or a newer rule may differ in a few tensors — and false where no mix
// does (a float file; a pure Q4_0 file, whose one Q4_0 tensor a Q3_K_M also has).
func GGUFMixOf(f *gguf.File, cfg *config.Model) (gguf.Mix, bool) {
	quantized := 0
	for _, s := range Specs(cfg) {
		if info, found := f.Lookup(s.GGUF); found && s.Quantizable && !info.Type.IsFloat() {
			quantized++
		}
	}
	var best gguf.Mix
	most := 0
	for _, m := range gguf.Mixes {
		n := 0
		for _, s := range Specs(cfg) {
			t, ok := GGUFType(cfg, m, s)
			if !ok {
				continue
			}
			if info, found := f.Lookup(s.GGUF); found && info.Type == t {
				n++
			}
		}
		if n > most {
			best, most = m, n
		}
	}
	if most == 0 || 2*most <= quantized {
		return "", false
	}
	return best, true
}
