// Package tiny writes a tiny random-weight model of the DiffusionGemma
// architecture (engine/config.Tiny) with a small trained tokenizer: the app's
// engine tests and packaging/window-check.sh (when no trained Darkroom Mini is
// embedded) use it. Its output is noise-like text; it checks the plumbing, not
// the prose.
package tiny

import (
	"os"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

var corpus = []string{
	"<h1>Unix</h1>\n<p>Unix is an <em>operating system</em> from <a href=\"/wiki/Bell_Labs\">Bell Labs</a>.</p>",
	"<h1>Kernel</h1>\n<p>The <a href=\"/wiki/kernel\">kernel</a> is the core of an operating system.</p>\n<ul><li>memory</li><li>processes</li></ul>",
	"<nav><a href=\"/ui/menu-apps\">Applications</a></nav>\n<h1>Desktop</h1>\n<section><h2>Files</h2><p>Home folder</p></section>",
	"<|turn>user\nWhat is Unix?<turn|>\n<|turn>model\nUnix is an operating system.<turn|>",
}

// Write writes the model into dir (config.json, generation_config.json,
// model.safetensors, tokenizer.json).
func Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr, err := tokenizer.Train(tokenizer.Slice(corpus), tokenizer.TrainOptions{VocabSize: 400})
	if err != nil {
		return err
	}
	if err := tr.Save(dir); err != nil {
		return err
	}
	cfg := config.Tiny()
	cfg.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	cfg.Generation.EOSTokenIDs = tokenizer.MiniEndOfGeneration()
	cfg.Generation.MaxNewTokens = 64
	cfg.Generation.MaxDenoisingSteps = 12
	return weights.Save(weights.Random(cfg, 7), cfg, dir, weights.SaveOptions{})
}
