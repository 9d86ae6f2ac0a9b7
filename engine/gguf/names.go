package gguf

import "fmt"

// Arch is general.architecture of DiffusionGemma GGUFs: llama.cpp's
// LLM_ARCH_DIFFUSION_GEMMA ("diffusion-gemma"), added by the unmerged PR #24423
// (ggml-org/llama.cpp) that Unsloth's files are written by. Which tensor names such a
// file holds, and what each stands for, is engine/weights' table (Spec.GGUF).
const Arch = "diffusion-gemma"

// RopeFreqs is the generated proportional-RoPE factor tensor (64 ones then 192 ×
// 1e30 for the full layers' partial rotation). The engine computes RoPE from the
// config, so the loader only reads it to derive the config (Config) and otherwise
// skips it.
const RopeFreqs = "rope_freqs.weight"

// checkArch refuses files of another architecture.
func (f *File) checkArch() error {
	a, ok := f.Metadata["general.architecture"].Str()
	if !ok {
		return fmt.Errorf("no general.architecture")
	}
	if a != Arch {
		if a == "gemma4" {
			return fmt.Errorf("architecture %q is autoregressive Gemma 4, not DiffusionGemma (%q)", a, Arch)
		}
		return fmt.Errorf("architecture %q is not DiffusionGemma (%q)", a, Arch)
	}
	return nil
}
