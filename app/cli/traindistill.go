package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/engine/train/corpus"
)

// corpusFiles are the files of a corpus folder beside train.jsonl that a
// distilled corpus keeps as they are (the held-out set, the word lists, the
// tokenizer), so that `train run` and `train eval` take it as any corpus.
var corpusFiles = []string{"heldout.jsonl", "heldout_titles.txt", "titles.txt", "words.txt", "stats.json", "SOURCES.txt",
	"tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"}

func runTrainDistill(env *Env, args []string) error {
	fs := newFlagSet(env, "train distill", "--corpus DIR --out DIR --pages N [flags]")
	modelDir := fs.String("model", "assets/mini", "the model whose printer (AR) writes the pages")
	corpusDir := fs.String("corpus", "train-runs/corpus", "the corpus to distill (train.jsonl and the files beside it)")
	outDir := fs.String("out", "", "the distilled corpus's folder (required; must not exist yet)")
	pages := fs.Int("pages", 0, "page records to rewrite, chosen by a seeded shuffle (required)")
	source := fs.String("source", "", `only pages of this source ("foldoc", "jargon", "wordnet", …; default any)`)
	seed := fs.Uint64("seed", 1, "which pages, and the first page's sampling seed")
	only := fs.Bool("only-distilled", false, "train.jsonl holds only the rewritten pages (default: the whole corpus with them in place)")
	beside := fs.Bool("beside", false, "keep each rewritten page's original for the printer (AR loss only) and add the rewritten one for the polaroid (diffusion loss only)")
	keepGood := fs.Bool("keep-good", false, "use only the rewritten pages in the page format (the title's <h1> and a paragraph of ≥ 20 words)")
	lead := fs.Bool("lead", false, "hold each real page's heading, category and first sentence as the teacher's opening (default: the heading only)")
	reuse := fs.String("reuse", "", "take the pages from this earlier distilled corpus (same --pages and --seed) instead of writing them again")
	backendName := fs.String("backend", "", "backend for the engine (default: auto)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *only && *beside:
		return errors.New("train distill: --only-distilled and --beside are two different corpora: choose one")
	case *outDir == "":
		return errors.New("train distill: --out DIR is required")
	case *pages < 1:
		return errors.New("train distill: --pages N is required (at least 1)")
	}
	if _, err := os.Stat(*outDir); err == nil {
		return fmt.Errorf("train distill: %s exists: give a new folder", *outDir)
	}
	recs, err := train.ReadRecords(filepath.Join(*corpusDir, "train.jsonl"))
	if err != nil {
		return fmt.Errorf("train distill: %w", err)
	}
	ctx, stop := interruptContext()
	defer stop()
	var gen train.Generator
	if *reuse != "" {
		earlier, err := train.ReadRecords(filepath.Join(*reuse, "train.jsonl"))
		if err != nil {
			return fmt.Errorf("train distill: --reuse: %w", err)
		}
		gen = train.NewRewritten(earlier)
	} else {
		e, err := loadEngine(ctx, env, engine.Dir(*modelDir), engine.Options{Backend: *backendName})
		if err != nil {
			return fmt.Errorf("train distill: %w", err)
		}
		defer e.Close()
		gen = e
	}
	var keep func(train.Record, string) bool
	if *keepGood {
		keep = train.GoodPage
	}
	start, said, rewritten := time.Now(), time.Now(), 0
	out, chosen, err := train.Distill(ctx, gen, recs, train.DistillOptions{Pages: *pages, Source: *source, Seed: *seed, Beside: *beside, Keep: keep, Lead: *lead,
		Progress: func(done, total int) {
			rewritten = done
			if done == total || time.Since(said) >= 10*time.Second {
				said = time.Now()
				fmt.Fprintf(env.Stderr, "distill: %d/%d pages, %.0f s\n", done, total, time.Since(start).Seconds())
			}
		}})
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("train distill: interrupted (Ctrl-C); nothing was written — run the same command again")
		}
		return fmt.Errorf("train distill: %w", err)
	}
	if *only {
		kept := make([]train.Record, 0, len(chosen))
		for _, i := range chosen {
			kept = append(kept, out[i])
		}
		out = kept
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, r := range out {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("train distill: %w", err)
		}
	}
	// Into a temporary folder renamed at the end: a failed or interrupted copy
	// leaves no corpus that looks whole.
	tmp := *outDir + ".partial"
	os.RemoveAll(tmp)
	if err := writeDistilled(tmp, *corpusDir, b.Bytes()); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("train distill: %w", err)
	}
	if err := os.Rename(tmp, *outDir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("train distill: %w", err)
	}
	by := *modelDir + "'s printer"
	if *reuse != "" {
		by = "the pages of " + *reuse
	}
	kept := ""
	if keep != nil {
		kept = fmt.Sprintf(" (%d of %d pages in the page format)", len(chosen), rewritten)
	}
	fmt.Fprintf(env.Stdout, "distilled %d pages with %s into %s/train.jsonl (%d records)%s\n", len(chosen), by, *outDir, len(out), kept)
	return nil
}

// writeDistilled writes dir: train.jsonl and the corpus's other files, copied.
func writeDistilled(dir, corpusDir string, trainJSONL []byte) error {
	if err := os.MkdirAll(filepath.Join(dir, "tokenizer"), 0o755); err != nil {
		return err
	}
	for _, f := range corpusFiles {
		b, err := os.ReadFile(filepath.Join(corpusDir, f))
		if errors.Is(err, os.ErrNotExist) && f != "heldout.jsonl" && f != "tokenizer/tokenizer.json" {
			continue // optional
		}
		if err != nil {
			return fmt.Errorf("copy the corpus's %s: %w", f, err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(filepath.Join(dir, "train.jsonl"), trainJSONL, 0o644)
}

func runTrainLeads(env *Env, args []string) error {
	fs := newFlagSet(env, "train leads", "--corpus DIR --model DIR")
	corpusDir := fs.String("corpus", "train-runs/corpus", "the corpus whose pages to write as the model's entries (train.jsonl; held-out titles are never in it)")
	modelDir := fs.String("model", "", "the model folder to write leads.jsonl.gz into (required; its tokenizer and max_new_tokens say how much of a page fits)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *modelDir == "" {
		return errors.New("train leads: --model DIR is required")
	}
	if st, err := os.Stat(*modelDir); err != nil || !st.IsDir() {
		return fmt.Errorf("train leads: %s is not a model folder", *modelDir)
	}
	cfg, err := config.Load(*modelDir)
	if err != nil {
		return fmt.Errorf("train leads: the model in %s: %w", *modelDir, err)
	}
	tok, err := tokenizer.Load(*modelDir)
	if err != nil {
		return fmt.Errorf("train leads: the model in %s: %w", *modelDir, err)
	}
	recs, err := train.ReadRecords(filepath.Join(*corpusDir, "train.jsonl"))
	if err != nil {
		return fmt.Errorf("train leads: %w", err)
	}
	leads, pages, cut := train.Leads(recs, train.EntryFits(tok, cfg.Generation.MaxNewTokens))
	if leads.Len() == 0 {
		return fmt.Errorf("train leads: none of the %d page records of %s has text past its heading", pages, *corpusDir)
	}
	var b bytes.Buffer
	if err := leads.Write(&b); err != nil {
		return fmt.Errorf("train leads: %w", err)
	}
	out := filepath.Join(*modelDir, assets.LeadsFile)
	if err := atomicfile.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("train leads: %w", err)
	}
	fmt.Fprintf(env.Stdout, "wrote the entries of %d of %d titles' pages into %s (%.1f MB); %d cut at a sentence's end to fit %d tokens\n",
		leads.Len(), pages, out, float64(b.Len())/1e6, cut, cfg.Generation.MaxNewTokens-train.LeadRoom)
	return nil
}

func runTrainElsewhere(env *Env, args []string) error {
	fs := newFlagSet(env, "train elsewhere", "--corpus DIR [--n N] [--asked]")
	corpusDir := fs.String("corpus", "", "the corpus to add off-topic chats to (train.jsonl and heldout.jsonl; required)")
	n := fs.Int("n", 4000, "off-topic chats to add for training (and n/40, at least 10, held out)")
	asked := fs.Bool("asked", false, "add off-topic questions asked the way terms are (\"What is the best airplane to buy?\"), to a corpus that has the others; none held out")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *corpusDir == "" {
		return errors.New("train elsewhere: --corpus DIR is required")
	}
	if *n < 1 {
		return fmt.Errorf("train elsewhere: --n must be at least 1, got %d", *n)
	}
	if *asked {
		trained, err := corpus.AddElsewhereAsked(*corpusDir, *n)
		if err != nil {
			return fmt.Errorf("train elsewhere: %w", err)
		}
		fmt.Fprintf(env.Stdout, "added %d off-topic questions to %s's train.jsonl\n", trained, *corpusDir)
		return nil
	}
	trained, held, err := corpus.AddElsewhere(*corpusDir, *n)
	if err != nil {
		return fmt.Errorf("train elsewhere: %w", err)
	}
	fmt.Fprintf(env.Stdout, "added %d off-topic chats to %s's train.jsonl and %d to its heldout.jsonl\n", trained, *corpusDir, held)
	return nil
}
