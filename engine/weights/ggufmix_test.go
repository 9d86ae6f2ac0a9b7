package weights_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// llamaTensor is one tensor of a GGUF file as llama.cpp's quantizer sees it: its
// name and ne[0], the values in a row.
type llamaTensor struct {
	name string
	cols int
}

// llamaCppTypes restates llama.cpp's type selection (src/llama-quant.cpp:
// llama_tensor_get_type_impl, tensor_type_fallback, as of 2026) for the tensors of a
// file, in its own terms rather than GGUFType's: the tensors walked in the order its
// loader sorts them (weight_name_comparer: by "blk.%d.", then by name), categories
// by substrings of the names, attn_v tensors counted as they pass (i_attention_wv of
// n_attention_wv), a layer read from "blk.%d." (layer_info with n_expert > 1).
func llamaCppTypes(ts []llamaTensor, mix gguf.Mix, nLayer, nExpert int) map[string]gguf.Type {
	layerOf := func(name string) int {
		l := -1
		fmt.Sscanf(name, "blk.%d.", &l)
		return l
	}
	slices.SortFunc(ts, func(a, b llamaTensor) int {
		if c := cmp.Compare(layerOf(a.name), layerOf(b.name)); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	nWV := 0
	for _, t := range ts {
		if strings.Contains(t.name, "attn_v.weight") {
			nWV++
		}
	}
	moreBits := func(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }
	def := map[gguf.Mix]gguf.Type{gguf.Q3KM: gguf.Q3_K, gguf.Q4KM: gguf.Q4_K, gguf.Q5KM: gguf.Q5_K, gguf.Q6KM: gguf.Q6_K, gguf.Q80M: gguf.Q8_0}[mix]
	out := map[string]gguf.Type{}
	iWV := 0
	for _, t := range ts {
		nt := def
		switch {
		case t.name == "token_embd.weight": // tied: the output's type
			if t.cols%def.BlockSize() != 0 {
				nt = gguf.Q8_0
			} else if nt != gguf.Q8_0 {
				nt = gguf.Q6_K
			}
		case strings.Contains(t.name, "attn_v.weight"):
			switch {
			case mix == gguf.Q3KM && iWV < 2:
				nt = gguf.Q5_K
			case mix == gguf.Q3KM:
				nt = gguf.Q4_K
			case (mix == gguf.Q4KM || mix == gguf.Q5KM) && moreBits(iWV, nWV):
				nt = gguf.Q6_K
			}
			if nExpert == 8 {
				nt = gguf.Q8_0
			}
			iWV++
		case strings.Contains(t.name, "attn_k.weight"):
			if nExpert == 8 {
				nt = gguf.Q8_0
			}
		case strings.Contains(t.name, "ffn_down"):
			l := layerOf(t.name)
			switch {
			case mix == gguf.Q3KM && l < nLayer/16:
				nt = gguf.Q5_K
			case mix == gguf.Q3KM:
				nt = gguf.Q4_K // not Falcon
			case mix == gguf.Q4KM && moreBits(l, nLayer), mix == gguf.Q5KM && moreBits(l, nLayer):
				nt = gguf.Q6_K
			}
		case strings.Contains(t.name, "attn_output.weight"):
			if nExpert == 8 {
				if mix == gguf.Q3KM || mix == gguf.Q4KM {
					nt = gguf.Q5_K
				}
			} else if mix == gguf.Q3KM {
				nt = gguf.Q4_K
			}
		}
		if t.cols%nt.BlockSize() != 0 {
			switch nt {
			case gguf.Q2_K, gguf.Q3_K:
				nt = gguf.Q4_0
			case gguf.Q4_K:
				nt = gguf.Q5_0
			case gguf.Q5_K:
				nt = gguf.Q5_1
			case gguf.Q6_K:
				nt = gguf.Q8_0
			}
			if t.cols%nt.BlockSize() != 0 {
				nt = gguf.F16
			}
		}
		out[t.name] = nt
	}
	return out
}

// TestGGUFTypeAsLlamaCpp: GGUFType gives every quantized tensor of the 26B, the
// built-in Mini (8 experts: llama.cpp's Mixtral rules) and the tiny test model the
// type llama.cpp's quantizer does in each mix (llamaCppTypes), its tensors named as
// Unsloth's files name them (the experts' gate and up in one tensor); and the 26B's
// Q4_K_M counts of each type are those of Unsloth's file as llama.cpp loaded it (a
// log in lemonade-sdk/lemonade#2531: q4_K 194, q5_0 33, q8_0 28, q6_K 14; f32 423).
// The 26B's full layers have no attn_v, so llama.cpp's count of them is not the layer:
// GGUFType gave Q4_K_M's extra bits to the value projections of layers 8 and 14 where
// llama.cpp gives them to 6, 9, 13, 16, 24 and 25 (10 Q6_K tensors, not 14).
func TestGGUFTypeAsLlamaCpp(t *testing.T) {
	unsloth := map[gguf.Type]int{gguf.Q4_K: 194, gguf.Q5_0: 33, gguf.Q8_0: 28, gguf.Q6_K: 14}
	mini, err := assets.Mini()
	if err != nil {
		t.Fatal(err)
	}
	miniCfg, err := config.LoadFS(mini, ".")
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*config.Model{"26B": catalog.DiffusionGemma26B(), "Mini": miniCfg, "tiny": config.Tiny()} {
		var ts []llamaTensor
		for _, s := range weights.Specs(cfg) {
			if !s.Quantizable {
				continue
			}
			ts = append(ts, llamaTensor{s.GGUF, s.Shape[len(s.Shape)-1]})
		}
		for _, m := range gguf.Mixes {
			want := llamaCppTypes(slices.Clone(ts), m, cfg.Text.NumHiddenLayers, cfg.Text.NumExperts)
			counts := map[gguf.Type]int{}
			for _, s := range weights.Specs(cfg) {
				got, ok := weights.GGUFType(cfg, m, s)
				if ok != s.Quantizable {
					t.Errorf("%s %s %s: quantized %v", name, m, s.Name, ok)
					continue
				}
				if !ok {
					continue
				}
				counts[got]++
				if got != want[s.GGUF] {
					t.Errorf("%s %s %s: %s, llama.cpp writes %s", name, m, s.GGUF, got, want[s.GGUF])
				}
			}
			t.Logf("%s %s: %v", name, m, counts)
			if name == "26B" && m == gguf.Q4KM && !maps.Equal(counts, unsloth) {
				t.Errorf("26B Q4_K_M: %v tensors of each type, Unsloth's file has %v", counts, unsloth)
			}
		}
	}
}
