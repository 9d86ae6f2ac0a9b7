package train

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// TestDistill: the chosen pages' answers become what the engine's printer writes
// for the same prompt with the title held as its heading — the same text a
// direct AR generation with the same seed gives —, the other records stay as
// they were, the choice follows the seed and the source, and a cancelled run
// returns no corpus.
func TestDistill(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	recs := []Record{
		{Kind: "chat", Source: "foldoc", Title: "Unix", System: "sys", Prompt: "What is Unix?", Answer: "An OS."},
		{Kind: "page", Source: "foldoc", Title: "Unix", Prompt: assets.EncyclopediaPrompt("Unix"), Answer: "<h1>Unix</h1>\n<p>An OS.</p>"},
		{Kind: "page", Source: "wordnet", Title: "cat", Prompt: assets.EncyclopediaPrompt("cat"), Answer: "<h1>cat</h1>\n<p>A pet.</p>"},
		{Kind: "page", Source: "foldoc", Title: "Lisp", Prompt: assets.EncyclopediaPrompt("Lisp"), Answer: "<h1>Lisp</h1>\n<p>A language.</p>"},
		{Kind: "page", Source: "foldoc", Title: "C", Prompt: assets.EncyclopediaPrompt("C"), Answer: "<h1>C</h1>\n<p>A language.</p>"},
	}
	orig := slices.Clone(recs)
	var progress []int
	out, chosen, err := Distill(context.Background(), e, recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5,
		Progress: func(done, total int) { progress = append(progress, done, total) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs, orig) {
		t.Error("Distill changed its input")
	}
	if len(chosen) != 2 || !slices.Equal(progress, []int{1, 2, 2, 2}) {
		t.Fatalf("chose %v, progress %v; want 2 foldoc pages", chosen, progress)
	}
	for n, i := range chosen {
		r := out[i]
		if recs[i].Kind != "page" || recs[i].Source != "foldoc" {
			t.Errorf("rewrote record %d, a %s of %s", i, recs[i].Kind, recs[i].Source)
		}
		want, err := e.Generate(context.Background(), engine.Request{Prompt: recs[i].Prompt, Mode: engine.AR, Seed: 5 + uint64(n),
			Opening: assets.EncyclopediaOpening(recs[i].Title)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Answer != want.Text || !strings.HasPrefix(r.Answer, "<h1>"+r.Title+"</h1>\n") || r.Answer == recs[i].Answer {
			t.Errorf("page %q: %q, want the printer's %q", r.Title, r.Answer, want.Text)
		}
	}
	for i := range recs {
		if !slices.Contains(chosen, i) && out[i] != recs[i] {
			t.Errorf("record %d changed: %+v", i, out[i])
		}
	}
	again, chosen2, err := Distill(context.Background(), e, recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5})
	if err != nil || !slices.Equal(chosen2, chosen) || !slices.Equal(again, out) {
		t.Errorf("a second run with the same seed differs: %v %v", chosen2, err)
	}
	// Beside: the originals stay, for the printer only; the same rewritten pages
	// follow them, for the polaroid only.
	beside, appended, err := Distill(context.Background(), e, recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5, Beside: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(beside) != len(recs)+2 || !slices.Equal(appended, []int{len(recs), len(recs) + 1}) {
		t.Fatalf("beside: %d records, rewritten at %v; want %d, at the end", len(beside), appended, len(recs)+2)
	}
	for n, i := range chosen {
		want := recs[i]
		want.Loss = LossAR
		if beside[i] != want {
			t.Errorf("beside: original %d is %+v, want it kept for the printer", i, beside[i])
		}
		want = out[i]
		want.Loss = LossDiffusion
		if got := beside[appended[n]]; got != want {
			t.Errorf("beside: rewritten page %d is %+v, want %+v", n, got, want)
		}
	}
	for i := range recs {
		if !slices.Contains(chosen, i) && beside[i] != recs[i] {
			t.Errorf("beside: record %d changed: %+v", i, beside[i])
		}
	}
	// The same pages again from what was written (Rewritten), and a Keep that
	// refuses one: it is not used, its original stays as it was (beside: for the
	// printer only, as every chosen page's).
	again2, _, err := Distill(context.Background(), NewRewritten(out), recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5})
	if err != nil || !slices.Equal(again2, out) {
		t.Errorf("from the pages written before: %v (same records: %v)", err, slices.Equal(again2, out))
	}
	refused := recs[chosen[0]].Title
	keep := func(r Record, page string) bool { return r.Title != refused }
	kept, keptAt, err := Distill(context.Background(), e, recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5, Keep: keep})
	if err != nil || !slices.Equal(keptAt, chosen[1:]) || kept[chosen[0]] != recs[chosen[0]] || kept[chosen[1]] != out[chosen[1]] {
		t.Errorf("Keep refusing %q: used %v (want %v), %v", refused, keptAt, chosen[1:], err)
	}
	keptB, keptBAt, err := Distill(context.Background(), e, recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5, Keep: keep, Beside: true})
	if err != nil || len(keptB) != len(recs)+1 || !slices.Equal(keptBAt, []int{len(recs)}) ||
		keptB[chosen[0]].Loss != LossAR || keptB[len(recs)].Title == refused {
		t.Errorf("Keep refusing %q beside: %d records, used %v, %v", refused, len(keptB), keptBAt, err)
	}
	// Laid out again from that corpus (Rewritten), the refused page stays refused
	// under any Keep: the original it holds for the printer is not a rewritten page.
	all := func(Record, string) bool { return true }
	keptB2, _, err := Distill(context.Background(), NewRewritten(keptB), recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5, Keep: all, Beside: true})
	if err != nil || !slices.Equal(keptB2, keptB) {
		t.Errorf("a beside corpus laid out again: %v, same records: %v", err, slices.Equal(keptB2, keptB))
	}
	if _, _, err := Distill(context.Background(), NewRewritten(keptB), recs, DistillOptions{Pages: 2, Source: "foldoc", Seed: 5}); !errors.Is(err, ErrRefusedBefore) {
		t.Errorf("a page refused before, without a Keep: %v", err)
	}
	if _, _, err := Distill(context.Background(), NewRewritten(nil), recs, DistillOptions{Pages: 1}); err == nil || !strings.Contains(err.Error(), "same --pages and --seed") {
		t.Errorf("a page not written before: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, _, err := Distill(ctx, e, recs, DistillOptions{Pages: 1}); got != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %d records, %v", len(got), err)
	}
	if _, _, err := Distill(context.Background(), e, recs, DistillOptions{Pages: 1, Source: "jargon"}); err == nil || !strings.Contains(err.Error(), "no page records") {
		t.Errorf("no pages of the source: %v", err)
	}
}

// TestGoodPage: the page format — the title's <h1> and a paragraph of ≥ 20 words.
func TestGoodPage(t *testing.T) {
	long := "<p>" + strings.Repeat("word ", 20) + "</p>"
	for _, c := range []struct {
		page string
		want bool
	}{
		{"<h1>Unix</h1>\n" + long, true},
		{"<h1>Unix</h1>\n<p>An OS.</p>", false},
		{"<h1>Linux</h1>\n" + long, false},
		{long, false},
	} {
		if got := GoodPage(Record{Title: "Unix"}, c.page); got != c.want {
			t.Errorf("GoodPage(%q) = %v", c.page, got)
		}
	}
}

// openingRecorder is a Generator that answers every request with its opening
// and a fixed continuation, and records the openings it was given.
type openingRecorder struct{ openings []string }

func (g *openingRecorder) Generate(_ context.Context, req engine.Request) (*engine.Result, error) {
	g.openings = append(g.openings, req.Opening)
	return &engine.Result{Text: req.Opening + " More words.</p>"}, nil
}

// TestDistillLead: with Lead the teacher is given each real page's lead as its
// opening (the heading alone where the page has no lead), and the page it
// writes starts with the entry's own first sentence.
func TestDistillLead(t *testing.T) {
	recs := []Record{
		{Kind: "page", Title: "Unix", Prompt: assets.EncyclopediaPrompt("Unix"), Answer: "<h1>Unix</h1>\n<p>An operating system for computers. It runs.</p>"},
		{Kind: "page", Title: "C", Prompt: assets.EncyclopediaPrompt("C"), Answer: "<h1>C</h1>\n<p>no end</p>"},
	}
	g := &openingRecorder{}
	out, chosen, err := Distill(context.Background(), g, recs, DistillOptions{Pages: 2, Lead: true})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(g.openings)
	if want := []string{"<h1>C</h1>\n", "<h1>Unix</h1>\n<p>An operating system for computers."}; !slices.Equal(g.openings, want) || len(chosen) != 2 {
		t.Fatalf("openings %q (chose %v), want %q", g.openings, chosen, want)
	}
	if got := out[0].Answer; got != "<h1>Unix</h1>\n<p>An operating system for computers. More words.</p>" || out[0].Held != "" {
		t.Errorf("Unix rewritten as %q (held %q)", got, out[0].Held)
	}
	// Beside, the rewritten page holds its opening, as the app will.
	beside, at, err := Distill(context.Background(), g, recs, DistillOptions{Pages: 2, Lead: true, Beside: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range at {
		if r := beside[i]; r.Held != assets.PageLead(recs[0].Answer, "Unix") && r.Title == "Unix" || r.Title == "C" && r.Held != "<h1>C</h1>\n" || !strings.HasPrefix(r.Answer, r.Held) {
			t.Errorf("beside: %q holds %q", r.Answer, r.Held)
		}
	}
}

// TestLeadsFitTheCanvas: a corpus's entries are its pages as written — the
// printer's originals, never the polaroid's rewritten pages — whole where they
// fit the model's answer (EntryFits: max new tokens less LeadRoom, in the
// model's tokens), else cut at the last sentence's end that fits, and counted.
func TestLeadsFitTheCanvas(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("..", "..", "assets", "mini"))
	if err != nil {
		t.Fatal(err)
	}
	short := "<h1>Unix</h1>\n<p>An operating system. It runs.</p>"
	long := "<h1>Lisp</h1>\n<p>" + strings.Repeat("A list processing language from MIT. ", 20) + "</p>"
	recs := []Record{
		{Kind: "page", Title: "Unix", Answer: short},
		{Kind: "page", Title: "Lisp", Answer: long},
		{Kind: "page", Title: "Unix", Answer: "<h1>Unix</h1>\n<p>A rewritten page.</p>", Loss: LossDiffusion},
		{Kind: "chat", Title: "C", Answer: "**C**: A language."},
	}
	const maxNew = 64
	fits := EntryFits(tok, maxNew)
	leads, pages, cut := Leads(recs, fits)
	if leads.Len() != 2 || pages != 2 || cut != 1 {
		t.Fatalf("%d entries of %d titles, %d cut; want 2 of 2, 1 cut", leads.Len(), pages, cut)
	}
	if lead, _ := leads.Lead("Unix"); "<h1>Unix</h1>\n"+lead != short {
		t.Errorf("Unix: %q, want its page whole", lead)
	}
	lead, _ := leads.Lead("Lisp")
	page := "<h1>Lisp</h1>\n" + lead
	if n := len(tok.Encode(page)); n > maxNew-LeadRoom || !strings.HasSuffix(page, "MIT.") || !strings.HasPrefix(long, page) ||
		fits(page+" A list processing language from MIT.") {
		t.Errorf("Lisp cut to %d tokens (at most %d): %q", n, maxNew-LeadRoom, page)
	}
}
