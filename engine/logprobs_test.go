package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// TestARLogprobs: with Request.Logprobs an AR generation reports each token's
// log probability under the scripted model's distribution at its position
// (computed here from the script's rows in float64, not by the sampler), the
// most likely tokens there, and picks the very tokens it picks without them;
// each token's event carries its own.
func TestARLogprobs(t *testing.T) {
	gen := func(logprobs bool, top int, events *[]Event) *Result {
		f := newScript(body)
		res, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, Seed: 4,
			Sampling: Sampling{MaxNewTokens: 6, Temperature: 3}, Logprobs: logprobs, TopLogprobs: top,
			OnEvent: func(ev Event) {
				if ev.Kind == EventToken && events != nil {
					*events = append(*events, ev)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plain := gen(false, 0, nil)
	if plain.Logprobs != nil {
		t.Errorf("logprobs without asking: %v", plain.Logprobs)
	}
	var events []Event
	res := gen(true, 3, &events)
	if !slices.Equal(res.Tokens, plain.Tokens) {
		t.Fatalf("asking for logprobs changed the picks: %v, without %v", res.Tokens, plain.Tokens)
	}
	if len(res.Logprobs) != len(res.Tokens) || len(events) != len(res.Tokens) {
		t.Fatalf("%d logprobs and %d token events for %d tokens", len(res.Logprobs), len(events), len(res.Tokens))
	}
	ref := newScript(body)
	sampledOff := 0 // tokens the temperature drew that are not the row's most likely
	for i, lp := range res.Logprobs {
		row := ref.arRow(promptLen + i)
		if want := refLogprob(row, res.Tokens[i]); lp.ID != res.Tokens[i] || math.Abs(float64(lp.Logprob)-want) > 1e-5 {
			t.Errorf("token %d: %+v, want id %d logprob %g", i, lp, res.Tokens[i], want)
		}
		if len(lp.Top) != 3 || lp.Top[0].ID != body(promptLen+i) || lp.Top[0].Logprob < lp.Top[1].Logprob || lp.Top[1].Logprob < lp.Top[2].Logprob {
			t.Errorf("token %d: top %+v, want 3, the script's %d first", i, lp.Top, body(promptLen+i))
		}
		if lp.ID != lp.Top[0].ID {
			sampledOff++
		}
		if ev := events[i].Logprob; ev == nil || ev.ID != lp.ID || ev.Logprob != lp.Logprob {
			t.Errorf("token %d's event: %+v, want %+v", i, ev, lp)
		}
	}
	if sampledOff == 0 {
		t.Error("every draw at temperature 3 was the most likely token: the test does not tell the pick's logprob from the top one's")
	}
	if res := gen(true, 0, nil); len(res.Logprobs) != len(res.Tokens) || res.Logprobs[0].Top != nil {
		t.Errorf("no top logprobs asked: %+v", res.Logprobs)
	}
}

// refLogprob is log softmax(row)[id] in float64: the tests' reference.
func refLogprob(row []float32, id int) float64 {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v) - mx)
	}
	return float64(row[id]) - (mx + math.Log(sum))
}

// TestLogprobsRequestErrors: logprobs only where each token is the model's
// pick, and at most MaxTopLogprobs alternatives.
func TestLogprobsRequestErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		req  Request
		want string
	}{
		{"diffusion", Request{PromptIDs: prompt(), Logprobs: true}, "AR mode"},
		{"opening", Request{PromptIDs: prompt(), Mode: AR, Logprobs: true, Opening: "t12"}, "no opening"},
		{"reply", Request{PromptIDs: prompt(), Mode: AR, Logprobs: true, Reply: "t12"}, "no opening"},
		{"too many", Request{PromptIDs: prompt(), Mode: AR, Logprobs: true, TopLogprobs: MaxTopLogprobs + 1}, "0 to 20"},
		{"negative", Request{PromptIDs: prompt(), Mode: AR, Logprobs: true, TopLogprobs: -1}, "0 to 20"},
		{"top alone", Request{PromptIDs: prompt(), Mode: AR, TopLogprobs: 2}, "ask for both"},
	} {
		_, err := testEngine(newScript(body)).Generate(context.Background(), c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

// TestLogprobsOnTheGraphPath: where the device picks AR tokens in the graph, a
// request for logprobs brings each pass's logits to the host, and gets the
// tokens and (within float32 rounding) the logprobs of the host path.
func TestLogprobsOnTheGraphPath(t *testing.T) {
	dir := writeTinyModel(t)
	graph, host := loadGo(t, dir, true), loadGo(t, dir, false)
	mr, ok := graph.run.(modelRunner)
	if !ok || !mr.TokensOnDevice() {
		t.Fatalf("graph path runner %T does not pick tokens on the device", graph.run)
	}
	counted := &logitsCounted{modelRunner: mr}
	graph.run = counted
	req := Request{Prompt: "What is Unix?", Seed: 7, Mode: AR, Sampling: Sampling{MaxNewTokens: 12, Temperature: 0.7},
		Logprobs: true, TopLogprobs: 2}
	h, g := bothPaths(t, host, graph, req)
	if counted.rows == 0 {
		t.Error("no encoder pass brought its logits to the host")
	}
	if !slices.Equal(g.Tokens, h.Tokens) || len(g.Logprobs) != len(g.Tokens) || len(h.Logprobs) != len(h.Tokens) {
		t.Fatalf("graph %v (%d logprobs), host %v (%d)", g.Tokens, len(g.Logprobs), h.Tokens, len(h.Logprobs))
	}
	for i := range g.Logprobs {
		a, b := g.Logprobs[i], h.Logprobs[i]
		if a.ID != b.ID || math.Abs(float64(a.Logprob-b.Logprob)) > 1e-3 || len(a.Top) != 2 || len(b.Top) != 2 || a.Top[0].ID != b.Top[0].ID {
			t.Errorf("token %d: graph %+v, host %+v", i, a, b)
		}
	}
}

// TestPromptLogprobs: with PromptLogprobs each prompt token after the first
// gets its log probability under the scripted model's row for its position
// (computed here in float64), across pieces of a canvas each; the prompt is
// encoded in those pieces, and the picks after it are those of a run without.
func TestPromptLogprobs(t *testing.T) {
	long := make([]int, 40) // pieces of 16 (config.Tiny's canvas): 16, 16, 8
	for i := range long {
		long[i] = 10 + (i*13)%400
	}
	gen := func(promptLogprobs bool) (*Result, *scriptRunner) {
		f := newScript(body)
		res, err := testEngine(f).Generate(context.Background(), Request{PromptIDs: long, Mode: AR, Seed: 4,
			Sampling: Sampling{MaxNewTokens: 5, Temperature: 2}, Logprobs: true, TopLogprobs: 2, PromptLogprobs: promptLogprobs})
		if err != nil {
			t.Fatal(err)
		}
		return res, f
	}
	plain, _ := gen(false)
	res, f := gen(true)
	if !slices.Equal(res.Tokens, plain.Tokens) || plain.PromptLogprobs != nil || plain.Prompt != nil {
		t.Fatalf("picks %v, without the prompt's logprobs %v (%d prompt logprobs)", res.Tokens, plain.Tokens, len(plain.PromptLogprobs))
	}
	if !slices.Equal(res.Prompt, long) || len(res.PromptLogprobs) != len(long)-1 {
		t.Fatalf("prompt %v, %d logprobs; want the %d prompt ids and %d", res.Prompt, len(res.PromptLogprobs), len(long), len(long)-1)
	}
	ref := newScript(body)
	for i, lp := range res.PromptLogprobs {
		p := i + 1 // the prompt position it is the log probability of
		if want := refLogprob(ref.arRow(p), long[p]); lp.ID != long[p] || math.Abs(float64(lp.Logprob)-want) > 1e-5 ||
			len(lp.Top) != 2 || lp.Top[0].ID != body(p) {
			t.Errorf("prompt token %d: %+v, want id %d logprob %g, top %d", p, lp, long[p], want, body(p))
		}
	}
	if len(f.encodes) < 3 || len(f.encodes[0]) != 16 || len(f.encodes[1]) != 16 || len(f.encodes[2]) != 8 || len(f.scores) != 3 {
		t.Errorf("the prompt was encoded as %d passes (%d scored); want pieces of 16, 16 and 8, each scored", len(f.encodes), len(f.scores))
	}
	if _, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: long, Mode: AR, PromptLogprobs: true}); err == nil ||
		!strings.Contains(err.Error(), "ask for both") {
		t.Errorf("prompt logprobs without logprobs: %v", err)
	}
}

// TestPromptLogprobsRealModel holds a real (tiny, random) model's prompt
// logprobs, on the host and the graph path, to the logits of the ordinary
// one-token encoder pass (Runner.Encode, a token at a time), which the scored
// pieces do not use.
func TestPromptLogprobsRealModel(t *testing.T) {
	dir := writeTinyModel(t)
	for _, inGraph := range []bool{false, true} {
		e := loadGo(t, dir, inGraph)
		prompt := e.tokenizer.Encode("Unix is an operating system. It was written at Bell Labs, then rewritten in C.")
		res, err := e.Generate(context.Background(), Request{PromptIDs: prompt, Mode: AR, Sampling: Sampling{MaxNewTokens: 2},
			Logprobs: true, PromptLogprobs: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.PromptLogprobs) != len(prompt)-1 {
			t.Fatalf("graph %v: %d prompt logprobs for %d tokens", inGraph, len(res.PromptLogprobs), len(prompt))
		}
		e.run.Reset()
		for k := 1; k < len(prompt); k++ {
			logits, err := e.run.Encode(prompt[k-1 : k])
			if err != nil {
				t.Fatal(err)
			}
			want, _, _ := sampler.LogProbs(logits, prompt[k], 0)
			if got := res.PromptLogprobs[k-1]; got.ID != prompt[k] || math.Abs(float64(got.Logprob-want)) > 2e-3 {
				t.Errorf("graph %v: prompt token %d: %+v, the one-token pass says %g", inGraph, k, got, want)
			}
		}
		e.run.Reset()
	}
}

// TestTopKTopP: top-k and top-p truncate the printer's draw: at a high
// temperature with k = 1 (or a tiny p) every pick is the row's likeliest, as a
// greedy run's; with k = 3 every pick is among the row's three likeliest (the
// script's rows, read here) and some are not the likeliest; on the graph path,
// whose device picks without truncation, the logits come to the host and the
// tokens are the host path's.
func TestTopKTopP(t *testing.T) {
	gen := func(s Sampling) *Result {
		res, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, Seed: 4, Sampling: s})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	greedy := gen(Sampling{MaxNewTokens: 12})
	for _, s := range []Sampling{{MaxNewTokens: 12, Temperature: 5, TopK: 1}, {MaxNewTokens: 12, Temperature: 5, TopP: 1e-9}} {
		if got := gen(s); !slices.Equal(got.Tokens, greedy.Tokens) {
			t.Errorf("%+v: %v, want the greedy %v", s, got.Tokens, greedy.Tokens)
		}
	}
	if free := gen(Sampling{MaxNewTokens: 12, Temperature: 5}); slices.Equal(free.Tokens, greedy.Tokens) {
		t.Fatalf("T = 5 without truncation drew the greedy tokens: the test proves nothing")
	}
	ref := newScript(body)
	top3 := gen(Sampling{MaxNewTokens: 24, Temperature: 50, TopK: 3})
	off := 0
	for i, id := range top3.Tokens {
		row := ref.arRow(promptLen + i)
		better := 0
		for _, v := range row {
			if v > row[id] {
				better++
			}
		}
		if better > 2 {
			t.Errorf("token %d: %d is not among its row's three likeliest (%d are likelier)", i, id, better)
		}
		if better > 0 {
			off++
		}
	}
	if off == 0 {
		t.Error("every top-3 draw at T = 50 was the likeliest: the test does not tell the truncation from greedy")
	}
	for _, s := range []Sampling{{MaxNewTokens: 4, TopK: -1}, {MaxNewTokens: 4, TopP: 1.5}} {
		if _, err := testEngine(newScript(body)).Generate(context.Background(), Request{PromptIDs: prompt(), Mode: AR, Sampling: s}); err == nil ||
			!strings.Contains(err.Error(), "top ") {
			t.Errorf("%+v: %v", s, err)
		}
	}

	dir := writeTinyModel(t)
	graph, host := loadGo(t, dir, true), loadGo(t, dir, false)
	counted := &logitsCounted{modelRunner: graph.run.(modelRunner)}
	graph.run = counted
	req := Request{Prompt: "What is Unix?", Seed: 7, Mode: AR, Sampling: Sampling{MaxNewTokens: 12, Temperature: 1.2, TopK: 40, TopP: 0.9}}
	h, g := bothPaths(t, host, graph, req)
	if counted.rows == 0 || !slices.Equal(g.Tokens, h.Tokens) {
		t.Errorf("graph path %v (%d rows to the host), host path %v", g.Tokens, counted.rows, h.Tokens)
	}
}
