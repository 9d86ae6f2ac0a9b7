package train

import (
	"fmt"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/config"
)

// MiniSize is the shape of a Darkroom Mini configuration.
type MiniSize struct {
	Hidden, Layers, Heads, HeadDim, GlobalHeadDim int
	KVHeads, GlobalKVHeads                        int
	Intermediate, MoEIntermediate                 int
	Experts, TopK, Window                         int
}

// DefaultMiniSize is the first Darkroom Mini's shape (sessions 1–7, 0.7 M
// parameters with the 4,096-token vocabulary), sized from the trainer's
// measured throughput on a 2-core machine: what `darkroom train run` builds
// from scratch unless its size flags say otherwise, and the tests' small
// model. The shipped Mini is larger — its shape is assets/mini/config.json,
// reached by growing and retraining as assets/training/recipe.json records
// (`train run --init` takes a model's shape from its folder).
var DefaultMiniSize = MiniSize{Hidden: 64, Layers: 3, Heads: 2, HeadDim: 32, GlobalHeadDim: 64,
	KVHeads: 1, GlobalKVHeads: 1, Intermediate: 128, MoEIntermediate: 64, Experts: 8, TopK: 2, Window: 128}

// MiniConfig returns the Darkroom Mini architecture for a tokenizer with the
// given vocabulary size and end-of-generation ids: the exact DiffusionGemma
// layout at a small size — sliding layers then one full (K=V, proportional
// partial RoPE) last layer, a routed MoE next to the dense shared MLP in every
// layer, self-conditioning, canvas 256 — and the shipped Mini's sampler
// settings (MiniGeneration).
func MiniConfig(s MiniSize, vocab int, eosIDs []int, pad, eos, bos int) (*config.Model, error) {
	types := make([]config.LayerType, s.Layers)
	for i := range types {
		types[i] = config.SlidingAttention
	}
	types[s.Layers-1] = config.FullAttention
	m := &config.Model{
		Architectures: []string{"DiffusionGemmaForBlockDiffusion"},
		ModelType:     "diffusion_gemma",
		CanvasLength:  256,
		EOSTokenIDs:   eosIDs,
		DType:         "float32",
		Text: config.Text{
			VocabSize: vocab, HiddenSize: s.Hidden, IntermediateSize: s.Intermediate,
			MoEIntermediateSize: s.MoEIntermediate, NumExperts: s.Experts, TopKExperts: s.TopK,
			NumHiddenLayers: s.Layers, NumAttentionHeads: s.Heads, NumKeyValueHeads: s.KVHeads,
			NumGlobalKVHeads: s.GlobalKVHeads, HeadDim: s.HeadDim, GlobalHeadDim: s.GlobalHeadDim,
			LayerTypes: types, SlidingWindow: s.Window, MaxPositionEmbeddings: 8192, RMSNormEps: 1e-6,
			HiddenActivation: "gelu_pytorch_tanh", FinalLogitSoftcapping: 30,
			PadTokenID: pad, EOSTokenID: eos, BOSTokenID: bos,
		},
	}
	m.Text.RopeParameters.Sliding = config.Rope{Type: "default", Theta: 10000}
	m.Text.RopeParameters.Full = config.Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}
	gen, err := MiniGeneration()
	if err != nil {
		return nil, err
	}
	m.Generation = gen
	m.Generation.EOSTokenIDs = eosIDs
	m.Generation.PadTokenID = pad
	return m, nil
}

// MiniGeneration is the sampler a new Darkroom Mini starts with: the shipped
// Mini's (assets/mini/generation_config.json), so that a model trained from
// scratch samples as the built-in one does, and a setting changed there is
// changed for both. Each of its settings was chosen by measuring pages and
// answers, as assets/training/README.md tells: the entropy bound 30 (the
// small model's own; DiffusionGemma's 0.1 left a canvas of mostly noise), AR
// guidance and its weight inside words, no word twice side by side, the
// printer's repetition and frequency penalties, and the cap of 20 denoising
// steps and 4 guidance rounds that keeps the 12-layer Mini's canvas inside
// 1.5 s on a CPU. The EOS and pad ids are the tokenizer's (MiniConfig).
func MiniGeneration() (config.Generation, error) {
	fsys, err := assets.Mini()
	if err != nil {
		return config.Generation{}, fmt.Errorf("the built-in Darkroom Mini's sampler settings: %w", err)
	}
	mini, err := config.LoadFS(fsys, ".") // as the engine reads a model folder
	if err != nil {
		return config.Generation{}, fmt.Errorf("the built-in Darkroom Mini's sampler settings: %w", err)
	}
	return mini.Generation, nil
}
