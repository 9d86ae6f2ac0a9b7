package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
)

// scriptRunner is a fake model that "knows" the text: the token at absolute
// position p is script(p). The decoder's confidence grows with the
// self-conditioning state it is handed (the number of previous steps of this
// canvas), so canvases take a few steps and then stop on stability+confidence.
// Because the target depends on the absolute position, a loop that fails to
// encode a committed canvas produces wrong tokens.
type scriptRunner struct {
	vocab   int
	script  func(pos int) int
	margin  func(k int) float32 // peak height at self-conditioning step k (0 at a canvas's first step)
	cache   []int
	decodes []decodeCall
	encodes [][]int
	scores  []scoreCall
	failAt  int // decode call number (1-based) that fails; 0: never

	// ar, if set, is the causal head's script (Encode and Score rows), else script.
	ar func(pos int) int
}

type scoreCall struct {
	tokens []int
	from   int // first row returned
	start  int // cache length
}

type decodeCall struct {
	canvas []int
	soft   any
	start  int // cache length = first canvas position
	temp   float64
}

func (f *scriptRunner) Reset() { f.cache = nil }

func (f *scriptRunner) row(pos int, margin float32) []float32 {
	r := make([]float32, f.vocab)
	for j := range r {
		r[j] = float32((pos*131+j*71)%97) / 97 // deterministic clutter in [0,1)
	}
	r[f.script(pos)] += margin
	return r
}

func (f *scriptRunner) Encode(tokens []int) ([]float32, error) {
	f.encodes = append(f.encodes, slices.Clone(tokens))
	f.cache = append(f.cache, tokens...)
	return f.arRow(len(f.cache)), nil // the next token's prediction
}

// arRow is the causal head's prediction for absolute position pos.
func (f *scriptRunner) arRow(pos int) []float32 {
	if f.ar == nil {
		return f.row(pos, 8)
	}
	script := f.script
	defer func() { f.script = script }()
	f.script = f.ar
	return f.row(pos, 8)
}

func (f *scriptRunner) Score(tokens []int, from int) ([]float32, error) {
	f.scores = append(f.scores, scoreCall{slices.Clone(tokens), from, len(f.cache)})
	var out []float32
	for i := from; i < len(tokens); i++ {
		out = append(out, f.arRow(len(f.cache)+i+1)...)
	}
	return out, nil
}

func (f *scriptRunner) Decode(canvas []int, soft any, temp float64) ([]float32, any, error) {
	f.decodes = append(f.decodes, decodeCall{slices.Clone(canvas), soft, len(f.cache), temp})
	if f.failAt == len(f.decodes) {
		return nil, nil, errors.New("device lost")
	}
	k := 0
	if soft != nil {
		k = soft.(int)
	}
	out := make([]float32, 0, len(canvas)*f.vocab)
	for i := range canvas {
		out = append(out, f.row(len(f.cache)+i, f.margin(k))...)
	}
	return out, k + 1, nil
}

type wordCodec struct{}

// Encode is Decode's inverse: "t7 t8" → [7 8]; anything else is skipped.
func (wordCodec) Encode(text string) []int {
	var ids []int
	for _, w := range strings.Fields(text) {
		var id int
		if _, err := fmt.Sscanf(w, "t%d", &id); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
func (wordCodec) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "t%d ", id)
	}
	return b.String()
}

const promptLen = 5

// body is the scripted text: ids in [10, 500) (no EOS, no pad).
func body(pos int) int { return 10 + (pos*37)%490 }

func testEngine(f *scriptRunner) *Engine {
	cfg := config.Tiny() // vocab 512, canvas 16
	cfg.Generation.EOSTokenIDs = []int{1, 106}
	cfg.Generation.PadTokenID = 0
	return &Engine{cfg: cfg, tok: wordCodec{}, run: f, backend: "fake",
		prompt: func(r *Request) ([]int, error) { return r.PromptIDs, nil }}
}

func newScript(script func(int) int) *scriptRunner {
	return &scriptRunner{vocab: 512, script: script, margin: func(k int) float32 { return 4 + 10*float32(k) }}
}

func prompt() []int { return []int{2, 105, 30, 31, 32} }

func TestDiffusionMultiCanvasReencodes(t *testing.T) {
	f := newScript(body)
	e := testEngine(f)
	var events []Event
	res, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Seed: 1,
		Sampling: Sampling{MaxNewTokens: 40}, OnEvent: func(ev Event) { events = append(events, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	// ceil(40/16) = 3 canvases, the last cut to 8 tokens.
	want := make([]int, 40)
	for i := range want {
		want[i] = body(promptLen + i)
	}
	if !slices.Equal(res.Tokens, want) {
		t.Fatalf("tokens\n got %v\nwant %v", res.Tokens, want)
	}
	if res.StopReason != "max_tokens" || len(res.Canvases) != 3 {
		t.Errorf("stop %q after %d canvases, want max_tokens after 3", res.StopReason, len(res.Canvases))
	}
	// Prompt, then canvases 0 and 1 (committed argmax), never the last canvas.
	wantEnc := [][]int{prompt(), want[:16], want[16:32]}
	if len(f.encodes) != len(wantEnc) {
		t.Fatalf("%d encoder passes, want %d: %v", len(f.encodes), len(wantEnc), f.encodes)
	}
	for i := range wantEnc {
		if !slices.Equal(f.encodes[i], wantEnc[i]) {
			t.Errorf("encoder pass %d got %v, want %v", i, f.encodes[i], wantEnc[i])
		}
	}
	steps := 0
	for _, c := range res.Canvases {
		if c.Steps < 2 || c.Steps != len(c.Accepted) {
			t.Errorf("canvas stats %+v: want ≥ 2 steps (stability needs a repeat) and one count per step", c)
		}
		steps += c.Steps
	}
	if res.ForwardPasses != steps+len(wantEnc) || len(f.decodes) != steps {
		t.Errorf("forward passes %d, decodes %d; want %d and %d", res.ForwardPasses, len(f.decodes), steps+3, steps)
	}
	// FLOPs: each encoder pass after what was cached, each decoder step after the cache.
	tx := &e.cfg.Text
	wantFLOPs := model.EncodeFLOPs(tx, promptLen, 0) + model.EncodeFLOPs(tx, 16, promptLen) +
		model.EncodeFLOPs(tx, 16, promptLen+16)
	for _, d := range f.decodes {
		wantFLOPs += model.FLOPs(tx, 16, d.start)
	}
	if res.ForwardFLOPs != wantFLOPs || res.ForwardMS < 0 || res.ForwardMS > res.ElapsedMS {
		t.Errorf("forward FLOPs %g (want %g), forward %v ms of %v", res.ForwardFLOPs, wantFLOPs, res.ForwardMS, res.ElapsedMS)
	}
	// Self-conditioning: nil at each canvas's first step, then the previous step's output;
	// the decoder's positions follow the cache; temperature follows the schedule.
	step := 0
	ci := 0
	for i, d := range f.decodes {
		if step == res.Canvases[ci].Steps {
			step, ci = 0, ci+1
		}
		step++
		if step == 1 && d.soft != nil || step > 1 && d.soft != step-1 {
			t.Errorf("decode %d (canvas %d step %d): soft %v", i, ci, step, d.soft)
		}
		if d.start != promptLen+16*ci || len(d.canvas) != 16 {
			t.Errorf("decode %d: start %d len %d", i, d.start, len(d.canvas))
		}
		if wantT := 0.4 + 0.4*float64(48-step+1)/48; d.temp != wantT {
			t.Errorf("decode %d: temperature %v, want %v", i, d.temp, wantT)
		}
	}
	// Events: one per step, then a commit per canvas, then done.
	var kinds []EventKind
	nSteps := 0
	for _, ev := range events {
		if ev.Kind == EventStep {
			nSteps++
			if len(ev.Draft) != 16 || len(ev.Accepted) != 16 || len(ev.Argmax) != 16 || len(ev.Entropy) != 16 {
				t.Fatalf("step event with short slices: %+v", ev)
			}
			if !strings.HasPrefix(ev.Text, wordCodec{}.Decode(ev.Committed)) {
				t.Errorf("step text %q does not start with the committed text", ev.Text)
			}
			continue
		}
		kinds = append(kinds, ev.Kind)
	}
	if nSteps != steps || !slices.Equal(kinds, []EventKind{EventCommit, EventCommit, EventCommit, EventDone}) {
		t.Errorf("%d step events (want %d), other kinds %v", nSteps, steps, kinds)
	}
	last := events[len(events)-1]
	if last.Text != res.Text || last.ForwardPasses != res.ForwardPasses || !slices.Equal(last.Committed, res.Tokens) {
		t.Errorf("done event %+v does not match the result", last)
	}
	if res.TokensPerS <= 0 || res.FirstCanvasMS <= 0 || res.PromptTokens != promptLen {
		t.Errorf("result totals: %+v", res)
	}
}

func TestDiffusionEOSTruncation(t *testing.T) {
	// EOS (106) at the 5th token of the second canvas; what follows is pad.
	eosAt := promptLen + 16 + 4
	f := newScript(func(p int) int {
		if p == eosAt {
			return 106
		}
		return body(p)
	})
	var commits []Event
	res, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt(),
		Sampling: Sampling{MaxNewTokens: 64}, OnEvent: func(ev Event) {
			if ev.Kind == EventCommit {
				commits = append(commits, ev)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "eos" || len(res.Tokens) != 20 || len(res.Canvases) != 2 {
		t.Fatalf("stop %q, %d tokens, %d canvases; want eos, 20, 2", res.StopReason, len(res.Tokens), len(res.Canvases))
	}
	if slices.Contains(res.Tokens, 106) || slices.Contains(res.Tokens, 0) {
		t.Errorf("EOS or pad in the output: %v", res.Tokens)
	}
	if len(f.encodes) != 2 { // prompt + first canvas; the EOS canvas is never encoded
		t.Errorf("%d encoder passes, want 2", len(f.encodes))
	}
	if res.TokensPerS <= 0 || len(commits) != 2 || len(commits[1].Committed) != 20 {
		t.Errorf("tokens/s %v, commits %d", res.TokensPerS, len(commits))
	}
}

func TestDiffusionWarmStart(t *testing.T) {
	f := newScript(body)
	given := []int{7, 8, 9}
	res, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt(),
		CanvasIDs: given, Sampling: Sampling{MaxNewTokens: 32}})
	if err != nil {
		t.Fatal(err)
	}
	first := f.decodes[0].canvas
	if !slices.Equal(first[:3], given) || len(first) != 16 {
		t.Errorf("first decoder canvas %v does not start with the warm start %v", first, given)
	}
	second := f.decodes[res.Canvases[0].Steps].canvas // the second canvas starts from noise
	if slices.Equal(second[:3], given) {
		t.Errorf("warm start reused for the second canvas: %v", second)
	}
	if _, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(),
		CanvasIDs: []int{5, 9999}}); err == nil || !strings.Contains(err.Error(), "9999") {
		t.Errorf("out-of-vocabulary canvas id: err = %v", err)
	}
}

// TestOpeningIsHeld: the opening's tokens head the first canvas at every
// decoder step although the model would write other tokens there, the rest of
// the canvas develops as usual, the result begins with them, and they are not
// counted as generated; AR feeds them to the encoder with the prompt. Openings
// that cannot be held are refused.
func TestOpeningIsHeld(t *testing.T) {
	opening := []int{7, 8, 9} // body() never writes ids below 10
	f := newScript(body)
	res, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt(),
		Opening: "t7 t8 t9", CanvasIDs: []int{1, 1, 1, 44}, Sampling: Sampling{MaxNewTokens: 24}})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range f.decodes[:res.Canvases[0].Steps] {
		if !slices.Equal(d.canvas[:3], opening) {
			t.Fatalf("decode %d canvas starts %v, want the opening %v", i, d.canvas[:3], opening)
		}
	}
	if first := f.decodes[0].canvas; first[3] != 44 {
		t.Errorf("warm start after the opening lost: canvas %v", first)
	}
	want := slices.Clone(opening)
	for i := 3; i < 24; i++ {
		want = append(want, body(promptLen+i))
	}
	if !slices.Equal(res.Tokens, want) || !strings.HasPrefix(res.Text, "t7 t8 t9 t") {
		t.Errorf("tokens %v\nwant %v (text %q)", res.Tokens, want, res.Text)
	}
	if second := f.decodes[res.Canvases[0].Steps].canvas; slices.Equal(second[:3], opening) {
		t.Errorf("opening held in the second canvas too: %v", second)
	}
	if wantRate := float64(21) / res.Elapsed.Seconds(); math.Abs(res.TokensPerS-wantRate) > 0.05*wantRate {
		t.Errorf("tokens/s %v counts the opening (want ≈ %v)", res.TokensPerS, wantRate)
	}

	f = newScript(body)
	res, err = testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR,
		Opening: "t7 t8 t9", Sampling: Sampling{MaxNewTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.encodes[0], append(prompt(), opening...)) {
		t.Errorf("AR first encoder pass %v, want prompt + opening", f.encodes[0])
	}
	wantAR := append(slices.Clone(opening), body(promptLen+3), body(promptLen+4), body(promptLen+5))
	if !slices.Equal(res.Tokens, wantAR) || res.StopReason != "max_tokens" {
		t.Errorf("AR tokens %v (%s), want %v", res.Tokens, res.StopReason, wantAR)
	}

	for _, tc := range []struct {
		opening string
		max     int
		want    string
	}{
		{"t7 t8 t9", 2, "must fit"},
		{"t7 t106", 32, "end-of-sequence"},
	} {
		for _, m := range []Mode{Diffusion, AR} {
			_, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: m,
				Opening: tc.opening, Sampling: Sampling{MaxNewTokens: tc.max}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s opening %q, max %d: err = %v, want %q", m, tc.opening, tc.max, err, tc.want)
			}
		}
	}
}

// TestLeadHeldWhereItFits: a Lead is held after the Opening, in both modes,
// where the two fit in max new tokens; where they do not, the
// Opening alone is held and Result.LeadHeld says the lead was dropped, where
// an opening and lead sent together as Opening were refused (a known title's
// page with a small max new tokens failed).
func TestLeadHeldWhereItFits(t *testing.T) {
	for _, tc := range []struct {
		max      int
		wantHead []int
		held     bool
	}{
		{24, []int{7, 8, 9, 10, 11}, true}, // opening t7 t8 t9, lead t10 t11
		{4, []int{7, 8, 9}, false},         // both would need 5
	} {
		for _, m := range []Mode{Diffusion, AR} {
			res, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: m,
				Opening: "t7 t8 t9", Lead: " t10 t11", Sampling: Sampling{MaxNewTokens: tc.max}})
			if err != nil {
				t.Fatalf("%s max %d: %v", m, tc.max, err)
			}
			if !slices.Equal(res.Tokens[:len(tc.wantHead)], tc.wantHead) || res.LeadHeld != tc.held || res.HeldTokens != len(tc.wantHead) {
				t.Errorf("%s max %d: tokens %v, lead held %v; want them to begin %v, lead held %v", m, tc.max, res.Tokens, res.LeadHeld, tc.wantHead, tc.held)
			}
			if !tc.held && len(res.Tokens) > 3 && res.Tokens[3] == 10 && body(promptLen+3) != 10 {
				t.Errorf("%s max %d: the dropped lead was written anyway: %v", m, tc.max, res.Tokens)
			}
		}
	}
}

// TestLeadEnds: a held lead that ends the answer (Request.LeadEnds) is the
// whole answer in both modes — no forward pass, one commit or token event,
// stopped at the end as the entry ends — and where it is not held (it does
// not fit) the model writes the answer as without it.
func TestLeadEnds(t *testing.T) {
	for _, m := range []Mode{Diffusion, AR} {
		var events []Event
		res, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: m,
			Opening: "t7 t8 t9", Lead: " t10 t11", LeadEnds: true, Sampling: Sampling{MaxNewTokens: 24},
			OnEvent: func(ev Event) { events = append(events, ev) }})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if want := []int{7, 8, 9, 10, 11}; !slices.Equal(res.Tokens, want) || !res.LeadHeld || res.HeldTokens != 5 ||
			res.ForwardPasses != 0 || res.StopReason != StopEOS || len(res.Canvases) != 0 {
			t.Errorf("%s: tokens %v (held %d, lead held %v), %d forward passes, stop %q, %d canvases; want %v held whole, none, eos",
				m, res.Tokens, res.HeldTokens, res.LeadHeld, res.ForwardPasses, res.StopReason, len(res.Canvases), want)
		}
		if len(events) != 2 || events[1].Kind != EventDone || !slices.Equal(events[0].Committed, res.Tokens) {
			t.Errorf("%s: events %+v; want one with the answer, then done", m, events)
		}
		dropped, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: m,
			Opening: "t7 t8 t9", Lead: " t10 t11", LeadEnds: true, Sampling: Sampling{MaxNewTokens: 4}})
		if err != nil {
			t.Fatalf("%s, not fitting: %v", m, err)
		}
		if dropped.LeadHeld || dropped.ForwardPasses == 0 || dropped.HeldTokens != 3 {
			t.Errorf("%s, a lead that does not fit: lead held %v, %d forward passes, %d held; want the model to write after the opening",
				m, dropped.LeadHeld, dropped.ForwardPasses, dropped.HeldTokens)
		}
	}
}

// generateFirstT7 runs req (24 new tokens after prompt()) on the script model
// whose causal head begins the answer with t7 and then writes body.
func generateFirstT7(t *testing.T, req Request) (*Result, *scriptRunner) {
	t.Helper()
	f := newScript(body)
	f.ar = func(pos int) int {
		if pos == promptLen {
			return 7
		}
		return body(pos)
	}
	req.PromptIDs, req.Sampling.MaxNewTokens = prompt(), 24
	res, err := testEngine(f).Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("%s, opening %q, reply %q: %v", req.Mode, req.Opening, req.Reply, err)
	}
	return res, f
}

// TestTentativeOpening: a tentative opening (and its lead) is held only where
// the model's own first pick after the prompt is the opening's first token —
// the causal head's, in both modes — and otherwise the answer is the one
// written with no opening at all, nothing held ("What is the capital of
// France?" was forced into a definition under the heading "capital of France").
func TestTentativeOpening(t *testing.T) {
	for _, m := range []Mode{Diffusion, AR} {
		run := func(opening, lead string) *Result {
			t.Helper()
			res, _ := generateFirstT7(t, Request{Mode: m, Opening: opening, Lead: lead, OpeningTentative: opening != ""})
			return res
		}
		free := run("", "")
		if held := run("t7 t8", " t9"); !slices.Equal(held.Tokens[:3], []int{7, 8, 9}) || held.HeldTokens != 3 || !held.LeadHeld {
			t.Errorf("%s: the model begins with t7, opening t7 t8 + lead t9: tokens %v, %d held, lead held %v; want them held",
				m, held.Tokens, held.HeldTokens, held.LeadHeld)
		}
		dropped := run("t9 t8", " t10")
		if !slices.Equal(dropped.Tokens, free.Tokens) || dropped.HeldTokens != 0 || dropped.LeadHeld {
			t.Errorf("%s: the model begins with t7, opening t9 t8: tokens %v, %d held, lead held %v; want %v, nothing held",
				m, dropped.Tokens, dropped.HeldTokens, dropped.LeadHeld, free.Tokens)
		}
	}
}

// TestReplyHeldWhereBegun: a Reply is the whole answer, held, where the
// model's first token begins it (its first pick in AR, the causal head's in
// diffusion), after a tentative opening it does not begin; otherwise, or with
// a held opening, or where it could not be held whole, the model writes.
func TestReplyHeldWhereBegun(t *testing.T) {
	for _, m := range []Mode{Diffusion, AR} {
		run := func(req Request) (*Result, *scriptRunner) {
			t.Helper()
			req.Mode = m
			return generateFirstT7(t, req)
		}
		free, _ := run(Request{})
		res, f := run(Request{Reply: "t7 t8 t9 t10"})
		if !res.Replied || !slices.Equal(res.Tokens, []int{7, 8, 9, 10}) || res.HeldTokens != 4 || res.StopReason != StopEOS ||
			res.ForwardPasses != 1 || len(f.decodes) != 0 {
			t.Errorf("%s: the model begins with t7, reply t7…t10: tokens %v (replied %v, %d held, %s, %d passes, %d decodes); want the reply, held, after the prompt's pass",
				m, res.Tokens, res.Replied, res.HeldTokens, res.StopReason, res.ForwardPasses, len(f.decodes))
		}
		if res, _ := run(Request{Opening: "t9", OpeningTentative: true, Reply: "t7 t8"}); !res.Replied || !slices.Equal(res.Tokens, []int{7, 8}) {
			t.Errorf("%s: a tentative opening not begun, then the reply: tokens %v (replied %v); want the reply", m, res.Tokens, res.Replied)
		}
		if res, _ := run(Request{Opening: "t7", OpeningTentative: true, Reply: "t7 t8"}); res.Replied || res.Tokens[0] != 7 || res.HeldTokens != 1 {
			t.Errorf("%s: a tentative opening begun: tokens %v (replied %v, %d held); want the opening", m, res.Tokens, res.Replied, res.HeldTokens)
		}
		for _, req := range []Request{
			{Reply: "t9 t8"},                       // not begun
			{Reply: "t7 t1 t9"},                    // an end id inside: not whole
			{Reply: strings.Repeat("t7 ", 25)},     // longer than max new tokens
			{Opening: "t9", Reply: "t7 t8 t9 t10"}, // a held opening
		} {
			res, _ := run(req)
			want := free.Tokens
			if req.Opening != "" {
				want = nil // begins with the opening; the rest is the script's
			}
			if res.Replied || (want != nil && !slices.Equal(res.Tokens, want)) || (want == nil && res.Tokens[0] != 9) {
				t.Errorf("%s: opening %q, reply %q: tokens %v (replied %v); want the model's own answer", m, req.Opening, req.Reply, res.Tokens, res.Replied)
			}
		}
	}
}

// pieceTable decodes ids through a table of pieces.
type pieceTable map[int]string

func (p pieceTable) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(p[id])
	}
	return b.String()
}

// TestOpeningBegunInOtherPieces: the model's first token begins a tentative
// opening when its text is the opening's start, whatever the pieces: the
// Mini writes "**" then "ne…" where "**within" is tokenized "**w" "ithin",
// and lost the heading of "What is within delta of?".
func TestOpeningBegunInOtherPieces(t *testing.T) {
	codec := pieceTable{1: "**", 2: "**w", 3: "ithin", 4: "I", 5: " ", 6: "within"}
	for _, tc := range []struct {
		first int
		want  bool
	}{{1, true}, {2, true}, {4, false}, {5, false}, {6, false}} {
		g := &generation{tok: codec}
		if got := g.begins(tc.first, []int{2, 3}); got != tc.want {
			t.Errorf("first token %q, opening \"**within\": begins = %v, want %v", codec[tc.first], got, tc.want)
		}
	}
}

// TestOpeningLongerThanACanvas: an opening longer than a canvas (a lead of 57
// tokens after a 7-token heading, on a model of 64-token canvases) was refused,
// and with it the lead. It fills the canvases it covers, committed with no
// step, and is held at the head of the next, which develops around it.
func TestOpeningLongerThanACanvas(t *testing.T) {
	opening := strings.TrimSpace(strings.Repeat("t7 t8 ", 10)) // 20 ids; the test model's canvas is 16
	ids := slices.Repeat([]int{7, 8}, 10)
	f := newScript(body)
	var commits []int
	res, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt(), Opening: "t9",
		Lead: " " + opening, Sampling: Sampling{MaxNewTokens: 48},
		OnEvent: func(ev Event) {
			if ev.Kind == EventCommit {
				commits = append(commits, len(ev.Committed))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]int{9}, ids...) // 21 held
	if !res.LeadHeld || res.HeldTokens != 21 || !slices.Equal(res.Tokens[:21], want) {
		t.Fatalf("tokens %v (lead held %v, %d held), want them to begin %v", res.Tokens, res.LeadHeld, res.HeldTokens, want)
	}
	if len(f.decodes) == 0 || !slices.Equal(f.decodes[0].canvas[:5], want[16:]) {
		t.Errorf("the first canvas developed does not hold the opening's last 5 ids: %v", f.decodes)
	}
	if len(commits) == 0 || commits[0] != 16 {
		t.Errorf("commits %v: want the first canvas, wholly held, committed first", commits)
	}
	if got := res.Canvases[0].Steps; len(res.Canvases) != len(commits)-1 || got == 0 {
		t.Errorf("%d canvases developed (first %d steps) for %d committed: the held one has no steps", len(res.Canvases), got, len(commits))
	}
	if len(f.encodes) < 2 || !slices.Equal(f.encodes[1], want[:16]) {
		t.Errorf("encoder passes %v: want the held canvas encoded before the next", f.encodes)
	}
	// A warm start longer than the opening: the canvas the opening fills is the
	// opening's alone; the rest of the opening opens the next.
	warm := slices.Repeat([]int{50}, 30)
	res, err = testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Opening: "t9",
		Lead: " " + opening, CanvasIDs: warm, Sampling: Sampling{MaxNewTokens: 48}})
	if err != nil || !slices.Equal(res.Tokens[:21], want) {
		t.Errorf("with a warm start of 30 ids: %v (%v), want them to begin %v", res.Tokens, err, want)
	}
	for _, m := range []Mode{Diffusion, AR} { // longer than max new tokens: refused
		_, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: m,
			Opening: opening, Sampling: Sampling{MaxNewTokens: 16}})
		if err == nil || !strings.Contains(err.Error(), "must fit") {
			t.Errorf("%s: an opening of 20 in 16 new tokens: err = %v", m, err)
		}
	}
}

func TestDiffusionCancelWithinOneStep(t *testing.T) {
	f := newScript(body)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	decodesAtCancel := -1
	res, err := testEngine(f).Generate(ctx, Request{PromptIDs: prompt(), Sampling: Sampling{MaxNewTokens: 64},
		OnEvent: func(ev Event) {
			if ev.Kind == EventStep && ev.Canvas == 1 && ev.Step == 1 {
				cancel()
				decodesAtCancel = len(f.decodes)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "cancelled" {
		t.Fatalf("stop reason %q", res.StopReason)
	}
	if len(f.decodes) != decodesAtCancel {
		t.Errorf("%d decoder passes after the cancel", len(f.decodes)-decodesAtCancel)
	}
	if len(res.Tokens) != 16 || len(res.Canvases) != 1 {
		t.Errorf("want the first canvas committed (16 tokens, 1 canvas), got %d tokens, %d canvases",
			len(res.Tokens), len(res.Canvases))
	}
	// Cancelled before anything ran.
	res, err = testEngine(newScript(body)).Generate(ctx, Request{PromptIDs: prompt()})
	if err != nil || res.StopReason != "cancelled" || res.ForwardPasses != 0 {
		t.Errorf("pre-cancelled: %+v, %v", res, err)
	}
}

func TestDiffusionSameSeedIdentical(t *testing.T) {
	// A weak, constant peak: sampling and re-noising decide what happens.
	weak := func() *scriptRunner {
		f := newScript(body)
		f.margin = func(int) float32 { return 3 }
		return f
	}
	run := func(seed uint64) (*Result, [][]int) {
		var drafts [][]int
		res, err := testEngine(weak()).Generate(context.Background(), Request{PromptIDs: prompt(), Seed: seed,
			Sampling: Sampling{MaxNewTokens: 32, MaxSteps: 6}, OnEvent: func(ev Event) {
				if ev.Kind == EventStep {
					drafts = append(drafts, ev.Draft)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return res, drafts
	}
	a, da := run(9)
	b, db := run(9)
	c, dc := run(10)
	if !slices.Equal(a.Tokens, b.Tokens) || len(da) != len(db) {
		t.Fatal("same seed, different output")
	}
	for i := range da {
		if !slices.Equal(da[i], db[i]) {
			t.Fatalf("same seed, step %d drafts differ", i)
		}
	}
	for i := range a.Canvases {
		if !slices.Equal(a.Canvases[i].Accepted, b.Canvases[i].Accepted) {
			t.Fatalf("same seed, canvas %d acceptance differs", i)
		}
	}
	if slices.EqualFunc(da, dc, func(x, y []int) bool { return slices.Equal(x, y) }) && slices.Equal(a.Tokens, c.Tokens) {
		t.Error("different seeds, identical drafts")
	}
}

func TestDecoderErrorIsReturned(t *testing.T) {
	f := newScript(body)
	f.failAt = 2
	_, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt()})
	if err == nil || !strings.Contains(err.Error(), "device lost") || !strings.Contains(err.Error(), "step 2") {
		t.Errorf("err = %v", err)
	}
}

func TestARMode(t *testing.T) {
	eosAt := promptLen + 7
	f := newScript(func(p int) int {
		if p == eosAt {
			return 1
		}
		return body(p)
	})
	var tokens []Event
	res, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR,
		OnEvent: func(ev Event) {
			if ev.Kind == EventToken {
				tokens = append(tokens, ev)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, 7)
	for i := range want {
		want[i] = body(promptLen + i)
	}
	if !slices.Equal(res.Tokens, want) || res.StopReason != "eos" {
		t.Fatalf("AR tokens %v (%s), want %v (eos)", res.Tokens, res.StopReason, want)
	}
	// Prefill + one pass per token that was followed by another prediction.
	if res.ForwardPasses != 1+7 || len(f.decodes) != 0 || len(tokens) != 7 {
		t.Errorf("forward passes %d, decodes %d, token events %d", res.ForwardPasses, len(f.decodes), len(tokens))
	}
	for i, enc := range f.encodes[1:] {
		if len(enc) != 1 || enc[0] != want[i] {
			t.Errorf("AR pass %d encoded %v, want [%d]", i+1, enc, want[i])
		}
	}
	// max_new_tokens stops, and a temperature samples reproducibly.
	g := func(seed uint64) *Result {
		r, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR,
			Seed: seed, Sampling: Sampling{MaxNewTokens: 5, Temperature: 3}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2 := g(4), g(4)
	if len(r1.Tokens) != 5 || r1.StopReason != "max_tokens" || !slices.Equal(r1.Tokens, r2.Tokens) {
		t.Errorf("AR sampled: %v (%s) vs %v", r1.Tokens, r1.StopReason, r2.Tokens)
	}
}

func TestRequestErrors(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"empty prompt", Request{}, "empty"},
		{"bad prompt id", Request{PromptIDs: []int{2, -1}}, "outside the vocabulary"},
		{"bad mode", Request{PromptIDs: prompt(), Mode: "printer"}, "unknown mode"},
		{"negative temperature", Request{PromptIDs: prompt(), Mode: AR, Sampling: Sampling{Temperature: -1}}, "temperature"},
		{"bad t_min", Request{PromptIDs: prompt(), Sampling: Sampling{TMin: -0.1}}, "temperatures"},
		{"too long", Request{PromptIDs: prompt(), Sampling: Sampling{MaxNewTokens: 5000}}, "positions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := testEngine(newScript(body)).Generate(context.Background(), c.req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestGenerateConcurrentCallsSerialize(t *testing.T) {
	e := testEngine(newScript(body))
	errs := make(chan error, 4)
	results := make(chan []int, 4)
	for range 4 {
		go func() {
			r, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Seed: 3,
				Sampling: Sampling{MaxNewTokens: 32}})
			errs <- err
			if err == nil {
				results <- r.Tokens
			}
		}()
	}
	var first []int
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		toks := <-results
		if first == nil {
			first = toks
		} else if !slices.Equal(first, toks) {
			t.Errorf("concurrent runs interfered: %v vs %v", first, toks)
		}
	}
}

// TestIsEndIsWhereGenerateStops: IsEnd, which the screens and the server draw
// drafts by, says an id ends a generation exactly when Generate stops at it —
// generation_config's ids, or config.json's when it names none — plus the pad id.
// (The screens and the server each kept their own list, the union of both files'
// ids and the tokenizer's end-of-turn markers, so a draft could end where the
// generation went on.)
func TestIsEndIsWhereGenerateStops(t *testing.T) {
	stopsAt := func(e *Engine, id int) bool {
		at := promptLen + 3
		f := newScript(func(p int) int {
			if p == at {
				return id
			}
			return body(p)
		})
		e.run = f
		res, err := e.Generate(context.Background(), Request{PromptIDs: prompt(), Sampling: Sampling{MaxNewTokens: 16}})
		if err != nil {
			t.Fatal(err)
		}
		return res.StopReason == "eos"
	}
	for _, c := range []struct {
		name         string
		gen, model   []int
		ends, goesOn []int
	}{
		{"generation config's", []int{1, 106}, []int{1, 106, 50}, []int{1, 106}, []int{50, 7}},
		{"config.json's when generation config names none", nil, []int{1, 50}, []int{1, 50}, []int{106, 7}},
	} {
		e := testEngine(newScript(body))
		e.cfg.Generation.EOSTokenIDs, e.cfg.EOSTokenIDs = c.gen, c.model
		for _, id := range c.ends {
			if !e.IsEnd(id) || !stopsAt(e, id) {
				t.Errorf("%s: id %d: IsEnd %v, Generate stops %v; want both", c.name, id, e.IsEnd(id), stopsAt(e, id))
			}
		}
		for _, id := range c.goesOn {
			if e.IsEnd(id) || stopsAt(e, id) {
				t.Errorf("%s: id %d: IsEnd %v, Generate stops %v; want neither", c.name, id, e.IsEnd(id), stopsAt(e, id))
			}
		}
		if !e.IsEnd(e.cfg.Generation.PadTokenID) {
			t.Errorf("%s: the pad id is not an end", c.name)
		}
	}
}

// TestOpeningExtra: an Opening sent as the answer so far (Request.OpeningExtra,
// Chat's Continue) is followed by max new tokens more in both modes, where an
// Opening within max new tokens leaves that much less, and one longer than
// max new tokens is no longer refused.
func TestOpeningExtra(t *testing.T) {
	opening := []int{7, 8, 9}
	for _, m := range []Mode{AR, Diffusion} {
		res, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: m,
			Opening: "t7 t8 t9", OpeningExtra: true, Sampling: Sampling{MaxNewTokens: 16}})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if len(res.Tokens) != 3+16 || !slices.Equal(res.Tokens[:3], opening) || res.StopReason != StopMaxTokens {
			t.Errorf("%s: %d tokens %v (%s), want the opening and 16 more", m, len(res.Tokens), res.Tokens, res.StopReason)
		}
		if _, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: m,
			Opening: "t7 t8 t9", OpeningExtra: true, Sampling: Sampling{MaxNewTokens: 2}}); err != nil {
			t.Errorf("%s: an opening past max new tokens, on top of them: %v", m, err)
		}
	}
}
