package weights

import (
	"slices"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// GGUFType is the block type llama.cpp's quantization mix m gives cfg's tensor s
// (llama_tensor_get_type), and false for a tensor it keeps in a float type (norms,
// scales and the router: llama.cpp's quantizer leaves 1-D tensors and ffn_gate_inp as
// they are). Q4_K_M and Q5_K_M: Q6_K for the tied embedding (the output head's type)
// and for the value projections and the down projections of the layers they give
// more bits (the first and last eighth and every third between: use_more_bits), else
// Q4_K (Q5_K); Q6_K: Q6_K throughout; Q8_0: Q8_0 throughout, the embedding too. Where
// a row is no whole block of 256 (the 26B's 704- and 2,112-input down projections, a
// small model's every tensor) a K type takes its fallback: Q8_0 for Q6_K, Q5_0 for
// Q4_K, Q5_1 for Q5_K. Unsloth's GGUFs are built by llama.cpp's quantizer; by these
// rules the 26B's weights take 16.76, 19.10, 22.62 and 26.84 GB — 15.6, 17.8, 21.1 and
// 25.0 GiB, which the model card rounds to 16, 18, 21 and 25 — and the Q4_K_M download
// is 16.8 GB (models/fit's TestGGUFWeights).
//
// It is the one statement of the mixes: the fit and speed estimates price a GGUF
// download by it, GGUFMixOf recognizes a file's, and `darkroom train init --profile
// q4_k_m` (or another mix) writes it.
func GGUFType(cfg *config.Model, m gguf.Mix, s Spec) (gguf.Type, bool) {
	if !s.Quantizable || len(s.Shape) < 2 || !slices.Contains(gguf.Mixes, m) {
		return 0, false // a float tensor, or no mix ("": not a GGUF file)
	}
	layer, nl := s.Layer, cfg.Text.NumHiddenLayers
	more := layer >= 0 && (layer < nl/8 || layer >= 7*nl/8 || (layer-nl/8)%3 == 2)
	six := s.Name == EmbeddingName || more && (strings.HasSuffix(s.Name, "down_proj") ||
		strings.HasSuffix(s.Name, "down_proj.weight") || strings.HasSuffix(s.Name, "v_proj.weight"))
	whole := s.Shape[len(s.Shape)-1]%gguf.QK_K == 0
	t := gguf.Q4_K
	switch {
	case m == gguf.Q80M:
		return gguf.Q8_0, true
	case m == gguf.Q6KM || six:
		t = gguf.Q6_K
	case m == gguf.Q5KM:
		t = gguf.Q5_K
	}
	if whole {
		return t, true
	}
	switch t {
	case gguf.Q6_K:
		return gguf.Q8_0, true
	case gguf.Q5_K:
		return gguf.Q5_1, true
	}
	return gguf.Q5_0, true
}

// GGUFMixOf is the mix of f's tensors for cfg: the one whose rule (GGUFType) gives
// the most of them their stored type — llama.cpp's files name their ftype in
// general.file_type, but a type chosen by hand (--tensor-type) or a newer rule may
// differ in a few tensors — and false where no mix gives a quantized tensor its type
// (a float file).
func GGUFMixOf(f *gguf.File, cfg *config.Model) (gguf.Mix, bool) {
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
	return best, most > 0
}
