package weights

import (
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// Q4KMType is the block type llama.cpp's Q4_K_M gives cfg's tensor s, and false for a
// tensor it keeps in a float type (norms, scales and the router: llama.cpp's quantizer
// leaves 1-D tensors and ffn_gate_inp as they are): Q6_K for the tied embedding (the
// output head's type) and for the value projections and the down projections of the
// layers it gives more bits (the first and last eighth and every third between:
// use_more_bits), else Q4_K; and where a row is no whole block of 256 (the 26B's 704-
// and 2,112-input down projections, a small model's every tensor) its fallback, Q8_0
// for Q6_K and Q5_0 for Q4_K. Unsloth's Q4_K_M is built by llama.cpp's quantizer; by this rule the 26B's
// weights take 16.76 GB, the download 16.8 (models/fit's TestGGUFWeights).
//
// It is the one statement of the mix: the fit and speed estimates price a Q4_K_M
// download by it, and `darkroom train init --profile q4_k_m` writes it.
func Q4KMType(cfg *config.Model, s Spec) (gguf.Type, bool) {
	if !s.Quantizable || len(s.Shape) < 2 {
		return 0, false
	}
	layer, nl := s.Layer, cfg.Text.NumHiddenLayers
	more := layer >= 0 && (layer < nl/8 || layer >= 7*nl/8 || (layer-nl/8)%3 == 2)
	six := s.Name == EmbeddingName || more && (strings.HasSuffix(s.Name, "down_proj") ||
		strings.HasSuffix(s.Name, "down_proj.weight") || strings.HasSuffix(s.Name, "v_proj.weight"))
	whole := s.Shape[len(s.Shape)-1]%gguf.QK_K == 0
	switch {
	case six && whole:
		return gguf.Q6_K, true
	case six:
		return gguf.Q8_0, true
	case whole:
		return gguf.Q4_K, true
	}
	return gguf.Q5_0, true
}
