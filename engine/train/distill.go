package train

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
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
// repetition (assets/training/README.md, session 15). recs is not changed.
// With opts.Beside the rewritten records are appended after recs (the indices
// returned are theirs) and the originals only train the printer.
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
	for n, i := range pages {
		r := recs[i]
		res, err := gen.Generate(ctx, engine.Request{Messages: r.Messages(), Mode: engine.AR, Seed: opts.Seed + uint64(n),
			Opening: assets.EncyclopediaOpening(r.Title)})
		if err == nil {
			err = ctx.Err() // a cancelled generation returns its partial page: not a page to train on
		}
		if err != nil {
			return nil, nil, fmt.Errorf("distill page %d of %d (%q): %w", n+1, len(pages), r.Title, err)
		}
		if opts.Beside {
			out[i].Loss = LossAR
			r.Answer, r.Loss = res.Text, LossDiffusion
			out = append(out, r)
			pages[n] = len(out) - 1
		} else {
			out[i].Answer = res.Text
		}
		if opts.Progress != nil {
			opts.Progress(n+1, len(pages))
		}
	}
	return out, pages, nil
}
