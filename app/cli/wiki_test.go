package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// writeWikiModel writes a random-weight checkpoint of config.Tiny with a small
// trained tokenizer: enough to run the real load and generate path.
func writeWikiModel(t *testing.T) string {
	return enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 24, MaxSteps: 4})
}

// wikiRun runs the CLI with args.
func wikiRun(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = Run(args, &o, &e)
	return o.String(), e.String(), code
}

func TestWikiArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"wiki"}, "want one TITLE"},
		{[]string{"wiki", "a", "b"}, "want one TITLE"},
		{[]string{"wiki", "  "}, "title is empty"},
		{[]string{"wiki", "--mode", "fast", "Unix"}, "--mode"},
		{[]string{"wiki", "--max-new-tokens", "-1", "Unix"}, "--max-new-tokens"},
		{[]string{"wiki", "--max-tokens", "-1", "Unix"}, "--max-new-tokens"}, // the deprecated name, the same flag
		{[]string{"wiki", "--model", "/nonexistent/model", "Unix"}, "/nonexistent/model"},
		{[]string{"wiki", "--prompt", "Write a Star Wars page", "Unix"}, "{{title}}"},
	} {
		_, stderr, code := wikiRun(c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and one line with %q", c.args, code, stderr, c.want)
		}
	}
	if out, _, code := wikiRun("wiki", "--help"); code != 0 || !strings.Contains(out, "--seed") {
		t.Errorf("wiki --help: exit %d, %q", code, out)
	}
}

func TestWikiDefaultModel(t *testing.T) {
	if _, err := assets.Mini(); !errors.Is(err, assets.ErrMiniNotBuilt) {
		t.Skip("Darkroom Mini is built in; the generate path is tested with a model directory")
	}
	_, stderr, code := wikiRun("wiki", "Unix")
	if code != 1 || !strings.Contains(stderr, "not built") || !strings.Contains(stderr, "--model") {
		t.Errorf("wiki without a built-in model: exit %d, %q", code, stderr)
	}
}

// wikiTestBackend runs ops one at a time: GoMLX v0.26 simplego's parallel op
// execution can deadlock on a 2-CPU machine (see engine/model's tests).
const wikiTestBackend = "go:ops_sequential"

func TestWikiGenerates(t *testing.T) {
	dir := writeWikiModel(t)
	var pages [2]wikiPage
	for i := range pages {
		out, stderr, code := wikiRun("wiki", "--model", dir, "--seed", "7", "--json", "--backend", wikiTestBackend, "operating  system")
		if code != 0 {
			t.Fatalf("wiki: exit %d: %s", code, stderr)
		}
		if err := json.Unmarshal([]byte(out), &pages[i]); err != nil {
			t.Fatalf("wiki --json output %q: %v", out, err)
		}
	}
	p := pages[0]
	if p.Title != "operating system" || p.Prompt != assets.EncyclopediaPrompt("operating system") || p.Mode != "diffusion" ||
		p.Seed != 7 || p.Tokens == 0 || p.ForwardPasses == 0 || p.Backend != wikiTestBackend || p.StopReason == "" {
		t.Errorf("page %+v", p)
	}
	if !reflect.DeepEqual(pages[0], withTiming(pages[1], pages[0])) {
		t.Errorf("same seed, different pages:\n%+v\n%+v", pages[0], pages[1])
	}
	// The title is held as the heading (random weights would never write it).
	if p.Opening != "<h1>operating system</h1>\n" || !strings.HasPrefix(p.HTML, p.Opening) {
		t.Errorf("opening %q, page %q: want the page to start with the held heading", p.Opening, p.HTML)
	}
	out, stderr, code := wikiRun("wiki", "--model", dir, "--seed", "7", "--mode", "ar", "--backend", wikiTestBackend, "Unix")
	if code != 0 || !strings.Contains(stderr, "tokens in") || !strings.HasPrefix(out, "<h1>Unix</h1>") {
		t.Fatalf("wiki --mode ar: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	var free wikiPage
	out, stderr, code = wikiRun("wiki", "--model", dir, "--seed", "7", "--json", "--free-heading", "--backend", wikiTestBackend, "operating system")
	if code != 0 {
		t.Fatalf("wiki --free-heading: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &free); err != nil || free.Opening != "" || strings.HasPrefix(free.HTML, p.Opening) {
		t.Errorf("--free-heading: err %v, opening %q, page %q", err, free.Opening, free.HTML)
	}
	// The user's own page prompt, as the app's Settings keep it.
	var own wikiPage
	out, stderr, code = wikiRun("wiki", "--model", dir, "--json", "--backend", wikiTestBackend, "--prompt", "Write a Star Wars fan wiki page for: {{title}}", "Death Star")
	if code != 0 {
		t.Fatalf("wiki --prompt: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &own); err != nil || own.Prompt != "Write a Star Wars fan wiki page for: Death Star" {
		t.Errorf("--prompt: err %v, prompt %q", err, own.Prompt)
	}
}

// TestWikiMaxNewTokens: wiki's length flag has generate's name, and the old
// --max-tokens still means the same.
func TestWikiMaxNewTokens(t *testing.T) {
	dir := writeWikiModel(t)
	var pages [2]wikiPage
	for i, flag := range []string{"--max-new-tokens", "--max-tokens"} {
		out, stderr, code := wikiRun("wiki", "--model", dir, flag, "6", "--json", "--backend", wikiTestBackend, "Unix")
		if code != 0 {
			t.Fatalf("wiki %s 6: exit %d: %s", flag, code, stderr)
		}
		if err := json.Unmarshal([]byte(out), &pages[i]); err != nil {
			t.Fatalf("wiki %s --json output %q: %v", flag, out, err)
		}
		if pages[i].Tokens == 0 || pages[i].Tokens > 6 {
			t.Errorf("wiki %s 6 wrote %d tokens", flag, pages[i].Tokens)
		}
	}
	if !reflect.DeepEqual(pages[0], withTiming(pages[1], pages[0])) {
		t.Errorf("--max-new-tokens and --max-tokens differ:\n%+v\n%+v", pages[0], pages[1])
	}
}

// withTiming returns p with the wall-clock fields of ref (they differ run to run).
func withTiming(p, ref wikiPage) wikiPage {
	p.ElapsedMS, p.TokensPerS = ref.ElapsedMS, ref.TokensPerS
	return p
}

func TestPageLinks(t *testing.T) {
	html := `<h1>Unix</h1><p>A <a href="/wiki/time-sharing">t</a> <a href="http://x/wiki/y">x</a> <a class="c" href="/wiki/C%2B%2B">C++</a> <a href="/ui/app-vim">vim</a></p>`
	if got, want := pageLinks(html), []string{"time-sharing", "C++"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pageLinks = %q, want %q", got, want)
	}
}

// TestWikiOpensWithTheEntrysLead: `train leads` writes a corpus's first
// sentences into a model folder; wiki then holds a known title's after its
// heading (--no-lead: the heading alone), and a damaged leads file is an error
// naming it, not a page without them.
func TestWikiOpensWithTheEntrysLead(t *testing.T) {
	dir := writeWikiModel(t)
	corpus := t.TempDir()
	recs := `{"kind":"page","title":"Unix","prompt":"p","answer":"<h1>Unix</h1>\n<p>An OS. Yes.</p>"}` + "\n" +
		`{"kind":"chat","title":"Unix","prompt":"What is Unix?","answer":"An OS."}` + "\n"
	if err := os.WriteFile(filepath.Join(corpus, "train.jsonl"), []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := wikiRun("train", "leads", "--corpus", corpus, "--model", dir); code != 0 || !strings.Contains(out, "1 of 1 titles") {
		t.Fatalf("train leads: exit %d, %q %q", code, out, stderr)
	}
	for _, c := range []struct {
		flags []string
		title string
		want  string
	}{
		{nil, "Unix", "<h1>Unix</h1>\n<p>An OS."},
		{nil, "the unix", "<h1>Unix</h1>\n<p>An OS."}, // the entry a typed topic names (develop.PageTitle)
		{[]string{"--no-lead"}, "Unix", "<h1>Unix</h1>\n"},
		{nil, "Emacs", "<h1>Emacs</h1>\n"},
	} {
		args := append(append([]string{"wiki", "--model", dir, "--json", "--backend", wikiTestBackend}, c.flags...), c.title)
		out, stderr, code := wikiRun(args...)
		var p wikiPage
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Opening != c.want {
			t.Errorf("wiki %v %s: exit %d, opening %q (want %q), stderr %q", c.flags, c.title, code, p.Opening, c.want, stderr)
		}
	}
	// A max new tokens too small for the lead holds the heading alone (the page
	// failed: "the opening is 137 tokens; it must fit in max new tokens (32)").
	tok, err := tokenizer.LoadFS(os.DirFS(dir), "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	heading := len(tok.Encode(assets.EncyclopediaOpening("Unix")))
	if both := len(tok.Encode(assets.EncyclopediaOpening("Unix") + "<p>An OS.")); both <= heading {
		t.Fatalf("the lead adds no tokens (%d, %d)", heading, both)
	}
	out, stderr, code := wikiRun("wiki", "--model", dir, "--json", "--backend", wikiTestBackend, "--max-new-tokens", strconv.Itoa(heading), "Unix")
	var p wikiPage
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Opening != "<h1>Unix</h1>\n" || strings.Contains(stderr, develop.LeadNote) {
		t.Errorf("wiki --max-new-tokens %d Unix: exit %d, opening %q, stderr %q; want the heading alone, said as such", heading, code, p.Opening, stderr)
	}
	for title, said := range map[string]bool{"Unix": true, "Emacs": false} { // said on stderr, as the app's status line says it
		_, stderr, code := wikiRun("wiki", "--model", dir, "--backend", wikiTestBackend, title)
		if code != 0 || strings.Contains(stderr, develop.LeadNote) != said {
			t.Errorf("wiki %s: exit %d, stderr %q; want the text said to be the entry's: %v", title, code, stderr, said)
		}
	}
	// The model's own page says so, asked for (--no-lead) or not; one a typo
	// away from an entry names it.
	for _, c := range [][]string{{"--no-lead", "Unix"}, {"Unixx"}} {
		_, stderr, code := wikiRun(append([]string{"wiki", "--model", dir, "--backend", wikiTestBackend}, c...)...)
		if code != 0 || !strings.Contains(stderr, develop.OwnNote) || strings.Contains(stderr, "similar title: Unix") != (c[0] == "Unixx") {
			t.Errorf("wiki %v: exit %d, stderr %q; want the model's own writing said, and Unix offered for Unixx", c, code, stderr)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, assets.LeadsFile), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := wikiRun("wiki", "--model", dir, "--backend", wikiTestBackend, "Unix"); code == 0 || !strings.Contains(stderr, assets.LeadsFile) {
		t.Errorf("a damaged leads file: exit %d, %q", code, stderr)
	}
}

// TestWikiModelsMode: without --mode, wiki writes the page in the mode the
// Encyclopedia's automatic mode picks for the model: the built-in Mini's printer
// (its card's), a model without a choice's polaroid (TestWikiGenerates).
func TestWikiModelsMode(t *testing.T) {
	if _, err := assets.Mini(); err != nil {
		t.Skip("Darkroom Mini is not built in")
	}
	out, stderr, code := wikiRun("wiki", "--json", "--max-new-tokens", "16", "--backend", wikiTestBackend, "Unix")
	var p wikiPage
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Mode != "ar" {
		t.Fatalf("wiki on the built-in Mini: exit %d, mode %q, stderr %q; want the printer", code, p.Mode, stderr)
	}
	if _, stderr, code := wikiRun("wiki", "--max-new-tokens", "16", "--backend", wikiTestBackend, "Unix"); code != 0 || !strings.Contains(stderr, "the printer") {
		t.Errorf("the summary line does not name the mode: exit %d, %q", code, stderr)
	}
}
