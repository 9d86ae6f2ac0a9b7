package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

// loopRunner is a fake causal model that loops: after token 30 it prefers 31, after
// 31 32, after 32 30 (logit 1.5), every other id a deterministic clutter in [0, 1.2)
// that depends on the last token. The prompt ends 30 31 32, so greedy decoding
// repeats the prompt's three ids for ever, as a small model's printer does.
type loopRunner struct {
	scriptRunner
	last int
}

func (f *loopRunner) Encode(tokens []int) ([]float32, error) {
	f.last = tokens[len(tokens)-1]
	row := make([]float32, f.vocab)
	for j := range row {
		row[j] = 1.2 * float32((f.last*53+j*71)%101) / 101
	}
	if next, ok := map[int]int{30: 31, 31: 32, 32: 30}[f.last]; ok {
		row[next] = 1.5
	}
	return row, nil
}

// repeated4 counts the 4-grams of ids that occurred before.
func repeated4(ids []int) int {
	seen, n := map[[4]int]bool{}, 0
	for i := 0; i+4 <= len(ids); i++ {
		g := [4]int(ids[i : i+4])
		if seen[g] {
			n++
		}
		seen[g] = true
	}
	return n
}

// TestRepetitionPenaltyStopsALoop: greedy decoding of a model that loops repeats
// its 4-grams without the penalty (θ = 1, the default, and explicitly) and writes
// none twice with θ = 1.3; the prompt's ids count as seen (Hugging Face's
// input_ids), so the penalised first pick is not the loop's 30; diffusion ignores
// the knob.
func TestRepetitionPenaltyStopsALoop(t *testing.T) {
	gen := func(mode Mode, penalty float64) []int {
		t.Helper()
		e := testEngine(newScript(body))
		e.run = &loopRunner{scriptRunner: *newScript(body)}
		res, err := e.Generate(context.Background(),
			Request{PromptIDs: []int{2, 105, 30, 31, 32}, Mode: mode, Sampling: Sampling{MaxNewTokens: 48, RepetitionPenalty: penalty}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	loop := gen(AR, 0)
	if want := []int{30, 31, 32, 30, 31, 32}; !slices.Equal(loop[:6], want) || repeated4(loop) < 40 {
		t.Fatalf("without the penalty: %v, want the loop %v… with 4-grams repeated", loop, want)
	}
	if off := gen(AR, 1); !slices.Equal(off, loop) {
		t.Errorf("θ = 1 changed the tokens:\n%v\n%v", off, loop)
	}
	penalized := gen(AR, 1.3)
	if penalized[0] == 30 || repeated4(penalized) != 0 {
		t.Errorf("θ = 1.3: %v (%d repeated 4-grams), want no repeated 4-gram and a first pick other than the prompt's 30", penalized, repeated4(penalized))
	}
	// Diffusion develops canvases with Decode; the AR knob does not reach it.
	if a, b := gen(Diffusion, 0), gen(Diffusion, 1.3); !slices.Equal(a, b) {
		t.Errorf("diffusion with θ = 1.3 changed:\n%v\n%v", a, b)
	}
}

// TestFrequencyPenaltyEndsALoop: greedy decoding of the looping model repeats
// its 4-grams without the frequency penalty and leaves the loop with α = 0.2,
// once each of its ids is written often enough; the prompt's ids do not count
// (OpenAI's penalty counts what the model wrote), so the first pick is the loop's 30; the
// model's generation_config (darkroom_ar_frequency_penalty) sets it by default,
// a request's −1 turns it off; diffusion ignores it; NaN is refused.
func TestFrequencyPenaltyEndsALoop(t *testing.T) {
	gen := func(mode Mode, byDefault, α float64) []int {
		t.Helper()
		e := testEngine(newScript(body))
		e.cfg.Generation.ARFrequencyPenalty = byDefault
		e.run = &loopRunner{scriptRunner: *newScript(body)}
		res, err := e.Generate(context.Background(),
			Request{PromptIDs: []int{2, 105, 30, 31, 32}, Mode: mode, Sampling: Sampling{MaxNewTokens: 48, FrequencyPenalty: α}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	loop := gen(AR, 0, 0)
	if repeated4(loop) < 40 {
		t.Fatalf("without the penalty: %v, want the loop", loop)
	}
	penalized := gen(AR, 0, 0.2)
	if penalized[0] != 30 || repeated4(penalized) > repeated4(loop)/2 {
		t.Errorf("α = 0.2: %v (%d repeated 4-grams, %d without), want the loop's 30 first and the loop left", penalized, repeated4(penalized), repeated4(loop))
	}
	if got := gen(AR, 0.2, 0); !slices.Equal(got, penalized) {
		t.Errorf("the model's default α = 0.2:\n%v\nwant\n%v", got, penalized)
	}
	if got := gen(AR, 0.2, -1); !slices.Equal(got, loop) {
		t.Errorf("the default turned off by the request:\n%v\nwant the loop\n%v", got, loop)
	}
	if a, b := gen(Diffusion, 0, 0), gen(Diffusion, 0, 0.2); !slices.Equal(a, b) {
		t.Errorf("diffusion with α = 0.2 changed:\n%v\n%v", a, b)
	}
	_, err := testEngine(newScript(body)).Generate(context.Background(),
		Request{PromptIDs: prompt(), Mode: AR, Sampling: Sampling{FrequencyPenalty: math.NaN()}})
	if err == nil || !strings.Contains(err.Error(), "frequency penalty must be a finite number") {
		t.Errorf("α = NaN: %v", err)
	}
}

func TestRepetitionPenaltyErrors(t *testing.T) {
	for _, θ := range []float64{-1, -0.5} {
		_, err := testEngine(newScript(body)).Generate(context.Background(),
			Request{PromptIDs: prompt(), Mode: AR, Sampling: Sampling{RepetitionPenalty: θ}})
		if err == nil || !strings.Contains(err.Error(), "repetition penalty must be a finite number > 0") {
			t.Errorf("θ = %g: %v", θ, err)
		}
	}
}

// stutterRunner is a fake causal model whose best next token is the last one
// again (logit 2), then 40 + the last (1.5): a printer that writes a word twice.
type stutterRunner struct{ scriptRunner }

func (f *stutterRunner) Encode(tokens []int) ([]float32, error) {
	last := tokens[len(tokens)-1]
	row := make([]float32, f.vocab)
	row[last], row[(last+40)%f.vocab] = 2, 1.5
	return row, nil
}

// TestNoStuttersInAR: the printer of a model that repeats its last word writes
// it twice side by side without the rule and never with it; the model's
// generation_config (darkroom_ar_no_stutters) turns it on by default, a
// request's −1 off.
func TestNoStuttersInAR(t *testing.T) {
	gen := func(byDefault bool, stutters int) []int {
		t.Helper()
		e := testEngine(newScript(body))
		e.cfg.Generation.ARNoStutters = byDefault
		e.run = &stutterRunner{*newScript(body)}
		res, err := e.Generate(context.Background(),
			Request{PromptIDs: []int{2, 105, 30}, Mode: AR, Sampling: Sampling{MaxNewTokens: 12, NoStutters: stutters}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	twice := func(ids []int) bool {
		for i := 1; i < len(ids); i++ {
			if ids[i] == ids[i-1] {
				return true
			}
		}
		return false
	}
	if off := gen(false, 0); !twice(off) {
		t.Fatalf("without the rule: %v, want a word written twice", off)
	}
	if off := gen(true, -1); !twice(off) {
		t.Errorf("the rule turned off by the request: %v, want a word written twice", off)
	}
	for _, ids := range [][]int{gen(false, 1), gen(true, 0)} {
		if twice(ids) || len(ids) != 12 {
			t.Errorf("with the rule: %v, want 12 tokens, no word twice", ids)
		}
	}
}

// TestPresencePenaltyEndsALoop: greedy decoding of the looping model leaves
// the loop with the presence penalty β = 1 (every id written once is lowered
// by β, however often), which no model sets by default; diffusion ignores it;
// a negative or NaN β is refused.
func TestPresencePenaltyEndsALoop(t *testing.T) {
	gen := func(mode Mode, β float64) []int {
		t.Helper()
		e := testEngine(newScript(body))
		e.run = &loopRunner{scriptRunner: *newScript(body)}
		res, err := e.Generate(context.Background(),
			Request{PromptIDs: []int{2, 105, 30, 31, 32}, Mode: mode, Sampling: Sampling{MaxNewTokens: 48, PresencePenalty: β}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	loop := gen(AR, 0)
	penalized := gen(AR, 1)
	if penalized[0] != 30 || repeated4(penalized) > repeated4(loop)/2 {
		t.Errorf("β = 1: %v (%d repeated 4-grams, %d without), want the loop's 30 first and the loop left", penalized, repeated4(penalized), repeated4(loop))
	}
	if a, b := gen(Diffusion, 0), gen(Diffusion, 1); !slices.Equal(a, b) {
		t.Errorf("diffusion with β = 1 changed:\n%v\n%v", a, b)
	}
	for _, β := range []float64{-0.5, math.NaN()} {
		_, err := testEngine(newScript(body)).Generate(context.Background(),
			Request{PromptIDs: prompt(), Mode: AR, Sampling: Sampling{PresencePenalty: β}})
		if err == nil || !strings.Contains(err.Error(), "presence penalty must be") {
			t.Errorf("β = %g: %v", β, err)
		}
	}
}

// TestLogitBias: OpenAI's logit_bias moves the printer's picks — −100 keeps
// the looping script's first pick out, +100 makes a chosen id every pick —
// beside the penalties; diffusion ignores it; an id outside the vocabulary is
// refused before anything runs.
func TestLogitBias(t *testing.T) {
	gen := func(mode Mode, s Sampling) []int {
		t.Helper()
		e := testEngine(newScript(body))
		e.run = &loopRunner{scriptRunner: *newScript(body)}
		s.MaxNewTokens = 12
		res, err := e.Generate(context.Background(), Request{PromptIDs: []int{2, 105, 30, 31, 32}, Mode: mode, Sampling: s})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	loop := gen(AR, Sampling{})
	banned := gen(AR, Sampling{LogitBias: map[int]float64{loop[0]: -100}})
	if slices.Contains(banned, loop[0]) {
		t.Errorf("%d at −100 was picked: %v", loop[0], banned)
	}
	if forced := gen(AR, Sampling{LogitBias: map[int]float64{77: 100}, FrequencyPenalty: -1}); slices.ContainsFunc(forced, func(id int) bool { return id != 77 }) {
		t.Errorf("77 at +100: %v", forced)
	}
	if a, b := gen(Diffusion, Sampling{}), gen(Diffusion, Sampling{LogitBias: map[int]float64{loop[0]: -100}}); !slices.Equal(a, b) {
		t.Errorf("diffusion with a logit bias changed:\n%v\n%v", a, b)
	}
	e := testEngine(newScript(body))
	if _, err := e.Check(Request{PromptIDs: prompt(), Mode: AR, Sampling: Sampling{LogitBias: map[int]float64{512: 1}}}); err == nil ||
		!strings.Contains(err.Error(), "outside the vocabulary") {
		t.Errorf("id 512 of 512: %v", err)
	}
}
