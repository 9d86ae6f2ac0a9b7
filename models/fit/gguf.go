package fit

import (
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// GGUFTensorBytes is tensor s's size in a Q4_K_M GGUF file of cfg (weights.Q4KMType;
// a tensor in a float type as under p: TensorBytes).
func GGUFTensorBytes(cfg *config.Model, p quant.Profile, s weights.Spec) int64 {
	t, ok := weights.Q4KMType(cfg, s)
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
