package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// writeCorpus writes a tiny corpus directory (train.jsonl, heldout.jsonl) in the
// format `darkroom train corpus` produces.
func writeCorpus(t *testing.T, train, held []Record) string {
	t.Helper()
	dir := t.TempDir()
	for name, recs := range map[string][]Record{"train.jsonl": train, "heldout.jsonl": held} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(f)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	return dir
}

func page(title string) Record {
	return Record{Kind: "page", Title: title, Prompt: assets.EncyclopediaPrompt(title),
		Answer: "<h1>" + title + "</h1>\n<p>" + title + " is an <a href=\"/wiki/operating_system\">operating system</a>.</p>"}
}

// TestEvaluate runs the whole evaluation on a tiny random model: the held-out loss
// next to the unigram baseline, both generation modes, and the page window and mode
// selection used to choose sampling settings away from the reported titles.
func TestEvaluate(t *testing.T) {
	model := enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 16, MaxSteps: 3})
	corpus := writeCorpus(t,
		[]Record{page("Unix"), page("Linux"), {Kind: "chat", Title: "Unix", Prompt: "What is Unix?", Answer: "An operating system."}},
		[]Record{page("Plan 9"), page("Multics"), page("BSD"), page("Minix")})
	rendered := 0
	render := func(page string) string { rendered++; return page }
	rep, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 2, Seed: 1, LossBatches: 1,
		Seen: 2, Render: render})
	if err != nil {
		t.Fatal(err)
	}
	// Seen titles: both training pages, in every mode, with the real pages'
	// measures known: "unix unix is an operating system" shares "is an", "an
	// operating" and "operating system" with the Linux page (its own entry
	// left out), 3 of 5 bigrams.
	if s := rep.Seen; s == nil || s.Titles != 2 || s.Diffusion.Pages != 2 || s.AR.Pages != 2 || s.Reference.Pages != 2 {
		t.Fatalf("seen titles scored: %+v", s)
	}
	if r := rep.Seen.Reference; math.Abs(r.English-0.6) > 1e-9 || !(r.RougeL > 0.5 && r.RougeL < 1) || r.EnglishShuffled >= r.English {
		t.Errorf("seen reference: English %v (want 0.6), shuffled %v, chance ROUGE-L %v", r.English, r.EnglishShuffled, r.RougeL)
	}
	if got := rep.Seen.Diffusion.Samples[0].Title; got != "Unix" {
		t.Errorf("first seen title %q, want Unix", got)
	}
	// Held-out real pages: "plan 9 plan 9 is an operating system" 3 of 7,
	// "multics multics is an operating system" 3 of 5.
	if r := rep.Reference; math.Abs(r.English-0.5) > 1e-9 || r.RougeL != 0 || r.Fragments != 0 || r.FragmentsUnrepaired != 0 {
		t.Errorf("held-out reference: English %v (want 0.5), ROUGE-L %v, fragments %v/%v", r.English, r.RougeL, r.Fragments, r.FragmentsUnrepaired)
	}
	// The Kneser-Ney measure of every row: the real pages' order is the
	// training pages' ("… is an operating system"), worth bits over salad.
	if r := rep.Reference; !(r.BitsPerWord > 0) || !(r.OrderGain > 0.5) || !(rep.Diffusion.BitsPerWord > 0) || !(rep.AR.BitsPerWord > 0) {
		t.Errorf("Kneser-Ney measure: reference %v bits/word, order gain %v; diffusion %v, ar %v bits/word",
			r.BitsPerWord, r.OrderGain, rep.Diffusion.BitsPerWord, rep.AR.BitsPerWord)
	}
	if rendered == 0 || rep.Settings["seen"] != 2 || rep.Goals["diffusion_fragments_shown_0"] != (rep.Diffusion.Fragments == 0) {
		t.Errorf("renderer called %d times, settings %v, goals %v", rendered, rep.Settings, rep.Goals)
	}
	if rep.Loss.Tokens == 0 || !(rep.Loss.Unigram > 0) || !(rep.Loss.AR > 0) || !(rep.Loss.Diffusion > 0) || rep.Params == 0 {
		t.Errorf("held-out loss not measured: %+v, params %d", rep.Loss, rep.Params)
	}
	if rep.Loss.TitleTokens == 0 || !(rep.Loss.TitleAR > 0) || !(rep.Loss.TitleDiffusion > 0) {
		t.Errorf("the loss on the title's tokens was not measured: %+v", rep.Loss)
	}
	if rep.Diffusion.Pages != 2 || rep.AR.Pages != 2 || len(rep.Diffusion.Samples) != 2 {
		t.Fatalf("pages scored: diffusion %d, ar %d", rep.Diffusion.Pages, rep.AR.Pages)
	}
	if got := rep.Diffusion.Samples[0].Title; got != "Plan 9" {
		t.Errorf("first scored page %q, want Plan 9", got)
	}
	// Pages are generated as the app asks for them: the title held as the heading.
	for _, s := range append(rep.Diffusion.Samples, rep.AR.Samples...) {
		if !strings.HasPrefix(s.Text, assets.EncyclopediaOpening(s.Title)) {
			t.Errorf("page %q does not start with the held heading: %q", s.Title, s.Text)
		}
	}
	// The real pages of the same titles: <h1>, one 6-word paragraph, one link.
	if r := rep.Reference; r.Pages != 2 || r.TitleH1 != 1 || r.LongParagraph != 0 || r.LinksPerPage != 1 ||
		!(r.KnownWords > 0.5 && r.KnownWords < 1) { // the held-out titles are new words
		t.Errorf("reference pages scored %+v", r)
	}
	if rep.Diffusion.TitleH1 != 1 || rep.AR.TitleH1 != 1 || rep.Settings["heading"] != "held (as the app sends it)" {
		t.Errorf("held heading: title h1 %v / %v, settings %v", rep.Diffusion.TitleH1, rep.AR.TitleH1, rep.Settings)
	}
	if !(rep.CanvasMedianMS > 0) {
		t.Errorf("canvas speed not measured")
	}
	if _, ok := rep.Goals["diffusion_page_format_ge_0.9"]; !ok {
		t.Errorf("goals missing: %v", rep.Goals)
	}

	// A validation window past the reported pages, diffusion only, no loss, one
	// page kept.
	rep, err = Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 2, First: 2,
		Modes: []engine.Mode{engine.Diffusion}, NoLoss: true, Seed: 1, Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loss.Tokens != 0 || rep.AR.Pages != 0 || rep.Diffusion.Pages != 2 {
		t.Errorf("window run: loss tokens %d, ar pages %d, diffusion pages %d", rep.Loss.Tokens, rep.AR.Pages, rep.Diffusion.Pages)
	}
	if len(rep.Diffusion.Samples) != 1 {
		t.Errorf("window run kept %d pages, want 1", len(rep.Diffusion.Samples))
	} else if got := rep.Diffusion.Samples[0].Title; got != "BSD" {
		t.Errorf("first page of the window %q, want BSD", got)
	}
	if rep.DiffusionUnguided != nil {
		t.Errorf("unguided diffusion scored without asking")
	}
	// A model with AR guidance on: diffusion is scored with it and, asked, without.
	guided := enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 16, MaxSteps: 3, Guidance: 2, GuidanceRounds: 4})
	rep, err = Evaluate(context.Background(), EvalOptions{ModelDir: guided, CorpusDir: corpus, Pages: 2,
		Modes: []engine.Mode{engine.Diffusion}, Unguided: true, NoLoss: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if u := rep.DiffusionUnguided; u == nil || u.Pages != 2 || rep.Diffusion.Pages != 2 {
		t.Errorf("guided model: diffusion %d pages, unguided %+v", rep.Diffusion.Pages, u)
	}
	// Without guidance in the model there is nothing to turn off.
	rep, err = Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 1,
		Modes: []engine.Mode{engine.Diffusion}, Unguided: true, NoLoss: true, Seed: 1})
	if err != nil || rep.DiffusionUnguided != nil {
		t.Errorf("unguided row for a model without guidance: %v, %+v", err, rep.DiffusionUnguided)
	}
	// The model alone (a random model never writes the title).
	rep, err = Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 2,
		Modes: []engine.Mode{engine.Diffusion}, NoLoss: true, Seed: 1, FreeHeading: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diffusion.TitleH1 != 0 || rep.Settings["heading"] != "written by the model" ||
		strings.HasPrefix(rep.Diffusion.Samples[0].Text, "<h1>") {
		t.Errorf("free heading: title h1 %v, settings %v, page %q", rep.Diffusion.TitleH1, rep.Settings, rep.Diffusion.Samples[0].Text)
	}
	if _, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, First: 9, NoLoss: true}); err == nil {
		t.Errorf("a window past the held-out pages was accepted")
	}
}

// TestEvaluateChats: held-out chat questions are answered in both modes and
// scored by the word measures beside the corpus's own answers, spread over the
// questions; pages alone do not ask for them.
func TestEvaluateChats(t *testing.T) {
	model := enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 16, MaxSteps: 3})
	chat := func(q, a string) Record {
		return Record{Kind: "chat", Title: q, System: "You are a small encyclopedia.", Prompt: "What is " + q + "?", Answer: a}
	}
	corpus := writeCorpus(t, []Record{page("Unix"), page("Linux")},
		[]Record{page("Plan 9"), chat("Plan 9", "Plan 9 is an operating system."), chat("Multics", "**Multics**: a system."),
			chat("BSD", "A kernel."), chat("Minix", "Minix is an operating system.")})
	rep, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 1, Seed: 1,
		Modes: []engine.Mode{engine.Diffusion}, NoLoss: true, Chats: 2, Samples: 5})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Chats
	if c == nil || c.Questions != 2 || c.Diffusion.Pages != 2 || c.AR.Pages != 2 || c.Reference.Pages != 2 {
		t.Fatalf("chats scored: %+v", c)
	}
	// spread: the middle of each half, Multics and Minix.
	if got := []string{c.AR.Samples[0].Title, c.AR.Samples[1].Title}; got[0] != "What is Multics?" || got[1] != "What is Minix?" {
		t.Errorf("questions %q, want Multics and Minix", got)
	}
	// "multics a system": no bigram of the training pages; "minix is an
	// operating system": 3 of 4. Multics's answer alone has its heading.
	if r := c.Reference; math.Abs(r.English-0.5) > 1e-9 || !(r.OrderGain > 0) || !(r.KnownWords > 0) || r.PageFormat != 0 {
		t.Errorf("reference answers: English %v (want 0.5), order gain %v, known %v, format %v", r.English, r.OrderGain, r.KnownWords, r.PageFormat)
	}
	if c.Reference.Named != 0.5 {
		t.Errorf("reference answers whose heading names the topic: %v, want 0.5", c.Reference.Named)
	}
	if !(c.Diffusion.BitsPerWord > 0) || !(c.AR.MedianMS > 0) || c.AR.MeanTokens == 0 {
		t.Errorf("answers not measured: diffusion %+v, ar %+v", c.Diffusion, c.AR)
	}
	if rep, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 1, Seed: 1,
		Modes: []engine.Mode{engine.Diffusion}, NoLoss: true}); err != nil || rep.Chats != nil {
		t.Errorf("chats scored without asking: %v, %+v", err, rep.Chats)
	}
}

// TestScorerMeasures: the page measures on hand-made pages with known answers.
func TestScorerMeasures(t *testing.T) {
	a := Record{Kind: "page", Title: "A", Answer: "<h1>A</h1><p>the cat sat on the mat</p>"}
	b := Record{Kind: "page", Title: "B", Answer: "<h1>B</h1><p>the dog sat on the rug</p>"}
	ref := newReference([]Record{a, b}, []Record{b})
	// The renderer takes out the one fragment the page has.
	render := func(p string) string { return strings.Replace(p, `languageset"&gt;`, "", 1) }
	sc := newScorer(WordSetOf([]string{a.Answer, b.Answer}), ref, render)
	sc.add(`<h1>B</h1><p>the cat sat on the rug languageset"&gt;</p>`, "B", b.Answer)
	mr := sc.report()
	if mr.FragmentsUnrepaired != 1 || mr.Fragments != 0 {
		t.Errorf("fragments %v shown, %v as written; want 0 and 1", mr.Fragments, mr.FragmentsUnrepaired)
	}
	// "b the cat sat on the rug": b-the and the-rug are only in B's own entry,
	// the-cat, cat-sat, sat-on, on-the are in A's: 4 of 6.
	if math.Abs(mr.English-4.0/6) > 1e-12 {
		t.Errorf("English %v, want 4/6", mr.English)
	}
	// Body "the cat sat on the rug" against "the dog sat on the rug": LCS 5 of 6.
	if math.Abs(mr.RougeL-5.0/6) > 1e-12 {
		t.Errorf("ROUGE-L %v, want 5/6", mr.RougeL)
	}
	// The Kneser-Ney measure scores the page by the model without B's entry.
	shown := ShownWords(`<h1>B</h1><p>the cat sat on the rug</p>`, false)
	if b, n := ref.kn.Without(ref.entry["B"]).Bits(shown); math.Abs(mr.BitsPerWord-b/float64(n)) > 1e-12 {
		t.Errorf("bits/word %v, want %v: the model without B's entry", mr.BitsPerWord, b/float64(n))
	}
	// The real pages: B without itself (sat-on, on-the: 2 of 6); shuffled
	// words score less; the chance ROUGE-L of A against B and B against A.
	real := ref.real([]Record{a, b}, []string{a.Answer, b.Answer}, sc.known, render)
	if math.Abs(real.English-8.0/12) > 1e-12 || real.EnglishShuffled >= real.English || math.Abs(real.RougeL-4.0/6) > 1e-12 {
		t.Errorf("reference: English %v (want 8/12), shuffled %v, chance ROUGE-L %v (want 4/6)", real.English, real.EnglishShuffled, real.RougeL)
	}
}

// TestTokenizeMarksTitleCopies: Example.Copied covers exactly the answer tokens
// that repeat the title — the page's <h1> text, a chat answer's bold term — and
// nothing when the answer never names the title.
func TestTokenizeMarksTitleCopies(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("..", "..", "assets", "mini"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Tokenize(tok, []Record{
		page("Inprise Corporation"),
		{Kind: "chat", Title: "aggregate type", Prompt: "Explain aggregate type.", Answer: "**aggregate type** (programming): A data type."},
		{Kind: "chat", Title: "Unix", Prompt: "What is Unix?", Answer: "An operating system."},
	})
	if err != nil {
		t.Fatal(err)
	}
	copied := func(e Example) []string {
		var runs []string
		for i, j := range e.Copied {
			if i == 0 || e.Copied[i-1] != j-1 {
				runs = append(runs, "")
			}
			runs[len(runs)-1] += tok.Decode([]int{e.Answer[j]})
		}
		for i := range runs {
			runs[i] = strings.TrimSpace(runs[i])
		}
		return runs
	}
	// The page names its title twice: in <h1> and at the start of the paragraph.
	if got := copied(ex[0]); !slices.Equal(got, []string{"Inprise Corporation", "Inprise Corporation"}) {
		t.Errorf("page copies %q", got)
	}
	if ex[0].Copied[0] != len(tok.Encode("<h1>")) {
		t.Errorf("page: first copied token at %d, want right after <h1>", ex[0].Copied[0])
	}
	if got := copied(ex[1]); !slices.Equal(got, []string{"aggregate type"}) {
		t.Errorf("chat copies %q", got)
	}
	if len(ex[2].Copied) != 0 {
		t.Errorf("an answer without the title has copies %v", ex[2].Copied)
	}
}

// TestEvaluateLeads: with the model folder's leads, seen titles' pages open with
// their entry as the app's do (counted in leads_held), held-out
// ones with the heading alone; leads that hold a held-out title are refused, not
// scored as if the model had known it.
func TestEvaluateLeads(t *testing.T) {
	model := enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 24, MaxSteps: 2})
	short := func(title string) Record { // a lead that fits the tiny model's 16-token canvas
		r := page(title)
		r.Answer = "<h1>" + title + "</h1>\n<p>An OS. Yes.</p>"
		return r
	}
	trainRecs := []Record{short("Unix"), short("Linux")}
	corpus := writeCorpus(t, trainRecs, []Record{short("Plan 9"), short("Multics")})
	leads, titles, cut := Leads(trainRecs, nil)
	if leads.Len() != 2 || titles != 2 || cut != 0 {
		t.Fatalf("%d leads of %d titles (%d cut), want 2 of 2, none cut", leads.Len(), titles, cut)
	}
	rep, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 2, Seen: 2,
		Modes: []engine.Mode{engine.Diffusion}, NoLoss: true, Seed: 1, Leads: leads})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seen.Diffusion.Leads != 2 || rep.Diffusion.Leads != 0 || !strings.Contains(rep.Settings["heading"].(string), "with the entry") {
		t.Errorf("leads held: seen %d, held-out %d (settings %v)", rep.Seen.Diffusion.Leads, rep.Diffusion.Leads, rep.Settings["heading"])
	}
	for _, s := range rep.Seen.Diffusion.Samples {
		if lead, _ := leads.Lead(s.Title); !strings.HasPrefix(s.Text, assets.EncyclopediaOpening(s.Title)+lead) {
			t.Errorf("seen page %q does not open with its lead %q: %q", s.Title, lead, s.Text)
		}
	}
	leaky, _, _ := Leads(append(trainRecs, short("Multics")), nil)
	if _, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 2,
		Modes: []engine.Mode{engine.Diffusion}, NoLoss: true, Leads: leaky}); err == nil || !strings.Contains(err.Error(), "held-out") {
		t.Errorf("leads holding a held-out title: %v", err)
	}
}

// TestTokenizeHeldOpening: a record's held opening is tokenized apart from the
// rest, as the engine tokenizes an opening, and counted; a held opening on a
// record that trains the printer, or one that does not begin the answer, is an
// error naming the record.
func TestTokenizeHeldOpening(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("..", "..", "assets", "mini"))
	if err != nil {
		t.Fatal(err)
	}
	held := "<h1>Unix</h1>\n<p>An operating system."
	r := Record{Kind: "page", Title: "Unix", Prompt: "p", Answer: held + " It runs.</p>", Loss: LossDiffusion, Held: held}
	ex, err := Tokenize(tok, []Record{r})
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(tok.Encode(held), tok.Encode(" It runs.</p>")...), tok.Specials().TurnEnd)
	if e := ex[0]; e.Held != len(tok.Encode(held)) || !slices.Equal(e.Answer, want) {
		t.Errorf("held %d of %v, want %d of %v", e.Held, e.Answer, len(tok.Encode(held)), want)
	}
	both := r
	both.Loss = ""
	other := r
	other.Held = "<h1>Linux</h1>\n"
	for _, bad := range []Record{both, other} {
		if _, err := Tokenize(tok, []Record{bad}); err == nil || !strings.Contains(err.Error(), `"Unix"`) {
			t.Errorf("held %q on a %q record: %v", bad.Held, bad.Loss, err)
		}
	}
}
