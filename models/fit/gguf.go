package fit

import (
	"strconv"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// GGUFType is the block type llama.cpp's Q4_K_M gives cfg's tensor s, and false for a
// tensor it keeps in a float type (those p does not quantize: norms, the router):
// Q6_K for the tied embedding (the output head's type); for the value projections and
// the down projections of the layers it gives more bits (the first and last eighth
// and every third between: use_more_bits) Q6_K, else Q4_K; and where a row is no
// whole block of 256 (the 26B's 704- and 2,112-input down projections) its fallback,
// Q8_0 for Q6_K and Q5_0 for Q4_K. Unsloth's Q4_K_M is built by llama.cpp's quantizer;
// by this rule the 26B's weights take 16.76 GB, the download 16.8.
func GGUFType(cfg *config.Model, p quant.Profile, s weights.Spec) (gguf.Type, bool) {
	if _, q := p.SpecFor(s.Name, s.Shape, s.Quantizable); !q {
		return 0, false
	}
	if s.Name == "embed_tokens.weight" {
		return gguf.Q6_K, true
	}
	layer, nl := -1, cfg.Text.NumHiddenLayers
	if rest, ok := strings.CutPrefix(s.Name, "layers."); ok {
		if i := strings.IndexByte(rest, '.'); i > 0 {
			layer, _ = strconv.Atoi(rest[:i])
		}
	}
	more := layer >= 0 && (layer < nl/8 || layer >= 7*nl/8 || (layer-nl/8)%3 == 2)
	six := more && (strings.HasSuffix(s.Name, "down_proj") || strings.HasSuffix(s.Name, "down_proj.weight") ||
		strings.HasSuffix(s.Name, "v_proj.weight"))
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

// GGUFTensorBytes is tensor s's size in a Q4_K_M GGUF file of cfg (GGUFType; a tensor
// in a float type as under p: TensorBytes).
func GGUFTensorBytes(cfg *config.Model, p quant.Profile, s weights.Spec) int64 {
	t, ok := GGUFType(cfg, p, s)
	if !ok {
		return TensorBytes(cfg, p, s)
	}
	return s.Elements() / int64(t.BlockSize()) * int64(t.BlockBytes())
}

// GGUFWeightBytes is WeightBytes for a Q4_K_M GGUF file of cfg, its blocks held as
// stored (the CPU's host path).
func GGUFWeightBytes(cfg *config.Model, p quant.Profile) int64 {
	var total int64
	for _, s := range weights.Specs(cfg) {
		total += GGUFTensorBytes(cfg, p, s)
	}
	return total
}
