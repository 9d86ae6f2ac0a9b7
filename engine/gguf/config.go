package gguf

import (
	"fmt"
	"math"

	"github.com/darkroomlabs/darkroom/engine/config"
)

// Metadata keys, as llama.cpp writes them for Gemma 4 (conversion/gemma.py
// Gemma4Model.set_gguf_parameters, gguf-py constants.py Keys.LLM/Attention/Rope) under
// the "diffusion-gemma." prefix, plus the PR's diffusion.* keys
// (gguf_writer.add_diffusion_*, read back by its examples with the defaults below):
//
//	{arch}.block_count                     num_hidden_layers
//	{arch}.embedding_length                hidden_size
//	{arch}.feed_forward_length             intermediate_size (dense and self-conditioning MLP)
//	{arch}.expert_feed_forward_length      moe_intermediate_size
//	{arch}.expert_count / expert_used_count num_experts / top_k_experts
//	{arch}.context_length                  max_position_embeddings
//	{arch}.vocab_size                      vocab_size (else the token list's length)
//	{arch}.final_logit_softcapping         final_logit_softcapping
//	{arch}.attention.head_count            num_attention_heads
//	{arch}.attention.head_count_kv         per layer: num_key_value_heads on sliding layers, num_global_key_value_heads on full ones
//	{arch}.attention.key_length(_swa)      global_head_dim (head_dim)
//	{arch}.attention.sliding_window        sliding_window
//	{arch}.attention.sliding_window_pattern per layer, true = sliding (layer_types)
//	{arch}.attention.layer_norm_rms_epsilon rms_norm_eps
//	{arch}.rope.freq_base(_swa)            full (sliding) rope_theta; _swa defaults to 10000 as in llama.cpp
//	rope_freqs.weight                      full layers' partial_rotary_factor (2·#ones / global_head_dim)
//	diffusion.canvas_length                canvas_length
//	diffusion.eb_max_steps, eb_t_min, eb_t_max, eb_entropy_bound, eb_stability_threshold, eb_confidence_threshold
//	                                       generation_config (defaults 48, 0.4, 0.8, 0.1, 1, 0.005)
//	tokenizer.ggml.bos/eos/padding/eot_token_id  token ids
const (
	keyArch          = "general.architecture"
	keyCanvas        = "diffusion.canvas_length"
	defaultRopeSWA   = 10000.0
	ropeUnrotatedMin = 1e29 // rope_freqs entries ≥ this mark unrotated pairs (converter writes 1e30)
)

func (f *File) key(k string) string { return Arch + "." + k }

func (f *File) intKey(k string, required bool, def int64) (int64, error) {
	v, ok := f.Metadata[k]
	if !ok {
		if required {
			return 0, fmt.Errorf("metadata %s is missing", k)
		}
		return def, nil
	}
	if v.Type == TypeArray {
		// Per-layer arrays of one value (feed_forward_length, head_count) are allowed.
		if len(v.Array) == 0 {
			return 0, fmt.Errorf("metadata %s is an empty array", k)
		}
		first, ok := v.Array[0].Int()
		for _, e := range v.Array {
			if x, ok2 := e.Int(); !ok || !ok2 || x != first {
				return 0, fmt.Errorf("metadata %s differs between layers (%d values); Darkroom needs one value", k, len(v.Array))
			}
		}
		return first, nil
	}
	x, ok := v.Int()
	if !ok {
		return 0, fmt.Errorf("metadata %s is %s %v, want an integer", k, v.Type, v.V)
	}
	return x, nil
}

func (f *File) floatKey(k string, required bool, def float64) (float64, error) {
	v, ok := f.Metadata[k]
	if !ok {
		if required {
			return 0, fmt.Errorf("metadata %s is missing", k)
		}
		return def, nil
	}
	x, ok := v.Float()
	if !ok {
		return 0, fmt.Errorf("metadata %s is %s %v, want a number", k, v.Type, v.V)
	}
	return x, nil
}

// Config builds the model configuration from the file's metadata (and its rope_freqs
// tensor), validated. It is how a directory holding only a .gguf gets a config, and
// how the loader checks a config.json against the file.
func (f *File) Config() (*config.Model, error) {
	cfg, err := f.config()
	if err != nil {
		return nil, fmt.Errorf("gguf %s: %w", f.Path, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gguf %s: metadata gives an invalid config: %w", f.Path, err)
	}
	return cfg, nil
}

func (f *File) config() (*config.Model, error) {
	if err := f.checkArch(); err != nil {
		return nil, err
	}
	m := &config.Model{
		Architectures: []string{"DiffusionGemmaForBlockDiffusion"},
		ModelType:     config.ModelType,
		DType:         "bfloat16",
		Generation:    config.DefaultGeneration(),
	}
	t := &m.Text
	t.DType = "bfloat16"
	t.HiddenActivation = "gelu_pytorch_tanh" // Gemma 4's FFN (llama.cpp builds GELU for this arch)
	tie := true
	t.TieWordEmbeddings = &tie
	if _, ok := f.Lookup("output.weight"); ok {
		return nil, fmt.Errorf("tensor output.weight is an untied output head; Darkroom needs the head tied to token_embd")
	}

	ints := []struct {
		dst      *int
		key      string
		required bool
		def      int64
	}{
		{&t.NumHiddenLayers, f.key("block_count"), true, 0},
		{&t.HiddenSize, f.key("embedding_length"), true, 0},
		{&t.IntermediateSize, f.key("feed_forward_length"), true, 0},
		{&t.MoEIntermediateSize, f.key("expert_feed_forward_length"), true, 0},
		{&t.NumExperts, f.key("expert_count"), true, 0},
		{&t.TopKExperts, f.key("expert_used_count"), true, 0},
		{&t.MaxPositionEmbeddings, f.key("context_length"), true, 0},
		{&t.NumAttentionHeads, f.key("attention.head_count"), true, 0},
		{&t.GlobalHeadDim, f.key("attention.key_length"), true, 0},
		{&t.SlidingWindow, f.key("attention.sliding_window"), true, 0},
		{&m.CanvasLength, keyCanvas, true, 0},
		{&t.BOSTokenID, "tokenizer.ggml.bos_token_id", false, 2},
		{&t.EOSTokenID, "tokenizer.ggml.eos_token_id", false, 1},
		{&t.PadTokenID, "tokenizer.ggml.padding_token_id", false, 0},
	}
	for _, k := range ints {
		x, err := f.intKey(k.key, k.required, k.def)
		if err != nil {
			return nil, err
		}
		if x < 0 || x > math.MaxInt32 {
			return nil, fmt.Errorf("metadata %s = %d is out of range", k.key, x)
		}
		*k.dst = int(x)
	}
	hd, err := f.intKey(f.key("attention.key_length_swa"), false, int64(t.GlobalHeadDim))
	if err != nil {
		return nil, err
	}
	t.HeadDim = int(hd)
	if vl, err := f.intKey(f.key("attention.value_length"), false, int64(t.GlobalHeadDim)); err != nil || int(vl) != t.GlobalHeadDim {
		return nil, fmt.Errorf("metadata %s (%d) differs from key_length (%d): unsupported", f.key("attention.value_length"), vl, t.GlobalHeadDim)
	}

	// Vocabulary: the explicit key, else the token list.
	if v, ok := f.Metadata[f.key("vocab_size")]; ok {
		x, ok := v.Int()
		if !ok || x <= 0 || x > math.MaxInt32 {
			return nil, fmt.Errorf("metadata %s is %v", f.key("vocab_size"), v.V)
		}
		t.VocabSize = int(x)
	} else if v, ok := f.Metadata["tokenizer.ggml.tokens"]; ok && v.Type == TypeArray {
		t.VocabSize = len(v.Array)
	} else if emb, ok := f.Lookup("token_embd.weight"); ok && len(emb.Dims) == 2 {
		t.VocabSize = int(emb.Dims[1])
	} else {
		return nil, fmt.Errorf("cannot tell the vocabulary size (no %s, tokenizer.ggml.tokens or token_embd.weight)", f.key("vocab_size"))
	}

	// Layer types.
	pat, ok := f.Metadata[f.key("attention.sliding_window_pattern")]
	if !ok || pat.Type != TypeArray || len(pat.Array) != t.NumHiddenLayers {
		return nil, fmt.Errorf("metadata %s must be a per-layer bool array of %d entries", f.key("attention.sliding_window_pattern"), t.NumHiddenLayers)
	}
	for i, e := range pat.Array {
		b, ok := e.Bool()
		if !ok {
			return nil, fmt.Errorf("metadata %s[%d] is not a bool", f.key("attention.sliding_window_pattern"), i)
		}
		if b {
			t.LayerTypes = append(t.LayerTypes, config.SlidingAttention)
		} else {
			t.LayerTypes = append(t.LayerTypes, config.FullAttention)
		}
	}

	// KV heads per layer: one value for the sliding layers, one for the full ones.
	kv, ok := f.Metadata[f.key("attention.head_count_kv")]
	if !ok {
		return nil, fmt.Errorf("metadata %s is missing", f.key("attention.head_count_kv"))
	}
	sliding, full := -1, -1
	for i := 0; i < t.NumHiddenLayers; i++ {
		e := kv
		if kv.Type == TypeArray {
			if len(kv.Array) != t.NumHiddenLayers {
				return nil, fmt.Errorf("metadata %s has %d entries for %d layers", f.key("attention.head_count_kv"), len(kv.Array), t.NumHiddenLayers)
			}
			e = kv.Array[i]
		}
		x, ok := e.Int()
		if !ok || x <= 0 || x > math.MaxInt32 {
			return nil, fmt.Errorf("metadata %s[%d] is %v", f.key("attention.head_count_kv"), i, e.V)
		}
		dst := &full
		if t.IsSliding(i) {
			dst = &sliding
		}
		if *dst >= 0 && *dst != int(x) {
			return nil, fmt.Errorf("metadata %s varies within one layer kind (layer %d: %d, earlier %d)", f.key("attention.head_count_kv"), i, x, *dst)
		}
		*dst = int(x)
	}
	t.NumKeyValueHeads, t.NumGlobalKVHeads = max(sliding, 0), max(full, 0)
	if sliding < 0 { // no sliding layer: the value is unused but must be valid
		t.NumKeyValueHeads = t.NumGlobalKVHeads
	}
	if full < 0 {
		t.NumGlobalKVHeads = t.NumKeyValueHeads
	}

	floats := []struct {
		dst      *float64
		key      string
		required bool
		def      float64
	}{
		{&t.RMSNormEps, f.key("attention.layer_norm_rms_epsilon"), true, 0},
		{&t.FinalLogitSoftcapping, f.key("final_logit_softcapping"), false, 0},
		{&t.RopeParameters.Full.Theta, f.key("rope.freq_base"), true, 0},
		{&t.RopeParameters.Sliding.Theta, f.key("rope.freq_base_swa"), false, defaultRopeSWA},
	}
	for _, k := range floats {
		x, err := f.floatKey(k.key, k.required, k.def)
		if err != nil {
			return nil, err
		}
		*k.dst = x
	}
	t.RopeParameters.Sliding.Type = "default"
	if n, err := f.intKey(f.key("rope.dimension_count_swa"), false, int64(t.HeadDim)); err != nil || int(n) != t.HeadDim {
		return nil, fmt.Errorf("metadata %s = %d: partial RoPE on sliding layers is not supported", f.key("rope.dimension_count_swa"), n)
	}
	// Full layers: "proportional" RoPE is encoded as rope_freqs (1 = rotated pair,
	// 1e30 = unrotated) over global_head_dim/2 pairs; without it all pairs rotate.
	if rf, ok := f.Lookup(RopeFreqs); ok {
		if len(rf.Dims) != 1 || int(rf.Dims[0]) != t.GlobalHeadDim/2 || !rf.Type.IsFloat() {
			return nil, fmt.Errorf("tensor %s is %s %v, want %d float values", RopeFreqs, rf.Type, rf.Dims, t.GlobalHeadDim/2)
		}
		vals, err := f.Float32(rf, 0, -1)
		if err != nil {
			return nil, err
		}
		rotated := 0
		for i, v := range vals {
			switch {
			case v == 1 && rotated == i:
				rotated++
			case v >= ropeUnrotatedMin:
			default:
				return nil, fmt.Errorf("tensor %s[%d] = %v: only 1 (rotated, leading) and ≥1e29 (unrotated) are supported", RopeFreqs, i, v)
			}
		}
		t.RopeParameters.Full = config.Rope{Type: "proportional", Theta: t.RopeParameters.Full.Theta,
			PartialRotaryFactor: float64(2*rotated) / float64(t.GlobalHeadDim)}
	} else {
		t.RopeParameters.Full.Type = "default"
	}

	// Token ids that end generation: eos, plus the end-of-turn token when present.
	m.EOSTokenIDs = []int{t.EOSTokenID}
	if eot, err := f.intKey("tokenizer.ggml.eot_token_id", false, -1); err == nil && eot >= 0 && int(eot) != t.EOSTokenID {
		m.EOSTokenIDs = append(m.EOSTokenIDs, int(eot))
	}

	// Sampler defaults.
	g := &m.Generation
	g.EOSTokenIDs = m.EOSTokenIDs
	g.PadTokenID = t.PadTokenID
	for _, k := range []struct {
		dst *int
		key string
	}{{&g.MaxDenoisingSteps, "diffusion.eb_max_steps"}, {&g.StabilityThreshold, "diffusion.eb_stability_threshold"}} {
		x, err := f.intKey(k.key, false, int64(*k.dst))
		if err != nil {
			// Some writers store the threshold as a float.
			fx, ferr := f.floatKey(k.key, false, float64(*k.dst))
			if ferr != nil || fx != math.Trunc(fx) {
				return nil, err
			}
			x = int64(fx)
		}
		*k.dst = int(x)
	}
	for _, k := range []struct {
		dst *float64
		key string
	}{{&g.TMin, "diffusion.eb_t_min"}, {&g.TMax, "diffusion.eb_t_max"}, {&g.EntropyBound, "diffusion.eb_entropy_bound"},
		{&g.ConfidenceThreshold, "diffusion.eb_confidence_threshold"}} {
		x, err := f.floatKey(k.key, false, *k.dst)
		if err != nil {
			return nil, err
		}
		*k.dst = x
	}
	if causal, ok := f.Metadata[f.key("attention.causal")]; ok {
		if b, ok := causal.Bool(); ok && b {
			return nil, fmt.Errorf("metadata %s is true; a DiffusionGemma decoder is bidirectional", f.key("attention.causal"))
		}
	}
	return m, nil
}

// Metadata is the metadata Config reads, written for cfg (the writer's side of the
// key table above) under general.name name: what a diffusion-gemma GGUF file needs
// besides its tensors and, where cfg's full layers rotate part of each head, the
// RopeFreqValues tensor. Keys the reader defaults (the tokenizer's vocabulary) are
// left out; the end-of-turn id is written when cfg ends generations on a second id.
func Metadata(cfg *config.Model, name string) []KV {
	t := &cfg.Text
	k := func(s string) string { return Arch + "." + s }
	var kv, swa []Value
	for i := 0; i < t.NumHiddenLayers; i++ {
		kv = append(kv, U32(uint32(t.KVHeads(i))))
		swa = append(swa, Bool(t.IsSliding(i)))
	}
	g := &cfg.Generation
	kvs := []KV{
		{keyArch, Str(Arch)},
		{"general.name", Str(name)},
		{k("block_count"), U32(uint32(t.NumHiddenLayers))},
		{k("context_length"), U32(uint32(t.MaxPositionEmbeddings))},
		{k("embedding_length"), U32(uint32(t.HiddenSize))},
		{k("feed_forward_length"), U32(uint32(t.IntermediateSize))},
		{k("expert_feed_forward_length"), U32(uint32(t.MoEIntermediateSize))},
		{k("expert_count"), U32(uint32(t.NumExperts))},
		{k("expert_used_count"), U32(uint32(t.TopKExperts))},
		{k("vocab_size"), U32(uint32(t.VocabSize))},
		{k("attention.head_count"), U32(uint32(t.NumAttentionHeads))},
		{k("attention.head_count_kv"), Arr(TypeUint32, kv...)},
		{k("attention.key_length"), U32(uint32(t.GlobalHeadDim))},
		{k("attention.value_length"), U32(uint32(t.GlobalHeadDim))},
		{k("attention.key_length_swa"), U32(uint32(t.HeadDim))},
		{k("attention.value_length_swa"), U32(uint32(t.HeadDim))},
		{k("attention.sliding_window"), U32(uint32(t.SlidingWindow))},
		{k("attention.sliding_window_pattern"), Arr(TypeBool, swa...)},
		{k("attention.layer_norm_rms_epsilon"), Float(float32(t.RMSNormEps))},
		{k("attention.causal"), Bool(false)},
		{k("rope.freq_base"), Float(float32(t.RopeParameters.Full.Theta))},
		{k("rope.freq_base_swa"), Float(float32(t.RopeParameters.Sliding.Theta))},
		{k("rope.dimension_count"), U32(uint32(t.GlobalHeadDim))},
		{k("rope.dimension_count_swa"), U32(uint32(t.HeadDim))},
		{k("final_logit_softcapping"), Float(float32(t.FinalLogitSoftcapping))},
		{k("shared_kv_layers"), U32(0)},
		{k("embedding_length_per_layer_input"), U32(0)},
		{keyCanvas, U32(uint32(cfg.CanvasLength))},
		{"diffusion.eb_max_steps", U32(uint32(g.MaxDenoisingSteps))},
		{"diffusion.eb_t_min", Float(float32(g.TMin))},
		{"diffusion.eb_t_max", Float(float32(g.TMax))},
		{"diffusion.eb_entropy_bound", Float(float32(g.EntropyBound))},
		{"diffusion.eb_stability_threshold", U32(uint32(g.StabilityThreshold))},
		{"diffusion.eb_confidence_threshold", Float(float32(g.ConfidenceThreshold))},
		{"tokenizer.ggml.model", Str("gemma4")},
		{"tokenizer.ggml.bos_token_id", U32(uint32(t.BOSTokenID))},
		{"tokenizer.ggml.eos_token_id", U32(uint32(t.EOSTokenID))},
		{"tokenizer.ggml.padding_token_id", U32(uint32(t.PadTokenID))},
	}
	for _, id := range cfg.EOSTokenIDs {
		if id != t.EOSTokenID {
			kvs = append(kvs, KV{"tokenizer.ggml.eot_token_id", U32(uint32(id))})
			break
		}
	}
	return kvs
}

// RopeFreqValues is the RopeFreqs tensor llama.cpp's converter writes for cfg's full
// layers — 1 for each rotated pair, 1e30 for the rest, over global_head_dim/2 pairs —
// and nil where they rotate every pair (no tensor).
func RopeFreqValues(cfg *config.Model) []float32 {
	full := cfg.Text.RopeParameters.Full
	if full.Type != "proportional" {
		return nil
	}
	rot := int(full.PartialRotaryFactor * float64(cfg.Text.GlobalHeadDim) / 2)
	rf := make([]float32, cfg.Text.GlobalHeadDim/2)
	for i := range rf {
		rf[i] = 1
		if i >= rot {
			rf[i] = 1e30
		}
	}
	return rf
}
