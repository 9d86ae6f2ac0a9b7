package train

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
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
	rep, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 2, Seed: 1, LossBatches: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loss.Tokens == 0 || !(rep.Loss.Unigram > 0) || !(rep.Loss.AR > 0) || !(rep.Loss.Diffusion > 0) || rep.Params == 0 {
		t.Errorf("held-out loss not measured: %+v, params %d", rep.Loss, rep.Params)
	}
	if rep.Diffusion.Pages != 2 || rep.AR.Pages != 2 || len(rep.Diffusion.Samples) != 2 {
		t.Fatalf("pages scored: diffusion %d, ar %d", rep.Diffusion.Pages, rep.AR.Pages)
	}
	if got := rep.Diffusion.Samples[0].Title; got != "Plan 9" {
		t.Errorf("first scored page %q, want Plan 9", got)
	}
	if !(rep.CanvasMedianMS > 0) {
		t.Errorf("canvas speed not measured")
	}
	if _, ok := rep.Goals["diffusion_page_format_ge_0.9"]; !ok {
		t.Errorf("goals missing: %v", rep.Goals)
	}

	// A validation window past the reported pages, diffusion only, no loss.
	rep, err = Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, Pages: 2, First: 2,
		Modes: []engine.Mode{engine.Diffusion}, NoLoss: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loss.Tokens != 0 || rep.AR.Pages != 0 || rep.Diffusion.Pages != 2 {
		t.Errorf("window run: loss tokens %d, ar pages %d, diffusion pages %d", rep.Loss.Tokens, rep.AR.Pages, rep.Diffusion.Pages)
	}
	if got := rep.Diffusion.Samples[0].Title; got != "BSD" {
		t.Errorf("first page of the window %q, want BSD", got)
	}
	if _, err := Evaluate(context.Background(), EvalOptions{ModelDir: model, CorpusDir: corpus, First: 9, NoLoss: true}); err == nil {
		t.Errorf("a window past the held-out pages was accepted")
	}
}
