package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// TestSeveralChoices: n asks for that many answers, choice i written with the
// request's seed + i — the first is the answer n = 1 gives — whole (choices
// in order, the usage counting the prompt once and every answer's tokens) or
// streamed (each choice's chunks in turn, with its index and its own finish),
// in both endpoints, on a real (tiny, random) model.
func TestSeveralChoices(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	want := make([]*engine.Result, 3)
	for i := range want {
		res, err := e.Generate(context.Background(), engine.Request{Messages: []engine.Message{{Role: "user", Content: "What is Unix?"}},
			Mode: engine.AR, Seed: uint64(20 + i), Sampling: engine.Sampling{MaxNewTokens: 10, Temperature: 1.5}})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res
	}
	if want[0].Text == want[1].Text && want[1].Text == want[2].Text {
		t.Fatal("three seeds wrote one answer: the test cannot tell the choices apart")
	}
	const body = `{"messages":[{"role":"user","content":"What is Unix?"}],"mode":"ar","max_tokens":10,"temperature":1.5,"seed":20`
	code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", body+`,"n":3}`)
	if code != 200 || len(r.Choices) != 3 {
		t.Fatalf("%d %s", code, raw)
	}
	tokens := 0
	for i, c := range r.Choices {
		if c.Index != i || c.Message.Content != want[i].Text || c.FinishReason == nil {
			t.Errorf("choice %d: %+v, want index %d and %q", i, c, i, want[i].Text)
		}
		tokens += len(want[i].Tokens)
	}
	if u := r.Usage; u == nil || u.PromptTokens != want[0].PromptTokens || u.CompletionTokens != tokens || u.TotalTokens != u.PromptTokens+tokens {
		t.Errorf("usage %+v, want the prompt's %d once and %d answer tokens", u, want[0].PromptTokens, tokens)
	}
	if _, one, _ := callAPI(t, s, "POST", "/v1/chat/completions", body+`}`); len(one.Choices) != 1 || one.Choices[0].Message.Content != want[0].Text {
		t.Errorf("n = 1: %+v, want the first choice %q", one.Choices, want[0].Text)
	}

	// Streamed (a scripted engine: what a stream sends of a random model's
	// broken characters depends on the timing): every chunk names its choice;
	// each choice's role, text and finish in turn, written with seed + i.
	g := &fakeGen{commits: []string{"Unix is", "Unix is an OS."}, final: "Unix is an OS."}
	fs := start(t, Options{Engine: g})
	chunks, done := stream(t, fs, body+`,"n":3,"stream":true,"stream_options":{"include_usage":true}}`)
	texts, finishes, roles := make([]string, 3), make([]int, 3), make([]int, 3)
	last := -1
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.Index < last {
				t.Errorf("choice %d's chunk after choice %d's", ch.Index, last)
			}
			last = ch.Index
			if ch.Delta.Content != nil {
				texts[ch.Index] += *ch.Delta.Content
			}
			if ch.Delta.Role == "assistant" {
				roles[ch.Index]++
			}
			if ch.FinishReason != nil {
				finishes[ch.Index]++
			}
		}
	}
	for i := range 3 {
		if texts[i] != "Unix is an OS." || finishes[i] != 1 || roles[i] != 1 {
			t.Errorf("streamed choice %d: %q, %d finishes, %d role chunks; want the answer, 1, 1", i, texts[i], finishes[i], roles[i])
		}
		if seed := g.requests[i].Seed; seed != uint64(20+i) {
			t.Errorf("choice %d written with seed %d, want %d", i, seed, 20+i)
		}
	}
	if u := chunks[len(chunks)-1].Usage; !done || u == nil || u.CompletionTokens != 3*4 || u.PromptTokens != 7 {
		t.Errorf("stream end: done %v, usage %+v", done, u)
	}

	// A text completion too.
	code, _, raw = callText(t, s, `{"prompt":"Unix is","mode":"ar","max_tokens":6,"temperature":1.5,"seed":5,"n":2}`)
	var tc struct {
		Choices []struct {
			Index int
			Text  string
		}
	}
	if err := json.Unmarshal([]byte(raw), &tc); err != nil || code != 200 || len(tc.Choices) != 2 || tc.Choices[1].Index != 1 {
		t.Errorf("text completion n = 2: %d %s", code, raw)
	}
	if strings.Contains(raw, `"n must be`) {
		t.Error(raw)
	}
}
