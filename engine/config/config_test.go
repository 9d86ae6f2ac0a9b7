package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// realConfig is the released checkpoint's config.json (as its converter writes it), abridged
// vision_config included to check unknown keys survive.
const realConfig = `{ "architectures": ["DiffusionGemmaForBlockDiffusion"], "model_type": "diffusion_gemma",
  "canvas_length": 256, "boi_token_id": 255999, "eoi_token_id": 258882, "image_token_id": 258880,
  "eos_token_id": [1,106], "initializer_range": 0.02, "tie_word_embeddings": true, "dtype": "bfloat16",
  "text_config": { "model_type": "diffusion_gemma_text", "vocab_size": 262144, "hidden_size": 2816,
     "intermediate_size": 2112, "moe_intermediate_size": 704, "num_experts": 128, "top_k_experts": 8,
     "num_hidden_layers": 30, "num_attention_heads": 16, "num_key_value_heads": 8,
     "num_global_key_value_heads": 2, "head_dim": 256, "global_head_dim": 512,
     "layer_types": LAYERS, "sliding_window": 1024,
     "rope_parameters": {"full_attention": {"rope_type":"proportional","partial_rotary_factor":0.25,"rope_theta":1e6},
                         "sliding_attention": {"rope_type":"default","rope_theta":1e4}},
     "max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh",
     "final_logit_softcapping": 30.0, "attention_bias": false, "attention_dropout": 0.0,
     "use_bidirectional_attention": "vision", "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2,
     "tie_word_embeddings": true },
  "vision_config": { "model_type": "gemma4_vision", "hidden_size": 1152 } }`

const realGeneration = `{ "max_new_tokens": 256, "max_denoising_steps": 48,
  "sampler_config": {"_cls_name": "EntropyBoundSamplerConfig", "entropy_bound": 0.1},
  "t_min": 0.4, "t_max": 0.8, "stability_threshold": 1, "confidence_threshold": 0.005,
  "eos_token_id": [1,106,50], "pad_token_id": 0 }`

func realConfigJSON() string {
	var lt []string
	for i := 0; i < 30; i++ {
		if i%6 == 5 {
			lt = append(lt, `"full_attention"`)
		} else {
			lt = append(lt, `"sliding_attention"`)
		}
	}
	return strings.Replace(realConfig, "LAYERS", "["+strings.Join(lt, ",")+"]", 1)
}

func TestLoadReal(t *testing.T) {
	fsys := fstest.MapFS{
		"m/config.json":            {Data: []byte(realConfigJSON())},
		"m/generation_config.json": {Data: []byte(strings.Replace(realGeneration, "0.1}", "0.25}", 1))},
	}
	m, err := LoadFS(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	tx := m.Text
	if tx.HiddenSize != 2816 || tx.NumGlobalKVHeads != 2 || tx.GlobalHeadDim != 512 || m.CanvasLength != 256 {
		t.Errorf("dims %+v", tx)
	}
	if !tx.IsSliding(0) || tx.IsSliding(5) || tx.KVHeads(5) != 2 || tx.LayerHeadDim(29) != 512 {
		t.Error("layer pattern")
	}
	if r := tx.LayerRope(5); r.Type != "proportional" || r.PartialRotaryFactor != 0.25 || r.Theta != 1e6 {
		t.Errorf("full rope %+v", r)
	}
	if got := m.EOSTokenIDs; len(got) != 2 || got[1] != 106 {
		t.Errorf("eos %v", got)
	}
	g := m.Generation
	if g.EntropyBound != 0.25 || g.MaxDenoisingSteps != 48 || len(g.EOSTokenIDs) != 3 || g.TMax != 0.8 {
		t.Errorf("generation %+v", g)
	}

	// Save keeps unknown keys and round-trips.
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if !strings.Contains(string(b), "vision_config") || !strings.Contains(string(b), "use_bidirectional_attention") {
		t.Error("unknown keys dropped by Save")
	}
	m2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Text.HiddenSize != 2816 || m2.Generation.EntropyBound != 0.25 || len(m2.Generation.EOSTokenIDs) != 3 {
		t.Errorf("round trip %+v %+v", m2.Text, m2.Generation)
	}
}

func TestNoGenerationConfig(t *testing.T) {
	m, err := LoadFS(fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultGeneration(); m.Generation.MaxDenoisingSteps != d.MaxDenoisingSteps || m.Generation.EntropyBound != d.EntropyBound {
		t.Errorf("defaults %+v", m.Generation)
	}
}

func TestTinyValid(t *testing.T) {
	m := Tiny()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Text.NumHiddenLayers != 3 || m2.Text.LayerTypes[2] != FullAttention || m2.Text.RopeParameters.Full.PartialRotaryFactor != 0.25 {
		t.Errorf("tiny round trip %+v", m2.Text)
	}
}

// TestMissingKeys removes each required key in turn: the error names the file and key.
func TestMissingKeys(t *testing.T) {
	var base map[string]any
	if err := json.Unmarshal([]byte(realConfigJSON()), &base); err != nil {
		t.Fatal(err)
	}
	keys := []string{"model_type", "text_config", "canvas_length"}
	for _, k := range requiredText {
		keys = append(keys, "text_config."+k)
	}
	keys = append(keys, "text_config.rope_parameters.full_attention", "text_config.rope_parameters.sliding_attention.rope_theta")
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			var c map[string]any
			b, _ := json.Marshal(base)
			json.Unmarshal(b, &c)
			parts := strings.Split(key, ".")
			m := c
			for _, p := range parts[:len(parts)-1] {
				m = m[p].(map[string]any)
			}
			delete(m, parts[len(parts)-1])
			b, _ = json.Marshal(c)
			_, err := LoadFS(fstest.MapFS{"config.json": {Data: b}}, ".")
			want := "config.json: " + key + " is missing"
			if err == nil || err.Error() != want {
				t.Fatalf("error %v, want %q", err, want)
			}
		})
	}
}

func TestInvalidValues(t *testing.T) {
	cases := []struct {
		edit func(m *Model)
		want string
	}{
		{func(m *Model) { m.Text.NumAttentionHeads = 5 }, "config.json: text_config.num_key_value_heads (2) does not divide num_attention_heads (5)"},
		{func(m *Model) { m.Text.TopKExperts = 17 }, "config.json: text_config.top_k_experts (17) is larger than num_experts (16)"},
		{func(m *Model) { m.Text.LayerTypes = m.Text.LayerTypes[:2] }, "config.json: text_config.layer_types has 2 entries, num_hidden_layers is 3"},
		{func(m *Model) { m.Text.LayerTypes[1] = "chunked" }, `config.json: text_config.layer_types[1] is "chunked"`},
		{func(m *Model) { m.Text.HiddenActivation = "relu" }, `config.json: text_config.hidden_activation is "relu"`},
		{func(m *Model) { m.Text.RopeParameters.Full.Type = "yarn" }, `config.json: text_config.rope_parameters.full_attention.rope_type is "yarn"`},
		{func(m *Model) { m.Text.HiddenSize = 0 }, "config.json: text_config.hidden_size must be positive, got 0"},
		{func(m *Model) { m.ModelType = "gemma4" }, `config.json: model_type is "gemma4", want "diffusion_gemma"`},
		{func(m *Model) { m.EOSTokenIDs = []int{9999} }, "config.json: eos_token_id (9999) is outside the vocabulary"},
		{func(m *Model) { m.Text.HeadDim = 15 }, "config.json: text_config.head_dim must be even"},
		{func(m *Model) { m.Generation.TMax = 0.1 }, "generation_config.json: t_max (0.1) is below t_min (0.4)"},
		{func(m *Model) { m.Generation.MaxDenoisingSteps = 0 }, "generation_config.json: max_denoising_steps must be positive"},
		{func(m *Model) { m.Generation.ARGuidance = -1 }, "generation_config.json: darkroom_ar_guidance must be a finite number ≥ 0"},
		{func(m *Model) { m.Generation.ARGuidanceRounds = -2 }, "generation_config.json: darkroom_ar_guidance_rounds must be ≥ 0"},
		{func(m *Model) { m.Generation.ARGuidanceInWord = -1 }, "generation_config.json: darkroom_ar_guidance_in_word must be a finite number ≥ 0"},
		{func(m *Model) { m.Generation.RepetitionPenalty = 0 }, "generation_config.json: repetition_penalty must be a finite number > 0"},
	}
	for _, c := range cases {
		m := Tiny()
		c.edit(m)
		err := m.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want prefix %q", err, c.want)
		}
		// The same error comes out of Load.
		dir := t.TempDir()
		if err := m.Save(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Load() = %v, want prefix %q", err, c.want)
		}
	}
}

func TestEOSForms(t *testing.T) {
	cfg := strings.Replace(realConfigJSON(), `"eos_token_id": [1,106],`, `"eos_token_id": 106,`, 1)
	gen := `{"eos_token_id": 1, "sampler_config": {"entropy_bound": 0.3}}`
	m, err := LoadFS(fstest.MapFS{"config.json": {Data: []byte(cfg)}, "generation_config.json": {Data: []byte(gen)}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.EOSTokenIDs) != 1 || m.EOSTokenIDs[0] != 106 || len(m.Generation.EOSTokenIDs) != 1 || m.Generation.EntropyBound != 0.3 {
		t.Errorf("eos %v / %v, bound %v", m.EOSTokenIDs, m.Generation.EOSTokenIDs, m.Generation.EntropyBound)
	}
	if m.Generation.MaxDenoisingSteps != 48 {
		t.Errorf("defaults not applied: %+v", m.Generation)
	}
	bad := strings.Replace(realConfigJSON(), `"eos_token_id": [1,106],`, `"eos_token_id": "one",`, 1)
	if _, err := LoadFS(fstest.MapFS{"config.json": {Data: []byte(bad)}}, "."); err == nil || !strings.Contains(err.Error(), "config.json: eos_token_id") {
		t.Errorf("bad eos: %v", err)
	}
	if _, err := LoadFS(fstest.MapFS{"config.json": {Data: []byte("{")}}, "."); err == nil || !strings.HasPrefix(err.Error(), "config.json:") {
		t.Errorf("malformed: %v", err)
	}
	if _, err := LoadFS(fstest.MapFS{}, "."); err == nil || !strings.HasPrefix(err.Error(), "config.json:") {
		t.Errorf("absent: %v", err)
	}
}

func TestARGuidanceKeys(t *testing.T) {
	gen := `{"darkroom_ar_guidance": 2.5, "darkroom_ar_guidance_rounds": 20, "darkroom_ar_guidance_in_word": 4}`
	m, err := LoadFS(fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}, "generation_config.json": {Data: []byte(gen)}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Generation; g.ARGuidance != 2.5 || g.ARGuidanceRounds != 20 || g.ARGuidanceInWord != 4 {
		t.Fatalf("guidance %v, rounds %d, in words %v", g.ARGuidance, g.ARGuidanceRounds, g.ARGuidanceInWord)
	}
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	again, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if g := again.Generation; g.ARGuidance != 2.5 || g.ARGuidanceRounds != 20 || g.ARGuidanceInWord != 4 {
		t.Errorf("after a save: guidance %v, rounds %d, in words %v", g.ARGuidance, g.ARGuidanceRounds, g.ARGuidanceInWord)
	}
	// A Hugging Face checkpoint has neither key: guidance is off.
	if d := DefaultGeneration(); d.ARGuidance != 0 || d.ARGuidanceRounds != 0 || d.ARGuidanceInWord != 0 {
		t.Errorf("default guidance %v, rounds %d, want off", d.ARGuidance, d.ARGuidanceRounds)
	}
}

// TestRepetitionPenaltyKey reads Hugging Face's repetition_penalty: absent is 1 (off),
// a value is kept through a save, and a value that is not a finite number > 0 is an
// error naming the file and the key.
func TestRepetitionPenaltyKey(t *testing.T) {
	load := func(gen string) (*Model, error) {
		return LoadFS(fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}, "generation_config.json": {Data: []byte(gen)}}, ".")
	}
	m, err := load(`{"max_new_tokens": 64}`)
	if err != nil {
		t.Fatal(err)
	}
	if m.Generation.RepetitionPenalty != 1 {
		t.Errorf("absent key: penalty %v, want 1 (off)", m.Generation.RepetitionPenalty)
	}
	if m, err = load(`{"repetition_penalty": 1.3}`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	again, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Generation.RepetitionPenalty != 1.3 || again.Generation.RepetitionPenalty != 1.3 {
		t.Errorf("penalty %v, after a save %v, want 1.3", m.Generation.RepetitionPenalty, again.Generation.RepetitionPenalty)
	}
	for _, c := range []struct{ gen, want string }{
		{`{"repetition_penalty": 0}`, "generation_config.json: repetition_penalty must be a finite number > 0 (1 is off), got 0"},
		{`{"repetition_penalty": -1.2}`, "generation_config.json: repetition_penalty must be a finite number > 0 (1 is off), got -1.2"},
		{`{"repetition_penalty": "high"}`, "generation_config.json: json: cannot unmarshal string into Go struct field"},
	} {
		if _, err := load(c.gen); err == nil || !strings.HasPrefix(err.Error(), c.want) || !strings.Contains(err.Error(), "repetition_penalty") {
			t.Errorf("%s: %v, want %q", c.gen, err, c.want)
		}
	}
}

// TestAnotherArchitectureSaysWhich: a config.json of another architecture —
// a Llama repo's has no text_config — is refused by its model_type, not by
// the first DiffusionGemma field it lacks ("text_config is missing" told a
// user who pasted a Llama repo nothing they could act on).
func TestAnotherArchitectureSaysWhich(t *testing.T) {
	for _, raw := range []string{
		`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048}`,
		`{"model_type": "gemma3", "text_config": {"hidden_size": 2048}}`,
	} {
		_, err := ParseModel([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), "model_type is") || !strings.Contains(err.Error(), `want "diffusion_gemma" (Darkroom runs DiffusionGemma models)`) {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// TestHFQuantConfig: a ModelOpt export whose config.json has no quantization_config
// is NVFP4 by its hf_quant_config.json (Quantization, StoredProfile); config.json's
// own wins; an algorithm Darkroom does not load leaves it unset (the weights loader
// names the file and the algorithm); a malformed file is an error naming it.
func TestHFQuantConfig(t *testing.T) {
	hq := func(algo string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(`{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "` + algo + `", "group_size": 16}}`)}
	}
	for _, c := range []struct {
		name    string
		fsys    fstest.MapFS
		want    string // StoredProfile, "" for no Quantization
		wantErr bool
	}{
		{"nvfp4", fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}, HFQuantConfigFile: hq("NVFP4")}, "nvfp4", false},
		{"w4a16", fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}, HFQuantConfigFile: hq("W4A16_NVFP4")}, "nvfp4", false},
		{"fp8", fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}, HFQuantConfigFile: hq("FP8")}, "", false},
		{"none", fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}}, "", false},
		{"malformed", fstest.MapFS{"config.json": {Data: []byte(realConfigJSON())}, HFQuantConfigFile: {Data: []byte("{")}}, "", true},
		{"darkroom's wins", fstest.MapFS{"config.json": {Data: []byte(strings.Replace(realConfigJSON(), `"model_type"`,
			`"quantization_config": {"quant_method": "darkroom", "profile": "int4", "group_size": 32}, "model_type"`, 1))},
			HFQuantConfigFile: hq("NVFP4")}, "int4", false},
	} {
		m, err := LoadFS(c.fsys, ".")
		if c.wantErr {
			if err == nil || !strings.Contains(err.Error(), HFQuantConfigFile) {
				t.Errorf("%s: %v, want an error naming %s", c.name, err, HFQuantConfigFile)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := ""
		if m.Quantization != nil {
			got = m.Quantization.StoredProfile()
		}
		if got != c.want {
			t.Errorf("%s: stored profile %q (%+v), want %q", c.name, got, m.Quantization, c.want)
		}
	}
}
