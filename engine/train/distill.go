package train

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// Generator writes an answer: *engine.Engine, or a fake in tests.
type Generator interface {
	Generate(ctx context.Context, req engine.Request) (*engine.Result, error)
}

// DistillOptions choose the pages Distill rewrites.
type DistillOptions struct {
	Pages  int    // how many page records to rewrite (at most all of them); required
	Source string // only pages of this source ("" any)
	Seed   uint64 // which pages (a seeded shuffle) and each page's sampling seed (Seed + its index)
	// Beside keeps each rewritten page's original for the printer (Loss LossAR)
	// and appends the rewritten one for the polaroid (Loss LossDiffusion), instead
	// of replacing it: the decoder learns the teacher's pages, the printer keeps
	// learning the real ones rather than its own (which made it repeat itself).
	Beside bool
	// Keep, when set, decides which rewritten pages are used (GoodPage is the
	// usual test). A page it refuses is not used: its record stays as it was —
	// with Beside, for the printer only, as every chosen page's original.
	Keep func(r Record, page string) bool
	// Lead holds the start of each real page — its heading, category and first
	// sentence (assets.PageLead) — as the teacher's opening instead of the heading
	// alone: the teacher continues the entry's own words, so its pages start from
	// what the entry says and differ from each other where the heading-only
	// teacher opened every page with the same few frames. With Beside the opening
	// is the rewritten record's Held: the app holds the same sentence
	// (assets.Leads), so the polaroid learns to continue it, not to write it.
	Lead bool
	// Progress, if set, is called after each page with the pages done and the total.
	Progress func(done, total int)
}

// Distill is sequence-level knowledge distillation (Kim & Rush, 2016) from a
// model's printer to its polaroid: it returns recs with the answers of
// opts.Pages page records, chosen by a seeded shuffle, replaced by what gen
// writes for the same prompt in AR mode — greedy, with the model's repetition
// penalty, the page's <h1> title held as the app holds it — and the indices of
// the records it rewrote. Parallel decoders trained on an autoregressive
// teacher's outputs write far more coherent text than on the original data,
// whose many ways of saying a thing they average into word salad (Gu et al.
// 2018, Zhou et al. 2020, for non-autoregressive translation); on Darkroom Mini
// 2 it raised the decoder's held-out bigram share from 53% to 68% at a cost in
// repetition (assets/training/README.md, sessions 15 and 16; the shipped Mini 2
// is distilled so). recs is not changed.
// With opts.Beside the rewritten records are appended after recs (the indices
// returned are theirs) and the originals only train the printer. Pages
// opts.Keep refuses are not used and their indices not returned.
func Distill(ctx context.Context, gen Generator, recs []Record, opts DistillOptions) ([]Record, []int, error) {
	if opts.Pages < 1 {
		return nil, nil, errors.New("distill: the number of pages must be at least 1")
	}
	var pages []int
	for i, r := range recs {
		if r.Kind == "page" && (opts.Source == "" || r.Source == opts.Source) {
			pages = append(pages, i)
		}
	}
	if len(pages) == 0 {
		return nil, nil, fmt.Errorf("distill: no page records (source %q) in %d records", opts.Source, len(recs))
	}
	rand.New(rand.NewPCG(opts.Seed, 0x6b64)).Shuffle(len(pages), func(i, j int) { pages[i], pages[j] = pages[j], pages[i] })
	pages = pages[:min(opts.Pages, len(pages))]
	out := append([]Record(nil), recs...)
	var used []int
	for n, i := range pages {
		r := recs[i]
		opening := assets.EncyclopediaOpening(r.Title)
		if opts.Lead {
			opening = assets.PageLead(r.Answer, r.Title)
		}
		res, err := gen.Generate(ctx, engine.Request{Messages: r.Messages(), Mode: engine.AR, Seed: opts.Seed + uint64(n),
			Opening: opening})
		if err == nil {
			err = ctx.Err() // a cancelled generation returns its partial page: not a page to train on
		}
		refused := errors.Is(err, ErrRefusedBefore) && opts.Keep != nil
		if err != nil && !refused {
			return nil, nil, fmt.Errorf("distill page %d of %d (%q): %w", n+1, len(pages), r.Title, err)
		}
		if opts.Beside {
			out[i].Loss = LossAR
		}
		switch {
		case refused || opts.Keep != nil && !opts.Keep(r, res.Text):
		case opts.Beside:
			r.Answer, r.Loss = res.Text, LossDiffusion
			if opts.Lead {
				r.Held = opening // held at inference: the decoder learns to continue it, not to write it
			}
			out = append(out, r)
			used = append(used, len(out)-1)
		default:
			out[i].Answer = res.Text
			used = append(used, i)
		}
		if opts.Progress != nil {
			opts.Progress(n+1, len(pages))
		}
	}
	return out, used, nil
}

// GoodPage is the usual DistillOptions.Keep: a rewritten page in the page
// format, its <h1> the title and a paragraph of at least 20 words (CheckPage's
// Structured), as the polaroid should write it. Mini 2's printer writes 62% of
// its pages so (the real pages: 46%); the polaroid trained on all of them wrote
// 74% (assets/training/README.md, session 15). Its pages' word pairs hardly
// repeat within a page (distinct-2 ≥ 0.97 for 95% of them): its repetition is
// across pages, which no page's test can see.
func GoodPage(r Record, page string) bool { return CheckPage(page, r.Title).Structured }

// Leads are the entries (assets.Leads) of the corpus records' pages, one per
// title, the first page of a title that has one: whole where fits says the
// page fits, else cut at a sentence's end (assets.PageEntry; EntryFits is the
// canvas's test); the number of distinct titles with a page; and how many of
// the entries were cut. The pages as written, never rewritten ones (Loss
// LossDiffusion).
func Leads(recs []Record, fits func(page string) bool) (l *assets.Leads, pages, cut int) {
	l = &assets.Leads{}
	titles := map[string]bool{}
	for _, r := range recs {
		if r.Kind != "page" || r.Loss == LossDiffusion {
			continue
		}
		title := assets.CleanLine(r.Title)
		titles[title] = true
		if n := l.Len(); l.Add(title, r.Answer, fits) && l.Len() > n {
			if lead, _ := l.Lead(title); assets.EncyclopediaOpening(title)+lead != r.Answer {
				cut++
			}
		}
	}
	return l, len(titles), cut
}

// LeadRoom is how many of a canvas's tokens a held entry leaves the model: room
// to end the page.
const LeadRoom = 8

// EntryFits is whether a page, heading and all, fits a model's answer of
// maxNewTokens tokens (its generation config's max_new_tokens) with LeadRoom
// to spare, in tok's tokens: the engine holds a lead only where it fits
// (engine.Request.Lead), so the leads are cut to fit.
func EntryFits(tok *tokenizer.Tokenizer, maxNewTokens int) func(page string) bool {
	return func(page string) bool { return len(tok.Encode(page)) <= maxNewTokens-LeadRoom }
}

// Rewritten is a Generator that answers with pages written before: those of a
// distilled corpus's records (train distill's output), by their prompt. It lets
// a distillation be laid out again — Beside, another Keep, Lead's held openings —
// without writing its pages a second time. A prompt it does not hold is an
// error; one whose page was refused before (a Beside corpus keeps only its
// original, for the printer) is ErrRefusedBefore, which Distill takes as refused
// again when it has a Keep.
type Rewritten map[string]string

// ErrRefusedBefore: the earlier distillation refused this prompt's page.
var ErrRefusedBefore = errors.New("this page was refused by the earlier distillation: it holds only the original")

// NewRewritten indexes recs' rewritten page answers by their prompt: records
// that train the polaroid (Loss LossDiffusion, or both losses in a corpus
// distilled in place), never an original kept for the printer (LossAR), which
// a Beside corpus holds for every page; a prompt with only an original maps to
// "" (refused before).
func NewRewritten(recs []Record) Rewritten {
	w := Rewritten{}
	for _, r := range recs {
		if r.Kind != "page" {
			continue
		}
		k := rewrittenKey(r.Messages())
		if r.Loss != LossAR {
			w[k] = r.Answer
		} else if _, ok := w[k]; !ok {
			w[k] = ""
		}
	}
	return w
}

func rewrittenKey(msgs []engine.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role + "\x00" + m.Content + "\x00")
	}
	return b.String()
}

// Generate implements Generator.
func (w Rewritten) Generate(_ context.Context, req engine.Request) (*engine.Result, error) {
	page, ok := w[rewrittenKey(req.Messages)]
	switch {
	case !ok:
		return nil, errors.New("no page written before for this prompt: give the distilled corpus of the same --pages and --seed")
	case page == "":
		return nil, ErrRefusedBefore
	}
	return &engine.Result{Text: page}, nil
}
