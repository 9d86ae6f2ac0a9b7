package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// File names inside a checkpoint directory.
const (
	ConfigFile           = "config.json"
	GenerationConfigFile = "generation_config.json"
	// HFQuantConfigFile is NVIDIA ModelOpt's quantization description next to
	// config.json (engine/weights reads the whole of it).
	HFQuantConfigFile = "hf_quant_config.json"
)

// ModelType is the config.json model_type this engine runs.
const ModelType = "diffusion_gemma"

// requiredText lists the text_config keys a checkpoint must set: every dimension the
// graph uses. Keys not listed here have defaults (see textDefaults).
var requiredText = []string{
	"vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size",
	"num_experts", "top_k_experts", "num_hidden_layers", "num_attention_heads",
	"num_key_value_heads", "num_global_key_value_heads", "head_dim", "global_head_dim",
	"layer_types", "sliding_window", "rope_parameters", "rms_norm_eps", "hidden_activation",
	"final_logit_softcapping",
}

// Known values of hidden_activation and rope_type.
var (
	knownActivations = map[string]bool{"gelu_pytorch_tanh": true}
	knownRopeTypes   = map[string]bool{"default": true, "proportional": true}
)

// Load reads dir/config.json and, when present, dir/generation_config.json (keys it
// leaves out take DefaultGeneration's values) and dir/hf_quant_config.json (a ModelOpt
// NVFP4 export's Quantization, where config.json has none), and validates the result.
func Load(dir string) (*Model, error) {
	return LoadFS(os.DirFS(dir), ".")
}

// LoadFS is Load over a file system (the embedded model); dir is a slash path in fsys.
func LoadFS(fsys fs.FS, dir string) (*Model, error) {
	raw, err := fs.ReadFile(fsys, path.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	m, err := ParseModel(raw)
	if err != nil {
		return nil, err
	}
	gen := DefaultGeneration()
	gen.EOSTokenIDs = append([]int(nil), m.EOSTokenIDs...)
	if len(gen.EOSTokenIDs) == 0 {
		gen.EOSTokenIDs = DefaultGeneration().EOSTokenIDs
	}
	gen.PadTokenID = m.Text.PadTokenID
	graw, err := fs.ReadFile(fsys, path.Join(dir, GenerationConfigFile))
	switch {
	case err == nil:
		if gen, err = ParseGeneration(graw, gen); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("%s: %w", GenerationConfigFile, err)
	}
	m.Generation = gen
	if m.Quantization == nil {
		if m.Quantization, err = readHFQuant(fsys, path.Join(dir, HFQuantConfigFile)); err != nil {
			return nil, err
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// readHFQuant is the Quantization of a ModelOpt NVFP4 export's hf_quant_config.json
// at name: nil where there is none, or where its quant_algo is not one Darkroom loads
// (the weights loader says why, naming the file).
func readHFQuant(fsys fs.FS, name string) (*Quantization, error) {
	raw, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", HFQuantConfigFile, err)
	}
	var hq struct {
		Quantization struct {
			QuantAlgo string `json:"quant_algo"`
		} `json:"quantization"`
	}
	if err := json.Unmarshal(raw, &hq); err != nil {
		return nil, fmt.Errorf("%s: malformed: %v", HFQuantConfigFile, err)
	}
	switch a := hq.Quantization.QuantAlgo; a {
	case "NVFP4", "W4A16_NVFP4":
		return &Quantization{QuantMethod: ModelOptMethod, QuantAlgo: a}, nil
	}
	return nil, nil
}

// ParseModel decodes the contents of a config.json. It reports missing required keys
// ("config.json: text_config.hidden_size is missing") but does not run Validate.
func ParseModel(raw []byte) (*Model, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	if mt, ok := top["model_type"]; ok { // another architecture: say which, not which field it lacks
		if err := checkModelType(mt); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"model_type", "text_config"} {
		if _, ok := top[k]; !ok {
			return nil, fmt.Errorf("%s: %s is missing", ConfigFile, k)
		}
	}
	var text map[string]json.RawMessage
	if err := json.Unmarshal(top["text_config"], &text); err != nil {
		return nil, fmt.Errorf("%s: text_config: %w", ConfigFile, err)
	}
	for _, k := range requiredText {
		if v, ok := text[k]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return nil, fmt.Errorf("%s: text_config.%s is missing", ConfigFile, k)
		}
	}
	var rope map[string]json.RawMessage
	if err := json.Unmarshal(text["rope_parameters"], &rope); err != nil {
		return nil, fmt.Errorf("%s: text_config.rope_parameters: %w", ConfigFile, err)
	}
	for _, lt := range []LayerType{SlidingAttention, FullAttention} {
		r, ok := rope[string(lt)]
		if !ok {
			return nil, fmt.Errorf("%s: text_config.rope_parameters.%s is missing", ConfigFile, lt)
		}
		var rm map[string]json.RawMessage
		if err := json.Unmarshal(r, &rm); err != nil {
			return nil, fmt.Errorf("%s: text_config.rope_parameters.%s: %w", ConfigFile, lt, err)
		}
		for _, k := range []string{"rope_type", "rope_theta"} {
			if _, ok := rm[k]; !ok {
				return nil, fmt.Errorf("%s: text_config.rope_parameters.%s.%s is missing", ConfigFile, lt, k)
			}
		}
	}

	m := &Model{extra: top}
	m.Text = textDefaults()
	m.Text.extra = text
	// The eos ids may be a number or a list, at both levels; decode them apart.
	textEOS, hasTextEOS := text["eos_token_id"]
	delete(text, "eos_token_id")
	tb, _ := json.Marshal(text)
	text["eos_token_id"] = textEOS
	if !hasTextEOS {
		delete(text, "eos_token_id")
	}
	if err := json.Unmarshal(tb, &m.Text); err != nil {
		return nil, fmt.Errorf("%s: text_config: %w", ConfigFile, err)
	}
	if hasTextEOS {
		ids, err := intOrList(textEOS)
		if err != nil {
			return nil, fmt.Errorf("%s: text_config.eos_token_id: %w", ConfigFile, err)
		}
		if len(ids) > 0 {
			m.Text.EOSTokenID = ids[0]
		}
	}
	for _, f := range []struct {
		key string
		dst any
	}{
		{"architectures", &m.Architectures}, {"model_type", &m.ModelType},
		{"canvas_length", &m.CanvasLength}, {"dtype", &m.DType}, {"quantization_config", &m.Quantization},
	} {
		if v, ok := top[f.key]; ok {
			if err := json.Unmarshal(v, f.dst); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", ConfigFile, f.key, err)
			}
		}
	}
	if _, ok := top["canvas_length"]; !ok {
		return nil, fmt.Errorf("%s: canvas_length is missing", ConfigFile)
	}
	if v, ok := top["eos_token_id"]; ok {
		ids, err := intOrList(v)
		if err != nil {
			return nil, fmt.Errorf("%s: eos_token_id: %w", ConfigFile, err)
		}
		m.EOSTokenIDs = ids
	} else {
		m.EOSTokenIDs = []int{m.Text.EOSTokenID}
	}
	return m, nil
}

// ParseGeneration decodes a generation_config.json over base (keys it leaves out keep
// base's values).
func ParseGeneration(raw []byte, base Generation) (Generation, error) {
	g := base
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return g, fmt.Errorf("%s: %w", GenerationConfigFile, err)
	}
	if err := json.Unmarshal(raw, &struct {
		*Generation
		EOS     any `json:"eos_token_id"`
		Sampler any `json:"sampler_config"`
	}{Generation: &g}); err != nil {
		return g, fmt.Errorf("%s: %w", GenerationConfigFile, err)
	}
	if v, ok := top["eos_token_id"]; ok {
		ids, err := intOrList(v)
		if err != nil {
			return g, fmt.Errorf("%s: eos_token_id: %w", GenerationConfigFile, err)
		}
		g.EOSTokenIDs = ids
	}
	if v, ok := top["sampler_config"]; ok {
		var sc struct {
			EntropyBound *float64 `json:"entropy_bound"`
		}
		if err := json.Unmarshal(v, &sc); err != nil {
			return g, fmt.Errorf("%s: sampler_config: %w", GenerationConfigFile, err)
		}
		if sc.EntropyBound != nil {
			g.EntropyBound = *sc.EntropyBound
		}
	}
	return g, nil
}

func textDefaults() Text {
	return Text{MaxPositionEmbeddings: 262144, PadTokenID: 0, EOSTokenID: 1, BOSTokenID: 2}
}

// intOrList decodes a JSON number or list of numbers.
func intOrList(raw json.RawMessage) ([]int, error) {
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("want a number or a list of numbers, got %s", raw)
	}
	return many, nil
}

// Validate checks that the values make a runnable model; errors name the file and key.
func (m *Model) Validate() error {
	t := &m.Text
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("%s: %s %s", ConfigFile, key, fmt.Sprintf(format, args...))
	}
	if m.ModelType != ModelType {
		return bad("model_type", "is %q, want %q", m.ModelType, ModelType)
	}
	if m.CanvasLength <= 0 {
		return bad("canvas_length", "must be positive, got %d", m.CanvasLength)
	}
	for _, f := range []struct {
		key string
		v   int
	}{
		{"vocab_size", t.VocabSize}, {"hidden_size", t.HiddenSize}, {"intermediate_size", t.IntermediateSize},
		{"moe_intermediate_size", t.MoEIntermediateSize}, {"num_experts", t.NumExperts},
		{"top_k_experts", t.TopKExperts}, {"num_hidden_layers", t.NumHiddenLayers},
		{"num_attention_heads", t.NumAttentionHeads}, {"num_key_value_heads", t.NumKeyValueHeads},
		{"num_global_key_value_heads", t.NumGlobalKVHeads}, {"head_dim", t.HeadDim},
		{"global_head_dim", t.GlobalHeadDim}, {"sliding_window", t.SlidingWindow},
		{"max_position_embeddings", t.MaxPositionEmbeddings},
	} {
		if f.v <= 0 {
			return bad("text_config."+f.key, "must be positive, got %d", f.v)
		}
	}
	if t.TopKExperts > t.NumExperts {
		return bad("text_config.top_k_experts", "(%d) is larger than num_experts (%d)", t.TopKExperts, t.NumExperts)
	}
	if t.NumAttentionHeads%t.NumKeyValueHeads != 0 {
		return bad("text_config.num_key_value_heads", "(%d) does not divide num_attention_heads (%d)", t.NumKeyValueHeads, t.NumAttentionHeads)
	}
	if t.NumAttentionHeads%t.NumGlobalKVHeads != 0 {
		return bad("text_config.num_global_key_value_heads", "(%d) does not divide num_attention_heads (%d)", t.NumGlobalKVHeads, t.NumAttentionHeads)
	}
	if t.HeadDim%2 != 0 {
		return bad("text_config.head_dim", "must be even for rotary embeddings, got %d", t.HeadDim)
	}
	if t.GlobalHeadDim%2 != 0 {
		return bad("text_config.global_head_dim", "must be even for rotary embeddings, got %d", t.GlobalHeadDim)
	}
	if len(t.LayerTypes) != t.NumHiddenLayers {
		return bad("text_config.layer_types", "has %d entries, num_hidden_layers is %d", len(t.LayerTypes), t.NumHiddenLayers)
	}
	for i, lt := range t.LayerTypes {
		if lt != SlidingAttention && lt != FullAttention {
			return bad(fmt.Sprintf("text_config.layer_types[%d]", i), "is %q, want %q or %q", lt, SlidingAttention, FullAttention)
		}
	}
	for _, r := range []struct {
		key string
		r   Rope
	}{{"sliding_attention", t.RopeParameters.Sliding}, {"full_attention", t.RopeParameters.Full}} {
		key := "text_config.rope_parameters." + r.key
		if !knownRopeTypes[r.r.Type] {
			return bad(key+".rope_type", "is %q, want one of %s", r.r.Type, keys(knownRopeTypes))
		}
		if !(r.r.Theta > 0) {
			return bad(key+".rope_theta", "must be positive, got %v", r.r.Theta)
		}
		if r.r.PartialRotaryFactor < 0 || r.r.PartialRotaryFactor > 1 || math.IsNaN(r.r.PartialRotaryFactor) {
			return bad(key+".partial_rotary_factor", "must be in [0, 1], got %v", r.r.PartialRotaryFactor)
		}
	}
	if !knownActivations[t.HiddenActivation] {
		return bad("text_config.hidden_activation", "is %q, want one of %s", t.HiddenActivation, keys(knownActivations))
	}
	if !(t.RMSNormEps > 0) {
		return bad("text_config.rms_norm_eps", "must be positive, got %v", t.RMSNormEps)
	}
	if t.FinalLogitSoftcapping < 0 || math.IsNaN(t.FinalLogitSoftcapping) {
		return bad("text_config.final_logit_softcapping", "must be ≥ 0, got %v", t.FinalLogitSoftcapping)
	}
	if t.TieWordEmbeddings != nil && !*t.TieWordEmbeddings {
		return bad("text_config.tie_word_embeddings", "is false; only tied output heads are supported")
	}
	for _, id := range []struct {
		key string
		v   int
	}{{"text_config.pad_token_id", t.PadTokenID}, {"text_config.eos_token_id", t.EOSTokenID}, {"text_config.bos_token_id", t.BOSTokenID}} {
		if id.v < 0 || id.v >= t.VocabSize {
			return bad(id.key, "(%d) is outside the vocabulary (size %d)", id.v, t.VocabSize)
		}
	}
	for _, id := range m.EOSTokenIDs {
		if id < 0 || id >= t.VocabSize {
			return bad("eos_token_id", "(%d) is outside the vocabulary (size %d)", id, t.VocabSize)
		}
	}
	if q := m.Quantization; q != nil {
		switch {
		case q.QuantMethod == QuantMethod:
		case q.QuantMethod == ModelOptMethod && (q.QuantAlgo == "NVFP4" || q.QuantAlgo == "W4A16_NVFP4"):
		case q.QuantMethod == ModelOptMethod:
			return bad("quantization_config.quant_algo", "is %q; of ModelOpt's formats Darkroom loads NVFP4 and W4A16_NVFP4", q.QuantAlgo)
		default:
			return bad("quantization_config.quant_method", "is %q, want %q (or %q with NVFP4)", q.QuantMethod, QuantMethod, ModelOptMethod)
		}
	}
	return m.Generation.validate(t.VocabSize)
}

func (g *Generation) validate(vocab int) error {
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("%s: %s %s", GenerationConfigFile, key, fmt.Sprintf(format, args...))
	}
	switch {
	case g.MaxNewTokens <= 0:
		return bad("max_new_tokens", "must be positive, got %d", g.MaxNewTokens)
	case g.MaxDenoisingSteps <= 0:
		return bad("max_denoising_steps", "must be positive, got %d", g.MaxDenoisingSteps)
	case !(g.TMin > 0):
		return bad("t_min", "must be positive, got %v", g.TMin)
	case !(g.TMax >= g.TMin):
		return bad("t_max", "(%v) is below t_min (%v)", g.TMax, g.TMin)
	case !(g.EntropyBound >= 0):
		return bad("sampler_config.entropy_bound", "must be ≥ 0, got %v", g.EntropyBound)
	case !(g.ConfidenceThreshold >= 0):
		return bad("confidence_threshold", "must be ≥ 0, got %v", g.ConfidenceThreshold)
	case g.StabilityThreshold < 0:
		return bad("stability_threshold", "must be ≥ 0, got %d", g.StabilityThreshold)
	case !(g.ARGuidance >= 0) || math.IsInf(g.ARGuidance, 0):
		return bad("darkroom_ar_guidance", "must be a finite number ≥ 0, got %v", g.ARGuidance)
	case g.ARGuidanceRounds < 0:
		return bad("darkroom_ar_guidance_rounds", "must be ≥ 0, got %d", g.ARGuidanceRounds)
	case !(g.ARGuidanceInWord >= 0) || math.IsInf(g.ARGuidanceInWord, 0):
		return bad("darkroom_ar_guidance_in_word", "must be a finite number ≥ 0, got %v", g.ARGuidanceInWord)
	case !(g.RepetitionPenalty > 0) || math.IsInf(g.RepetitionPenalty, 0):
		return bad("repetition_penalty", "must be a finite number > 0 (1 is off), got %v", g.RepetitionPenalty)
	case g.PadTokenID < 0 || g.PadTokenID >= vocab:
		return bad("pad_token_id", "(%d) is outside the vocabulary (size %d)", g.PadTokenID, vocab)
	}
	for _, id := range g.EOSTokenIDs {
		if id < 0 || id >= vocab {
			return bad("eos_token_id", "(%d) is outside the vocabulary (size %d)", id, vocab)
		}
	}
	return nil
}

func keys(m map[string]bool) string {
	var ks []string
	for k := range m {
		ks = append(ks, fmt.Sprintf("%q", k))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// Save writes dir/config.json and dir/generation_config.json (creating dir). Keys read
// from an original config.json that this struct does not model (vision_config, …) are
// kept. Each file is written atomically (temp file + rename).
func (m *Model) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	cb, err := m.MarshalConfig()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ConfigFile), cb, 0o644); err != nil {
		return fmt.Errorf("save %s: %w", ConfigFile, err)
	}
	gb, err := m.Generation.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, GenerationConfigFile), gb, 0o644); err != nil {
		return fmt.Errorf("save %s: %w", GenerationConfigFile, err)
	}
	return nil
}

// MarshalConfig returns config.json's contents.
func (m *Model) MarshalConfig() ([]byte, error) {
	text := map[string]json.RawMessage{}
	for k, v := range m.Text.extra {
		text[k] = v
	}
	tb, err := json.Marshal(&m.Text)
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", ConfigFile, err)
	}
	var known map[string]json.RawMessage
	_ = json.Unmarshal(tb, &known)
	for k, v := range known {
		text[k] = v
	}
	top := map[string]json.RawMessage{}
	for k, v := range m.extra {
		top[k] = v
	}
	set := func(k string, v any) {
		b, _ := json.Marshal(v)
		top[k] = b
	}
	set("architectures", m.Architectures)
	if m.Architectures == nil {
		set("architectures", []string{"DiffusionGemmaForBlockDiffusion"})
	}
	set("model_type", m.ModelType)
	set("canvas_length", m.CanvasLength)
	set("eos_token_id", m.EOSTokenIDs)
	if m.DType != "" {
		set("dtype", m.DType)
	}
	if m.Quantization != nil {
		set("quantization_config", m.Quantization)
	} else {
		delete(top, "quantization_config")
	}
	set("text_config", text)
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", ConfigFile, err)
	}
	return append(b, '\n'), nil
}

// Marshal returns generation_config.json's contents (HF layout: sampler_config holds
// the entropy bound).
func (g *Generation) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(struct {
		*Generation
		Sampler struct {
			Cls          string  `json:"_cls_name"`
			EntropyBound float64 `json:"entropy_bound"`
		} `json:"sampler_config"`
		EOS []int `json:"eos_token_id"`
	}{Generation: g, Sampler: struct {
		Cls          string  `json:"_cls_name"`
		EntropyBound float64 `json:"entropy_bound"`
	}{"EntropyBoundSamplerConfig", g.EntropyBound}, EOS: g.EOSTokenIDs}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", GenerationConfigFile, err)
	}
	return append(b, '\n'), nil
}

// checkModelType refuses a config.json of another architecture by name — a
// Llama repo's says `model_type is "llama", want "diffusion_gemma"` rather
// than which of DiffusionGemma's fields it lacks — in Validate's words.
func checkModelType(raw json.RawMessage) error {
	var mt string
	if err := json.Unmarshal(raw, &mt); err != nil {
		return fmt.Errorf("%s: model_type: %w", ConfigFile, err)
	}
	if mt != ModelType {
		return fmt.Errorf("%s: model_type is %q, want %q (Darkroom runs DiffusionGemma models)", ConfigFile, mt, ModelType)
	}
	return nil
}
