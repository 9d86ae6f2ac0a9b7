// Package enginetest writes tiny, real checkpoints for other packages' tests:
// random weights of config.Tiny (every architectural feature of DiffusionGemma at
// a few kilobytes: sliding and full layers, K=V, partial RoPE, 16 experts top-4,
// self-conditioning) in the Hugging Face layout, with a small BPE tokenizer
// trained on HTML, chat and encyclopedia-prompt text. Loading one runs exactly the
// path a downloaded model takes; tinyengine loads one for the tests of packages
// above the engine.
package enginetest

import (
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// Options adjusts the checkpoint; the zero value is a usable default.
type Options struct {
	MaxNewTokens int    // generation_config max_new_tokens (default 32)
	MaxSteps     int    // generation_config max_denoising_steps (default 4)
	Seed         uint64 // weights seed (default 1)
	// Guidance and GuidanceRounds: generation_config's AR guidance (default off).
	Guidance       float64
	GuidanceRounds int
	Save           weights.SaveOptions
}

// texts are what the tokenizer is trained on: enough for the encyclopedia,
// chat and link formats to tokenize into more than bytes.
func texts() []string {
	return []string{
		"<h1>Unix</h1>\n<p>Unix is an <a href=\"/wiki/operating_system\">operating system</a>.</p>",
		"<|turn>user\n" + assets.EncyclopediaPrompt("Unix") + "<turn|>\n<|turn>model\n<h1>Unix</h1><turn|>",
		"<|turn>user\nWhat is Unix?<turn|>\n<|turn>model\nUnix is an operating system.<turn|>",
		"The operating system runs programs. The kernel is part of the operating system.",
	}
}

// Config returns the configuration WriteTinyModel saves for opts.
func Config(opts Options) *config.Model {
	cfg := config.Tiny()
	cfg.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	cfg.Generation.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	cfg.Generation.MaxNewTokens = 32
	if opts.MaxNewTokens > 0 {
		cfg.Generation.MaxNewTokens = opts.MaxNewTokens
	}
	cfg.Generation.MaxDenoisingSteps = 4
	cfg.Generation.ARGuidance, cfg.Generation.ARGuidanceRounds = opts.Guidance, opts.GuidanceRounds
	if opts.MaxSteps > 0 {
		cfg.Generation.MaxDenoisingSteps = opts.MaxSteps
	}
	return cfg
}

// WriteTinyModel writes the checkpoint into a fresh temporary directory and
// returns it.
func WriteTinyModel(t testing.TB, opts Options) string {
	t.Helper()
	dir := t.TempDir()
	tr, err := tokenizer.Train(tokenizer.Slice(texts()), tokenizer.TrainOptions{VocabSize: 400})
	if err != nil {
		t.Fatalf("enginetest: train tokenizer: %v", err)
	}
	if err := tr.Save(dir); err != nil {
		t.Fatalf("enginetest: save tokenizer: %v", err)
	}
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	cfg := Config(opts)
	if err := weights.Save(weights.Random(cfg, seed), cfg, dir, opts.Save); err != nil {
		t.Fatalf("enginetest: save weights: %v", err)
	}
	return dir
}
