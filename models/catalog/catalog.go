// Package catalog lists the models Darkroom knows: what each is, where it comes
// from, its license, its download size and the quantization profiles it can run
// with, plus the model dimensions the fit estimator needs before anything is
// downloaded; the built-in model's format, size and profile come from its
// embedded files (BuiltinFacts). It also records the community formats the
// engine cannot load yet, with the reason, so the library can say so instead of
// offering a 19 GB download that would not run.
package catalog

import (
	"fmt"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// Entry is one catalog model.
type Entry struct {
	ID          string          `json:"id"`   // short name users type: "diffusiongemma-26b"
	Name        string          `json:"name"` // display name
	Repo        string          `json:"repo,omitempty"`
	Revision    string          `json:"revision,omitempty"`
	Builtin     bool            `json:"builtin,omitempty"` // embedded in the binary (package assets)
	License     string          `json:"license"`
	Description string          `json:"description"`
	Format      string          `json:"format"`        // what the files are
	Size        int64           `json:"download_size"` // approximate; the exact size comes from the Hub
	Profiles    []quant.Profile `json:"profiles"`      // bf16 = as published, nothing quantized (the built-in Mini: F32, its only one); others made by `darkroom quantize`
	// Mix is the llama.cpp quantization mix of a GGUF download ("": not one): the
	// block type of each tensor (engine/weights' GGUFType), which the estimates
	// price and the Library names it by.
	Mix gguf.Mix `json:"gguf_mix,omitempty"`
	// Include restricts a download to these globs (empty: every file).
	Include []string `json:"include,omitempty"`
	// Companion names small files to fetch from another repo into the same model
	// directory (nil: none): a GGUF repo ships no tokenizer.json or config.json.
	Companion *Companion `json:"companion,omitempty"`
	// Config returns the model's dimensions (nil when only known after download).
	Config func() (*config.Model, error) `json:"-"`
	// ModesEqual says the printer (AR) and the polaroid (diffusion) write this model
	// equally well, so chat and the API default to whichever is faster on this
	// machine (models/speed). Where they do not, chat, the API and the
	// Encyclopedia's automatic page mode run in ChatMode ("" is diffusion), for
	// the reason ChatModeWhy: Darkroom Mini's is its card's (assets.MiniCard),
	// measured on its answers and pages.
	ModesEqual  bool   `json:"modes_equal,omitempty"`
	ChatMode    string `json:"chat_mode,omitempty"`
	ChatModeWhy string `json:"-"`
	// Steps and GuidanceRounds are the denoising steps and AR guidance rounds a
	// canvas typically takes, for the speed estimate (0: the generation config's
	// maximum; the sampler stops adaptively, usually well before).
	Steps          float64 `json:"typical_steps,omitempty"`
	GuidanceRounds float64 `json:"typical_guidance_rounds,omitempty"`
	// System is the system turn a chat with this model is given when it brings
	// none — the app's Chat, `darkroom generate` and the API alike ("": none).
	// Darkroom Mini's is assets.ChatSystem, the turn every chat it was trained
	// on has: without it the Mini answers a question with an encyclopedia page.
	System string `json:"-"`
	// AnswerTokens is the most new tokens an answer — Chat, the API's chat
	// completions, `darkroom generate` with a question — is given where the
	// user asked for none (0: the generation config's max_new_tokens).
	// DiffusionGemma's checkpoint says 256, one canvas: a trap for a general
	// assistant, whose answers it cuts short (vLLM's recipe raises it;
	// shared/reference/diffusiongemma.md §2.2). Generation still ends at the
	// model's end of turn; the larger cap costs only answers that need it.
	// Encyclopedia pages keep the generation config's.
	AnswerTokens int `json:"answer_tokens,omitempty"`
}

// dgAnswerTokens is DiffusionGemma's AnswerTokens: eight canvases.
const dgAnswerTokens = 2048

// AnswerTokens is the AnswerTokens of the model Darkroom loaded as name with
// config cfg (ForModel: a catalog name, or the 26B's dimensions under another
// name — a fine-tune), 0 for a model the catalog does not know.
func AnswerTokens(name string, cfg *config.Model) int {
	e, _ := ForModel(name, cfg)
	return e.AnswerTokens
}

// dgSteps is DiffusionGemma's typical denoising steps per canvas: Google's model
// card says adaptive stopping usually ends a canvas at 12–16 of the 48 steps
// (shared/reference/diffusiongemma.md, "Max denoising steps"); the upper end.
const dgSteps = 16

// Companion is a second repo whose files complete an entry's download.
type Companion struct {
	Repo     string   `json:"repo"`
	Revision string   `json:"revision,omitempty"`
	Include  []string `json:"include"`
}

// Unsupported is a known community format the engine cannot load.
type Unsupported struct {
	Repo   string `json:"repo"`
	Format string `json:"format"`
	Size   int64  `json:"download_size"`
	Reason string `json:"reason"`
}

// MiniID is the built-in model's ID.
const MiniID = "darkroom-mini"

// DiffusionGemmaID is the 26B model's ID.
const DiffusionGemmaID = "diffusiongemma-26b"

// GGUFID is Unsloth's Q4_K_M GGUF of the 26B model, the first of its GGUF entries
// (the repo named without a mix: Find); GGUFIDs lists them all by mix.
const GGUFID = "diffusiongemma-26b-q4km"

// GGUFIDs are the catalog's GGUF entries of the 26B model, by mix.
var GGUFIDs = map[gguf.Mix]string{
	gguf.Q3KM: "diffusiongemma-26b-q3km",
	gguf.Q4KM: GGUFID,
	gguf.Q5KM: "diffusiongemma-26b-q5km",
	gguf.Q6KM: "diffusiongemma-26b-q6k",
	gguf.Q80M: "diffusiongemma-26b-q8_0",
}

// GGUF reports whether the entry's weights are a GGUF file (its Mix says which): on
// the CPU their blocks are multiplied as stored, in integer arithmetic where the CPU
// has it.
func (e Entry) GGUF() bool { return e.Mix != "" }

// LocalName is the name a download of e takes in the models folder: its repo, and for
// a GGUF entry — Unsloth's repo holds a file per mix, each entry one of them — the
// repo and the mix, as Find takes it ("unsloth/diffusiongemma-26B-A4B-it-GGUF:Q6_K").
func (e Entry) LocalName() string {
	if e.GGUF() {
		return e.Repo + ":" + string(e.Mix)
	}
	return e.Repo
}

// GGUFFile is the file of Unsloth's GGUF of the 26B model in mix m, named as
// Unsloth names its quantizations.
func GGUFFile(m gguf.Mix) string { return "diffusiongemma-26B-A4B-it-" + string(m) + ".gguf" }

// GGUFProfile is the Darkroom profile a GGUF download in mix m stands in for — int8
// (in groups of 32) for the Q6_K and Q8_0 mixes, int4 for the others and for a file
// near no mix ("") — in what the profile alone decides: the size of a GPU's
// dequantization scratch. The weights themselves are counted tensor by tensor, as the
// file stores them (fit.Runtime.GGUF, speed.Workload.GGUF: weights.GGUFLayout), and
// how much of the model a download keeps is Entry.Keeps.
func GGUFProfile(m gguf.Mix) quant.Profile {
	if m == gguf.Q6KM || m == gguf.Q80M {
		return quant.Int8Profile
	}
	return quant.Int4Profile
}

// Keeps ranks how much of the model e under profile p keeps, for the Library's
// recommendation (the more, the better, where several fit): 2 bf16 as published, 1
// the 8-bit ones (int8; the Q6_K and Q8_0 GGUFs), 0 the 4-bit ones (int4, NVFP4, the
// Q4_K_M and Q5_K_M GGUFs), −1 the 3-bit Q3_K_M GGUF, for a GPU the 4-bit ones do not
// fit.
func (e Entry) Keeps(p quant.Profile) int {
	switch {
	case e.Mix == gguf.Q3KM:
		return -1
	case p == quant.BF16Profile:
		return 2
	case p == quant.Int8Profile:
		return 1
	}
	return 0
}

// ProfileName is how profile p of e is named to users: a GGUF download by its own
// mix (Q4_K_M), which p (GGUFProfile(mix)) only stands in for in the estimates; any
// other by p.
func (e Entry) ProfileName(p quant.Profile) string {
	if e.GGUF() {
		return string(e.Mix)
	}
	return string(p)
}

// NVFP4ID is NVIDIA's NVFP4 (ModelOpt) export of the 26B model.
const NVFP4ID = "diffusiongemma-26b-nvfp4"

// Entries returns the catalog.
func Entries() []Entry {
	return []Entry{
		miniEntry(), // from its own files and card (builtin.go)
		{
			ID: DiffusionGemmaID, Name: "DiffusionGemma 26B-A4B (instruction-tuned)",
			Repo: "google/diffusiongemma-26B-A4B-it", Revision: "main",
			License: "Gemma Terms of Use (accept on huggingface.co before downloading)",
			Description: "Google's block-diffusion MoE model: 26B parameters, 3.8B active. A general assistant; " +
				"~52 GB as downloaded; about 18 GB made int4 on this PC (`darkroom quantize`), or the NVFP4 and GGUF " +
				"exports below, a third of the download: on a 24 GB GPU, or in the RAM of a PC without one.",
			Format: "safetensors BF16", Size: 51_600_000_000,
			Profiles: quant.Profiles,
			// Text weights, config, tokenizer; the vision tower is skipped by the loader
			// but lives in the same shards, so the shards are needed whole.
			Include:    []string{"*.json", "*.safetensors", "*.jinja", "tokenizer*"},
			Config:     func() (*config.Model, error) { return DiffusionGemma26B(), nil },
			ModesEqual: true, Steps: dgSteps, AnswerTokens: dgAnswerTokens,
		},
		{
			ID: NVFP4ID, Name: "DiffusionGemma 26B-A4B NVFP4 (NVIDIA ModelOpt)",
			Repo: "nvidia/diffusiongemma-26B-A4B-it-NVFP4", Revision: "main",
			License: "Apache-2.0 and the Gemma Terms of Use (NVIDIA's model card)",
			Description: "NVIDIA's 4-bit float (NVFP4) export of DiffusionGemma 26B-A4B: a 19 GB download instead of 52 GB. " +
				"Attention, MLP and expert weights stay NVFP4 in memory as downloaded (0.57 bytes per weight with " +
				"their scales: about 15.4 GB of weights), dequantized next to each matmul on a GPU and multiplied " +
				"as stored, straight from the file, on the CPU; embedding, router, norms and the self-conditioning " +
				"MLP are BF16 (on the CPU the embedding is held as int8, as the int4 profile stores it).",
			Format: "safetensors NVFP4 (ModelOpt: FP4 E2M1 weights, FP8 E4M3 block scales)", Size: 18_900_000_000,
			Profiles: []quant.Profile{quant.NVFP4Profile},
			// hf_quant_config.json (the quantization description) matches *.json.
			Include:    []string{"*.json", "*.safetensors", "*.jinja", "tokenizer*"},
			Config:     func() (*config.Model, error) { return DiffusionGemma26B(), nil },
			ModesEqual: true, Steps: dgSteps, AnswerTokens: dgAnswerTokens,
		},
		ggufEntry(gguf.Q4KM, 16_800_000_000, "16.8 GB", "about 17 GB in memory: "+
			"for a 24 GB GPU, or a PC with 24 to 32 GB of RAM and no GPU (16 GB runs it from the disk)"),
		ggufEntry(gguf.Q5KM, 19_100_000_000, "19.1 GB", "closer to the original than Q4_K_M, slower "+
			"on the CPU (more bytes a token), for a 24 GB GPU or a PC with 32 GB of RAM"),
		ggufEntry(gguf.Q6KM, 22_600_000_000, "22.6 GB", "nearly the original's quality, "+
			"for a PC with 32 GB of RAM, or a GPU with 32 GB (a 24 GB one holds it with nothing else on it)"),
		ggufEntry(gguf.Q80M, 26_800_000_000, "26.8 GB", "as good as the original for practical purposes, "+
			"for a PC with 48 GB of RAM or more, or a GPU with 32 GB"),
		ggufEntry(gguf.Q3KM, 13_300_000_000, "13.3 GB", "about 16 GB in memory on a GPU: for a GPU with 16 GB, "+
			"which the 4-bit downloads do not fit (close games and other programs using it first); 3-bit, it loses "+
			"more of the model's quality than Q4_K_M, so choose that one where it fits"),
	}
}

// ggufEntry is the catalog entry of Unsloth's GGUF of the 26B model in mix m: a
// download of size bytes (said as sizeText) and when to choose it (what).
func ggufEntry(m gguf.Mix, size int64, sizeText, what string) Entry {
	cpu := " On the CPU its blocks are multiplied as stored, in integer arithmetic"
	if m != gguf.Q80M {
		cpu += ", its Q6_K embedding held as int8"
	}
	gpu := " On a GPU its blocks stay as stored, unpacked next to each product."
	return Entry{
		ID: GGUFIDs[m], Name: "DiffusionGemma 26B-A4B " + string(m) + " (Unsloth GGUF)",
		Repo: "unsloth/diffusiongemma-26B-A4B-it-GGUF", Revision: "main",
		License: "Gemma Terms of Use (the tokenizer comes from Google's repo: accept the terms on huggingface.co)",
		Description: "Unsloth's llama.cpp " + string(m) + " quantization of DiffusionGemma 26B-A4B: a " + sizeText +
			" download instead of 52 GB; " + what + "." + cpu + "." + gpu,
		Format: "GGUF " + string(m) + " (llama.cpp diffusion-gemma, PR #24423)", Size: size, Mix: m,
		// The estimates' stand-in profile (GGUFProfile).
		Profiles: []quant.Profile{GGUFProfile(m)},
		// One quant only: the loader refuses a directory with several .gguf files.
		// (The Q3_K_M's file name is Unsloth's naming, unconfirmed: where the repo
		// has no such file, the download says which quantizations it has.)
		Include: []string{GGUFFile(m)},
		// Unsloth's GGUF repos ship .gguf files, not the Hugging Face tokenizer.json
		// the engine reads (not checked against the live repo: the hub is not
		// reachable where this was written), so tokenizer.json, the chat template
		// and config.json come from the base repo: small files. The GGUF metadata
		// alone also gives the config (engine.Load reads it when config.json is
		// missing), but Darkroom does not rebuild a tokenizer from it.
		Companion: &Companion{Repo: "google/diffusiongemma-26B-A4B-it", Revision: "main",
			Include: []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "*.jinja"}},
		Config:     func() (*config.Model, error) { return DiffusionGemma26B(), nil },
		ModesEqual: true, Steps: dgSteps, AnswerTokens: dgAnswerTokens,
	}
}

// UnsupportedFormats are community repos of DiffusionGemma the engine cannot
// load yet, and why. Unsloth's GGUF (engine/gguf)
// and NVIDIA's NVFP4 export now load; none is left.
func UnsupportedFormats() []Unsupported {
	return []Unsupported{}
}

// Find looks a name up: a catalog ID, or a repo (case-insensitive) — its first
// entry (Unsloth's GGUF repo: the Q4_K_M), or, named with a quantization as ollama
// names a Hugging Face GGUF ("unsloth/diffusiongemma-26B-A4B-it-GGUF:Q6_K"), its
// entry in that mix.
func Find(name string) (Entry, bool) {
	repo, quant, withQuant := strings.Cut(name, ":")
	mix, isMix := gguf.ParseMix(quant)
	for _, e := range Entries() {
		switch {
		case strings.EqualFold(e.ID, name):
			return e, true
		case e.Repo == "":
		case !withQuant && strings.EqualFold(e.Repo, name):
			return e, true
		case withQuant && isMix && e.Mix == mix && strings.EqualFold(e.Repo, repo):
			return e, true
		}
	}
	return Entry{}, false
}

// System is the system turn a chat with the model named id (a catalog ID or
// repo) is given when it brings none: its entry's System, "" for a model the
// catalog does not know.
func System(id string) string {
	e, _ := Find(id)
	return e.System
}

// NoThinking is why a model Darkroom loaded does not think when asked ("" where
// it does): it thinks where its tokenizer has Gemma 4's <|think|> token
// (hasThink), but for Darkroom Mini (builtin), which has the token and was
// never trained to use it — given it, the Mini writes worse. The app greys its
// Chat's Thinking box, `darkroom generate --thinking` and the API's
// reasoning_effort are refused, with this reason.
func NoThinking(builtin, hasThink bool) string {
	switch {
	case builtin:
		return "Darkroom Mini was not trained to think"
	case !hasThink:
		return "this model has no thinking channel"
	}
	return ""
}

// ForModel finds the catalog entry of a model Darkroom loaded: by name (a catalog
// ID or repo, or a profile made from one: "diffusiongemma-26b-int4"), else by its
// dimensions (a folder holding the 26B's architecture, whatever its quantization).
func ForModel(name string, cfg *config.Model) (Entry, bool) {
	if e, ok := Find(name); ok {
		return e, true
	}
	if i := strings.LastIndex(name, "-"); i > 0 {
		if _, err := quant.ParseProfile(name[i+1:]); err == nil {
			if e, ok := Find(name[:i]); ok {
				return e, true
			}
		}
	}
	if cfg == nil {
		return Entry{}, false
	}
	for _, e := range Entries() {
		if e.Config == nil {
			continue
		}
		if c, err := e.Config(); err == nil && sameDims(&c.Text, &cfg.Text) {
			return e, true
		}
	}
	return Entry{}, false
}

// sameDims reports whether two text configs have the same architecture.
func sameDims(a, b *config.Text) bool {
	return a.VocabSize == b.VocabSize && a.HiddenSize == b.HiddenSize && a.IntermediateSize == b.IntermediateSize &&
		a.MoEIntermediateSize == b.MoEIntermediateSize && a.NumExperts == b.NumExperts && a.TopKExperts == b.TopKExperts &&
		a.NumHiddenLayers == b.NumHiddenLayers && a.NumAttentionHeads == b.NumAttentionHeads &&
		a.NumKeyValueHeads == b.NumKeyValueHeads && a.HeadDim == b.HeadDim && a.GlobalHeadDim == b.GlobalHeadDim
}

// TokenizerFor is what a GGUF of a model with configuration cfg (its metadata's) takes
// from the catalog's base repo where its own repo ships no tokenizer.json — as most
// GGUF repos do, Darkroom not rebuilding a tokenizer from GGUF metadata: the
// tokenizer files of the catalog's GGUF entries' companion (Google's repo) where the
// vocabulary is theirs, and its config.json too where every dimension is; false for
// another vocabulary.
func TokenizerFor(cfg *config.Model) (*Companion, bool) {
	for _, e := range Entries() {
		if e.Companion == nil || e.Config == nil {
			continue
		}
		c, err := e.Config()
		if err != nil || c.Text.VocabSize != cfg.Text.VocabSize {
			continue
		}
		out := *e.Companion
		out.Include = nil
		for _, g := range e.Companion.Include {
			if g != config.ConfigFile || sameDims(&c.Text, &cfg.Text) {
				out.Include = append(out.Include, g)
			}
		}
		return &out, true
	}
	return nil, false
}

// CheckLoadable refuses repos known to hold a format the engine cannot load.
func CheckLoadable(repo string) error {
	for _, u := range UnsupportedFormats() {
		if strings.EqualFold(u.Repo, repo) {
			return fmt.Errorf("%s is %s, which Darkroom cannot load: %s", repo, u.Format, u.Reason)
		}
	}
	return nil
}

// DiffusionGemma26B is the released 26B-A4B-it checkpoint's configuration
// (its config.json, as the converter writes it), for estimates before it is downloaded.
func DiffusionGemma26B() *config.Model {
	m := &config.Model{
		Architectures: []string{"DiffusionGemmaForBlockDiffusion"},
		ModelType:     "diffusion_gemma", CanvasLength: 256, EOSTokenIDs: []int{1, 106}, DType: "bfloat16",
	}
	t := &m.Text
	t.VocabSize, t.HiddenSize, t.IntermediateSize, t.MoEIntermediateSize = 262144, 2816, 2112, 704
	t.NumExperts, t.TopKExperts, t.NumHiddenLayers = 128, 8, 30
	t.NumAttentionHeads, t.NumKeyValueHeads, t.NumGlobalKVHeads = 16, 8, 2
	t.HeadDim, t.GlobalHeadDim, t.SlidingWindow = 256, 512, 1024
	for i := 0; i < 30; i++ {
		if i%6 == 5 {
			t.LayerTypes = append(t.LayerTypes, config.FullAttention)
		} else {
			t.LayerTypes = append(t.LayerTypes, config.SlidingAttention)
		}
	}
	t.RopeParameters.Sliding = config.Rope{Type: "default", Theta: 1e4}
	t.RopeParameters.Full = config.Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}
	t.MaxPositionEmbeddings, t.RMSNormEps, t.HiddenActivation = 262144, 1e-6, "gelu_pytorch_tanh"
	t.FinalLogitSoftcapping, t.PadTokenID, t.EOSTokenID, t.BOSTokenID, t.DType = 30, 0, 1, 2, "bfloat16"
	m.Generation = config.DefaultGeneration()
	return m
}
