package quant

import (
	"fmt"
	"strings"
)

// Profile is a named choice of formats for a whole model.
type Profile string

// Profiles.
const (
	BF16Profile Profile = "bf16" // nothing quantized
	Int8Profile Profile = "int8" // every projection, expert and the embedding int8 per-channel
	// Int4Profile: experts (the bulk of the 26B model: ~22.8 of 25.2B parameters) int4
	// g32 with BFloat16 scales (Int4: 4.5 bits a weight; Float32 scales cost 0.5 more
	// for a relative RMS error only 0.01% lower); attention, dense MLP,
	// self-conditioning and the embedding int8 per-channel.
	Int4Profile Profile = "int4"
)

// NVFP4Profile is a community format Darkroom loads but does not make: NVIDIA
// ModelOpt's NVFP4 export (nvidia/diffusiongemma-26B-A4B-it-NVFP4), where attention,
// dense-MLP and expert projections are NVFP4 (FP4 E2M1, groups of 16, see NVFP4) and
// the embedding, router, norms and self-conditioning MLP stay BF16. It is not in
// Profiles (`darkroom quantize` cannot produce it); SpecFor describes the loaded form
// for size estimates. A real checkpoint's layout comes from its tensors, not from this.
const NVFP4Profile Profile = "nvfp4"

// Profiles lists the profiles in order of size.
var Profiles = []Profile{BF16Profile, Int8Profile, Int4Profile}

// ParseProfile checks a profile name.
func ParseProfile(s string) (Profile, error) {
	for _, p := range Profiles {
		if string(p) == strings.ToLower(s) {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown quantization profile %q (want bf16, int8 or int4)", s)
}

// SpecFor decides how the profile stores weight name (canonical) of the given logical
// shape; quantizable comes from the weight table (projections, experts, embedding:
// norms, scales and the small router stay in float). ok is false to keep it in float.
// A weight whose input dimension the int4 group does not divide falls back to int8.
func (p Profile) SpecFor(name string, shape []int, quantizable bool) (Spec, bool) {
	if !quantizable || len(shape) < 2 || p == BF16Profile {
		return Spec{}, false
	}
	if p == NVFP4Profile {
		// The self-conditioning MLP stays BF16 in the NVFP4 export: vLLM builds it from
		// plain nn.Linear layers without a quant config (vllm diffusion_gemma.py,
		// DiffusionGemmaSelfConditioning), which could not load NVFP4 tensors.
		if name == "embed_tokens.weight" || strings.HasPrefix(name, "self_conditioning.") || NVFP4.Check(shape) != nil {
			return Spec{}, false
		}
		return NVFP4, true
	}
	if p == Int4Profile && strings.Contains(name, ".experts.") && Int4.Check(shape) == nil {
		return Int4, true
	}
	if p == Int8Profile || p == Int4Profile {
		if Int8.Check(shape) == nil {
			return Int8, true
		}
	}
	return Spec{}, false
}

// GroupSize is the int4 group size the profile uses (0 if none), for config.json.
func (p Profile) GroupSize() int {
	switch p {
	case Int4Profile:
		return Int4.GroupSize
	case NVFP4Profile:
		return NVFP4.GroupSize
	}
	return 0
}
