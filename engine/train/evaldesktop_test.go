package train

import (
	"context"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
)

// TestDesktopWindow: a screen is a window as the UI constitution draws it —
// menu bar, title, one section with its title, /ui/ID links with labels — and
// the junk the Mini drew is not.
func TestDesktopWindow(t *testing.T) {
	bar := assets.DesktopOpening()
	good := bar + "<h1>gimp</h1>\n<section><h2>gimp</h2><p>An image editor.</p><p><a href=\"/ui/gimp-about\">About</a> <a href=\"/ui/gimp-close\">Close</a></p></section>"
	if !DesktopWindow(good) || desktopTitle(good) != "gimp" {
		t.Errorf("a whole window: %v, title %q", DesktopWindow(good), desktopTitle(good))
	}
	for name, screen := range map[string]string{
		"no menu bar":       strings.TrimPrefix(good, bar),
		"title in a title":  bar + "<h1><h2>About</h1>\n<section><h2>x</h2></section>",
		"unclosed section":  bar + "<h1>p name</h1>\n<section><h2>power room for W a game, room</li><li><li><a href=\"/ui/menu-apps\">Applications</a></li></ul>",
		"a link cut off":    bar + "<h1>x</h1>\n<section><h2>x</h2><ul><li><a href=\"/ui/menu-games</a></li></ul></section>",
		"an upper-case ID":  bar + "<h1>x</h1>\n<section><h2>x</h2><p><a href=\"/ui/Menu\">M</a></p></section>",
		"two sections":      bar + "<h1>x</h1>\n<section><h2>x</h2></section><section><h2>y</h2></section>",
		"an empty label":    bar + "<h1>x</h1>\n<section><h2>x</h2><p><a href=\"/ui/m\"></a></p></section>",
		"another link kind": bar + "<h1>x</h1>\n<section><h2>x</h2><p><a href=\"http://x\">x</a></p></section>",
	} {
		if DesktopWindow(screen) {
			t.Errorf("%s: taken for a window: %q", name, screen)
		}
	}
}

// TestEvaluateDesktops: --desktops draws the held-out clicks in both modes,
// counted and sampled, and a corpus without any is refused in words.
func TestEvaluateDesktops(t *testing.T) {
	model := enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 96, MaxSteps: 2}) // the menu bar is 79 of its tokens
	click := func(el string) Record {
		return Record{Kind: "desktop", Title: el, System: assets.DesktopSystem(),
			Prompt: assets.DesktopPrompt(assets.Click{ElementID: el, Text: el, App: "desktop"}),
			Answer: assets.DesktopOpening() + "<h1>" + el + "</h1>\n<section><h2>" + el + "</h2><p>x</p></section>"}
	}
	corpus := writeCorpus(t, []Record{page("Unix")}, []Record{page("Plan 9"), click("app-gimp"), click("app-vlc"), click("menu-apps")})
	rep, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 1, Desktops: 2,
		Modes: []engine.Mode{engine.AR}, NoLoss: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Desktop; d == nil || d.Clicks != 2 || len(d.AR.Samples) != 2 || len(d.Diffusion.Samples) != 2 ||
		!strings.HasPrefix(d.AR.Samples[0].Text, assets.DesktopOpening()) {
		t.Fatalf("desktop report %+v; want 2 clicks drawn in both modes, the menu bar held", d)
	}
	bare := writeCorpus(t, []Record{page("Unix")}, []Record{page("Plan 9")})
	if _, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: bare, Pages: 1, Desktops: 2,
		Modes: []engine.Mode{engine.AR}, NoLoss: true}); err == nil || !strings.Contains(err.Error(), "desktop") {
		t.Errorf("a corpus without desktop clicks: %v", err)
	}
}
