package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// markupCodec is wordCodec with ids 300–309 spelling a tag, so that they are
// markup for AR guidance.
type markupCodec struct{ wordCodec }

func (c markupCodec) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 300 && id < 310 {
			b.WriteString(`<a href="x">`)
			continue
		}
		b.WriteString(c.wordCodec.Decode([]int{id}))
	}
	return b.String()
}

// guidedScript is a decoder that is unsure (margin 3) and wrong at canvas
// positions wrong (it says bad there), under a causal head that is sure (margin 8)
// and right (body) everywhere.
func guidedScript(bad int, wrong ...int) *scriptRunner {
	f := newScript(func(pos int) int {
		if slices.Contains(wrong, pos-promptLen) {
			return bad
		}
		return body(pos)
	})
	f.margin = func(int) float32 { return 3 }
	f.ar = body
	return f
}

func guidedRequest(rounds int) Request {
	return Request{PromptIDs: prompt(), Seed: 1,
		Sampling: Sampling{MaxNewTokens: 16, MaxSteps: 3, Guidance: 1, GuidanceRounds: rounds}}
}

func bodyCanvas() []int {
	want := make([]int, 16)
	for i := range want {
		want[i] = body(promptLen + i)
	}
	return want
}

func TestARGuidanceRevisesTheDecodersGuesses(t *testing.T) {
	wrong := []int{0, 3, 4, 9} // 0 is predicted by the prompt's encoder pass; 3 and 4 are neighbours
	withBad := func(fixed ...int) []int {
		out := bodyCanvas()
		for _, i := range wrong {
			if !slices.Contains(fixed, i) {
				out[i] = 200
			}
		}
		return out
	}

	// Off: the decoder's guesses stand and the encoder never scores.
	f := guidedScript(200, wrong...)
	req := guidedRequest(8)
	req.Sampling.Guidance = -1
	res, err := testEngine(f).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, withBad()) || len(f.scores) != 0 || res.Canvases[0].GuidanceRounds != 0 {
		t.Fatalf("guidance off: tokens %v (want %v), %d score passes", res.Tokens, withBad(), len(f.scores))
	}

	// One round: each wrong position whose left neighbour was not changed in the
	// same round is fixed; 4 waits (its causal row was read after the old 3).
	f = guidedScript(200, wrong...)
	res, err = testEngine(f).Generate(context.Background(), guidedRequest(1))
	if err != nil {
		t.Fatal(err)
	}
	if want := withBad(0, 3, 9); !slices.Equal(res.Tokens, want) {
		t.Errorf("one round: tokens\n got %v\nwant %v", res.Tokens, want)
	}
	if st := res.Canvases[0]; st.GuidanceRounds != 1 || st.Guided != 3 {
		t.Errorf("one round: stats %+v, want 1 round, 3 guided", st)
	}

	// Enough rounds: everything fixed in two, a third finds nothing to change.
	f = guidedScript(200, wrong...)
	var events []Event
	req = guidedRequest(8)
	req.OnEvent = func(ev Event) { events = append(events, ev) }
	res, err = testEngine(f).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, bodyCanvas()) {
		t.Errorf("tokens\n got %v\nwant %v", res.Tokens, bodyCanvas())
	}
	st := res.Canvases[0]
	if st.GuidanceRounds != 3 || st.Guided != 4 {
		t.Errorf("stats %+v, want 3 rounds, 4 guided", st)
	}
	if res.ForwardPasses != 1+st.Steps+3 {
		t.Errorf("%d forward passes, want prompt + %d steps + 3 scores", res.ForwardPasses, st.Steps)
	}
	// Each round scores the canvas before its last position, after the prompt,
	// and caches nothing.
	if len(f.scores) != 3 {
		t.Fatalf("%d score passes, want 3", len(f.scores))
	}
	for i, sc := range f.scores {
		if sc.start != promptLen || len(sc.tokens) != 15 {
			t.Errorf("score %d: %d tokens after %d cached, want 15 after %d", i, len(sc.tokens), sc.start, promptLen)
		}
	}
	if got := f.scores[1].tokens; !slices.Equal(got, withBad(0, 3, 9)[:15]) {
		t.Errorf("second round scored %v, want the first round's canvas", got)
	}
	// Rounds start at the previous round's first change (0, then 4): the rows
	// before it cannot decide differently.
	if f.scores[0].from != 0 || f.scores[1].from != 0 || f.scores[2].from != 3 {
		t.Errorf("score passes return rows from %d, %d, %d; want 0, 0, 3", f.scores[0].from, f.scores[1].from, f.scores[2].from)
	}
	var guided []Event
	for _, ev := range events {
		if ev.Guidance {
			guided = append(guided, ev)
		}
	}
	if len(guided) != 2 || guided[0].Step != st.Steps+1 || !guided[0].Accepted[3] || guided[0].Accepted[4] ||
		!slices.Equal(guided[1].Argmax, bodyCanvas()) || !guided[1].Accepted[4] {
		t.Errorf("guidance events %+v, want two rounds after the steps marking what changed", guided)
	}
	// A round's event says its round, and the steps so far count no round.
	for i, ev := range guided {
		if ev.Round != i+1 || ev.Steps != st.Steps {
			t.Errorf("guidance event %d: round %d, steps %d; want round %d, steps %d", i, ev.Round, ev.Steps, i+1, st.Steps)
		}
	}
	for _, ev := range events {
		if ev.Kind == EventStep && !ev.Guidance && ev.Steps != ev.Step {
			t.Errorf("step %d of the one canvas: steps so far %d", ev.Step, ev.Steps)
		}
	}
}

func TestARGuidanceLeavesMarkupEndAndOpening(t *testing.T) {
	// The decoder puts a tag (id 300) at 5 and the end at 12; the causal head
	// wants text there and a tag (301) at 7. None of that changes: tags and the
	// end are the decoder's, and only positions before the end are revised.
	f := newScript(func(pos int) int {
		switch pos - promptLen {
		case 5:
			return 300
		case 12:
			return 1 // EOS
		}
		return body(pos)
	})
	f.margin = func(int) float32 { return 3 }
	f.ar = func(pos int) int {
		if pos-promptLen == 7 {
			return 301
		}
		return body(pos)
	}
	e := testEngine(f)
	e.tok = markupCodec{}
	req := guidedRequest(8)
	req.Opening = "t7 t8"
	res, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]int{7, 8}, bodyCanvas()[2:12]...)
	want[5] = 300
	if !slices.Equal(res.Tokens, want) || res.StopReason != "eos" {
		t.Errorf("tokens %v (%s)\nwant %v then eos", res.Tokens, res.StopReason, want)
	}
	for i, sc := range f.scores {
		if len(sc.tokens) != 11 {
			t.Errorf("score %d over %d tokens, want the 11 before the end's position", i, len(sc.tokens))
		}
	}
	if len(f.scores) == 0 {
		t.Error("the text between the opening and the end was never scored")
	}
}

// pieceCodec spells ids 200–209 as "ing", a piece that continues a word, and
// every other id as " tN", a word of its own.
type pieceCodec struct{ wordCodec }

func (c pieceCodec) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 200 && id < 210 {
			b.WriteString("ing")
			continue
		}
		fmt.Fprintf(&b, " t%d", id)
	}
	return b.String()
}

func TestARGuidanceInWordsWeighsSpelling(t *testing.T) {
	// The decoder writes the piece "ing" (200) at 3 and the word " t210" at 9, each
	// by a margin of 3; the causal head prefers the body's words by 8. At λ 0.25
	// (2 < 3) neither moves; with weight 1 inside words only the piece — a
	// question of spelling — is revised, and the word stays the decoder's.
	script := func() *scriptRunner {
		f := newScript(func(pos int) int {
			switch pos - promptLen {
			case 3:
				return 200
			case 9:
				return 210
			}
			return body(pos)
		})
		f.margin = func(int) float32 { return 3 }
		f.ar = body
		return f
	}
	decoded := bodyCanvas()
	decoded[3], decoded[9] = 200, 210
	for _, tc := range []struct {
		inWord float64
		want   []int
	}{
		{-1, decoded}, // λ inside words too
		{1, append(append(slices.Clone(bodyCanvas()[:9]), 210), bodyCanvas()[10:]...)},
	} {
		e := testEngine(script())
		e.tok = pieceCodec{}
		req := guidedRequest(8)
		req.Sampling.Guidance, req.Sampling.GuidanceInWord = 0.25, tc.inWord
		res, err := e.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, tc.want) {
			t.Errorf("in-word weight %g: tokens\n got %v\nwant %v", tc.inWord, res.Tokens, tc.want)
		}
	}
}

func TestGuideIDs(t *testing.T) {
	ids := newGuideIDs(markupCodec{}, 512, []int{1, 106})
	for id, want := range map[int]bool{1: true, 106: true, 300: true, 309: true, 299: false, 310: false, 42: false} {
		if ids.frozen[id] != want {
			t.Errorf("id %d frozen = %v, want %v", id, ids.frozen[id], want)
		}
	}
	// " t42" begins a word and ends in a digit; "ing" continues one; a tag does neither.
	ids = newGuideIDs(pieceCodec{}, 512, []int{1})
	for _, tc := range []struct {
		id              int
		ends, continues bool
	}{{42, true, false}, {200, true, true}, {209, true, true}} {
		if ids.endsWord[tc.id] != tc.ends || ids.continues[tc.id] != tc.continues {
			t.Errorf("id %d: ends a word %v, continues one %v; want %v, %v", tc.id,
				ids.endsWord[tc.id], ids.continues[tc.id], tc.ends, tc.continues)
		}
	}
	// Every "ing" is one word; " t42" and " t43" are two.
	if w := ids.word; w[200] < 0 || w[200] != w[209] || w[42] < 0 || w[42] == w[43] || w[42] == w[200] {
		t.Errorf("word classes: ing %d/%d, t42 %d, t43 %d", w[200], w[209], w[42], w[43])
	}
	ids = newGuideIDs(markupCodec{}, 512, nil)
	if ids.endsWord[300] || ids.continues[300] {
		t.Error("a tag counts as part of a word")
	}
}

// TestARGuidanceUndoesStutters: with a causal head too light to outweigh the
// decoder (λ 0.25: 2 against 3), a wrong word the decoder is sure of stays, but a
// word it writes twice side by side does not — the second takes the causal
// head's word.
func TestARGuidanceUndoesStutters(t *testing.T) {
	f := newScript(func(pos int) int {
		switch pos - promptLen {
		case 5:
			return body(pos - 1) // position 4's word again
		case 9:
			return 200
		}
		return body(pos)
	})
	f.margin = func(int) float32 { return 3 }
	f.ar = body
	req := guidedRequest(8)
	req.Sampling.Guidance = 0.25
	res, err := testEngine(f).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := bodyCanvas()
	want[9] = 200
	if !slices.Equal(res.Tokens, want) {
		t.Errorf("tokens\n got %v\nwant %v", res.Tokens, want)
	}
}
