package corpus

import (
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/markup"
)

// checkParsedPage checks what every parser's entry must render to: a page that
// opens with its title's heading, links only inside the encyclopedia, shows no
// markup fragments (engine/markup) and carries none of the dictionary's own
// markup.
func checkParsedPage(t *testing.T, e Entry) {
	t.Helper()
	page := NewCatalog().Page(e, 900)
	if !strings.HasPrefix(page, assets.EncyclopediaOpening(e.Title)) {
		t.Fatalf("page does not open with its heading: %q", page)
	}
	if strings.Count(page, "<a href=") != strings.Count(page, `<a href="/wiki/`) {
		t.Fatalf("page links outside the encyclopedia: %q", page)
	}
	body := page[len(assets.EncyclopediaOpening(e.Title)):] // the title is the input's, escaped
	if n := markup.Count(body); n > 0 {
		t.Fatalf("page shows %d markup fragments: %q", n, page)
	}
	for _, bad := range []string{"[syn:", "[ant:", "<script", "\t"} {
		if strings.Contains(body, bad) {
			t.Fatalf("page has %q: %q", bad, page)
		}
	}
}

func FuzzParseWordNet(f *testing.F) {
	for _, s := range fixtureWordNet {
		f.Add(s)
	}
	f.Add("x\n    n 1: [syn: {a\n")
	f.Add("x\n    v 12: \"unterminated\n")
	f.Add("x\n    n 1: see the <Cmd> key; \"a=\\\"b\\\"\"\n")
	f.Fuzz(func(t *testing.T, raw string) {
		if e, ok := ParseWordNet(raw); ok {
			checkParsedPage(t, e)
		}
	})
}

func FuzzParseVERA(f *testing.F) {
	for _, s := range fixtureVERA {
		f.Add(s)
	}
	f.Add("X\n  (((\n")
	f.Add("X\n  a [b (c, \"d\n")
	f.Add("X\n  Tag <b> Language (href=x)\n")
	f.Fuzz(func(t *testing.T, raw string) {
		if e, ok := ParseVERA(raw); ok {
			checkParsedPage(t, e)
		}
	})
}

// Mangled HTML (cut at random places, bytes flipped) never panics the Python
// docs' reader, and what it reads still renders to clean pages.
func TestPythonDocsMangled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := fixturePyDocs["tutorial/controlflow.html"].Data
	for range 300 {
		b := append([]byte(nil), src[:rng.IntN(len(src)+1)]...)
		const noise = "<>/\"=&{}\x00\xc3"
		for range rng.IntN(8) {
			if len(b) > 0 {
				b[rng.IntN(len(b))] = noise[rng.IntN(len(noise))]
			}
		}
		fsys := fstest.MapFS{"glossary.html": {Data: b}}
		for _, d := range pyDocDirs {
			fsys[d+"/x.html"] = &fstest.MapFile{Data: b}
		}
		entries, _, err := ParsePythonDocs(fsys)
		if err != nil {
			t.Fatalf("mangled HTML: %v", err)
		}
		for _, e := range entries {
			checkParsedPage(t, e)
		}
	}
}
