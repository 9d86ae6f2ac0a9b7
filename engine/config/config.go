// Package config reads a DiffusionGemma-architecture checkpoint's configuration:
// config.json (model_type "diffusion_gemma", dims under "text_config"),
// generation_config.json (sampler defaults) and, for an NVIDIA ModelOpt export,
// hf_quant_config.json's quantization algorithm. Every dimension the engine uses comes
// from here, so a tiny test model and the 26B checkpoint run the same code.
package config

import "encoding/json"

// LayerType is the attention kind of one layer.
type LayerType string

const (
	SlidingAttention LayerType = "sliding_attention"
	FullAttention    LayerType = "full_attention"
)

// Rope describes one rotary embedding variant ("default" or "proportional").
type Rope struct {
	Type                string  `json:"rope_type"`
	Theta               float64 `json:"rope_theta"`
	PartialRotaryFactor float64 `json:"partial_rotary_factor,omitempty"` // 0 means 1 (all pairs rotate)
}

// Text is the language model's configuration (config.json "text_config").
type Text struct {
	VocabSize           int         `json:"vocab_size"`
	HiddenSize          int         `json:"hidden_size"`
	IntermediateSize    int         `json:"intermediate_size"`     // dense (shared) MLP and self-conditioning MLP
	MoEIntermediateSize int         `json:"moe_intermediate_size"` // per expert
	NumExperts          int         `json:"num_experts"`
	TopKExperts         int         `json:"top_k_experts"`
	NumHiddenLayers     int         `json:"num_hidden_layers"`
	NumAttentionHeads   int         `json:"num_attention_heads"`
	NumKeyValueHeads    int         `json:"num_key_value_heads"`        // sliding layers
	NumGlobalKVHeads    int         `json:"num_global_key_value_heads"` // full layers (K=V)
	HeadDim             int         `json:"head_dim"`                   // sliding layers
	GlobalHeadDim       int         `json:"global_head_dim"`            // full layers
	LayerTypes          []LayerType `json:"layer_types"`
	SlidingWindow       int         `json:"sliding_window"`
	RopeParameters      struct {
		Sliding Rope `json:"sliding_attention"`
		Full    Rope `json:"full_attention"`
	} `json:"rope_parameters"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	RMSNormEps            float64 `json:"rms_norm_eps"`
	HiddenActivation      string  `json:"hidden_activation"`
	FinalLogitSoftcapping float64 `json:"final_logit_softcapping"`
	TieWordEmbeddings     *bool   `json:"tie_word_embeddings,omitempty"`
	PadTokenID            int     `json:"pad_token_id"`
	EOSTokenID            int     `json:"eos_token_id"`
	BOSTokenID            int     `json:"bos_token_id"`
	DType                 string  `json:"dtype,omitempty"`

	extra map[string]json.RawMessage // keys read from text_config that this struct does not model
}

// Model is config.json: the text config plus the diffusion-level keys.
type Model struct {
	Architectures []string `json:"architectures"`
	ModelType     string   `json:"model_type"`
	CanvasLength  int      `json:"canvas_length"`
	// EOSTokenIDs are the ids that end generation (top-level eos_token_id: a number or a list).
	EOSTokenIDs []int  `json:"-"`
	DType       string `json:"dtype,omitempty"`
	Text        Text   `json:"text_config"`
	// Quantization is set for a checkpoint written by `darkroom quantize` (see Quantization).
	Quantization *Quantization `json:"quantization_config,omitempty"`

	// Generation holds generation_config.json (DefaultGeneration where absent).
	Generation Generation `json:"-"`

	extra map[string]json.RawMessage // top-level keys this struct does not model (vision_config, …)
}

// QuantMethod is the quant_method of Darkroom's own quantized checkpoints.
const QuantMethod = "darkroom"

// ModelOptMethod is the quant_method NVIDIA ModelOpt writes into config.json; Darkroom
// loads its NVFP4 exports (quant_algo "NVFP4" or "W4A16_NVFP4", engine/weights).
const ModelOptMethod = "modelopt"

// Quantization is config.json's "quantization_config" for a Darkroom-quantized
// checkpoint. It records the profile for display and for the models library; the
// per-tensor formats are self-describing in the safetensors files (a quantized weight
// NAME is stored as NAME.qweight + NAME.qscale, see package engine/quant). For an
// NVIDIA ModelOpt export it is ModelOpt's: config.json's, or, where that has none,
// the quant_algo of hf_quant_config.json (LoadFS), so that every reader of the
// config knows the checkpoint is NVFP4 (StoredProfile).
type Quantization struct {
	QuantMethod string `json:"quant_method"`         // QuantMethod, or ModelOptMethod for an NVFP4 export
	Profile     string `json:"profile,omitempty"`    // "int8", "int4" or "nvfp4"
	GroupSize   int    `json:"group_size,omitempty"` // int4 group size along the input dimension
	QuantAlgo   string `json:"quant_algo,omitempty"` // ModelOpt's quant_algo
}

// StoredProfile is the profile name of the checkpoint's weights: Profile for
// Darkroom's own, "nvfp4" for a ModelOpt NVFP4 export.
func (q *Quantization) StoredProfile() string {
	if q.QuantMethod == ModelOptMethod {
		return "nvfp4"
	}
	return q.Profile
}

// Generation is generation_config.json: the sampler's defaults.
type Generation struct {
	MaxNewTokens        int     `json:"max_new_tokens"`
	MaxDenoisingSteps   int     `json:"max_denoising_steps"`
	EntropyBound        float64 `json:"-"` // sampler_config.entropy_bound
	TMin                float64 `json:"t_min"`
	TMax                float64 `json:"t_max"`
	StabilityThreshold  int     `json:"stability_threshold"`
	ConfidenceThreshold float64 `json:"confidence_threshold"`
	EOSTokenIDs         []int   `json:"-"`
	PadTokenID          int     `json:"pad_token_id"`

	// ARGuidance and ARGuidanceRounds are Darkroom's AR guidance of developed
	// canvases (engine.Sampling.Guidance): the causal head's weight and the most
	// rounds per canvas. Zero (or absent, as in every Hugging Face checkpoint) is off.
	// ARGuidanceInWord is the causal head's weight inside words (the spelling;
	// sampler.Guide.InWords); zero is ARGuidance everywhere.
	ARGuidance       float64 `json:"darkroom_ar_guidance,omitempty"`
	ARGuidanceRounds int     `json:"darkroom_ar_guidance_rounds,omitempty"`
	ARGuidanceInWord float64 `json:"darkroom_ar_guidance_in_word,omitempty"`

	// ARNoStutters keeps AR mode from writing a word twice side by side
	// (engine.Sampling.NoStutters; AR guidance always does it). False (or absent,
	// as in every Hugging Face checkpoint) is off.
	ARNoStutters bool `json:"darkroom_ar_no_stutters,omitempty"`

	// ARFrequencyPenalty is OpenAI's frequency_penalty α for AR mode
	// (engine.Sampling.FrequencyPenalty): the logit of an id written c times
	// is lowered by α·c, so a list the printer cannot stop ("[C++], [Lisp],
	// [Scheme], …" to the last token) ends. Zero (or absent, as in every Hugging
	// Face checkpoint) is off.
	ARFrequencyPenalty float64 `json:"darkroom_ar_frequency_penalty,omitempty"`

	// RepetitionPenalty is Hugging Face's repetition_penalty θ, read by the AR
	// mode's pick (sampler.Penalize): the logits of ids already in the sequence are
	// divided by θ where positive and multiplied by θ where negative. 1 (transformers'
	// default, and what an absent key means) is off.
	RepetitionPenalty float64 `json:"repetition_penalty"`
}

// DefaultGeneration is what the released checkpoint's generation_config.json says;
// used for keys a generation_config.json leaves out, or when there is none.
func DefaultGeneration() Generation {
	return Generation{MaxNewTokens: 256, MaxDenoisingSteps: 48, EntropyBound: 0.1, TMin: 0.4, TMax: 0.8,
		StabilityThreshold: 1, ConfidenceThreshold: 0.005, EOSTokenIDs: []int{1, 106}, PadTokenID: 0,
		RepetitionPenalty: 1}
}

// IsSliding reports whether layer i uses sliding-window attention.
func (t *Text) IsSliding(i int) bool { return t.LayerTypes[i] == SlidingAttention }

// KVHeads is the number of key/value heads of layer i.
func (t *Text) KVHeads(i int) int {
	if t.IsSliding(i) {
		return t.NumKeyValueHeads
	}
	return t.NumGlobalKVHeads
}

// LayerHeadDim is the head dimension of layer i.
func (t *Text) LayerHeadDim(i int) int {
	if t.IsSliding(i) {
		return t.HeadDim
	}
	return t.GlobalHeadDim
}

// LayerRope is the rotary embedding of layer i.
func (t *Text) LayerRope(i int) Rope {
	if t.IsSliding(i) {
		return t.RopeParameters.Sliding
	}
	return t.RopeParameters.Full
}

// NumLayers is the number of layers (shared by encoder and decoder).
func (t *Text) NumLayers() int { return t.NumHiddenLayers }

// Tiny returns a small valid configuration that exercises every architectural feature
// (sliding and full layers, K=V full layers with their own head dim and partial RoPE,
// MoE with a shared MLP) for tests: 3 layers (sliding, sliding, full), hidden 64,
// vocab 512, 16 experts top-4, window 8, canvas 16.
func Tiny() *Model {
	m := &Model{
		Architectures: []string{"DiffusionGemmaForBlockDiffusion"},
		ModelType:     ModelType,
		CanvasLength:  16,
		EOSTokenIDs:   []int{1, 106},
		Text: Text{
			VocabSize: 512, HiddenSize: 64, IntermediateSize: 96, MoEIntermediateSize: 32,
			NumExperts: 16, TopKExperts: 4, NumHiddenLayers: 3,
			NumAttentionHeads: 4, NumKeyValueHeads: 2, NumGlobalKVHeads: 1, HeadDim: 16, GlobalHeadDim: 32,
			LayerTypes:    []LayerType{SlidingAttention, SlidingAttention, FullAttention},
			SlidingWindow: 8, MaxPositionEmbeddings: 4096, RMSNormEps: 1e-6,
			HiddenActivation: "gelu_pytorch_tanh", FinalLogitSoftcapping: 30,
			PadTokenID: 0, EOSTokenID: 1, BOSTokenID: 2,
		},
		Generation: DefaultGeneration(),
	}
	m.Text.RopeParameters.Sliding = Rope{Type: "default", Theta: 10000}
	m.Text.RopeParameters.Full = Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}
	return m
}
