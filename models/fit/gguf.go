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

// GGUFHeldBytes is the bytes the CPU's host path holds tensor s of a Q4_K_M GGUF file
// of cfg in: its blocks as stored (GGUFTensorBytes), or the Darkroom format it converts
// a type to at load (weights.HostHeld: the Q6_K embedding as int8 in groups of 32).
func GGUFHeldBytes(cfg *config.Model, p quant.Profile, s weights.Spec) int64 {
	if t, ok := weights.Q4KMType(cfg, s); ok {
		if spec, held := weights.HostHeld(t); held {
			return spec.Bytes(s.Shape)
		}
	}
	return GGUFTensorBytes(cfg, p, s)
}

// GGUFFileBytes is the weights' bytes in a Q4_K_M GGUF file of cfg (the download's
// size but for its metadata).
func GGUFFileBytes(cfg *config.Model, p quant.Profile) int64 {
	var total int64
	for _, s := range weights.Specs(cfg) {
		total += GGUFTensorBytes(cfg, p, s)
	}
	return total
}

// GGUFWeightBytes is WeightBytes for a Q4_K_M GGUF file of cfg on the CPU's host path
// (GGUFHeldBytes).
func GGUFWeightBytes(cfg *config.Model, p quant.Profile) int64 {
	var total int64
	for _, s := range weights.Specs(cfg) {
		total += GGUFHeldBytes(cfg, p, s)
	}
	return total
}
