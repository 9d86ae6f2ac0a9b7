// Package assets owns the files embedded in the darkroom binary: the built-in
// Darkroom Mini model (assets/mini/, Hugging Face layout, with its card.json:
// what it was trained on and how a canvas typically runs, see MiniCard; and its
// leads.jsonl.gz: each entry it was trained on, as its training page wrote it,
// which encyclopedia pages hold after a known title's heading, see Leads), the app
// icon, and the demo prompt templates with the builders that fill them in.
//
// The prompt builders are the single source of the text the app sends and the
// corpus trains on: the Encyclopedia screen and `darkroom wiki` call
// EncyclopediaPrompt, the corpus builder (engine/train/corpus) writes the same
// strings as training prompts, so a trained model sees at inference exactly the
// bytes it saw in training. The package imports nothing from the engine.
//
// # Page format
//
// The answer to EncyclopediaPrompt is small, regular, sanitizer-friendly HTML,
// one block per line:
//
//	<h1>Title</h1>
//	<p><em>operating system</em></p>   optional: FOLDOC's subject of the entry
//	<p>Text with <a href="/wiki/Slug">links</a>, <em>emphasis</em> and <code>code</code>.</p>
//	<ul><li>one sense or item</li><li>another</li></ul>
//	<pre>verbatim lines</pre>
//
// The only attribute is href, always WikiHref(topic); text is HTML-escaped
// (&amp; &lt; &gt;); no scripts, styles, images or remote links. Pages
// are cut at a paragraph or sentence boundary to fit mostly in one 256-token
// canvas.
//
// # Screen format
//
// The answer to DesktopPrompt (after DesktopSystem) is one screen:
//
//	<nav><a href="/ui/menu-apps">Applications</a> <a href="/ui/menu-help">Help</a></nav>   always this menu bar
//	<h1>Active window title</h1>
//	<section><h2>Window title</h2><p>text</p><ul><li><a href="/ui/app-gimp">gimp</a></li></ul></section>
//
// Clickable elements are exactly the links with href "/ui/ID";
// UIElementFromHref turns a clicked href back into the ID of the next Click.
package assets

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

//go:embed icons/darkroom.png
var iconPNG []byte

//go:embed icons/darkroom.svg
var iconSVG []byte

// ErrMiniNotBuilt reports that this binary carries no trained Darkroom Mini: the
// assets/mini/ directory held no model files when it was compiled.
var ErrMiniNotBuilt = errors.New("Darkroom Mini is not built into this binary yet (assets/mini has no config.json; train it with `darkroom train` and rebuild)")

// miniRequired are the files a usable embedded model must have.
var miniRequired = []string{"config.json", "tokenizer.json"}

// Mini returns the embedded Darkroom Mini model directory in the Hugging Face
// layout (config.json, generation_config.json, model.safetensors, tokenizer.json,
// …), rooted so that "config.json" opens the model's config. It returns an error
// wrapping ErrMiniNotBuilt when the binary was built before the model was
// trained, and never panics.
func Mini() (fs.FS, error) {
	root, dir, err := miniSource()
	if err != nil {
		return nil, err
	}
	return miniFrom(root, dir)
}

// MiniDirEnv names the folder a binary built with -tags nomini reads the
// built-in model from. Such a binary carries none of the Mini's files: the
// device session's (packaging/device-session.sh), whose working tree holds
// assets/mini already, so that the weights do not travel twice within the
// device tool's 64 MiB.
const MiniDirEnv = "DARKROOM_MINI_DIR"

// miniDirSource is a nomini binary's model source: the folder dir, or an error
// wrapping ErrMiniNotBuilt that names MiniDirEnv where dir is "".
func miniDirSource(dir string) (fs.FS, string, error) {
	if dir == "" {
		return nil, "", fmt.Errorf("this binary was built without Darkroom Mini's files (-tags nomini): set %s to a folder holding them, such as assets/mini: %w", MiniDirEnv, ErrMiniNotBuilt)
	}
	return os.DirFS(dir), ".", nil
}

// miniFrom is the model directory dir of root, checked for miniRequired.
func miniFrom(root fs.FS, dir string) (fs.FS, error) {
	sub, err := fs.Sub(root, dir)
	if err != nil {
		return nil, fmt.Errorf("open embedded Darkroom Mini: %w", err)
	}
	for _, name := range miniRequired {
		if _, err := fs.Stat(sub, name); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if name == "config.json" {
					return nil, ErrMiniNotBuilt
				}
				return nil, fmt.Errorf("embedded Darkroom Mini is incomplete: %s is missing: %w", name, ErrMiniNotBuilt)
			}
			return nil, fmt.Errorf("open embedded Darkroom Mini %s: %w", name, err)
		}
	}
	return sub, nil
}

// IconPNG returns the Darkroom app icon as a 512×512 PNG (for FyneApp.toml,
// the window icon and packaging).
func IconPNG() []byte { return iconPNG }

// IconSVG returns the Darkroom app icon as SVG.
func IconSVG() []byte { return iconSVG }
