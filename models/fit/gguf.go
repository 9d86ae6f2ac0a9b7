package fit

import (
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// GGUFTensorBytes is tensor s's size in a GGUF file of cfg in mix m
// (weights.GGUFType; a tensor in a float type as under p: TensorBytes).
func GGUFTensorBytes(cfg *config.Model, p quant.Profile, m gguf.Mix, s weights.Spec) int64 {
	t, ok := weights.GGUFType(cfg, m, s)
	if !ok {
		return TensorBytes(cfg, p, s)
	}
	return s.Elements() / int64(t.BlockSize()) * int64(t.BlockBytes())
}

// GGUFHeldBytes is the bytes the CPU's host path holds tensor s of a GGUF file of cfg
// in mix m in: its blocks as stored (GGUFTensorBytes), or the Darkroom format it
// converts the tensor to at load (weights.HostHeld: a Q6_K embedding as int8 in groups
// of 32).
func GGUFHeldBytes(cfg *config.Model, p quant.Profile, m gguf.Mix, s weights.Spec) int64 {
	if t, ok := weights.GGUFType(cfg, m, s); ok {
		if spec, held := weights.HostHeld(t, s.Name); held {
			return spec.Bytes(s.Shape)
		}
	}
	return GGUFTensorBytes(cfg, p, m, s)
}

// GGUFFileBytes is the weights' bytes in a GGUF file of cfg in mix m (the download's
// size but for its metadata).
func GGUFFileBytes(cfg *config.Model, p quant.Profile, m gguf.Mix) int64 {
	var total int64
	for _, s := range weights.Specs(cfg) {
		total += GGUFTensorBytes(cfg, p, m, s)
	}
	return total
}

// GGUFWeightBytes is WeightBytes for a GGUF file of cfg in mix m on the CPU's host
// path (GGUFHeldBytes).
func GGUFWeightBytes(cfg *config.Model, p quant.Profile, m gguf.Mix) int64 {
	var total int64
	for _, s := range weights.Specs(cfg) {
		total += GGUFHeldBytes(cfg, p, m, s)
	}
	return total
}
