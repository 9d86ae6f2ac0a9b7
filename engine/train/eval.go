package train

import (
	"cmp"
	stdctx "context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/markup"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/train/corpus"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// EvalOptions configure Evaluate.
type EvalOptions struct {
	ModelDir  string // HF-layout model directory (e.g. assets/mini)
	CorpusDir string // train.jsonl, heldout.jsonl, words.txt
	Pages     int    // held-out titles to generate (50)
	Seed      uint64
	Backend   string // GoMLX backend for the loss graph and engine.Load
	// ARTemperature is AR mode's sampling temperature (0 = greedy).
	ARTemperature float64
	// ARRepetitionPenalty is AR mode's repetition penalty θ
	// (engine.Sampling.RepetitionPenalty; 0: the model's repetition_penalty).
	ARRepetitionPenalty float64
	LossBatches         int // held-out batches for the loss (of 4 pages each)
	// First is the index of the first held-out page generated: the report scores pages
	// [0, Pages); a run with First past them scores pages the report never sees, for
	// choosing generation settings without tuning on the reported titles.
	First int
	// Modes are the generation modes to score (nil: both, diffusion then AR).
	Modes []engine.Mode
	// Unguided also scores diffusion with the model's AR guidance turned off
	// (engine.Sampling.Guidance), when the model has it on: the decoder alone.
	Unguided bool
	// NoLoss skips the held-out loss.
	NoLoss bool
	// FreeHeading lets the model write each page's <h1> as well. By default the
	// pages are generated as the app asks for them: the title held as the heading
	// (assets.EncyclopediaOpening), so TitleH1 is 1 and PageFormat measures the body.
	FreeHeading bool
	// Leads, when set, are held after each heading as the app holds the model
	// folder's (assets.Leads: the entry as its training page wrote it, for the
	// titles it was trained on — seen titles, never held-out ones); nil: the heading alone,
	// the model writing the whole page. Ignored with FreeHeading.
	Leads *assets.Leads
	// Samples is how many generated pages each mode keeps in its report (0: 3).
	Samples int
	// Seen is how many titles seen in training are scored too (0: none): spread
	// evenly over the training pages, generated and checked as the held-out
	// ones are, and compared with their corpus entries (ModeReport.RougeL).
	Seen int
	// Chats is how many held-out chat questions are answered in each mode (0:
	// none), spread evenly over them, each with its own system turn as the app
	// sends it: what chat and the API should run in (assets.MiniCard.ChatMode).
	Chats int
	// Elsewhere is how many held-out off-topic messages (corpus.SourceElsewhere:
	// greetings, tasks) are answered in each mode (0: none), as Chats are; the
	// report's Declined is the share answered with assets.ChatElsewhere, and
	// Chats' the share of real questions turned away so.
	Elsewhere int
	// Desktops is how many held-out Desktop clicks are drawn in each mode (0:
	// none), spread evenly over them, and scored against the training
	// desktop's screens (DesktopReport).
	Desktops int
	// Render turns a page into the HTML that is shown: app/htmlsafe.Sanitize,
	// passed in by the CLI, since engine does not import the app. Fragments,
	// English and RougeL are measured on its output; nil measures the pages as
	// written (Settings["rendered"] says which).
	Render func(page string) string
	// Entries are the titles the model's folder holds a lead for (its whole
	// leads file, whether or not Leads holds them): the pages' links are scored
	// by whether they open one (ModeReport.LinksToEntries); nil: not scored.
	Entries *assets.Leads
	Log     io.Writer
}

// Sample is one generated page kept in the report.
type Sample struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// ModeReport scores the pages one generation mode produced.
type ModeReport struct {
	Pages int `json:"pages"`
	// PageFormat is the share of pages that parse as HTML with the requested
	// title as <h1> and at least one paragraph of ≥ 20 words (goal ≥ 0.9).
	PageFormat    float64 `json:"page_format"`
	TitleH1       float64 `json:"title_h1"`
	LongParagraph float64 `json:"long_paragraph"`
	// KnownWords is the share of generated words that occur in the training corpus (goal ≥ 0.85).
	KnownWords   float64 `json:"known_words"`
	LinksPerPage float64 `json:"links_per_page"` // goal ≥ 1
	Distinct2    float64 `json:"distinct_2"`     // goal ≥ 0.3
	// Fragments is the mean number of markup fragments (engine/markup: `">`,
	// `href="…"`, `<p`, a site path as words) per page in the text as shown,
	// after EvalOptions.Render (goal 0). FragmentsUnrepaired counts them in the
	// text a browser shows for the page as the model wrote it.
	Fragments           float64 `json:"fragments_per_page"`
	FragmentsUnrepaired float64 `json:"fragments_per_page_unrepaired"`
	// Stutters is the mean number of stutters per page in the text as shown
	// (Stutters: a word written twice side by side, or a word that ends in the
	// same three or more letters twice, "Macintoshacintosh").
	Stutters float64 `json:"stutters_per_page"`
	// LinksToEntries is the share of the shown pages' encyclopedia links whose
	// topic is an entry the model's folder holds (EvalOptions.Entries): a link
	// that opens a page the model knows, not one on a garbled topic.
	// LinksToEntriesAsWritten is the same share of the links as the model wrote
	// them, before Render (which relinks).
	LinksToEntries          float64 `json:"links_to_entries,omitempty"`
	LinksToEntriesAsWritten float64 `json:"links_to_entries_as_written,omitempty"`
	// English is the "reads like English" measure: the share of the shown
	// text's word bigrams that occur in the training pages' text (for a title
	// seen in training, not counting its own entry), pooled over the pages.
	English float64 `json:"english_bigrams"`
	// EnglishShuffled (reference rows only) is English of the same real pages
	// with each page's words shuffled: the score of salad of the right words.
	EnglishShuffled float64 `json:"english_bigrams_shuffled,omitempty"`
	// BitsPerWord is the second "reads like English" measure: the
	// cross-entropy, in bits per word, of the shown text's words under a
	// Kneser-Ney trigram model of the training pages' words (KneserNey; for a
	// title seen in training, with its own entry taken out), pooled over the
	// pages. It rewards common words as much as good order:
	// the real pages score worse than salad of common words, their content
	// words being rare.
	BitsPerWord float64 `json:"bits_per_word"`
	// OrderGain is what the words' order is worth: BitsPerWord of the same
	// words shuffled within each page, less BitsPerWord. Given the words, how
	// much does their order look like the training pages' order.
	OrderGain float64 `json:"order_gain_bits"`
	// Leads is how many pages opened with their entry held (EvalOptions.Leads):
	// the words RougeL then counts include it.
	Leads int `json:"leads_held,omitempty"`
	// RougeL (seen titles) is the mean ROUGE-L F1 of the shown page's words
	// after its heading against its corpus entry's (chat answers: of the
	// answer's body, ChatReport). On the reference row it is the chance level:
	// each entry against the next title's entry.
	RougeL float64 `json:"rouge_l,omitempty"`
	// Named (chat answers only) is the share of answers whose bold heading
	// names the topic asked about (HeadingNames): the corpus's answers always do.
	Named float64 `json:"heading_named,omitempty"`
	// Declined (chat answers only) is the share of answers that send the user
	// to the Library (Declines): wanted for off-topic messages, not for terms.
	Declined float64 `json:"declined,omitempty"`
	// Replied (chat answers only) is the share of answers that are the Library
	// answer held whole once the model began it (engine.Result.Replied), as
	// the app holds it; Declined counts them too.
	Replied    float64 `json:"replied,omitempty"`
	MeanTokens float64 `json:"mean_tokens"`
	MedianMS   float64 `json:"median_ms"`
	TokensPerS float64 `json:"tokens_per_s"`
	// FirstCanvasMedianMS: diffusion mode: the median time to develop and commit the
	// first 256-token canvas with default sampling (prompt encoding included).
	FirstCanvasMedianMS float64  `json:"first_canvas_median_ms,omitempty"`
	MeanSteps           float64  `json:"mean_steps_per_canvas,omitempty"`
	Samples             []Sample `json:"samples,omitempty"`
}

// LossReport is the held-out loss in nats per answer token.
type LossReport struct {
	Tokens int `json:"tokens"`
	// AR is the encoder's next-token loss on held-out page answers.
	AR float64 `json:"ar_nats_per_token"`
	// Diffusion is the decoder's loss on the same answer tokens, with t ~ U(ε, 1)
	// and self-conditioning on half the examples, as in training.
	Diffusion float64 `json:"diffusion_nats_per_token"`
	// Unigram is the baseline: the unigram distribution of the training answers.
	Unigram float64 `json:"unigram_nats_per_token"`
	// TitleAR and TitleDiffusion are the same losses on just the answer tokens that
	// repeat the requested title (Example.Copied: the page's <h1> text and later
	// mentions), TitleTokens of them: how far the model is from copying the title.
	TitleTokens    int     `json:"title_tokens"`
	TitleAR        float64 `json:"title_ar_nats_per_token"`
	TitleDiffusion float64 `json:"title_diffusion_nats_per_token"`
}

// EvalReport is `darkroom train eval --json`.
type EvalReport struct {
	Model     string     `json:"model"`
	Backend   string     `json:"backend"`
	Params    int        `json:"params"`
	Loss      LossReport `json:"heldout_loss"`
	Diffusion ModeReport `json:"diffusion"`
	// DiffusionUnguided is diffusion with AR guidance off (EvalOptions.Unguided).
	DiffusionUnguided *ModeReport `json:"diffusion_unguided,omitempty"`
	AR                ModeReport  `json:"ar"`
	// Reference scores the real held-out pages of the same titles with the same
	// checks: what the corpus itself reaches (no times, tokens or samples).
	Reference ModeReport `json:"reference"`
	// CanvasMedianMS is the speed budget figure: median time of a full 256-token
	// canvas with default sampling on this machine (goal ≤ 2000 ms).
	CanvasMedianMS float64 `json:"canvas_median_ms"`
	// Seen scores EvalOptions.Seen titles of the training corpus the same way.
	Seen *SeenReport `json:"seen,omitempty"`
	// Chats scores EvalOptions.Chats held-out chat answers.
	Chats *ChatReport `json:"chats,omitempty"`
	// Elsewhere scores EvalOptions.Elsewhere held-out off-topic messages.
	Elsewhere *ChatReport     `json:"elsewhere,omitempty"`
	Desktop   *DesktopReport  `json:"desktop,omitempty"`
	Goals     map[string]bool `json:"goals"`
	Settings  map[string]any  `json:"settings"`
}

// SeenReport scores titles the model was trained on: does the page say what
// the entry says (RougeL), beside the checks of the held-out pages.
type SeenReport struct {
	Titles            int         `json:"titles"`
	Diffusion         ModeReport  `json:"diffusion"`
	DiffusionUnguided *ModeReport `json:"diffusion_unguided,omitempty"`
	AR                ModeReport  `json:"ar"`
	Reference         ModeReport  `json:"reference"`
}

// ChatReport scores answers to held-out chat questions in each mode, and the
// corpus's own answers to them (Reference), by the word measures of the pages:
// KnownWords, Distinct2, English (with EnglishShuffled on the reference),
// BitsPerWord and OrderGain, on the answer as the chat shows its words, and
// RougeL, of the answer's body against the corpus answer's (AnswerBody; the
// reference row's is the chance level: each answer against the next
// question's). The page checks (format, links, fragments) do not apply to an
// answer and stay zero; MeanTokens, MedianMS and TokensPerS are the answers'.
// The answers open as the app's Chat opens them (assets.Leads.ChatStart,
// with EvalOptions.Leads).
type ChatReport struct {
	Questions int        `json:"questions"`
	Diffusion ModeReport `json:"diffusion"`
	AR        ModeReport `json:"ar"`
	Reference ModeReport `json:"reference"`
}

// Evaluate scores a trained model: held-out loss against the unigram baseline,
// then opts.Pages held-out encyclopedia titles generated in diffusion mode
// (default sampling) and AR mode on the same weights, and opts.Seen titles
// seen in training the same way. Each set is also scored on the real pages of
// its titles (Reference), so every measure has the corpus's own value beside it.
//
// Three measures are taken on the page as shown (opts.Render):
//   - markup fragments per page (engine/markup), and before the repair, on the
//     text a browser shows for the page as written;
//   - "reads like English": the share of the text's word bigrams that real
//     pages also use, i.e. that occur in the training pages (a seen title's
//     own entry left out, so copying it is no advantage); the reference rows
//     add the same pages with their words shuffled, the value of word salad;
//   - for seen titles, ROUGE-L F1 of the page's words against the entry's, the
//     heading left out; the reference row's is the chance level (an entry
//     against another title's entry).
func Evaluate(ctx stdctx.Context, opts EvalOptions) (rep *EvalReport, err error) {
	if opts.Pages <= 0 {
		opts.Pages = 50
	}
	if opts.LossBatches <= 0 {
		opts.LossBatches = 8
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	tok, err := tokenizer.Load(opts.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	cfg, err := config.Load(opts.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	trainRecs, err := ReadRecords(filepath.Join(opts.CorpusDir, "train.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	heldRecs, err := ReadRecords(filepath.Join(opts.CorpusDir, "heldout.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var pages []Record
	var leaked []string
	for _, r := range heldRecs {
		if r.Kind == "page" {
			pages = append(pages, r)
			if _, ok := opts.Leads.Lead(r.Title); ok {
				leaked = append(leaked, r.Title)
			}
		}
	}
	if len(leaked) > 0 && !opts.FreeHeading {
		return nil, fmt.Errorf("eval: the model's leads hold the entries of %d held-out titles (%q, …): they were written from a corpus that holds them; write them again from the training corpus (darkroom train leads), or pass --no-leads",
			len(leaked), leaked[0])
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("eval: no held-out pages in %s", opts.CorpusDir)
	}
	known, err := LoadWordSet(filepath.Join(opts.CorpusDir, "words.txt"))
	if err != nil {
		// Fall back to the training answers themselves.
		var texts []string
		for _, r := range trainRecs {
			texts = append(texts, r.Answer)
		}
		known = WordSetOf(texts)
	}
	rep = &EvalReport{Model: opts.ModelDir, Goals: map[string]bool{}, Settings: map[string]any{
		"pages": opts.Pages, "seed": opts.Seed, "ar_temperature": opts.ARTemperature,
		"ar_repetition_penalty": cmp.Or(opts.ARRepetitionPenalty, cfg.Generation.RepetitionPenalty),
		"diffusion_sampling":    "generation_config.json defaults", "heading": "held (as the app sends it)",
		"rendered": "by the renderer passed in (the app's htmlsafe.Sanitize)"}}
	rendered := opts.Render != nil
	if !rendered {
		opts.Render = func(page string) string { return page }
		rep.Settings["rendered"] = "as written (no renderer passed in)"
	}
	var trainPages, seen []Record
	for _, r := range trainRecs {
		if r.Kind == "page" {
			trainPages = append(trainPages, r)
		}
	}
	if opts.Seen > 0 {
		seen = spread(trainPages, opts.Seen)
		rep.Settings["seen"] = len(seen)
	}
	ref := newReference(trainPages, seen)
	ref.entries = opts.Entries
	switch {
	case opts.FreeHeading:
		rep.Settings["heading"] = "written by the model"
	case opts.Leads.Len() > 0:
		rep.Settings["heading"] = fmt.Sprintf("held (as the app sends it), with the entry where the model's folder holds it (%d titles)", opts.Leads.Len())
	}

	// Held-out loss.
	trainEx, err := Tokenize(tok, trainRecs)
	if err != nil {
		return nil, err
	}
	heldEx, err := Tokenize(tok, pages)
	if err != nil {
		return nil, err
	}
	if !opts.NoLoss {
		fmt.Fprintf(opts.Log, "eval: held-out loss on %d batches…\n", opts.LossBatches)
		rep.Loss, rep.Params, err = heldoutLoss(opts, cfg, tok, trainEx, heldEx)
		if err != nil {
			return nil, err
		}
	}
	if opts.First > 0 {
		if opts.First >= len(pages) {
			return nil, fmt.Errorf("eval: --first %d: only %d held-out pages", opts.First, len(pages))
		}
		pages = pages[opts.First:]
		rep.Settings["first"] = opts.First
	}
	modes := opts.Modes
	if len(modes) == 0 {
		modes = []engine.Mode{engine.Diffusion, engine.AR}
	}

	// Generation.
	eng, err := engine.Load(ctx, engine.Dir(opts.ModelDir), engine.Options{Backend: opts.Backend})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer eng.Close()
	rep.Backend = eng.Backend()
	n := min(opts.Pages, len(pages))
	keep := opts.Samples
	if keep <= 0 {
		keep = 3
	}
	var runs []evalRun
	for _, mode := range modes {
		runs = append(runs, evalRun{string(mode), mode, false})
		if mode == engine.Diffusion && opts.Unguided && eng.GenerationDefaults().Guidance > 0 {
			runs = append(runs, evalRun{"diffusion (unguided)", mode, true})
		}
	}
	rep.Diffusion, rep.DiffusionUnguided, rep.AR, err = generate(ctx, eng, opts, runs, pages[:n], nil, ref, known, keep)
	if err != nil {
		return nil, err
	}
	rep.Reference = ref.real(pages[:n], nil, known, opts.Render)
	if opts.Seen > 0 {
		sr := &SeenReport{Titles: len(seen)}
		entries := make([]string, len(seen))
		for i, r := range seen {
			entries[i] = r.Answer
		}
		sr.Diffusion, sr.DiffusionUnguided, sr.AR, err = generate(ctx, eng, opts, runs, seen, entries, ref, known, keep)
		if err != nil {
			return nil, err
		}
		sr.Reference = ref.real(seen, entries, known, opts.Render)
		rep.Seen = sr
	}

	if opts.Chats > 0 || opts.Elsewhere > 0 {
		var chats, elsewhere []Record
		for _, r := range heldRecs {
			switch {
			case r.Kind != "chat":
			case r.Source == corpus.SourceElsewhere:
				elsewhere = append(elsewhere, r)
			default:
				chats = append(chats, r)
			}
		}
		if opts.Chats > 0 {
			if rep.Chats, err = answerChats(ctx, eng, opts, spread(chats, opts.Chats), ref, known, keep); err != nil {
				return nil, err
			}
		}
		if opts.Elsewhere > 0 {
			if len(elsewhere) == 0 {
				return nil, fmt.Errorf("eval: %s holds no off-topic messages (add them with darkroom train elsewhere)", opts.CorpusDir)
			}
			if rep.Elsewhere, err = answerChats(ctx, eng, opts, spread(elsewhere, opts.Elsewhere), ref, known, keep); err != nil {
				return nil, err
			}
		}
	}

	if opts.Desktops > 0 {
		var clicks []Record
		for _, r := range heldRecs {
			if r.Kind == corpus.KindDesktop {
				clicks = append(clicks, r)
			}
		}
		if len(clicks) == 0 {
			return nil, fmt.Errorf("eval: %s holds no held-out desktop clicks", opts.CorpusDir)
		}
		if rep.Desktop, err = drawDesktops(ctx, eng, opts, spread(clicks, opts.Desktops), keep); err != nil {
			return nil, err
		}
	}

	// The speed budget: full 256-token canvases (no early EOS) with default sampling.
	rep.CanvasMedianMS, err = canvasSpeed(ctx, eng, pages[:min(5, len(pages))], opts.Seed)
	if err != nil {
		return nil, err
	}
	d := rep.Diffusion
	if rendered {
		rep.Goals["diffusion_fragments_shown_0"] = d.Fragments == 0
	}
	rep.Goals["diffusion_page_format_ge_0.9"] = d.PageFormat >= 0.9
	rep.Goals["diffusion_known_words_ge_0.85"] = d.KnownWords >= 0.85
	rep.Goals["diffusion_links_per_page_ge_1"] = d.LinksPerPage >= 1
	rep.Goals["diffusion_distinct2_ge_0.3"] = d.Distinct2 >= 0.3
	rep.Goals["heldout_loss_below_unigram"] = rep.Loss.AR < rep.Loss.Unigram
	rep.Goals["canvas_median_le_2s"] = rep.CanvasMedianMS > 0 && rep.CanvasMedianMS <= 2000
	return rep, nil
}

// evalRun is one way of generating the pages: a mode, and for diffusion with
// or without the model's AR guidance.
type evalRun struct {
	name     string
	mode     engine.Mode
	unguided bool
}

// generate writes and scores pages in each run: the held-out titles, or with
// entries (the corpus text of each title) the seen ones.
func generate(ctx stdctx.Context, eng *engine.Engine, opts EvalOptions, runs []evalRun, pages []Record, entries []string,
	ref *reference, known map[string]bool, keep int) (diffusion ModeReport, unguided *ModeReport, ar ModeReport, err error) {
	set := "held-out"
	if entries != nil {
		set = "seen"
	}
	n := len(pages)
	for _, rn := range runs {
		mode := rn.mode
		sc := newScorer(known, ref, opts.Render)
		var times, firsts []float64
		var tokens, steps, canvases, leads int
		for i := 0; i < n; i++ {
			if ctx.Err() != nil {
				return diffusion, nil, ar, ctx.Err()
			}
			req := engine.Request{Prompt: pages[i].Prompt, Mode: mode, Seed: opts.Seed + uint64(i)}
			if !opts.FreeHeading {
				req.Opening = assets.EncyclopediaOpening(pages[i].Title)
				req.Lead, _ = opts.Leads.Lead(pages[i].Title)
				req.LeadEnds = req.Lead != "" // as the app sends it
			}
			if mode == engine.AR {
				req.Sampling.Temperature = opts.ARTemperature
				req.Sampling.RepetitionPenalty = opts.ARRepetitionPenalty
			}
			if rn.unguided {
				req.Sampling.Guidance = -1
			}
			res, err := eng.Generate(ctx, req)
			if err != nil {
				return diffusion, nil, ar, fmt.Errorf("eval: %s %q: %w", mode, pages[i].Title, err)
			}
			if res.LeadHeld {
				leads++
			}
			entry := ""
			if entries != nil {
				entry = entries[i]
			}
			pc := sc.add(res.Text, pages[i].Title, entry)
			tokens += len(res.Tokens)
			times = append(times, res.ElapsedMS)
			firsts = append(firsts, res.FirstCanvasMS)
			for _, c := range res.Canvases {
				steps += c.Steps
				canvases++
			}
			if i < keep {
				sc.samples = append(sc.samples, Sample{Title: pages[i].Title, Text: res.Text})
			}
			fmt.Fprintf(opts.Log, "eval %s %s %d/%d %q: %d tokens in %.0f ms, format %v, %d links\n",
				set, rn.name, i+1, n, pages[i].Title, len(res.Tokens), res.ElapsedMS, pc.Structured, pc.Links)
		}
		mr := sc.report()
		mr.Leads = leads
		mr.MeanTokens = float64(tokens) / float64(max(n, 1))
		mr.MedianMS = median(times)
		if s := sum(times); s > 0 {
			mr.TokensPerS = float64(tokens) / (s / 1000)
		}
		if mode == engine.Diffusion {
			mr.FirstCanvasMedianMS = median(firsts)
			if canvases > 0 {
				mr.MeanSteps = float64(steps) / float64(canvases)
			}
			if rn.unguided {
				unguided = &mr
			} else {
				diffusion = mr
			}
		} else {
			ar = mr
		}
	}
	return diffusion, unguided, ar, nil
}

// answerChats answers each chat question in each mode (greedy AR with the
// model's repetition penalty, as AR pages; diffusion with its defaults) and
// scores the answers beside the corpus's.
func answerChats(ctx stdctx.Context, eng *engine.Engine, opts EvalOptions, chats []Record, ref *reference,
	known map[string]bool, keep int) (*ChatReport, error) {
	cr := &ChatReport{Questions: len(chats)}
	answers := func(mode engine.Mode) (ModeReport, error) {
		sc := newScorer(known, ref, opts.Render)
		var times []float64
		var tokens, named, declined, replied int
		for i, c := range chats {
			if ctx.Err() != nil {
				return ModeReport{}, ctx.Err()
			}
			req := engine.Request{Mode: mode, Seed: opts.Seed + uint64(i), Messages: c.Messages()}
			start := opts.Leads.ChatStart(c.Prompt) // as the app's Chat sends them
			req.Opening, req.Lead, req.OpeningTentative, req.Reply = start.Opening, start.Lead, start.OpeningTentative, start.Reply
			req.LeadEnds = req.Lead != "" // as the app sends it
			if mode == engine.AR {
				req.Sampling.Temperature = opts.ARTemperature
				req.Sampling.RepetitionPenalty = opts.ARRepetitionPenalty
			}
			res, err := eng.Generate(ctx, req)
			if err != nil {
				return ModeReport{}, fmt.Errorf("eval: chat %s %q: %w", mode, c.Prompt, err)
			}
			sc.addAnswer(res.Text, c.Answer)
			if HeadingNames(res.Text, c.Title) {
				named++
			}
			if Declines(res.Text) {
				declined++
			}
			if res.Replied {
				replied++
			}
			tokens += len(res.Tokens)
			times = append(times, res.ElapsedMS)
			if i < keep {
				sc.samples = append(sc.samples, Sample{Title: c.Prompt, Text: res.Text})
			}
			fmt.Fprintf(opts.Log, "eval chat %s %d/%d %q: %d tokens in %.0f ms\n", mode, i+1, len(chats), c.Prompt, len(res.Tokens), res.ElapsedMS)
		}
		mr := sc.report()
		mr.Named, mr.Declined, mr.Replied = share(named, len(chats)), share(declined, len(chats)), share(replied, len(chats))
		mr.MeanTokens, mr.MedianMS = float64(tokens)/float64(max(len(chats), 1)), median(times)
		if s := sum(times); s > 0 {
			mr.TokensPerS = float64(tokens) / (s / 1000)
		}
		return mr, nil
	}
	var err error
	if cr.Diffusion, err = answers(engine.Diffusion); err != nil {
		return nil, err
	}
	if cr.AR, err = answers(engine.AR); err != nil {
		return nil, err
	}
	sc := newScorer(known, ref, opts.Render)
	rng := rand.New(rand.NewPCG(1, 2))
	var shufHit, shufTotal, named, declined int
	for i, c := range chats {
		other := "" // chance: the answer against the next question's
		if len(chats) > 1 {
			other = chats[(i+1)%len(chats)].Answer
		}
		h, t := ref.shuffledAttested(sc.addAnswer(c.Answer, other), nil, rng)
		shufHit, shufTotal = shufHit+h, shufTotal+t
		if HeadingNames(c.Answer, c.Title) {
			named++
		}
		if Declines(c.Answer) {
			declined++
		}
	}
	cr.Reference = sc.report()
	cr.Reference.Named, cr.Reference.Declined = share(named, len(chats)), share(declined, len(chats))
	cr.Reference.EnglishShuffled = share(shufHit, shufTotal)
	return cr, nil
}

// HeadingNames reports whether a chat answer opens with the topic asked about
// as its bold heading, as the corpus's answers do ("**compiler** (programming):
// …"): the heading's text equals title, ignoring case and runs of white space.
func HeadingNames(answer, title string) bool {
	heading, _, ok := answerHeading(answer)
	return ok && strings.EqualFold(assets.CleanLine(heading), assets.CleanLine(title))
}

// answerHeading splits a chat answer that opens with a bold heading
// ("**compiler** (programming): …") into the heading's text and what follows
// it; ok is false for an answer without one.
func answerHeading(answer string) (heading, rest string, ok bool) {
	rest, ok = strings.CutPrefix(strings.TrimSpace(answer), "**")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "**")
}

// AnswerBody is a chat answer after its bold heading and the category after
// it ("**compiler** (programming): A program …" → "A program …"); an answer
// without the heading is its own body. ROUGE-L of the bodies says how much of
// the entry an answer says, the heading — held by the app — left out.
func AnswerBody(answer string) string {
	_, body, ok := answerHeading(answer)
	if !ok {
		return answer
	}
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, "(") {
		if end := strings.Index(body, "):"); end >= 0 {
			body = body[end+1:]
		}
	}
	return strings.TrimSpace(strings.TrimPrefix(body, ":"))
}

// Declines reports whether a chat answer sends the user to the Library: it
// opens with the first words of assets.ChatElsewhere ("I am Darkroom Mini, a
// small computing encyclopedia …"), case and spacing aside.
func Declines(answer string) bool {
	want := strings.Fields(assets.ChatElsewhere())
	got := strings.Fields(answer)
	n := min(8, len(want))
	if len(got) < n {
		return false
	}
	for i := range n {
		if !strings.EqualFold(got[i], want[i]) {
			return false
		}
	}
	return true
}

// spread picks n of pages spread evenly over them, the middle of each stretch
// (all of them when there are no more than n).
func spread(pages []Record, n int) []Record {
	if n >= len(pages) {
		return pages
	}
	out := make([]Record, n)
	for i := range out {
		out[i] = pages[(2*i+1)*len(pages)/(2*n)]
	}
	return out
}

// reference is what the English measures compare with: the training pages'
// word bigrams and their Kneser-Ney model, and the words of each seen title's
// entry, left out when that title's page is scored.
type reference struct {
	bigrams *Bigrams
	kn      *KneserNey
	entry   map[string][]string // seen title → words of its training page
	entries *assets.Leads       // EvalOptions.Entries
}

// newReference counts the bigrams of the training pages, fits the Kneser-Ney
// model on the same words, and keeps the words of the seen ones.
func newReference(pages, seen []Record) *reference {
	r := &reference{bigrams: NewBigrams(nil), entry: map[string][]string{}}
	texts := make([][]string, len(pages))
	for i, p := range pages {
		texts[i] = ShownWords(p.Answer, false)
		r.bigrams.Add(texts[i])
	}
	r.kn = NewKneserNey(texts)
	for _, p := range seen {
		r.entry[p.Title] = ShownWords(p.Answer, false)
	}
	return r
}

// real scores the real pages of the titles with the same checks: with entries
// (seen titles), RougeL is the chance level, each entry against the next
// one's; EnglishShuffled is English of each page's words in a shuffled order.
func (ref *reference) real(pages []Record, entries []string, known map[string]bool, render func(string) string) ModeReport {
	sc := newScorer(known, ref, render)
	rng := rand.New(rand.NewPCG(1, 2))
	var shufHit, shufTotal int
	var chance float64
	for i, p := range pages {
		sc.add(p.Answer, p.Title, "")
		h, t := ref.shuffledAttested(ShownWords(render(p.Answer), false), ref.entry[p.Title], rng)
		shufHit, shufTotal = shufHit+h, shufTotal+t
		if entries != nil && len(pages) > 1 {
			other := entries[(i+1)%len(entries)]
			chance += RougeL(ShownWords(render(other), true), ShownWords(render(entries[i]), true))
		}
	}
	mr := sc.report()
	mr.EnglishShuffled = share(shufHit, shufTotal)
	if entries != nil && len(pages) > 1 {
		mr.RougeL = chance / float64(len(pages))
	}
	return mr
}

// shuffledAttested is bigrams.Attested of a copy of words in the order rng
// shuffles it to: the English of salad of the same words.
func (ref *reference) shuffledAttested(words, own []string, rng *rand.Rand) (hit, total int) {
	sh := append([]string(nil), words...)
	rng.Shuffle(len(sh), func(a, b int) { sh[a], sh[b] = sh[b], sh[a] })
	return ref.bigrams.Attested(sh, own)
}

func share(hit, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(hit) / float64(total)
}

// scorer accumulates the page checks of a set of pages.
type scorer struct {
	known         map[string]bool // the training corpus's words
	ref           *reference
	render        func(string) string
	pages         int
	format, h1    int
	long, links   int
	words         [][]string
	knownN, total int
	frag, fragRaw int
	stutters      int
	linkN, linkOK int
	rawN, rawOK   int
	engHit, engN  int
	order         OrderScore
	orderRNG      *rand.Rand // shuffles each page's words for order
	rouge         float64
	rougeN        int
	samples       []Sample
}

func newScorer(known map[string]bool, ref *reference, render func(string) string) scorer {
	return scorer{known: known, ref: ref, render: render, orderRNG: rand.New(rand.NewPCG(1, 3))}
}

// add checks one page (with entry, the corpus text of its title, also how
// much of it the page says) and returns the check.
func (s *scorer) add(page, title, entry string) PageCheck {
	shown := s.render(page)
	s.fragRaw += markup.Count(page)
	s.frag += markup.Count(shown)
	words := ShownWords(shown, false)
	s.stutters += Stutters(words)
	s.countLinks(shown, &s.linkN, &s.linkOK)
	s.countLinks(page, &s.rawN, &s.rawOK)
	s.addEnglish(words, s.ref.entry[title])
	if entry != "" {
		s.rouge += RougeL(ShownWords(shown, true), ShownWords(s.render(entry), true))
		s.rougeN++
	}
	pc := CheckPage(page, title)
	s.pages++
	if pc.Parses && pc.Structured {
		s.format++
	}
	if pc.TitleH1 {
		s.h1++
	}
	if pc.LongPara {
		s.long++
	}
	s.links += pc.Links
	s.addWords(pc.Words)
	return pc
}

// countLinks adds page's encyclopedia links to n and those that open an entry
// (EvalOptions.Entries) to ok; without entries it counts nothing.
func (s *scorer) countLinks(page string, n, ok *int) {
	if s.ref.entries == nil {
		return
	}
	for _, t := range LinkTopics(page) {
		*n++
		if s.ref.entries.Has(t) {
			*ok++
		}
	}
}

// addEnglish adds words to the "reads like English" measures, scored without
// own (the words of the text's own training entry, if any).
func (s *scorer) addEnglish(words, own []string) {
	h, t := s.ref.bigrams.Attested(words, own)
	s.engHit, s.engN = s.engHit+h, s.engN+t
	s.order.Add(s.ref.kn.Without(own), words, s.orderRNG)
}

// addAnswer adds a chat answer by the word measures (ChatReport: the page
// checks stay zero) and, with want (the corpus's answer), ROUGE-L of their
// bodies (AnswerBody: the words after the bold heading); it returns the
// answer's words as shown.
func (s *scorer) addAnswer(text, want string) []string {
	words := ShownWords(s.render(text), false)
	if want != "" {
		s.rouge += RougeL(ShownWords(s.render(AnswerBody(text)), false), ShownWords(s.render(AnswerBody(want)), false))
		s.rougeN++
	}
	s.addEnglish(words, nil)
	s.pages++
	s.addWords(words)
	return words
}

// addWords adds a text's words to distinct-2 and the corpus-words share.
func (s *scorer) addWords(words []string) {
	s.words = append(s.words, words)
	for _, w := range words {
		s.total++
		if s.known[w] {
			s.knownN++
		}
	}
}

// report returns the shares and means over the pages added.
func (s *scorer) report() ModeReport {
	mr := ModeReport{Pages: s.pages, Distinct2: Distinct2(s.words), Samples: s.samples}
	if s.pages > 0 {
		f := float64(s.pages)
		mr.PageFormat, mr.TitleH1 = float64(s.format)/f, float64(s.h1)/f
		mr.LongParagraph, mr.LinksPerPage = float64(s.long)/f, float64(s.links)/f
	}
	if s.total > 0 {
		mr.KnownWords = float64(s.knownN) / float64(s.total)
	}
	if s.pages > 0 {
		mr.Fragments = float64(s.frag) / float64(s.pages)
		mr.FragmentsUnrepaired = float64(s.fragRaw) / float64(s.pages)
		mr.Stutters = float64(s.stutters) / float64(s.pages)
	}
	mr.LinksToEntries, mr.LinksToEntriesAsWritten = share(s.linkOK, s.linkN), share(s.rawOK, s.rawN)
	mr.English = share(s.engHit, s.engN)
	mr.BitsPerWord, mr.OrderGain = s.order.BitsPerWord(), s.order.OrderGain()
	if s.rougeN > 0 {
		mr.RougeL = s.rouge / float64(s.rougeN)
	}
	return mr
}

// canvasSpeed times full canvases: the first canvas of a request whose EOS is
// ignored, i.e. the time to develop 256 positions with default sampling. It
// uses PromptIDs of the page prompts and reports the median first-canvas time.
func canvasSpeed(ctx stdctx.Context, eng *engine.Engine, pages []Record, seed uint64) (float64, error) {
	var ms []float64
	for i, p := range pages {
		res, err := eng.Generate(ctx, engine.Request{Prompt: p.Prompt, Mode: engine.Diffusion, Seed: seed + 1000 + uint64(i)})
		if err != nil {
			return 0, fmt.Errorf("eval: canvas speed: %w", err)
		}
		ms = append(ms, res.FirstCanvasMS)
	}
	return median(ms), nil
}

// heldoutLoss evaluates the objective's per-token losses on held-out page
// answers and the unigram baseline on the same tokens.
func heldoutLoss(opts EvalOptions, cfg *config.Model, tok *tokenizer.Tokenizer, trainEx, heldEx []Example) (LossReport, int, error) {
	var lr LossReport
	be, err := backends.NewWithConfig(evalBackend(opts.Backend))
	if err != nil {
		return lr, 0, fmt.Errorf("eval: backend: %w", err)
	}
	set, err := weights.Load(opts.ModelDir, cfg)
	if err != nil {
		return lr, 0, fmt.Errorf("eval: %w", err)
	}
	ctx := context.New()
	if err := model.LoadTensors(ctx, set.Tensors); err != nil {
		return lr, 0, fmt.Errorf("eval: %w", err)
	}
	params := 0
	for _, t := range set.Tensors {
		params += t.Shape().Size()
	}
	const batch = 4
	plan, err := NewBatches(heldEx, []int{48, 128, 256}, cfg.CanvasLength, batch, opts.Seed+17)
	if err != nil {
		return lr, 0, err
	}
	nc := NoiseConfig{Vocab: cfg.Text.VocabSize, Eps: 1e-3, SelfCondP: 0.5}
	exec, err := context.NewExec(be, ctx, func(ctx *context.Context, in []*Node) []*Node {
		net := newModelNet(ctx, cfg)
		return tokenLosses(net, in[0], in[1], in[2], in[3], in[4], in[5], SelfCondRows(0.5, in[0].Shape().Dimensions[0]))
	})
	if err != nil {
		return lr, 0, fmt.Errorf("eval: %w", err)
	}
	var arSum, diffSum float64
	var arN, diffN int
	var targets [][]int
	for step := 0; step < opts.LossBatches; step++ {
		pb, _ := plan.At(step)
		b := buildBatch(heldEx, pb, cfg.CanvasLength, tok.EOS(), tok.Pad(), nc, opts.Seed+17, step, 1)
		out, err := exec.Exec(b.inputs()...)
		if err != nil {
			return lr, 0, fmt.Errorf("eval: %w", err)
		}
		arCE := tensors.MustCopyFlatData[float32](out[0])   // [B, T-1]
		diffCE := tensors.MustCopyFlatData[float32](out[1]) // [B, C]
		t := b.P + b.C
		for r, it := range pb.Items {
			ex := heldEx[it.Example]
			// Answer tokens of this canvas: positions P .. P+n-1 of the encoder input,
			// predicted from position j-1 (AR) and denoised at canvas index j-P.
			n := min(len(ex.Answer)-it.Canvas*b.C, b.C)
			var tg []int
			for j := 0; j < n; j++ {
				ar, diff := float64(arCE[r*(t-1)+b.P+j-1]), float64(diffCE[r*b.C+j])
				arSum += ar
				diffSum += diff
				tg = append(tg, ex.Answer[it.Canvas*b.C+j])
				if _, ok := slices.BinarySearch(ex.Copied, it.Canvas*b.C+j); ok {
					lr.TitleAR += ar
					lr.TitleDiffusion += diff
					lr.TitleTokens++
				}
			}
			arN += n
			diffN += n
			targets = append(targets, tg)
		}
	}
	var trainAnswers [][]int
	for _, e := range trainEx {
		trainAnswers = append(trainAnswers, e.Answer)
	}
	lr.Tokens = arN
	lr.AR = arSum / float64(max(arN, 1))
	lr.Diffusion = diffSum / float64(max(diffN, 1))
	lr.Unigram = UnigramCE(trainAnswers, targets, cfg.Text.VocabSize)
	if lr.TitleTokens > 0 {
		lr.TitleAR /= float64(lr.TitleTokens)
		lr.TitleDiffusion /= float64(lr.TitleTokens)
	}
	return lr, params, nil
}

// tokenLosses is Objective's per-token form: the AR CE at every encoder position
// [B, T-1] and the diffusion CE at every canvas position [B, C].
func tokenLosses(net Net, tokens, positions, valid, prefixValid, noisy, decPos *Node, selfCondRows int) []*Node {
	t := tokens.Shape().Dimensions[1]
	c := noisy.Shape().Dimensions[1]
	hidden, kv := net.Encode(tokens, positions, valid)
	arCE := tokenCE(net.Logits(Slice(hidden, AxisRange(), AxisRange(0, t-1))), Slice(tokens, AxisRange(), AxisRange(1, t)))
	soft := selfConditioning(net, noisy, decPos, kv, prefixValid, selfCondRows)
	logits2 := net.Logits(net.Decode(noisy, decPos, soft, kv, prefixValid))
	diffCE := tokenCE(logits2, Slice(tokens, AxisRange(), AxisRange(t-c, t)))
	return []*Node{arCE, diffCE}
}

func evalBackend(b string) string {
	if b == "" || b == "go" {
		return "go:ops_sequential"
	}
	return b
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

var _ = time.Second
