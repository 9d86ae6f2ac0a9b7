package fit

import (
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// GGUFTensorBytes is tensor s's size in a GGUF file of cfg laid out as l
// (weights.GGUFLayout: a mix's rule or the file's own types; a tensor l does not
// know, as under p: TensorBytes).
func GGUFTensorBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, s weights.Spec) int64 {
	if b, ok := l.StoredBytes(cfg, s); ok {
		return b
	}
	return TensorBytes(cfg, p, s)
}

// GGUFHeldBytes is the bytes the CPU's host path holds tensor s of a GGUF file of cfg
// laid out as l in: its blocks as stored (GGUFTensorBytes), or the Darkroom format it
// converts the tensor to at load (weights.HostHeld: a Q6_K embedding as int8 in groups
// of 32) — every tensor converted as LoadGGUF converts it where the host path cannot
// multiply the file's blocks as stored (GGUFLayout.HostConverted).
func GGUFHeldBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, s weights.Spec) int64 {
	if l.HostConverted() {
		if b, ok := l.ConvertedBytes(cfg, s); ok {
			return b
		}
		return TensorBytes(cfg, p, s)
	}
	if b, held := l.HostHeld(cfg, s); held {
		return b
	}
	return GGUFTensorBytes(cfg, p, l, s)
}

// GGUFDeviceTensorBytes is tensor s of a GGUF file of cfg laid out as l as a graph
// path (a GPU) holds it: Q4_K, Q5_K, Q6_K and Q8_0 blocks as stored, other types
// converted at load to int8, int4 or affine int4 codes and scales, or float values
// (weights.GGUFLayout.DeviceBytes).
func GGUFDeviceTensorBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, s weights.Spec) int64 {
	if b, ok := l.DeviceBytes(cfg, s); ok {
		return b
	}
	return TensorBytes(cfg, p, s)
}

// GGUFFileBytes is the weights' bytes in a GGUF file of cfg laid out as l (the
// download's size but for its metadata).
func GGUFFileBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout) int64 {
	return sumSpecs(cfg, func(s weights.Spec) int64 { return GGUFTensorBytes(cfg, p, l, s) })
}

// GGUFWeightBytes is WeightBytes for a GGUF file of cfg laid out as l on the CPU's
// host path (GGUFHeldBytes).
func GGUFWeightBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout) int64 {
	return sumSpecs(cfg, func(s weights.Spec) int64 { return GGUFHeldBytes(cfg, p, l, s) })
}

// GGUFDeviceWeightBytes is WeightBytes for a GGUF file of cfg laid out as l on a
// graph path (GGUFDeviceTensorBytes): the weights' buffers on a GPU.
func GGUFDeviceWeightBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout) int64 {
	return sumSpecs(cfg, func(s weights.Spec) int64 { return GGUFDeviceTensorBytes(cfg, p, l, s) })
}

// sumSpecs sums f over cfg's tensors.
func sumSpecs(cfg *config.Model, f func(weights.Spec) int64) int64 {
	var total int64
	for _, s := range weights.Specs(cfg) {
		total += f(s)
	}
	return total
}
