package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
)

// Engine is a loaded model ready to generate. One generation runs at a time;
// Generate may be called from any goroutine (concurrent calls wait their turn).
type Engine struct {
	mu sync.Mutex // serializes generations: the runner's KV cache is single-use

	cfg       *config.Model
	tokenizer *tokenizer.Tokenizer
	tok       textCodec // tokenizer, or a fake in tests
	run       runner
	prompt    func(req *Request) ([]int, error) // request → prompt ids (chat template etc.)
	backend   string
	be        backends.Backend   // nil for fakes
	fallback  string             // why XLA did not start, if it was asked for
	path      string             // where the model runs: PathHost, PathGraph or PathSplit
	gguf      weights.GGUFLayout // the layout of the GGUF file the weights came from (zero: none)
	dir       string             // the model's folder (Source.Dir; "" for one in an fs.FS)
	release   func()             // frees the model's device memory; nil when nothing to free
	closed    bool
	guideIDs  *guideIDs          // what AR guidance knows of each id's text, built on first use
	jsonVocab *sampler.JSONVocab // the vocabulary as JSON mode reads it, built on first use
	gen       *generation        // the generation running (under mu), for onCompile
	kept      keptPrompts        // the record of the prompts the runner's cache kept (prefixCache)
}

// onCompile is the graph runner's OnCompile: the first graph a generation
// builds tells its caller (EventPrepare). It runs on the generation's own
// goroutine, inside Generate, which holds mu.
func (e *Engine) onCompile() {
	if g := e.gen; g != nil && !g.prepared {
		g.prepared = true
		g.emit(Event{Kind: EventPrepare, Committed: slices.Clone(g.out), Text: g.tok.Decode(g.out)})
	}
}

// textCodec is the tokenizer as the engine uses it.
type textCodec interface {
	Encode(text string) []int
	Decode(ids []int) string
}

// Config returns the model's configuration (config.json with generation_config.json
// in Config().Generation). Callers must not modify it.
func (e *Engine) Config() *config.Model { return e.cfg }

// Backend names the GoMLX backend the model runs on ("go", "xla:cuda", …).
func (e *Engine) Backend() string { return e.backend }

// GenerationDefaults returns the model's sampler defaults (generation_config.json),
// the values a zero Sampling field stands for.
func (e *Engine) GenerationDefaults() Sampling { return SamplingDefaults(e.cfg.Generation) }

// SamplingDefaults are the sampler defaults of a generation config, for callers
// that read a model's config without loading it (the app's Settings screen).
func SamplingDefaults(g config.Generation) Sampling {
	return Sampling{MaxNewTokens: g.MaxNewTokens, MaxSteps: g.MaxDenoisingSteps, TMin: g.TMin, TMax: g.TMax,
		EntropyBound: g.EntropyBound, ConfidenceThreshold: g.ConfidenceThreshold,
		StabilityThreshold: g.StabilityThreshold, Guidance: g.ARGuidance, GuidanceRounds: g.ARGuidanceRounds,
		GuidanceInWord: g.ARGuidanceInWord, RepetitionPenalty: g.RepetitionPenalty, NoStutters: on(g.ARNoStutters),
		FrequencyPenalty: g.ARFrequencyPenalty}
}

// on is a config switch as a Sampling knob: 1 on, 0 (the default: off) off.
func on(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Close frees the model. It waits for a running generation to finish; cancel its
// context first to stop it early.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.release != nil {
		e.release()
	}
	return nil
}

// Generate runs one request to completion, to EOS, to max_new_tokens or until
// ctx is cancelled. Cancellation is checked before every forward pass; a
// cancelled generation is not an error: it returns the tokens committed so far
// with StopReason StopCancelled. OnEvent, if set, is called for every step.
func (e *Engine) Generate(ctx context.Context, req Request) (res *Result, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, fmt.Errorf("generate: %w", ErrClosed)
	}
	defer func() {
		// GoMLX reports graph and execution errors by panicking; keep them inside.
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("generate: %v", r)
		}
	}()
	g, err := e.newGeneration(ctx, &req)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	e.gen = g
	defer func() {
		e.gen = nil
		if err != nil { // the cache may hold part of a failed pass: start over next time
			e.run.Reset()
			e.kept.clear()
		}
	}()
	res, err = g.generate()
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	return res, nil
}

// ErrClosed is the error Generate returns once the engine is closed.
var ErrClosed = errors.New("the engine is closed")

// ContextError reports a request that does not fit in the model's context:
// Prompt tokens plus MaxNew new tokens need Need positions (the new tokens
// rounded up to whole canvases in diffusion mode); the model has Limit.
type ContextError struct{ Prompt, MaxNew, Need, Limit int }

func (e *ContextError) Error() string {
	if e.MaxNew > e.Limit {
		return fmt.Sprintf("%d new tokens do not fit in the model's %d positions", e.MaxNew, e.Limit)
	}
	return fmt.Sprintf("prompt (%d tokens) plus %d new tokens needs %d positions; the model has %d",
		e.Prompt, e.MaxNew, e.Need, e.Limit)
}

// Checked is what Check found: what Generate would read and hold.
type Checked struct {
	PromptTokens int  // the prompt's length in tokens
	LeadHeld     bool // Request.Lead fits after the Opening and would be held (Result.LeadHeld)
	Dropped      int  // messages Request.FitContext would leave out (Result.Dropped)
}

// Check runs the checks Generate runs before its first forward pass (sampling
// knobs, prompt, opening, context length) without running the model. A request
// too long for the context is a *ContextError. Check does not wait for a
// running generation.
func (e *Engine) Check(req Request) (Checked, error) {
	p, err := e.plan(&req)
	if err != nil {
		return Checked{}, err
	}
	return Checked{PromptTokens: len(p.prompt), LeadHeld: p.lead, Dropped: p.dropped}, nil
}

// endIDs are the ids at which a generation ends on this model: generation
// config's eos_token_id, or config.json's when it names none. It is the one
// place that decides it; IsEnd answers from it for the screens and the server.
func (e *Engine) endIDs() []int {
	if eos := e.cfg.Generation.EOSTokenIDs; len(eos) > 0 {
		return eos
	}
	return e.cfg.EOSTokenIDs
}

// IsEnd reports whether id ends a generation here (see endIDs: the ids at which
// Generate stops) or is the pad id that fills a canvas after one, so that a
// draft drawn from a step's ids shows no text from there on.
func (e *Engine) IsEnd(id int) bool {
	return slices.Contains(e.endIDs(), id) || id == e.cfg.Generation.PadTokenID
}

// TokenText is one token's text on its own, as a draft draws an undecided
// position's noise.
func (e *Engine) TokenText(id int) string {
	if e.tokenizer == nil {
		return ""
	}
	return e.tokenizer.DecodeToken(id)
}

// plan is a checked request's prompt, opening and knobs.
type plan struct {
	s               Sampling
	prompt, opening []int // opening: Request.Opening's ids, and Lead's where it fits
	lead            bool  // Request.Lead is in opening
	reply           []int // Request.Reply's ids, where it may be held (nil where not)
	eos             []int
	dropped         int // Request.FitContext: messages left out of the prompt
}

func (e *Engine) plan(req *Request) (plan, error) {
	t := e.cfg.Text
	s, err := effectiveSampling(req.Sampling, e.GenerationDefaults())
	if err != nil {
		return plan{}, err
	}
	if err := checkPrinterOnly(req); err != nil {
		return plan{}, err
	}
	for id, b := range s.LogitBias {
		switch {
		case id < 0 || id >= t.VocabSize:
			return plan{}, fmt.Errorf("logit bias for token %d, outside the vocabulary of %d", id, t.VocabSize)
		case math.IsNaN(b) || math.IsInf(b, 0):
			return plan{}, fmt.Errorf("logit bias for token %d must be a finite number, got %g", id, b)
		}
	}
	prompt, err := e.prompt(req)
	if err != nil {
		return plan{}, err
	}
	if len(prompt) == 0 {
		return plan{}, errEmptyPrompt
	}
	if err := checkIDs("prompt", prompt, t.VocabSize); err != nil {
		return plan{}, err
	}
	if err := checkIDs("canvas ids", req.CanvasIDs, t.VocabSize); err != nil {
		return plan{}, err
	}
	canvas := e.cfg.CanvasLength
	eos := e.endIDs()
	opening := e.tok.Encode(req.Opening)
	if req.OpeningExtra { // an answer so far, to go on from: max new tokens follow it
		s.MaxNewTokens += len(opening)
	}
	lead := false
	if req.Lead != "" {
		// Encoded with the opening, as one text: the ids the model reads are
		// those of the page as written.
		if both := e.tok.Encode(req.Opening + req.Lead); len(both) <= s.MaxNewTokens {
			opening, lead = both, true
		}
	}
	if err := checkIDs("opening", opening, t.VocabSize); err != nil {
		return plan{}, err
	}
	switch {
	case len(opening) > s.MaxNewTokens:
		return plan{}, fmt.Errorf("the opening is %d tokens; it must fit in max new tokens (%d)", len(opening), s.MaxNewTokens)
	case slices.ContainsFunc(opening, func(id int) bool { return slices.Contains(eos, id) }):
		return plan{}, fmt.Errorf("the opening %q contains an end-of-sequence token", req.Opening)
	}
	var reply []int
	if req.Reply != "" && (req.OpeningTentative || len(opening) == 0) {
		reply = e.tok.Encode(req.Reply)
		if err := checkIDs("reply", reply, t.VocabSize); err != nil {
			return plan{}, err
		}
		if len(reply) > s.MaxNewTokens || slices.ContainsFunc(reply, func(id int) bool { return slices.Contains(eos, id) }) {
			reply = nil // not the whole reply: the model writes its answer
		}
	}
	dropped := 0
	if mp := t.MaxPositionEmbeddings; mp > 0 {
		if s.MaxNewTokens > mp { // before the sums below, which could overflow
			return plan{}, &ContextError{Prompt: len(prompt), MaxNew: s.MaxNewTokens, Need: len(prompt) + mp, Limit: mp}
		}
		newTokens := s.MaxNewTokens
		if req.Mode != AR {
			newTokens = (s.MaxNewTokens + canvas - 1) / canvas * canvas
		}
		if len(prompt)+newTokens > mp && req.FitContext {
			if prompt, dropped, err = e.fitContext(req, prompt, mp-newTokens); err != nil {
				return plan{}, err
			}
		}
		if need := len(prompt) + newTokens; need > mp {
			return plan{}, &ContextError{Prompt: len(prompt), MaxNew: s.MaxNewTokens, Need: need, Limit: mp}
		}
	}
	return plan{s: s, prompt: prompt, opening: opening, lead: lead, reply: reply, eos: eos, dropped: dropped}, nil
}

// checkPrinterOnly checks what only the printer writes, a pick at a time,
// with no text held before the model's own: Request.Logprobs (TopLogprobs 0 to
// MaxTopLogprobs, PromptLogprobs with it) and Request.JSON.
func checkPrinterOnly(req *Request) error {
	switch {
	case req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs:
		return fmt.Errorf("top logprobs must be 0 to %d, got %d", MaxTopLogprobs, req.TopLogprobs)
	case req.TopLogprobs > 0 && !req.Logprobs:
		return errors.New("top logprobs come with logprobs: ask for both")
	case req.PromptLogprobs && !req.Logprobs:
		return errors.New("the prompt's logprobs come with logprobs: ask for both")
	}
	held := req.Opening != "" || req.Lead != "" || req.Reply != ""
	switch {
	case req.Logprobs && req.Mode != AR:
		return errors.New("log probabilities come with AR mode, where the model picks one token after another; " +
			"a diffusion canvas's tokens are not picked in order")
	case req.Logprobs && held:
		return errors.New("log probabilities are of the model's own picks: send no opening, lead or reply with them")
	case req.JSON && req.Mode != AR:
		return errors.New("a JSON answer is written in AR mode, where each pick can be held to JSON; a diffusion canvas is not written in order")
	case req.JSON && held:
		return errors.New("a JSON answer begins with its object: send no opening, lead or reply with it")
	case req.JSONSchema != nil && !req.JSON:
		return errors.New("a schema holds a JSON answer: ask for JSON with it")
	}
	if h := req.ToolCalls; h != nil {
		switch {
		case req.Mode != AR:
			return errors.New("held tool calls are written in AR mode, where each pick can be held to the tools; a diffusion canvas is not written in order")
		case len(req.Tools) == 0:
			return errors.New("tool calls are held to the tools declared: send the tools with the hold")
		case req.JSON:
			return errors.New("an answer is held to a JSON object or to tool calls, not both")
		case req.Lead != "" || req.Reply != "":
			return errors.New("held tool calls take no lead or reply: the answer is the model's words and calls")
		}
		for name := range h.Schemas {
			if !slices.ContainsFunc(req.Tools, func(t Tool) bool { return t.Name == name }) {
				return fmt.Errorf("the hold has a schema for %q, which is not among the tools", name)
			}
		}
		if f := h.Function; f != "" && !slices.ContainsFunc(req.Tools, func(t Tool) bool { return t.Name == f }) {
			return fmt.Errorf("the calls are held to the function %q, which is not among the tools", f)
		}
	}
	return nil
}

// fitContext is Request.FitContext: the prompt of req's Messages less the
// fewest earliest turns that leave it at most room tokens long, and how many
// messages it leaves out. The part kept begins with a user message (after any
// leading system turns) and holds the last one; the first start that fits is
// found by bisection, each try one encoding. Where the last user message alone
// is too long it returns that prompt, and the caller's check says so.
func (e *Engine) fitContext(req *Request, prompt []int, room int) ([]int, int, error) {
	msgs := req.Messages
	sys := 0
	for sys < len(msgs) && msgs[sys].Role == "system" {
		sys++
	}
	var starts []int // where the part read may begin: each user message after the first kept one
	for i := sys + 1; i < len(msgs); i++ {
		if msgs[i].Role == "user" {
			starts = append(starts, i)
		}
	}
	encode := func(from int) ([]int, error) {
		r := *req
		r.Messages = append(slices.Clip(msgs[:sys]), msgs[from:]...)
		return e.prompt(&r)
	}
	best, bestFrom := prompt, sys // none of starts: the prompt as it is
	lo, hi := 0, len(starts)-1
	for lo <= hi { // the earliest start whose prompt fits
		mid := (lo + hi) / 2
		ids, err := encode(starts[mid])
		if err != nil {
			return nil, 0, err
		}
		switch {
		case len(ids) <= room:
			best, bestFrom, hi = ids, starts[mid], mid-1
		case mid == len(starts)-1: // not even the last user message's turn fits: that prompt, refused
			best, bestFrom, lo = ids, starts[mid], mid+1
		default:
			lo = mid + 1
		}
	}
	return best, bestFrom - sys, nil
}

// newGeneration checks a request and prepares its state.
func (e *Engine) newGeneration(ctx context.Context, req *Request) (*generation, error) {
	t := e.cfg.Text
	p, err := e.plan(req)
	if err != nil {
		return nil, err
	}
	s, prompt, opening, eos, canvas := p.s, p.prompt, p.opening, p.eos, e.cfg.CanvasLength
	smp, err := sampler.New(s.samplerParams(), t.VocabSize, req.Seed)
	if err != nil {
		return nil, err
	}
	if (s.Guidance > 0 || s.NoStutters > 0) && e.guideIDs == nil {
		e.guideIDs = newGuideIDs(e.tok, t.VocabSize, eos)
	}
	if s.NoStutters > 0 && req.Mode == AR {
		if err := smp.NoStutters(e.guideIDs.word); err != nil {
			return nil, err
		}
	}
	if (req.JSON || req.ToolCalls != nil) && e.jsonVocab == nil {
		e.jsonVocab = e.newJSONVocab(t.VocabSize, eos)
	}
	var hold sampler.Constraint
	switch {
	case req.JSON:
		j := e.jsonVocab.ObjectOf(req.JSONSchema)
		if req.Thinking {
			j.ThoughtFirst() // the model thinks, then writes the object
		}
		hold = j
	case req.ToolCalls != nil:
		rules := sampler.CallRules{Only: req.ToolCalls.Only, Single: req.ToolCalls.Single, ThoughtFirst: req.Thinking}
		for _, tool := range req.Tools {
			if f := req.ToolCalls.Function; f == "" || f == tool.Name {
				rules.Tools = append(rules.Tools, sampler.CallTool{Name: tool.Name, Schema: req.ToolCalls.Schemas[tool.Name]})
			}
		}
		calls, err := e.jsonVocab.Calls(rules)
		if err != nil {
			return nil, err
		}
		if !calls.Opening(opening) {
			return nil, fmt.Errorf("the opening %q does not begin what the held tool calls allow", req.Opening)
		}
		hold = calls
	}
	if hold != nil {
		smp.Constrain(hold)
	}
	kept := &e.kept
	if req.NoPromptCache || req.PromptLogprobs { // (scorePrompt reads the whole prompt)
		kept = nil // resume starts from empty and keeps nothing
	}
	return &generation{ctx: ctx, req: req, run: e.run, kept: kept, tok: e.tok, smp: smp, s: s, guideIDs: e.guideIDs,
		text: &e.cfg.Text, canvas: canvas, vocab: t.VocabSize, eos: eos, pad: e.cfg.Generation.PadTokenID, prompt: prompt, opening: opening,
		lead: p.lead, reply: p.reply, dropped: p.dropped, hold: hold}, nil
}

// newJSONVocab is the vocabulary as JSON mode and held tool calls read it:
// each id's text (a byte-fallback id's one byte; the tool call format's
// control tokens named as the sampler names them), the tokenizer's special ids
// (never written as text, but for those control tokens: the pad among them)
// and the ends, eos.
func (e *Engine) newJSONVocab(vocab int, eos []int) *sampler.JSONVocab {
	texts, special := make([]string, vocab), make([]bool, vocab)
	for id := range vocab {
		if e.tokenizer != nil {
			texts[id], special[id] = e.tokenizer.DecodeToken(id), e.tokenizer.IsSpecial(id)
		} else { // (a test's codec: its control tokens are whole ids)
			texts[id] = e.tok.Decode([]int{id})
			_, special[id] = callTokens[texts[id]]
		}
		if name, ok := callTokens[texts[id]]; ok && special[id] {
			texts[id] = name
		}
	}
	return sampler.NewJSONVocab(texts, special, eos)
}

// callTokens names the tool call format's control tokens, and a thought's,
// as the sampler's call hold reads them.
var callTokens = map[string]string{chat.Quote: sampler.CallQuote, chat.ToolCallStart: sampler.CallStart, chat.ToolCallEnd: sampler.CallEnd,
	chat.ChannelStart: sampler.ThoughtStart, chat.ChannelEnd: sampler.ThoughtEnd}

// guideIDs is what AR guidance knows of each id's text, by id.
type guideIDs struct {
	// frozen ids are neither replaced nor written: the end tokens, ids that decode
	// to no text (special tokens) and ids whose text holds markup (< > " =), so
	// that the decoder alone decides a page's tags, attributes and end, and
	// guidance revises the words between them.
	frozen []bool
	// endsWord: the text ends in a letter or digit; continues: it begins with one
	// (no space), so after an endsWord id it continues that word
	// (sampler.Guide.InWords).
	endsWord, continues []bool
	// word: which word the text spells (lower-cased, without spaces), the same
	// number for ids that spell the same one, sampler.Space for spaces alone, −1
	// for any other text without a letter; no word is written twice side by side
	// (sampler.Guide.NoStutters; in AR mode, Sampler.NoStutters).
	word []int
}

func newGuideIDs(tok textCodec, vocab int, eos []int) *guideIDs {
	ids := &guideIDs{frozen: make([]bool, vocab), endsWord: make([]bool, vocab), continues: make([]bool, vocab), word: make([]int, vocab)}
	words := map[string]int{}
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	for id := range vocab {
		text := tok.Decode([]int{id})
		ids.frozen[id] = text == "" || strings.ContainsAny(text, `<>"=`) || slices.Contains(eos, id)
		if first, _ := utf8.DecodeRuneInString(text); isWord(first) {
			ids.continues[id] = true
		}
		if last, _ := utf8.DecodeLastRuneInString(text); isWord(last) {
			ids.endsWord[id] = true
		}
		ids.word[id] = -1
		if text != "" && strings.TrimSpace(text) == "" {
			ids.word[id] = sampler.Space
		}
		if strings.IndexFunc(text, unicode.IsLetter) >= 0 {
			key := strings.ToLower(strings.TrimSpace(text))
			if _, ok := words[key]; !ok {
				words[key] = len(words)
			}
			ids.word[id] = words[key]
		}
	}
	return ids
}

// Where a loaded model's forward passes run (Engine.Path).
const (
	// PathHost: float32 on the host with engine/model's AVX2 GEMM (pure-Go backend).
	PathHost = "host"
	// PathGraph: compiled GoMLX graphs on the backend (always on XLA).
	PathGraph = "graph"
	// PathSplit: the model split between the backend's device (its first layers, the
	// embedding, the head and the sampler, in graphs) and the host (its other layers):
	// Options.DeviceLayers.
	PathSplit = "split"
)

// Path says where the model's forward passes run: PathHost, PathGraph or PathSplit.
func (e *Engine) Path() string { return e.path }

// DeviceLayers is how many of the model's layers run on the device where it is split
// with the host (PathSplit; Options.DeviceLayers), 0 otherwise.
func (e *Engine) DeviceLayers() int {
	if mr, ok := e.run.(modelRunner); ok {
		return mr.r.DeviceLayers()
	}
	return 0
}

// GGUFLayout is how the GGUF file the model's weights came from stores them — each
// tensor's block type, read from its header (weights.GGUFLayout) — by which the
// speed estimates price the blocks the host path multiplies as stored; the zero
// layout for any other checkpoint.
func (e *Engine) GGUFLayout() weights.GGUFLayout { return e.gguf }

// MeasureMatMul times a raw float32 [m,k]×[k,n] matmul on the engine's own
// backend (see backend.MeasureMatMul): the yardstick for the model's forward
// FLOP/s. It waits for a running generation.
func (e *Engine) MeasureMatMul(ctx context.Context, m, k, n, runs int) (backend.MatMulRate, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.be == nil {
		return backend.MatMulRate{}, errors.New("measure matmul: no backend (engine closed)")
	}
	return backend.MeasureMatMul(ctx, e.be, m, k, n, runs)
}
