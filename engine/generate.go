package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// runner is the model as the generation loop sees it: engine/model's Runner with
// its KV cache, or a fake in tests.
type runner interface {
	// Reset empties the KV cache.
	Reset()
	// Encode runs the causal encoder over tokens at the positions after the cache,
	// appends their keys and values to the cache, and returns the logits of the
	// last token: [vocab].
	Encode(tokens []int) ([]float32, error)
	// Score runs the causal encoder over tokens after the cache without caching
	// them and returns the logits of tokens from… [(len(tokens)−from)·vocab] (row
	// i−from predicts the token after tokens[i]). The logits may be the runner's
	// buffer: valid until the next Score or Encode.
	Score(tokens []int, from int) ([]float32, error)
	// Decode runs the bidirectional decoder over canvas at the positions after
	// the cache (read only), with the previous step's self-conditioning soft
	// embedding (nil at a canvas's first step: zero). It returns the logits
	// [len(canvas)·vocab] and the soft embedding for the next step, computed at
	// temperature.
	Decode(canvas []int, soft any, temperature float64) (logits []float32, next any, err error)
}

// stepper is a runner that can also run a whole denoising step in one call
// (engine/model's Runner: one executable on the graph path, the fused host head on
// the host): the decoder, the sampler's statistics and the next soft embedding, with
// only the step's ids, acceptance mask and entropies coming back.
type stepper interface {
	// DecodeStep is Decode followed by the sampler's Step planned by plan: res has
	// Draft, Accepted, Argmax and Entropy (sampler.Finish does the rest); next is
	// the next step's soft embedding, as Decode's; the logits are kept back (on the
	// device, or not computed) until read or freed.
	DecodeStep(canvas []int, soft any, plan sampler.Plan) (res sampler.StepResult, next any, logits stepLogits, err error)
}

// tokenPicker is a runner that can also pick the AR mode's next token on its
// device (engine/model's Runner on the graph path): the encoder pass and the
// sampler's pick (sampler.TokenGraph) in one executable, with only the id coming
// back instead of a row of logits.
type tokenPicker interface {
	// TokensOnDevice reports whether EncodeNext runs (the model runs in graphs).
	TokensOnDevice() bool
	// EncodeNext is Encode followed by the pick plan says (sampler.PickToken's),
	// on the device: the next token's id.
	EncodeNext(tokens []int, plan sampler.TokenPlan) (int, error)
}

// stepLogits are a whole step's logits [len(canvas)·vocab], kept back: on the
// device, or (the host head) computed only when read.
type stepLogits interface {
	// Read brings them to the host and frees them.
	Read() ([]float32, error)
	// Free frees them unread.
	Free()
}

// prefixCache is a runner whose KV cache can come back to a prefix of a prompt it
// encoded before (engine/model's Runner, on either path), kept in one of
// keptSlots slots, so that a prompt that begins as that one did (a conversation's
// next message, a regenerated answer, an API client sending the whole chat again, the
// Desktop's next screen) encodes only the rest — and gets the values a pass over all
// of it would.
type prefixCache interface {
	// Keep copies the cache as it is now into slot, for Restore.
	Keep(slot int) bool
	// Restore makes the cache the first m ≤ n tokens of what Keep copied into slot, m
	// a point from which the rest encodes as it would from empty, and returns m (0:
	// nothing restored, and the caller starts from an empty cache).
	Restore(slot, n int) int
}

// keptSlots is how many prompts a prefixCache keeps (model.KeptSlots).
const keptSlots = model.KeptSlots

// keptPrompt is the engine's record of one slot of the runner's kept caches: the
// tokens kept, and when they were (a count of keeps).
type keptPrompt struct {
	tokens []int
	used   int
}

// keptPrompts is the record of every slot.
type keptPrompts struct {
	slots [keptSlots]keptPrompt
	clock int
}

// clear forgets every slot (the runner's copies are then never restored).
func (k *keptPrompts) clear() { k.slots = [keptSlots]keptPrompt{} }

// commonPrefix is how many leading tokens a and b share.
func commonPrefix(a, b []int) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// cacheReserver is a runner whose KV cache can be sized for a whole generation
// up front (engine/model's Runner: a fixed capacity on the device).
type cacheReserver interface {
	Reserve(tokens int) error
}

// textDecoder turns ids into text (engine/tokenizer's Tokenizer).
type textDecoder interface {
	Decode(ids []int) string
}

// generation is the state of one Generate call.
type generation struct {
	ctx      context.Context
	req      *Request
	prepared bool // EventPrepare was sent (Engine.onCompile)
	run      runner
	tok      textDecoder
	smp      *sampler.Sampler
	s        Sampling // effective knobs (defaults filled in)
	canvas   int      // canvas length C
	vocab    int
	eos      []int
	pad      int
	prompt   []int
	opening  []int // Request.Opening's ids (and Lead's, where it fits): held at the head of the answer, over as many canvases as they reach (AR: fed first)
	lead     bool  // Request.Lead is in opening (Result.LeadHeld)
	dropped  int   // messages Request.FitContext left out (Result.Dropped)
	reply    []int // Request.Reply's ids, where it may be held
	start    clock.Instant
	forward  int                // forward passes so far
	fwdTime  time.Duration      // spent inside forward passes
	flops    float64            // model arithmetic of those passes (model.FLOPs, model.EncodeFLOPs)
	cached   int                // tokens in the KV cache
	kept     *keptPrompts       // the record of the runner's kept caches (prefixCache.Keep), the engine's
	slot     int                // the slot this prompt's cache is kept in (resume)
	skip     int                // leading tokens of the next encoder pass already cached (resume)
	keep     bool               // the prompt's cache is still to be kept (keepCache)
	reading  bool               // the next encoder pass is the prompt's: read it in pieces (readPrompt)
	read     []int              // the ids cached so far by the prompt's pass (and what resume restored)
	next     []float32          // the encoder's logits for the token after the cache (the last Encode's)
	guideIDs *guideIDs          // AR guidance's view of the ids (Engine.guideIDs)
	text     *config.Text       // dims for the FLOPs count
	out      []int              // committed tokens, EOS excluded
	logprob  *TokenLogprob      // Request.Logprobs: the last AR pick's (forwardNext)
	hold     sampler.Constraint // Request.JSON or ToolCalls: what the sampler holds the picks to
	res      *Result
}

// generate runs the request. The caller holds the Engine's lock.
func (g *generation) generate() (*Result, error) {
	g.start = clock.Now()
	g.res = &Result{PromptTokens: len(g.prompt), Canvases: []CanvasStats{}, Tokens: []int{}, LeadHeld: g.lead, Dropped: g.dropped}
	if g.lead && g.req.LeadEnds && !g.req.OpeningTentative {
		g.endWithLead()
		return g.finish(), nil
	}
	g.resume()
	if rs, ok := g.run.(cacheReserver); ok {
		if err := rs.Reserve(g.contextTokens()); err != nil {
			return nil, fmt.Errorf("KV cache for %d tokens: %w", g.contextTokens(), err)
		}
	}
	var err error
	switch g.req.Mode {
	case AR:
		err = g.autoregressive()
	case Diffusion, "":
		err = g.diffusion()
	default:
		err = fmt.Errorf("unknown mode %q (want %q or %q)", g.req.Mode, Diffusion, AR)
	}
	if err != nil && !errors.Is(err, errStopped) { // stopped reading the prompt: StopCancelled, nothing written
		return nil, err
	}
	return g.finish(), nil
}

// promptPiece is PromptPiece, a variable so a test can read a prompt in one pass.
var promptPiece = PromptPiece

// errStopped: the context ended while the prompt was read (readPrompt); the
// generation stops with what it has, StopCancelled, as between steps.
var errStopped = errors.New("stopped while reading the prompt")

// readPrompt reads a long first pass (tokens, after what resume restored) in pieces
// of PromptPiece tokens, each an encoder pass of its own, with an EventPrompt before
// and after each and the context checked between them, and returns the last piece,
// which the caller's pass encodes (and whose logits it reads). Pieces start where the
// pass does — at 0, or at a point Restore gave — so they are the encoder's own
// chunks, and the values are a single pass's. Stopped between pieces, it keeps what
// was read for the next try (prefixCache) and returns errStopped.
func (g *generation) readPrompt(tokens []int) ([]int, error) {
	if !g.reading {
		return tokens, nil
	}
	g.reading = false
	if len(tokens) <= promptPiece {
		return tokens, nil
	}
	total := g.cached + len(tokens)
	for {
		g.emit(Event{Kind: EventPrompt, PromptRead: g.cached, PromptTokens: total})
		if g.cancelled() {
			g.keepCache(nil)
			return nil, errStopped
		}
		if len(tokens) <= promptPiece {
			return tokens, nil
		}
		piece := tokens[:promptPiece]
		if err := g.encoderPass(piece, func() error { _, err := g.run.Encode(piece); return err }); err != nil {
			return nil, err
		}
		g.read = append(g.read, piece...)
		tokens = tokens[promptPiece:]
	}
}

// keepCache keeps the cache as it is now, once a generation (g.keep, which resume
// sets), in the slot resume chose: after what the prompt's pass read before (g.read)
// and then tokens (its last piece's, which in AR mode may hold the opening), for a
// later generation's resume; the record names them. The callers: the prompt's last
// pass, or a stop while reading it.
func (g *generation) keepCache(tokens []int) {
	if !g.keep {
		return
	}
	g.keep = false
	k := &g.kept.slots[g.slot]
	k.tokens = k.tokens[:0]
	if g.run.(prefixCache).Keep(g.slot) {
		k.tokens = append(append(k.tokens, g.read...), tokens...)
		g.kept.clock++
		k.used = g.kept.clock
	}
}

// resume starts the KV cache for this prompt: with as much of a kept prompt's cache
// as this prompt begins with (prefixCache: the slot sharing most; all but the
// prompt's last token at most, whose logits the first pass returns), or empty. The
// first encoder pass then skips what is cached (g.skip) and keeps the cache after it
// (g.keep) in g.slot: the slot restored from (the conversation's: its next message
// goes on from it), else the one kept least recently, so a conversation's cache
// outlives a page made in between.
func (g *generation) resume() {
	g.reading = true
	pc, ok := g.run.(prefixCache)
	if !ok || g.kept == nil {
		g.run.Reset()
		return
	}
	g.keep = true
	best, same := 0, 0
	for s, k := range g.kept.slots {
		if c := min(commonPrefix(k.tokens, g.prompt), len(g.prompt)-1); c > same {
			best, same = s, c
		}
	}
	n := 0
	if same > 0 {
		n = pc.Restore(best, same)
	}
	g.slot = best
	if n == 0 {
		g.run.Reset()
		for s, k := range g.kept.slots {
			if k.used < g.kept.slots[g.slot].used {
				g.slot = s
			}
		}
	}
	g.skip, g.cached, g.res.PromptCached = n, n, n
	g.read = g.prompt[:n:n]
}

// unskipped is tokens, the next encoder pass's, less the leading ones the cache
// already holds (resume); after it, none are skipped.
func (g *generation) unskipped(tokens []int) []int {
	tokens, g.skip = tokens[g.skip:], 0
	return tokens
}

// contextTokens is the most the KV cache holds in this generation, at most
// max_position_embeddings (past which the runner refuses tokens): the prompt and
// every canvas (the last is never cached, but a guidance round scores it after the
// cache), or in AR mode the prompt, the opening and the tokens.
func (g *generation) contextTokens() int {
	n := len(g.prompt) + (g.s.MaxNewTokens+g.canvas-1)/g.canvas*g.canvas
	if g.req.Mode == AR {
		n = len(g.prompt) + len(g.opening) + g.s.MaxNewTokens
	}
	if m := g.text.MaxPositionEmbeddings; m > 0 {
		n = min(n, m)
	}
	return n
}

// forwardEncode runs one encoder pass, counting it.
func (g *generation) forwardEncode(tokens []int) (logits []float32, err error) {
	if tokens, err = g.readPrompt(g.unskipped(tokens)); err != nil {
		return nil, err
	}
	err = g.encoderPass(tokens, func() (err error) {
		logits, err = g.run.Encode(tokens)
		return err
	})
	if err == nil {
		g.keepCache(tokens) // after the prompt's pass (in AR mode with the opening)
	}
	g.next = logits
	return logits, err
}

// encoderPass runs pass, an encoder pass over tokens that caches them, and
// counts it: a forward pass, its time and arithmetic, the cached tokens.
func (g *generation) encoderPass(tokens []int, pass func() error) error {
	g.forward++
	t0 := clock.Now()
	err := pass()
	g.fwdTime += clock.Since(t0)
	if err != nil {
		return fmt.Errorf("encoder pass over %d tokens: %w", len(tokens), err)
	}
	g.flops += model.EncodeFLOPs(g.text, len(tokens), g.cached)
	g.cached += len(tokens)
	return nil
}

// cancelled reports whether the context is done, recording the stop reason.
func (g *generation) cancelled() bool {
	if g.ctx.Err() != nil {
		g.res.StopReason = StopCancelled
		return true
	}
	return false
}

// diffusion is the block-diffusion loop: prefill, then per canvas denoise,
// commit the argmax, cut at EOS, and encode the committed canvas before the next.
func (g *generation) diffusion() error {
	if g.cancelled() {
		return nil
	}
	logits, err := g.forwardEncode(g.prompt)
	if err != nil {
		return err
	}
	// A tentative opening, or a reply, only where the causal head's first
	// token begins it.
	if g.startUnsettled() {
		if err := checkLogits(logits, g.vocab); err != nil {
			return err
		}
		if g.settleStart(sampler.Argmax(logits), EventCommit) {
			return nil
		}
	}
	canvases := (g.s.MaxNewTokens + g.canvas - 1) / g.canvas
	var committed []int // the previous canvas, to encode before the next one
	for ci := range canvases {
		if committed != nil {
			if g.cancelled() {
				return nil
			}
			if _, err := g.forwardEncode(committed); err != nil {
				return err
			}
		}
		// The opening is held at the head of the answer: over as many canvases as
		// it reaches (a canvas it fills is committed as it is, with nothing to
		// develop), then the rest of the warm start in the first.
		off := ci * g.canvas
		held := g.opening[min(off, len(g.opening)):min(off+g.canvas, len(g.opening))]
		argmax := slices.Clone(held) // wholly held: the warm start has no room here
		if len(held) < g.canvas {
			given := argmax
			if ci == 0 {
				given = append(given, g.req.CanvasIDs[min(len(g.opening), len(g.req.CanvasIDs)):]...)
			}
			var stats CanvasStats
			var ok bool
			var err error
			if argmax, stats, ok, err = g.denoise(ci, given, len(held)); err != nil || !ok {
				return err
			}
			g.res.Canvases = append(g.res.Canvases, stats)
		}
		truncated, n, eos := sampler.TruncateEOS(argmax, g.eos, g.pad)
		room := g.s.MaxNewTokens - len(g.out)
		g.out = append(g.out, truncated[:min(n, room)]...)
		if ci == 0 {
			g.res.FirstCanvasMS = ms(clock.Since(g.start))
		}
		g.emit(Event{Kind: EventCommit, Canvas: ci, Committed: slices.Clone(g.out), Text: g.tok.Decode(g.out)})
		if eos && n <= room {
			g.res.StopReason = StopEOS
			return nil
		}
		committed = truncated
	}
	g.res.StopReason = StopMaxTokens
	return nil
}

// denoise develops one canvas from given (its first hold tokens held) and returns
// its final argmax. ok is false when the context was cancelled before the canvas
// finished.
func (g *generation) denoise(ci int, given []int, hold int) (argmax []int, stats CanvasStats, ok bool, err error) {
	draft := g.smp.Canvas(given, hold, g.canvas)
	guided := g.s.Guidance > 0 && g.s.GuidanceRounds > 0
	// The whole step runs in one call when the runner can do it (its logits stay
	// on the device, or are never written); only AR guidance reads logits, the
	// canvas's last step's.
	dev, onDevice := g.run.(stepper)
	var soft any
	var lastLogits []float32
	for step := 1; step <= g.s.MaxSteps; step++ {
		if g.cancelled() {
			return nil, stats, false, nil
		}
		var r sampler.StepResult
		var next any
		g.forward++
		t0 := clock.Now()
		if onDevice {
			var logits stepLogits
			r, next, logits, err = dev.DecodeStep(draft, soft, g.smp.Plan(step))
			g.fwdTime += clock.Since(t0)
			if err != nil {
				return nil, stats, false, fmt.Errorf("canvas %d step %d: decoder pass: %w", ci, step, err)
			}
			r = g.smp.Finish(r, step)
			if guided && r.Stop {
				if lastLogits, err = logits.Read(); err != nil {
					return nil, stats, false, fmt.Errorf("canvas %d step %d: %w", ci, step, err)
				}
			} else {
				logits.Free()
			}
		} else {
			var logits []float32
			logits, next, err = g.run.Decode(draft, soft, g.smp.Temperature(step))
			g.fwdTime += clock.Since(t0)
			if err != nil {
				return nil, stats, false, fmt.Errorf("canvas %d step %d: decoder pass: %w", ci, step, err)
			}
			if r, err = g.smp.Step(logits, step); err != nil {
				return nil, stats, false, fmt.Errorf("canvas %d step %d: %w", ci, step, err)
			}
			lastLogits = logits
		}
		g.flops += model.FLOPs(g.text, len(draft), g.cached)
		soft, draft, argmax = next, r.Draft, r.Argmax
		stats.Steps = step
		stats.Accepted = append(stats.Accepted, r.NumAccepted)
		if g.req.OnEvent != nil {
			// The text shows the draft as it would be committed now: cut at EOS.
			_, n, _ := sampler.TruncateEOS(r.Argmax, g.eos, g.pad)
			g.emit(Event{Kind: EventStep, Canvas: ci, Step: step, Steps: g.stepsBefore() + step,
				Draft: r.Draft, Accepted: r.Accepted, Argmax: r.Argmax, Entropy: r.Entropy,
				Committed: slices.Clone(g.out), Text: g.tok.Decode(append(slices.Clone(g.out), r.Argmax[:n]...))})
		}
		if r.Stop {
			break
		}
	}
	if guided && lastLogits != nil {
		return g.guide(ci, argmax, lastLogits, hold, stats)
	}
	return argmax, stats, true, nil
}

// guide runs the AR guidance rounds (sampler.Guide) over the developed canvas a,
// with dec the decoder logits of its last denoising step: each round is one
// encoder pass over a up to its first EOS (Runner.Score, nothing cached). ok is
// false when the context was cancelled.
func (g *generation) guide(ci int, a []int, dec []float32, hold int, stats CanvasStats) (argmax []int, _ CanvasStats, ok bool, err error) {
	gd, err := sampler.NewGuide(dec, g.vocab, g.s.Guidance, g.guideIDs.frozen)
	if err == nil {
		err = gd.InWords(g.s.GuidanceInWord, a, g.guideIDs.endsWord, g.guideIDs.continues)
	}
	if err == nil {
		err = gd.NoStutters(g.guideIDs.word)
	}
	if err != nil {
		return nil, stats, false, fmt.Errorf("canvas %d: %w", ci, err)
	}
	v := g.vocab
	// The text ends at the first EOS (guidance neither moves nor writes one): it
	// revises positions from…end−1. A position before the previous round's first
	// change sees the same canvas as then and would decide the same: each round
	// starts at that change.
	_, end, _ := sampler.TruncateEOS(a, g.eos, g.pad)
	from := hold
	for round := 1; round <= g.s.GuidanceRounds && from < end; round++ {
		if g.cancelled() {
			return nil, stats, false, nil
		}
		var rows []float32 // rows[k] predicts a[lo+k+1]
		lo := max(from-1, 0)
		if end > 1 {
			if rows, err = g.forwardScore(a[:end-1], lo); err != nil {
				return nil, stats, false, fmt.Errorf("canvas %d guidance round %d: %w", ci, round, err)
			}
		}
		ar := func(i int) []float32 {
			if i == 0 {
				return g.next // the encoder's prediction after the cache
			}
			return rows[(i-1-lo)*v : (i-lo)*v]
		}
		next, changed, err := gd.Round(a, from, end, ar)
		if err != nil {
			return nil, stats, false, fmt.Errorf("canvas %d guidance round %d: %w", ci, round, err)
		}
		stats.GuidanceRounds = round
		stats.Guided += changed
		if changed == 0 {
			break
		}
		moved := make([]bool, len(a))
		for i := range a {
			moved[i] = next[i] != a[i]
		}
		from = slices.Index(moved, true)
		if g.req.OnEvent != nil { // the end stays at end: guidance neither moves nor writes one
			g.emit(Event{Kind: EventStep, Canvas: ci, Step: stats.Steps + round, Guidance: true, Round: round, Steps: g.stepsBefore() + stats.Steps,
				Draft: next, Accepted: moved, Argmax: next,
				Committed: slices.Clone(g.out), Text: g.tok.Decode(append(slices.Clone(g.out), next[:end]...))})
		}
		a = next
	}
	return a, stats, true, nil
}

// forwardScore runs one encoder pass over tokens without caching them, counting
// it, and returns the logits of tokens from….
func (g *generation) forwardScore(tokens []int, from int) ([]float32, error) {
	g.forward++
	t0 := clock.Now()
	logits, err := g.run.Score(tokens, from)
	g.fwdTime += clock.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("encoder pass over %d tokens: %w", len(tokens), err)
	}
	if want := (len(tokens) - from) * g.vocab; len(logits) != want {
		return nil, fmt.Errorf("encoder pass over %d tokens returned %d logits, want %d", len(tokens), len(logits), want)
	}
	g.flops += model.ScoreFLOPs(g.text, len(tokens), from, g.cached)
	return logits, nil
}

// begins reports whether the model's first token id begins held, a
// tentative opening or a reply: its text is held's start (the Mini writes "**"
// where the opening's first token is "**w", the tokenizer's piece for
// "**within"). Never for an empty held.
func (g *generation) begins(id int, held []int) bool {
	text := g.tok.Decode([]int{id})
	return len(held) > 0 && strings.TrimSpace(text) != "" && strings.HasPrefix(g.tok.Decode(held), text)
}

// dropOpening lets the model write the answer from its start: a tentative
// opening it would not begin with (Request.OpeningTentative).
func (g *generation) dropOpening() {
	g.opening, g.lead, g.res.LeadHeld = nil, false, false
}

// startUnsettled reports whether the model's first token decides how the
// answer starts: a tentative opening, or a reply, to hold where it begins it.
func (g *generation) startUnsettled() bool {
	return g.req.OpeningTentative && len(g.opening) > 0 || len(g.reply) > 0
}

// settleStart settles the answer's start by the model's first token: a
// tentative opening it begins stays; else the reply, where it begins that, is
// the whole answer, emitted as one event of kind (true: nothing is left to
// write); else the opening is dropped and the model writes from the start.
func (g *generation) settleStart(first int, kind EventKind) (replied bool) {
	switch {
	case g.req.OpeningTentative && g.begins(first, g.opening):
	case g.begins(first, g.reply):
		g.holdReply()
		g.emit(Event{Kind: kind, Committed: slices.Clone(g.out), Text: g.tok.Decode(g.out)})
		return true
	default:
		g.dropOpening()
	}
	return false
}

// endWithLead makes the held Opening and Lead the whole answer
// (Request.LeadEnds): no forward pass, one commit (AR: token) event, and the
// answer ends where the entry ends, as the page or answer it was trained on
// ended there (StopEOS).
func (g *generation) endWithLead() {
	g.out = slices.Clone(g.opening)
	g.res.StopReason = StopEOS
	g.res.FirstCanvasMS = ms(clock.Since(g.start))
	kind := EventCommit
	if g.req.Mode == AR {
		kind = EventToken
	}
	g.emit(Event{Kind: kind, Committed: slices.Clone(g.out), Text: g.tok.Decode(g.out)})
}

// holdReply makes Request.Reply the whole answer: the model began it.
func (g *generation) holdReply() {
	g.dropOpening()
	g.opening, g.out = g.reply, slices.Clone(g.reply) // held: Result.HeldTokens, no rate
	g.res.Replied, g.res.StopReason = true, StopEOS
	g.res.FirstCanvasMS = ms(clock.Since(g.start))
}

// autoregressive decodes one token per encoder pass with the causal cache.
func (g *generation) autoregressive() error {
	if g.cancelled() {
		return nil
	}
	// The opening is answer text already decided: it goes through the encoder
	// with the prompt and opens the output. A tentative one, or a reply, only
	// where the model's own first pick begins it (the prompt, then the opening).
	var id int
	var err error
	if g.startUnsettled() {
		if id, err = g.forwardNext(g.prompt); err != nil {
			return err
		}
		if g.settleStart(id, EventToken) {
			return nil
		}
		if len(g.opening) > 0 {
			id, err = g.forwardNext(g.opening)
		}
	} else {
		id, err = g.forwardNext(append(slices.Clone(g.prompt), g.opening...))
	}
	if err != nil {
		return err
	}
	g.out = slices.Clone(g.opening)
	if len(g.out) >= g.s.MaxNewTokens {
		g.res.StopReason = StopMaxTokens
		return nil
	}
	for {
		if slices.Contains(g.eos, id) {
			g.res.StopReason = StopEOS
			return nil
		}
		g.out = append(g.out, id)
		if len(g.out) == len(g.opening)+1 {
			g.res.FirstCanvasMS = ms(clock.Since(g.start))
		}
		if g.logprob != nil { // Request.Logprobs: the pick's, from forwardNext
			g.res.Logprobs = append(g.res.Logprobs, *g.logprob)
		}
		g.emit(Event{Kind: EventToken, Committed: slices.Clone(g.out), Text: g.tok.Decode(g.out), Logprob: g.logprob})
		g.smp.Picked(id)
		if g.hold != nil && g.hold.Done() { // Request.JSON or ToolCalls: the object is closed, the call made, the answer whole
			g.res.StopReason = StopEOS
			return nil
		}
		if len(g.out) >= g.s.MaxNewTokens {
			g.res.StopReason = StopMaxTokens
			return nil
		}
		if g.cancelled() {
			return nil
		}
		if id, err = g.forwardNext([]int{id}); err != nil {
			return err
		}
	}
}

// logprobOf is id's log probability under logits (one row) and the request's
// TopLogprobs likeliest ids there.
func (g *generation) logprobOf(logits []float32, id int) TokenLogprob {
	lp, ids, lps := sampler.LogProbs(logits, id, g.req.TopLogprobs)
	out := TokenLogprob{ID: id, Logprob: lp}
	for k, alt := range ids {
		out.Top = append(out.Top, TopLogprob{ID: alt, Logprob: lps[k]})
	}
	return out
}

// scorePrompt is the prompt's pass where the request asks for its logprobs
// (Request.PromptLogprobs): the prompt (tokens; nothing is cached before it) is
// read a canvas of tokens at a time, each piece scored without caching
// (Runner.Score: a row for each of its tokens) and then encoded, so that every
// token after the first gets its log probability from the row before it. It
// returns the last pass's logits, the first pick's, as forwardEncode does.
func (g *generation) scorePrompt(tokens []int) ([]float32, error) {
	tokens = g.unskipped(tokens)
	g.reading = false
	g.res.Prompt = slices.Clone(tokens)
	var logits []float32
	for a := 0; a < len(tokens); a += g.canvas {
		if a > 0 {
			g.emit(Event{Kind: EventPrompt, PromptRead: a, PromptTokens: len(tokens)})
			if g.cancelled() {
				return nil, errStopped
			}
		}
		piece := tokens[a:min(a+g.canvas, len(tokens))]
		rows, err := g.forwardScore(piece, 0)
		if err != nil {
			return nil, err
		}
		for r := range piece {
			if next := a + r + 1; next < len(tokens) {
				g.res.PromptLogprobs = append(g.res.PromptLogprobs, g.logprobOf(rows[r*g.vocab:(r+1)*g.vocab], tokens[next]))
			}
		}
		if err := g.encoderPass(piece, func() (err error) {
			logits, err = g.run.Encode(piece)
			return err
		}); err != nil {
			return nil, err
		}
	}
	g.next = logits
	return logits, nil
}

// forwardNext runs one encoder pass over tokens and picks the AR token after them
// at the request's temperature and penalties: on the device when the runner can
// (tokenPicker; only the id comes back) and the request asks for no logprobs and
// no top-k or top-p (the device's pick has neither), else from the pass's logits
// on the host. Both draw the same token for a seed. The tokens join the sequence the
// repetition penalty reads first (sampler.See): the first call's are the prompt
// and the opening, as Hugging Face's input_ids hold the prompt. (The frequency
// penalty counts the picked tokens alone: the caller tells the sampler, Picked.)
func (g *generation) forwardNext(tokens []int) (int, error) {
	g.smp.See(tokens)
	tp, ok := g.run.(tokenPicker)
	truncated := sampler.TokenPlan{Temperature: g.s.Temperature, TopK: g.s.TopK, TopP: g.s.TopP}.Truncates()
	if !ok || !tp.TokensOnDevice() || g.req.Logprobs || truncated {
		var logits []float32
		var err error
		if g.req.PromptLogprobs && g.res.Prompt == nil { // the first pass: the prompt's
			logits, err = g.scorePrompt(tokens)
		} else {
			logits, err = g.forwardEncode(tokens)
		}
		if err != nil {
			return 0, err
		}
		if err := checkLogits(logits, g.vocab); err != nil {
			return 0, err
		}
		id := g.smp.Token(logits, g.s.Temperature)
		if g.req.Logprobs {
			lp := g.logprobOf(logits, id)
			g.logprob = &lp
		}
		return id, nil
	}
	tokens, err := g.readPrompt(g.unskipped(tokens))
	if err != nil {
		return 0, err
	}
	g.next = nil // no logits come back
	var id int
	err = g.encoderPass(tokens, func() (err error) {
		id, err = tp.EncodeNext(tokens, g.smp.PlanToken(g.s.Temperature))
		return err
	})
	if err != nil {
		return 0, err
	}
	g.keepCache(tokens)
	if id < 0 || id >= g.vocab {
		return 0, fmt.Errorf("encoder pass over %d tokens picked token %d, outside the vocabulary of %d", len(tokens), id, g.vocab)
	}
	return id, nil
}

func checkLogits(logits []float32, vocab int) error {
	if len(logits) != vocab {
		return fmt.Errorf("encoder returned %d logits, want %d", len(logits), vocab)
	}
	return nil
}

// stepsBefore is the denoising steps of the canvases committed so far.
func (g *generation) stepsBefore() int {
	n := 0
	for _, c := range g.res.Canvases {
		n += c.Steps
	}
	return n
}

// emit stamps an event with the run's counters and hands it to the caller.
func (g *generation) emit(ev Event) {
	if g.req.OnEvent == nil {
		return
	}
	ev.ForwardPasses = g.forward
	ev.Elapsed = clock.Since(g.start)
	g.req.OnEvent(ev)
}

// finish fills the Result's totals and emits EventDone.
func (g *generation) finish() *Result {
	r := g.res
	r.Tokens = slices.Clone(g.out)
	r.Text = g.tok.Decode(g.out)
	r.ForwardPasses = g.forward
	r.HeldTokens = min(len(g.opening), len(r.Tokens))
	r.Elapsed = clock.Since(g.start)
	r.ElapsedMS = ms(r.Elapsed)
	r.ForwardMS = ms(g.fwdTime)
	r.ForwardFLOPs = g.flops
	if s := r.Elapsed.Seconds(); s > 0 {
		r.TokensPerS = float64(max(len(r.Tokens)-len(g.opening), 0)) / s
	}
	g.emit(Event{Kind: EventDone, Canvas: max(len(r.Canvases)-1, 0), Committed: slices.Clone(g.out), Text: r.Text})
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// effectiveSampling fills zero knobs from the model's defaults and checks them.
func effectiveSampling(s, def Sampling) (Sampling, error) {
	// cmp.Or: the request's knob unless it is zero. Temperature has no default
	// (0 is greedy).
	s.MaxNewTokens, s.MaxSteps = cmp.Or(s.MaxNewTokens, def.MaxNewTokens), cmp.Or(s.MaxSteps, def.MaxSteps)
	s.TMin, s.TMax = cmp.Or(s.TMin, def.TMin), cmp.Or(s.TMax, def.TMax)
	s.EntropyBound = cmp.Or(s.EntropyBound, def.EntropyBound)
	s.ConfidenceThreshold = cmp.Or(s.ConfidenceThreshold, def.ConfidenceThreshold)
	s.StabilityThreshold = cmp.Or(s.StabilityThreshold, def.StabilityThreshold)
	s.Guidance, s.GuidanceRounds = cmp.Or(s.Guidance, def.Guidance), cmp.Or(s.GuidanceRounds, def.GuidanceRounds)
	s.GuidanceInWord = cmp.Or(s.GuidanceInWord, def.GuidanceInWord)
	// A model's defaults without a repetition penalty (a Sampling built by hand): off.
	s.RepetitionPenalty = cmp.Or(s.RepetitionPenalty, def.RepetitionPenalty, 1)
	if s.NoStutters = cmp.Or(s.NoStutters, def.NoStutters); s.NoStutters < 0 { // explicitly off
		s.NoStutters = 0
	}
	if s.FrequencyPenalty = cmp.Or(s.FrequencyPenalty, def.FrequencyPenalty); s.FrequencyPenalty < 0 { // explicitly off
		s.FrequencyPenalty = 0
	}
	if s.Guidance < 0 || s.GuidanceRounds < 0 { // explicitly off
		s.Guidance, s.GuidanceRounds, s.GuidanceInWord = 0, 0, 0
	}
	if s.GuidanceInWord < 0 { // λ inside words too
		s.GuidanceInWord = 0
	}
	switch {
	case s.MaxNewTokens < 1:
		return s, fmt.Errorf("max new tokens must be at least 1, got %d", s.MaxNewTokens)
	case s.Temperature < 0 || math.IsNaN(s.Temperature) || math.IsInf(s.Temperature, 0):
		return s, fmt.Errorf("temperature must be ≥ 0, got %g", s.Temperature)
	case math.IsNaN(s.Guidance) || math.IsInf(s.Guidance, 0):
		return s, fmt.Errorf("AR guidance weight must be a finite number, got %g", s.Guidance)
	case math.IsNaN(s.GuidanceInWord) || math.IsInf(s.GuidanceInWord, 0):
		return s, fmt.Errorf("AR guidance weight inside words must be a finite number, got %g", s.GuidanceInWord)
	case !(s.RepetitionPenalty > 0) || math.IsInf(s.RepetitionPenalty, 0):
		return s, fmt.Errorf("repetition penalty must be a finite number > 0 (1 is off, 1.1–1.3 is usual), got %g", s.RepetitionPenalty)
	case math.IsNaN(s.FrequencyPenalty) || math.IsInf(s.FrequencyPenalty, 0):
		return s, fmt.Errorf("frequency penalty must be a finite number (0 is the model's default, negative is off), got %g", s.FrequencyPenalty)
	case !(s.PresencePenalty >= 0) || math.IsInf(s.PresencePenalty, 0):
		return s, fmt.Errorf("presence penalty must be a finite number ≥ 0 (0 is off), got %g", s.PresencePenalty)
	case s.TopK < 0:
		return s, fmt.Errorf("top k must be ≥ 0 (0 is off), got %d", s.TopK)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return s, fmt.Errorf("top p must be between 0 and 1 (0 or 1 is off), got %g", s.TopP)
	}
	return s, nil
}

func (s Sampling) samplerParams() sampler.Params {
	var bias map[int]float32
	if len(s.LogitBias) > 0 {
		bias = make(map[int]float32, len(s.LogitBias))
		for id, b := range s.LogitBias {
			bias[id] = float32(b)
		}
	}
	return sampler.Params{MaxSteps: s.MaxSteps, TMin: s.TMin, TMax: s.TMax, EntropyBound: s.EntropyBound,
		ConfidenceThreshold: s.ConfidenceThreshold, StabilityThreshold: s.StabilityThreshold,
		RepetitionPenalty: s.RepetitionPenalty, FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty,
		LogitBias: bias, TopK: s.TopK, TopP: s.TopP}
}

// checkIDs reports an id outside [0, vocab).
func checkIDs(what string, ids []int, vocab int) error {
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return fmt.Errorf("%s: id %d at index %d is outside the vocabulary [0, %d)", what, id, i, vocab)
		}
	}
	return nil
}

var errEmptyPrompt = errors.New("the prompt is empty: give prompt text, messages or prompt ids")
