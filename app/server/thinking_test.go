package server

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// TestThoughtSplitterMatchesParse: however a text is cut into deltas, the
// thought and answer a stream gives out are what chat.Parse reads from the
// whole text — the independent reference, which the app's Chat uses.
func TestThoughtSplitterMatchesParse(t *testing.T) {
	pieces := []string{"<|channel>", "<channel|>", "thought", "\n", " ", "  \n", "thought\n", "Paris", "is sunny.", "<|chan", "nel|>",
		"a<b", "<", "|", "channel", "tho", "ught", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	texts := []string{
		"<|channel>thought\nThe user asks the time.\n<channel|>It is noon.",
		"<|channel>thought\n<channel|>Just the answer.",
		"  No thought at all.  ",
		"<|channel>thought\nfirst<channel|>A <|channel>thought\nsecond\n<channel|> B",
		"<|channel>thought\nunclosed thought",
		"<|channel>thoughtless<channel|>answer",
		"<|channel>thought",
		"stray <channel|> end",
		"<|channel>thought\nfirst \n<channel|><|channel>thought\n second<channel|>ok",
	}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		want := chat.Parse(text)
		for range 5 {
			var sp thoughtSplitter
			var thought, answer strings.Builder
			rest := text
			for rest != "" {
				n := 1 + rng.IntN(min(len(rest), 7))
				th, an := sp.feed(rest[:n], false)
				thought.WriteString(th)
				answer.WriteString(an)
				rest = rest[n:]
			}
			th, an := sp.feed("", true)
			thought.WriteString(th)
			answer.WriteString(an)
			if thought.String() != want.Thought || answer.String() != want.Text {
				t.Fatalf("%q streamed: thought %q, answer %q; Parse: thought %q, answer %q", text, thought.String(), answer.String(), want.Thought, want.Text)
			}
		}
	}
}

const thoughtful = "<|channel>thought\nThe user wants the time. I will say noon.\n<channel|>It is noon."

// TestThinkingWhole: reasoning_effort (OpenAI's) or enable_thinking (vLLM's)
// turns thinking on — the engine is asked for it, with no lead — and the
// thought comes back as reasoning_content, apart from the answer; off (the
// default), the text is the answer as written.
func TestThinkingWhole(t *testing.T) {
	g := &fakeGen{final: thoughtful}
	s := start(t, Options{Engine: g})
	for _, on := range []string{`"reasoning_effort":"high"`, `"reasoning_effort":"low"`, `"chat_template_kwargs":{"enable_thinking":true}`,
		`"reasoning_effort":"medium","chat_template_kwargs":{"enable_thinking":true}`} {
		code, r, raw := chatWire(t, s, `{"messages":[{"role":"user","content":"What is Unix?"}],`+on+`}`)
		c := r.Choices[0].Message
		if code != 200 || c.Content == nil || *c.Content != "It is noon." || c.ReasoningContent == nil ||
			*c.ReasoningContent != "The user wants the time. I will say noon." {
			t.Errorf("%s: %d %s", on, code, raw)
		}
		if req := g.lastRequest(t); !req.Thinking || req.Opening != "" || req.Lead != "" {
			t.Errorf("%s: engine thinking %v, opening %q, lead %q", on, req.Thinking, req.Opening, req.Lead)
		}
	}
	for _, off := range []string{``, `,"reasoning_effort":"none"`, `,"reasoning_effort":"minimal"`, `,"chat_template_kwargs":{"enable_thinking":false}`} {
		_, r, raw := chatWire(t, s, `{"messages":[{"role":"user","content":"Hi"}]`+off+`}`)
		if c := r.Choices[0].Message; *c.Content != thoughtful || c.ReasoningContent != nil || g.lastRequest(t).Thinking {
			t.Errorf("thinking off (%s): %s", off, raw)
		}
	}
	for _, bad := range []struct{ body, param string }{
		{`"reasoning_effort":"max"`, "reasoning_effort"},
		{`"chat_template_kwargs":{"enable_thinking":"yes"}`, "chat_template_kwargs.enable_thinking"},
		{`"reasoning_effort":"none","chat_template_kwargs":{"enable_thinking":true}`, "reasoning_effort"},
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],`+bad.body+`}`)
		if code != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != bad.param {
			t.Errorf("%s: %d %s, want 400 about %s", bad.body, code, raw, bad.param)
		}
	}

	// Thinking and tools: the thought, then the call; no content.
	g.final = "<|channel>thought\nI need the weather.<channel|>" + callsOnly
	_, r, raw := chatWire(t, s, `{`+askParis+`,"tools":[`+weatherTool+`],"reasoning_effort":"high"}`)
	if c := r.Choices[0].Message; c.Content != nil || c.ReasoningContent == nil || *c.ReasoningContent != "I need the weather." || len(c.ToolCalls) != 1 ||
		*r.Choices[0].FinishReason != api.FinishToolCalls {
		t.Errorf("thinking and a call: %s", raw)
	}
	// An agent's thought sent back with its calls reaches the template.
	_, _, raw = chatWire(t, s, `{"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","reasoning_content":"I need the weather.",`+
		`"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"Sunny"}],`+
		`"tools":[`+weatherTool+`],"reasoning_effort":"high"}`)
	if m := g.lastRequest(t).Messages; len(m) != 3 || m[1].Reasoning != "I need the weather." {
		t.Errorf("reasoning sent back: %+v (%s)", m, raw)
	}
}

// TestThinkingStream: a stream sends the thought as reasoning_content deltas
// and the answer as content deltas — never a piece of the channel's markup,
// however the commits cut it — the same thought and answer the whole
// response holds.
func TestThinkingStream(t *testing.T) {
	g := &fakeGen{commits: []string{"<|chan", "<|channel>thou", "<|channel>thought\nThe user wants", "<|channel>thought\nThe user wants the time. I will say noon.\n<chan",
		"<|channel>thought\nThe user wants the time. I will say noon.\n<channel|>It is", thoughtful}, final: thoughtful}
	s := start(t, Options{Engine: g})
	var thought, answer string
	for _, raw := range streamRaw(t, s, `{"messages":[{"role":"user","content":"Time?"}],"reasoning_effort":"high","stream":true}`) {
		var ch api.ChatCompletion
		if err := json.Unmarshal([]byte(raw), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			if c.Delta.ReasoningContent != nil {
				thought += *c.Delta.ReasoningContent
			}
			if c.Delta.Content != nil {
				answer += *c.Delta.Content
			}
			if strings.Contains(raw, "channel") {
				t.Errorf("markup streamed: %s", raw)
			}
		}
	}
	if thought != "The user wants the time. I will say noon." || answer != "It is noon." {
		t.Errorf("streamed thought %q, answer %q", thought, answer)
	}
}

// TestThinkingRealModel: on a real (tiny, random) model, thinking on is the
// engine's thinking prompt (the usage counts it, as /tokenize does), and the
// answer is the engine's text as chat.Parse divides it.
func TestThinkingRealModel(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	res, err := e.Generate(context.Background(), engine.Request{Messages: []engine.Message{{Role: "user", Content: "Time?"}}, Thinking: true,
		Mode: engine.AR, Seed: 3, Sampling: engine.Sampling{MaxNewTokens: 12, Temperature: 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := chat.Parse(res.Text)
	code, r, raw := chatWire(t, s, `{"messages":[{"role":"user","content":"Time?"}],"reasoning_effort":"high","mode":"ar","max_tokens":12,"temperature":1,"seed":3}`)
	if code != 200 || r.Usage.PromptTokens != res.PromptTokens || *r.Choices[0].Message.Content != want.Text ||
		(r.Choices[0].Message.ReasoningContent == nil) != (want.Thought == "") {
		t.Errorf("%d %s\nwant the engine's %q (%d prompt tokens) divided: %+v", code, raw, res.Text, res.PromptTokens, want)
	}
	resp, body := do(t, nil, "POST", base(s)+"/tokenize", `{"messages":[{"role":"user","content":"Time?"}],"chat_template_kwargs":{"enable_thinking":true}}`,
		map[string]string{"Authorization": "Bearer " + s.Token()})
	var tk struct{ Count int }
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &tk) != nil || tk.Count != res.PromptTokens {
		t.Errorf("tokenize with thinking: %d %s, want %d tokens", resp.StatusCode, body, res.PromptTokens)
	}
}

// TestThinkingRefusedWhereTheModelDoesNot: a model that does not think
// (Darkroom Mini, never trained to) is not asked to: a request for thinking is
// a 400 naming the field that asked and saying why, as the app greys its
// Thinking box and `darkroom generate --thinking` refuses; asking for none runs.
func TestThinkingRefusedWhereTheModelDoesNot(t *testing.T) {
	g := &fakeGen{final: "Unix is an OS."}
	s := start(t, Options{Engine: g, ModelID: "darkroom-mini", NoThinking: "Darkroom Mini was not trained to think"})
	for body, param := range map[string]string{
		`"reasoning_effort":"high"`:                       "reasoning_effort",
		`"chat_template_kwargs":{"enable_thinking":true}`: "chat_template_kwargs.enable_thinking",
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],`+body+`}`)
		if code != 400 || r.Error == nil || *r.Error.Param != param ||
			r.Error.Message != "darkroom-mini: Darkroom Mini was not trained to think; leave "+param+" out" {
			t.Errorf("%s: %d %s", body, code, raw)
		}
	}
	if code, _, raw := callAPI(t, s, "POST", "/v1/responses", `{"input":"Hi","reasoning":{"effort":"low"}}`); code != 400 || !strings.Contains(raw, `"param":"reasoning.effort"`) {
		t.Errorf("responses: %d %s", code, raw)
	}
	if code, _, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"reasoning_effort":"none"}`); code != 200 {
		t.Errorf("no thinking asked: %d %s", code, raw)
	}
}
