// Package sampler owns DiffusionGemma's entropy-bound sampler, on the host, over
// float32 logits laid out [canvas·vocab]: the linear temperature schedule, the
// tempered softmax and its per-position entropy, categorical sampling, argmax,
// entropy-bound acceptance, re-noising of the rest, the adaptive stop, EOS
// truncation of the committed canvas, the canvas initialisation (uniform noise or
// a warm start, optionally with held positions), the AR mode's one-token sampler
// with Hugging Face's repetition penalty (Penalize, See), and the AR guidance
// rounds that revise a developed canvas's words with the model's causal head
// (Guide, guide.go), the log probabilities an answer's tokens had under the
// model (LogProbs, logprobs.go), JSON mode's constraint on the AR picks
// (JSONObject, json.go) and its JSON Schema (CompileSchema, schema.go: written
// here, not taken from a grammar library, because it must read the same bytes
// as JSON mode's automaton and ban ids by the same first-two-bytes grouping),
// the hold on tool calls (ToolCalls, calls.go: Gemma 4's call format read into
// that automaton and schema), and the AR draw's top-k and top-p (nucleus.go).
//
// Held positions (infill): a canvas may start with tokens fixed in advance, such
// as an encyclopedia page's <h1> heading. The sampler treats them as already
// decided — sampled and argmax are the held token, entropy 0, always accepted —
// so they are never re-noised and the rest of the canvas develops around them.
// The model was trained on canvases where any position may be clean, so held
// tokens are inputs it knows.
//
// Numerics: the tempered softmax, its entropy and the sampling CDF are
// accumulated in float64 per position; argmax breaks ties by the lowest id; the
// acceptance sort breaks entropy ties by the lowest position. All randomness is
// counter-based (rng.go): each draw is a hash of the seed, the canvas, the step and
// the position, so the same seed reproduces a run bit for bit, whatever the number of
// worker goroutines.
//
// The same step runs inside a GoMLX graph on the device (StepGraph, graph.go): the
// sampler then only plans it (Plan: temperature, the step's random keys, the held
// tokens) and finishes it on the host (Finish: the counts and the adaptive stop from
// the ids, acceptance mask and entropies the device returns). On the host path the
// model's fused head (engine/kernels' Head) takes each position's statistics from its
// logits while they are in cache — Tempered's arithmetic, kernels.Tempered — and
// Plan.Decide makes the step from them, as Step does from Tempered's. So does the AR mode's
// pick (TokenGraph, planned by PlanToken): only the id comes back.
package sampler

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/darkroomlabs/darkroom/engine/kernels"
)

// Params are the sampler's knobs (generation_config.json names in comments).
type Params struct {
	MaxSteps            int     // max_denoising_steps per canvas
	TMin, TMax          float64 // t_min, t_max: temperature at the last and first step
	EntropyBound        float64 // sampler_config.entropy_bound
	ConfidenceThreshold float64 // confidence_threshold: mean entropy below which a stable canvas stops
	StabilityThreshold  int     // stability_threshold: steps the argmax must stay unchanged

	// RepetitionPenalty is θ of the AR mode's pick (repetition_penalty; see
	// Penalize); 0 or 1 is off. Diffusion steps and AR guidance never read it.
	RepetitionPenalty float64
	// FrequencyPenalty is OpenAI's frequency_penalty α of the AR mode's pick:
	// the logit of an id picked c times so far is lowered by α·c (see
	// Picked), after the repetition penalty. 0 is off. Diffusion steps and AR
	// guidance never read it.
	FrequencyPenalty float64
	// PresencePenalty is OpenAI's presence_penalty β of the AR mode's pick:
	// the logit of an id picked at least once is lowered by β, with the
	// frequency penalty's α·c (OpenAI's formula). 0 is off.
	PresencePenalty float64
	// LogitBias is OpenAI's logit_bias of the AR mode's pick: added to the
	// logits of its ids at every pick, with the penalties' bias (−100 bans an
	// id in effect, +100 all but forces it).
	LogitBias map[int]float32
	// TopK and TopP truncate the AR mode's draws: the k likeliest ids (0:
	// all), then the fewest of those whose probability reaches p (0 or 1:
	// all), Hugging Face's top_k and top_p warpers after the temperature.
	TopK int
	TopP float64
}

// Validate reports knobs that cannot work.
func (p Params) Validate() error {
	switch {
	case p.MaxSteps < 1:
		return fmt.Errorf("max steps must be at least 1, got %d", p.MaxSteps)
	case !(p.TMin > 0) || !(p.TMax > 0) || math.IsInf(p.TMin, 0) || math.IsInf(p.TMax, 0):
		return fmt.Errorf("temperatures must be positive and finite, got t_min=%g t_max=%g", p.TMin, p.TMax)
	case !(p.EntropyBound >= 0):
		return fmt.Errorf("entropy bound must be ≥ 0, got %g", p.EntropyBound)
	case !(p.ConfidenceThreshold >= 0):
		return fmt.Errorf("confidence threshold must be ≥ 0, got %g", p.ConfidenceThreshold)
	case p.StabilityThreshold < 0:
		return fmt.Errorf("stability threshold must be ≥ 0, got %d", p.StabilityThreshold)
	case !(p.RepetitionPenalty >= 0) || math.IsInf(p.RepetitionPenalty, 0):
		return fmt.Errorf("repetition penalty must be finite and ≥ 0 (0 or 1: off), got %g", p.RepetitionPenalty)
	case math.IsNaN(p.FrequencyPenalty) || math.IsInf(p.FrequencyPenalty, 0):
		return fmt.Errorf("frequency penalty must be a finite number, got %g", p.FrequencyPenalty)
	case math.IsNaN(p.PresencePenalty) || math.IsInf(p.PresencePenalty, 0):
		return fmt.Errorf("presence penalty must be a finite number, got %g", p.PresencePenalty)
	case slices.ContainsFunc(slices.Collect(maps.Values(p.LogitBias)), func(b float32) bool { return math.IsNaN(float64(b)) || math.IsInf(float64(b), 0) }):
		return errors.New("logit biases must be finite numbers")
	case p.TopK < 0:
		return fmt.Errorf("top k must be ≥ 0 (0: off), got %d", p.TopK)
	case !(p.TopP >= 0 && p.TopP <= 1):
		return fmt.Errorf("top p must be between 0 and 1 (0 or 1: off), got %g", p.TopP)
	}
	return nil
}

// Temperature is the schedule T = t_min + (t_max−t_min)·r/N, where r = N−step+1
// counts the remaining steps N…1: step 1 runs at t_max, step N at t_min+(t_max−t_min)/N.
func Temperature(p Params, step int) float64 {
	n := p.MaxSteps
	r := n - step + 1
	return p.TMin + (p.TMax-p.TMin)*float64(r)/float64(n)
}

// Position is what the tempered distribution of one canvas position yields: the
// draw, the argmax and the entropy (kernels.Position).
type Position = kernels.Position

// Tempered computes, for each of the len(logits)/vocab positions, the argmax, the
// entropy of softmax(logits/T) and a sample from it, using u[i] ∈ [0,1) as the
// sampling draw of position i (inverse CDF): kernels.Tempered on each row, the
// arithmetic the fused host head (kernels.Head) runs too. Positions run in parallel;
// the result depends only on the inputs.
func Tempered(logits []float32, vocab int, temperature float64, u []float64) []Position {
	c := len(logits) / vocab
	out := make([]Position, c)
	inv := 1 / temperature
	work := func(lo, hi int) {
		buf := make([]float32, vocab)
		for i := lo; i < hi; i++ {
			out[i] = kernels.Tempered(logits[i*vocab:(i+1)*vocab], buf, inv, u[i])
		}
	}
	if len(logits) < 1<<16 {
		work(0, c)
		return out
	}
	kernels.ParallelRows(c, work)
	return out
}

// expUnderflow is the exponential below which a softmax's term is zero
// (kernels.ExpFloor), for StepGraph.
const expUnderflow = kernels.ExpFloor

// Argmax returns the index of the largest value, ties → lowest index (0 for an
// empty row): kernels.ArgMax, the scan the step's statistics use.
func Argmax(row []float32) int {
	if len(row) == 0 {
		return 0
	}
	return kernels.ArgMax(row)
}

// Accept applies the entropy bound: sort the entropies ascending (ties by
// position) and accept the longest prefix whose k-th element satisfies
// cumsum(H)_k − H_k ≤ bound, i.e. the entropies before it sum to at most bound
// (an upper bound on the accepted tokens' joint mutual information). At least one
// position is always accepted.
func Accept(entropy []float32, bound float64) []bool {
	order := make([]int, len(entropy))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return entropy[order[a]] < entropy[order[b]] })
	accepted := make([]bool, len(entropy))
	var before float64
	for k, i := range order {
		if k > 0 && before > bound {
			break
		}
		accepted[i] = true
		before += float64(entropy[i])
	}
	return accepted
}

// Renoise returns the next draft: accepted positions keep their sampled token,
// position i of the others gets the fresh uniform id noise.IntN(i, vocab).
func Renoise(sampled []int, accepted []bool, vocab int, noise Key) []int {
	out := make([]int, len(sampled))
	for i, id := range sampled {
		if accepted[i] {
			out[i] = id
		} else {
			out[i] = noise.IntN(i, vocab)
		}
	}
	return out
}

// InitCanvas returns a canvas of length c: the given ids first (a warm start; ids
// beyond c are dropped), at the rest's positions i the uniform ids noise.IntN(i, vocab).
func InitCanvas(given []int, c, vocab int, noise Key) []int {
	out := make([]int, c)
	n := copy(out, given)
	for i := n; i < c; i++ {
		out[i] = noise.IntN(i, vocab)
	}
	return out
}

// TruncateEOS cuts ids at the first id in eos: that id and everything after it
// become pad. It returns the padded canvas and the number of real tokens before
// the EOS (len(ids) when there is none).
func TruncateEOS(ids []int, eos []int, pad int) (out []int, n int, found bool) {
	out = slices.Clone(ids)
	for i, id := range ids {
		if slices.Contains(eos, id) {
			for j := i; j < len(out); j++ {
				out[j] = pad
			}
			return out, i, true
		}
	}
	return out, len(ids), false
}

// Stopper is the adaptive stop (StableAndConfidentStoppingCriteria): a canvas is
// done when its argmax equals the argmax of each of the previous
// StabilityThreshold steps and its mean entropy is below ConfidenceThreshold.
type Stopper struct {
	stability  int
	confidence float64
	history    [][]int // the last stability+1 argmax canvases, newest last
}

// NewStopper returns a Stopper with an empty history (one per canvas).
func NewStopper(p Params) *Stopper {
	return &Stopper{stability: p.StabilityThreshold, confidence: p.ConfidenceThreshold}
}

// Observe records one step's argmax and entropies and reports whether the canvas
// is stable and confident.
func (s *Stopper) Observe(argmax []int, entropy []float32) bool {
	s.history = append(s.history, slices.Clone(argmax))
	if len(s.history) > s.stability+1 {
		s.history = s.history[len(s.history)-(s.stability+1):]
	}
	stable := len(s.history) == s.stability+1
	for _, prev := range s.history[:len(s.history)-1] {
		stable = stable && slices.Equal(prev, argmax)
	}
	return stable && MeanEntropy(entropy) < s.confidence
}

// MeanEntropy is the mean of the per-position entropies.
func MeanEntropy(entropy []float32) float64 {
	if len(entropy) == 0 {
		return 0
	}
	var sum float64
	for _, h := range entropy {
		sum += float64(h)
	}
	return sum / float64(len(entropy))
}

// Sampler runs the per-step sampling of one generation: it owns the random source,
// the counters that key it (canvases started, AR tokens drawn), the adaptive stop
// of the current canvas and, for the repetition penalty, the ids seen so far. Not
// safe for concurrent use.
type Sampler struct {
	p       Params
	vocab   int
	rng     RNG
	canvas  int // canvases started: the current one's counter (Key)
	tokens  int // AR tokens drawn
	stopper *Stopper
	held    []int     // the current canvas's held head (Canvas)
	buf     []float32 // Token's scratch row
	pen     []float32 // Token's penalized row
	seen    []bool    // [vocab]: the ids of the sequence so far (See), for the repetition penalty
	// The frequency penalty: counts [vocab] of each id picked so far (Picked),
	// and bias [vocab], what it adds to each id's logit.
	counts []int32
	bias   []float32

	// The AR stutter rule (NoStutters): word is the table, byWord its ids per
	// word, last the word of the sequence's last id (spaces aside; −1 none), and
	// banned [vocab] the ids of that word, which the next pick may not take.
	word   []int
	byWord map[int][]int
	last   int
	banned []bool

	// constraint holds the AR picks to a language (Constrain: JSON mode), and
	// union is its bans with the stutter rule's.
	constraint Constraint
	union      []bool

	// q and order are drawTruncated's buffers.
	q     []float64
	order []int32
}

// New returns a Sampler over a vocabulary of vocab ids, seeded with seed.
func New(p Params, vocab int, seed uint64) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if vocab < 1 {
		return nil, errors.New("sampler: empty vocabulary")
	}
	s := &Sampler{p: p, vocab: vocab, rng: NewRNG(seed), stopper: NewStopper(p), last: -1}
	if len(p.LogitBias) > 0 {
		s.bias = make([]float32, vocab)
		for id, b := range p.LogitBias {
			if id < 0 || id >= vocab {
				return nil, fmt.Errorf("sampler: logit bias for id %d, outside the vocabulary of %d", id, vocab)
			}
			s.bias[id] = b
		}
	}
	return s, nil
}

// NoStutters keeps the AR picks from writing a word twice side by side: after an
// id that spells a word (word[id] ≥ 0, the table of Guide.NoStutters: ids that
// differ by a leading space or case spell one word), the next pick may not be
// an id of the same word, spaces between them aside ("always always always",
// "for for" from a printer stuck in a loop the repetition penalty only slows).
// Digits, punctuation and spaces may repeat. It reads the sequence as See sees
// it, so call it before the first See; word nil turns it off.
func (s *Sampler) NoStutters(word []int) error {
	if word == nil {
		s.word, s.byWord, s.banned, s.last = nil, nil, nil, -1
		return nil
	}
	if len(word) != s.vocab {
		return fmt.Errorf("sampler: word table has %d entries, vocab is %d", len(word), s.vocab)
	}
	s.word, s.byWord, s.banned, s.last = word, map[int][]int{}, make([]bool, s.vocab), -1
	for id, w := range word {
		if w >= 0 {
			s.byWord[w] = append(s.byWord[w], id)
		}
	}
	return nil
}

// follow moves the stutter rule's last word to the end of ids and the banned
// mask with it.
func (s *Sampler) follow(ids []int) {
	last := s.last
	for _, id := range ids {
		if id < 0 || id >= s.vocab {
			continue
		}
		if w := s.word[id]; w != Space {
			last = max(w, -1)
		}
	}
	if last == s.last {
		return
	}
	for _, id := range s.byWord[s.last] {
		s.banned[id] = false
	}
	for _, id := range s.byWord[last] {
		s.banned[id] = true
	}
	s.last = last
}

// Params returns the sampler's knobs.
func (s *Sampler) Params() Params { return s.p }

// Canvas starts a new canvas of length c (resetting the adaptive stop) and returns
// its initial tokens: given first, uniform noise for the rest. The first hold
// tokens of given are held: every Step of this canvas keeps them as they are.
// hold is clamped to [0, min(len(given), c)].
func (s *Sampler) Canvas(given []int, hold, c int) []int {
	s.canvas++
	s.stopper = NewStopper(s.p)
	s.held = slices.Clone(given[:max(0, min(hold, len(given), c))])
	return InitCanvas(given, c, s.vocab, s.rng.Key(s.canvas, 0, streamNoise))
}

// Temperature is the temperature of 1-based step.
func (s *Sampler) Temperature(step int) float64 { return Temperature(s.p, step) }

// StepResult is one denoising step's outcome.
type StepResult struct {
	Temperature float64
	Draft       []int     // next canvas: accepted samples kept, the rest re-noised
	Accepted    []bool    // positions accepted this step
	NumAccepted int       // count of Accepted
	Argmax      []int     // argmax canvas: what would be committed now
	Entropy     []float32 // per position, of the tempered distribution
	MeanEntropy float64
	Stop        bool // stable and confident, or the last allowed step
}

// Step samples from the decoder's logits [c·vocab] of 1-based step: tempered
// softmax, sample, argmax, accept, re-noise, adaptive stop. Held positions come
// out as their held token with entropy 0 (so they are accepted first and use
// none of the entropy bound).
func (s *Sampler) Step(logits []float32, step int) (StepResult, error) {
	if len(logits) == 0 || len(logits)%s.vocab != 0 {
		return StepResult{}, fmt.Errorf("sampler: %d logits is not a whole number of rows of vocab %d", len(logits), s.vocab)
	}
	plan := s.Plan(step)
	pos := Tempered(logits, s.vocab, plan.Temperature, plan.Draws(len(logits)/s.vocab))
	return s.Finish(plan.Decide(pos, s.vocab), step), nil
}

// Plan is what a denoising step computed elsewhere (StepGraph, on the device) takes
// from the sampler: the same temperature, random keys, held tokens and bound Step
// would use.
type Plan struct {
	Temperature  float64
	Keys         [4]uint32 // the step's sampling Key (K1, K2), then its noise Key
	Held         []int     // the current canvas's held head (Canvas)
	EntropyBound float64
}

// Draws are the step's uniform draws for c positions (Tempered's u): the sampling
// Key's Float64 of each position.
func (p Plan) Draws(c int) []float64 {
	sample := Key{K1: p.Keys[0], K2: p.Keys[1]}
	u := make([]float64, c)
	for i := range u {
		u[i] = sample.Float64(i)
	}
	return u
}

// Decide completes a step from its positions' statistics (Tempered over the step's
// logits with Draws, or the fused host head): held positions become their held token
// with entropy 0 (so they are accepted first and use none of the entropy bound),
// Accept picks the rest, and Renoise redraws the others from the plan's noise Key. It
// fills Draft, Accepted, Argmax and Entropy; Finish does the rest.
func (p Plan) Decide(pos []Position, vocab int) StepResult {
	c := len(pos)
	r := StepResult{Argmax: make([]int, c), Entropy: make([]float32, c)}
	sampled := make([]int, c)
	for i, q := range pos {
		sampled[i], r.Argmax[i], r.Entropy[i] = q.Sampled, q.Argmax, q.Entropy
	}
	for i, id := range p.Held[:min(len(p.Held), c)] {
		sampled[i], r.Argmax[i], r.Entropy[i] = id, id, 0
	}
	r.Accepted = Accept(r.Entropy, p.EntropyBound)
	r.Draft = Renoise(sampled, r.Accepted, vocab, Key{K1: p.Keys[2], K2: p.Keys[3]})
	return r
}

// Plan returns 1-based step's plan for the current canvas.
func (s *Sampler) Plan(step int) Plan {
	sample, noise := s.rng.Key(s.canvas, step, streamSample), s.rng.Key(s.canvas, step, streamNoise)
	return Plan{Temperature: s.Temperature(step), Keys: [4]uint32{sample.K1, sample.K2, noise.K1, noise.K2},
		Held: s.held, EntropyBound: s.p.EntropyBound}
}

// Finish completes a step whose Draft, Accepted, Argmax and Entropy were computed (by
// Step, or on the device from Plan(step)): the temperature, the counts, the mean
// entropy and the adaptive stop, which it advances.
func (s *Sampler) Finish(r StepResult, step int) StepResult {
	r.Temperature = s.Temperature(step)
	r.NumAccepted = 0
	for _, a := range r.Accepted {
		if a {
			r.NumAccepted++
		}
	}
	r.MeanEntropy = MeanEntropy(r.Entropy)
	r.Stop = s.stopper.Observe(r.Argmax, r.Entropy) || step >= s.p.MaxSteps
	return r
}

// Penalize is Hugging Face's repetition penalty (RepetitionPenaltyLogitsProcessor,
// from CTRL) over one row of logits, in place: the logit of every id seen is divided
// by penalty where it is positive (or zero) and multiplied by it where it is negative,
// so θ > 1 makes a seen id less likely whatever its sign. Each id counts once,
// however often it occurred. The arithmetic is float32, as transformers' on float32
// scores; θ = 1 leaves every logit bit-identical.
func Penalize(logits []float32, seen []bool, penalty float64) {
	p := float32(penalty)
	for id, ok := range seen[:min(len(seen), len(logits))] {
		if !ok {
			continue
		}
		if x := logits[id]; x < 0 {
			logits[id] = x * p
		} else {
			logits[id] = x / p
		}
	}
}

// See adds ids to the sequence so far, the set the repetition penalty reads:
// every token the encoder is fed in AR mode — the prompt with its template and
// BOS, the held opening and each picked token — as Hugging Face penalises every id
// of input_ids, the prompt's included, so that a checkpoint whose
// generation_config.json sets repetition_penalty picks as it does in transformers.
// The opening is answer text already written, so its ids count as the model's own.
// Ids outside the vocabulary are ignored (the engine rejects them before); with the
// penalty off nothing is kept.
func (s *Sampler) See(ids []int) {
	if s.word != nil {
		s.follow(ids)
	}
	seen := s.seenIDs()
	if seen == nil {
		return
	}
	for _, id := range ids {
		if id >= 0 && id < s.vocab {
			seen[id] = true
		}
	}
}

// Constraint holds AR picks to a language: before each pick Banned marks the
// ids that may not come next ([vocab], read before the next Picked; nil: none
// is banned); Picked moves it past the id picked; Done reports that the answer
// is whole, nothing but its end to come. JSON mode's is a *JSONObject, held
// tool calls' a *ToolCalls.
type Constraint interface {
	Banned() []bool
	Picked(id int)
	Done() bool
}

// Constrain holds the AR picks to c from the next PlanToken on (nil: none).
// Its bans join the stutter rule's.
func (s *Sampler) Constrain(c Constraint) { s.constraint = c }

// Picked moves the constraint (Constrain) past the ids the model picked, and
// adds them to the counts the frequency and presence penalties read — not the
// prompt's nor a held opening's: OpenAI's penalties count the text the model
// has written (held, an entry's first sentence counted against its own words:
// on 50 seen titles ROUGE-L with the entry 0.419 against 0.423 without). See
// them too (the repetition penalty's set holds the prompt's as well). With the
// penalties off nothing is kept.
func (s *Sampler) Picked(ids ...int) {
	if s.constraint != nil {
		for _, id := range ids {
			s.constraint.Picked(id)
		}
	}
	if s.p.FrequencyPenalty == 0 && s.p.PresencePenalty == 0 {
		return
	}
	if s.counts == nil {
		s.counts = make([]int32, s.vocab)
	}
	if s.bias == nil { // (a logit bias made it already)
		s.bias = make([]float32, s.vocab)
	}
	α, β := float32(s.p.FrequencyPenalty), float32(s.p.PresencePenalty)
	for _, id := range ids {
		if id >= 0 && id < s.vocab {
			s.counts[id]++
			s.bias[id] = s.p.LogitBias[id] - α*float32(s.counts[id]) - β
		}
	}
}

// seenIDs is the [vocab] set of ids seen so far, made on first use, or nil when the
// repetition penalty is off (θ 0 or 1): the one place that decides whether it is on.
func (s *Sampler) seenIDs() []bool {
	if θ := s.p.RepetitionPenalty; θ == 0 || θ == 1 {
		return nil
	}
	if s.seen == nil {
		s.seen = make([]bool, s.vocab)
	}
	return s.seen
}

// Token samples one AR token from a single row of logits: argmax when
// temperature is 0 (greedy), otherwise a draw from softmax(logits/temperature).
// It is PickToken with PlanToken(temperature).
func (s *Sampler) Token(logits []float32, temperature float64) int {
	return s.PickToken(logits, s.PlanToken(temperature))
}

// TokenPlan is what an AR token picked elsewhere (TokenGraph, on the device) takes
// from the sampler: the temperature (≤ 0: greedy), the draw's Key, whose Float64(0)
// is the draw, the repetition penalty: θ (1: off) over the ids Seen so far, the
// frequency penalty's Bias, and the Banned ids.
type TokenPlan struct {
	Temperature float64
	Key         Key
	Penalty     float64 // θ, 1 when off
	// Seen marks the ids of the sequence so far ([vocab], See); nil when the
	// penalty is off. It is the Sampler's own: read it before the next See.
	Seen []bool
	// Bias is added to the logits after the repetition penalty: the frequency
	// penalty, −α·count for each id picked so far (Picked), 0 for the others;
	// nil when it is off. It is the Sampler's own: read it before the next
	// Picked.
	Bias []float32
	// TopK and TopP truncate the draw (above zero, and below one for TopP):
	// the k likeliest ids, then the nucleus of probability p (drawTruncated).
	// Greedy picks ignore them.
	TopK int
	TopP float64
	// Banned marks the ids the pick may not take ([vocab]: the last word's, under
	// NoStutters, and the constraint's, Constrain); nil when none is. Its logits
	// become Banish, after the penalty. It is the Sampler's own: read it before
	// the next See or Picked.
	Banned []bool
}

// Banish is the logit of a banned id: far below any real one, yet finite, so
// that the draw's arithmetic (exp, and the entropy's e·z) stays a number.
const Banish = -1e30

// PlanToken returns the next AR token's plan, advancing the token counter as Token
// does (a greedy pick draws nothing and advances nothing).
func (s *Sampler) PlanToken(temperature float64) TokenPlan {
	plan := TokenPlan{Penalty: 1}
	if seen := s.seenIDs(); seen != nil {
		plan.Penalty, plan.Seen = s.p.RepetitionPenalty, seen
	}
	if s.bias != nil {
		plan.Bias = s.bias
	}
	if s.last >= 0 && len(s.byWord[s.last]) < s.vocab { // (never every id)
		plan.Banned = s.banned
	}
	if s.constraint != nil {
		if banned := s.constraint.Banned(); banned != nil {
			plan.Banned = s.constrained(plan.Banned, banned)
		}
	}
	if temperature <= 0 {
		return plan
	}
	s.tokens++
	plan.Temperature, plan.Key = temperature, s.rng.Key(s.tokens, 0, streamToken)
	plan.TopK, plan.TopP = s.p.TopK, s.p.TopP
	return plan
}

// constrained joins the constraint's bans to the stutter rule's (nil: none):
// their union, unless it bans every id (then the constraint's).
func (s *Sampler) constrained(stutter, banned []bool) []bool {
	if stutter == nil {
		return banned
	}
	s.union = append(s.union[:0], banned...)
	all := true
	for id, b := range stutter {
		s.union[id] = s.union[id] || b
		all = all && s.union[id]
	}
	if all {
		return banned
	}
	return s.union
}

// Truncates reports whether the plan's draw is truncated (TopK, TopP): the
// host's, which the device's pick does not do.
func (p TokenPlan) Truncates() bool {
	return p.Temperature > 0 && (p.TopK > 0 || p.TopP > 0 && p.TopP < 1)
}

// PickToken picks one AR token from a single row of logits as plan says: the
// repetition penalty first (Penalize, on a copy: logits are left as they are),
// then the frequency penalty's bias added (float32), the banned
// ids' logits set to Banish (NoStutters), then argmax (ties → lowest
// id) when plan.Temperature ≤ 0, otherwise the inverse-CDF draw
// plan.Key.Float64(0) from softmax(logits/T) — the order of transformers'
// logits processors before its warpers.
func (s *Sampler) PickToken(logits []float32, plan TokenPlan) int {
	penalize, ban := plan.Seen != nil && plan.Penalty != 1, plan.Banned != nil
	if penalize || ban || plan.Bias != nil {
		s.pen = append(s.pen[:0], logits...)
		logits = s.pen
	}
	if penalize {
		Penalize(logits, plan.Seen, plan.Penalty)
	}
	for id, b := range plan.Bias[:min(len(plan.Bias), len(logits))] {
		logits[id] += b
	}
	if ban {
		for id, b := range plan.Banned[:min(len(plan.Banned), len(logits))] {
			if b {
				logits[id] = Banish
			}
		}
	}
	if plan.Temperature <= 0 {
		return Argmax(logits)
	}
	if plan.Truncates() {
		return s.drawTruncated(logits, plan, plan.Key.Float64(0))
	}
	if len(s.buf) < len(logits) {
		s.buf = make([]float32, len(logits))
	}
	return kernels.Tempered(logits, s.buf, 1/plan.Temperature, plan.Key.Float64(0)).Sampled
}
