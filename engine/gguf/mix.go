package gguf

import "strings"

// Mix names one of llama.cpp's quantization mixes by its ftype's name ("Q4_K_M"): the
// block type each tensor of a model gets, decided by engine/weights' GGUFType. The
// empty Mix is no GGUF file at all.
type Mix string

// The mixes Darkroom prices, writes and recognizes: Unsloth's GGUF downloads of
// DiffusionGemma (Q3_K_M, the one that fits a 16 GB GPU, by Unsloth's naming: its
// file is not confirmed here).
const (
	Q3KM Mix = "Q3_K_M"
	Q4KM Mix = "Q4_K_M"
	Q5KM Mix = "Q5_K_M"
	Q6KM Mix = "Q6_K"
	Q80M Mix = "Q8_0"
)

// Mixes lists them, smallest first.
var Mixes = []Mix{Q3KM, Q4KM, Q5KM, Q6KM, Q80M}

// ParseMix reads a mix's name, in any case ("q5_k_m").
func ParseMix(s string) (Mix, bool) {
	for _, m := range Mixes {
		if strings.EqualFold(string(m), s) {
			return m, true
		}
	}
	return "", false
}
