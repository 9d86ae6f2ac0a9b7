package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// textResponse is the shape an OpenAI client reads from POST /v1/completions.
type textResponse struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Text         string          `json:"text"`
		Index        int             `json:"index"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// callText posts body to /v1/completions and decodes the answer.
func callText(t *testing.T, s *Server, body string) (int, textResponse, string) {
	t.Helper()
	resp, raw := do(t, nil, "POST", base(s)+"/v1/completions", body, map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json"})
	var r textResponse
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("POST /v1/completions: %d, body %q is not JSON: %v", resp.StatusCode, raw, err)
	}
	return resp.StatusCode, r, raw
}

// streamText posts a streamed body to /v1/completions and returns its chunks
// (as raw JSON and decoded) and whether [DONE] ended it.
func streamText(t *testing.T, s *Server, body string) ([]textResponse, []string, bool) {
	t.Helper()
	req, _ := http.NewRequest("POST", base(s)+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var chunks []textResponse
	var raws []string
	done := false
	for ev := range readSSE(resp.Body) {
		if done {
			t.Errorf("data after [DONE]: %q", ev.data)
		}
		if ev.data == "[DONE]" {
			done = true
			continue
		}
		var c textResponse
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev.data, err)
		}
		chunks, raws = append(chunks, c), append(raws, ev.data)
	}
	return chunks, raws, done
}

// text joins the streamed chunks' text.
func text(chunks []textResponse) string {
	var b strings.Builder
	for _, c := range chunks {
		for _, ch := range c.Choices {
			b.WriteString(ch.Text)
		}
	}
	return b.String()
}

// TestTextCompletion: POST /v1/completions answers in OpenAI's text_completion
// shape, and sends the model the prompt as written — raw, with no chat
// template, no system turn and no entry's lead, though the model has all three
// for chat — with the shared fields read as chat reads them, and max_tokens 16
// where none is given, as OpenAI's.
func TestTextCompletion(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system from Bell Labs. It runs.</p>", nil)
	g := &fakeGen{final: "an operating system."}
	s := start(t, Options{Engine: withDefaults{g}, ModelID: "darkroom-mini", System: "Be brief.", AnswerTokens: 2048, Leads: &leads})
	code, r, raw := callText(t, s, `{"model":"darkroom-mini","prompt":"What is Unix?","max_tokens":40,"temperature":0.5,"seed":42,"top_p":0.9}`)
	if code != 200 || r.Object != "text_completion" || !strings.HasPrefix(r.ID, "cmpl-") || r.Model != "darkroom-mini" || r.Created == 0 ||
		r.SystemFingerprint != "darkroom-diffusion" {
		t.Fatalf("%d %s", code, raw)
	}
	if len(r.Choices) != 1 || r.Choices[0].Text != "an operating system." || r.Choices[0].FinishReason == nil || *r.Choices[0].FinishReason != "stop" ||
		string(r.Choices[0].Logprobs) != "null" {
		t.Errorf("choices %s", raw)
	}
	if r.Usage == nil || r.Usage.PromptTokens != 7 || r.Usage.CompletionTokens != 3 || r.Usage.TotalTokens != 10 {
		t.Errorf("usage %s", raw)
	}
	req := g.lastRequest(t)
	if req.Prompt != "What is Unix?" || !req.Raw || req.Messages != nil || req.PromptIDs != nil || req.Opening != "" || req.Lead != "" || req.Reply != "" {
		t.Errorf("the prompt went to the model as %+v; want the raw text alone", req)
	}
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"What is Unix?"}]}`)
	if chat := g.lastRequest(t); chat.Lead == "" || len(chat.Messages) != 2 || chat.Sampling.MaxNewTokens != 2048 {
		t.Errorf("the same question in chat: %+v; want the system turn, the lead and the answer's length (the test's premise)", chat)
	}
	if req.Sampling.MaxNewTokens != 40 || req.Seed != 42 || req.Mode != engine.Diffusion || req.Sampling.TMax != 0.4 || req.Sampling.TMin != 0.2 {
		t.Errorf("request %+v", req)
	}

	callText(t, s, `{"prompt":"Unix is","mode":"ar","temperature":0,"frequency_penalty":0}`)
	if ar := g.lastRequest(t); ar.Mode != engine.AR || ar.Sampling.Temperature != 0 || ar.Sampling.MaxNewTokens != completionMaxTokens ||
		ar.Sampling.FrequencyPenalty != -1 {
		t.Errorf("AR request without max_tokens: %+v", ar)
	}
	callText(t, s, `{"prompt":"Unix is","darkroom":{"opening":"<h1>Unix</h1>"}}`)
	if got := g.lastRequest(t).Opening; got != "<h1>Unix</h1>" {
		t.Errorf("opening %q", got)
	}
}

// TestTextCompletionPrompts reads every prompt shape OpenAI allows for one
// answer, and refuses the rest by name.
func TestTextCompletionPrompts(t *testing.T) {
	g := &fakeGen{final: "x"}
	s := start(t, Options{Engine: g})
	for _, c := range []struct {
		prompt string
		text   string
		ids    []int
	}{
		{`"Unix is"`, "Unix is", nil},
		{`["Unix is"]`, "Unix is", nil},
		{`[2, 818, 5]`, "", []int{2, 818, 5}},
		{`[[2, 818]]`, "", []int{2, 818}},
	} {
		code, _, raw := callText(t, s, `{"prompt":`+c.prompt+`}`)
		req := g.lastRequest(t)
		if code != 200 || req.Prompt != c.text || req.Raw != (c.text != "") || !slices.Equal(req.PromptIDs, c.ids) {
			t.Errorf("prompt %s: %d %s; request %q raw %v ids %v", c.prompt, code, raw, req.Prompt, req.Raw, req.PromptIDs)
		}
	}
	for _, c := range []struct{ body, param, says string }{
		{`{}`, "prompt", "prompt must be a string"},
		{`{"prompt":null}`, "prompt", "prompt must be a string"},
		{`{"prompt":""}`, "prompt", "prompt is empty"},
		{`{"prompt":[]}`, "prompt", "empty array"},
		{`{"prompt":[[]]}`, "prompt", "empty array"},
		{`{"prompt":5}`, "prompt", "prompt must be a string"},
		{`{"prompt":[[[1]]]}`, "prompt", "prompt must be a string"},
		{`{"prompt":["a","b"]}`, "prompt", "holds 2 prompts"},
		{`{"prompt":[[1],[2]]}`, "prompt", "holds 2 prompts"},
		{`{"prompt":"x","suffix":"after"}`, "suffix", "suffix is not supported"},
		{`{"prompt":"x","logprobs":21}`, "logprobs", "0 to 20"},
		{`{"prompt":"x","logprobs":-1}`, "logprobs", "0 to 20"},
		{`{"prompt":"x","logprobs":1,"echo":true,"stream":true}`, "stream", "answered whole"},
		{`{"prompt":"x","logprobs":1,"mode":"diffusion"}`, "logprobs", `"mode": "ar"`},
		{`{"prompt":"x","logprobs":1,"darkroom":{"opening":"Unix"}}`, "darkroom.opening", "not the model's picks"},
		{`{"prompt":"x","best_of":2}`, "best_of", "best_of must be 1"},
		{`{"prompt":"x","n":9}`, "n", "n must be 1 to 8"},
		{`{"prompt":"x","n":0}`, "n", "n must be 1 to 8"},
		{`{"prompt":"x","max_tokens":0}`, "max_tokens", "at least 1"},
		{`{"prompt":"x","max_tokens":"many"}`, "max_tokens", "max_tokens must be a whole number, not a string"},
		{`{"prompt":"x","temperature":"hot"}`, "temperature", "temperature must be a number, not a string"},
		{`{"prompt":"x","mode":"fast"}`, "mode", `mode "fast"`},
		{`{"prompt":"x","stop":["a","b","c","d","e"]}`, "stop", "at most 4"},
	} {
		code, r, raw := callText(t, s, c.body)
		if code != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != c.param || !strings.Contains(r.Error.Message, c.says) {
			t.Errorf("%s: %d %s; want 400 about %s saying %q", c.body, code, raw, c.param, c.says)
		}
	}
	// What asks for nothing is not refused: an empty suffix, best_of 1, null stop and logprobs.
	if code, _, raw := callText(t, s, `{"prompt":"x","suffix":"","logprobs":null,"best_of":1,"stop":null,"n":1,"echo":false}`); code != 200 {
		t.Errorf("fields that ask for nothing: %d %s", code, raw)
	}
	if code, r, raw := callText(t, s, `{"model":"gpt-3.5-turbo-instruct","prompt":"x"}`); code != 404 || r.Error == nil || r.Error.Code != "model_not_found" {
		t.Errorf("another model: %d %s", code, raw)
	}
	if resp, body := do(t, nil, "GET", base(s)+"/v1/completions", "", map[string]string{"Authorization": "Bearer " + s.Token()}); resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/completions: %d Allow %q %s", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	if resp, _ := do(t, nil, "POST", base(s)+"/v1/completions", `{"prompt":"x"}`, nil); resp.StatusCode != 401 {
		t.Errorf("without the key: %d", resp.StatusCode)
	}
}

// TestTextCompletionEchoAndStop: echo puts the prompt before the answer, in a
// whole answer and as a stream's first text; a stop string cuts the answer,
// not the echoed prompt, though the prompt holds it.
func TestTextCompletionEchoAndStop(t *testing.T) {
	g := &fakeGen{commits: []string{"an operating"}, final: "an operating system. END more"}
	s := start(t, Options{Engine: g})
	_, r, raw := callText(t, s, `{"prompt":"Unix END is","echo":true,"stop":"END"}`)
	if len(r.Choices) != 1 || r.Choices[0].Text != "Unix END isan operating system. " || *r.Choices[0].FinishReason != "stop" {
		t.Errorf("echo and stop: %s", raw)
	}
	chunks, raws, done := streamText(t, s, `{"prompt":"Unix END is","echo":true,"stop":"END","stream":true,"stream_options":{"include_usage":true}}`)
	if !done || len(chunks) < 3 {
		t.Fatalf("stream (done %v): %v", done, raws)
	}
	if got := text(chunks); got != "Unix END isan operating system. " {
		t.Errorf("streamed %q", got)
	}
	if c := chunks[0]; len(c.Choices) != 1 || c.Choices[0].Text != "Unix END is" || c.Choices[0].FinishReason != nil {
		t.Errorf("first chunk %s; want the prompt", raws[0])
	}
	for i, c := range chunks {
		if c.Object != "text_completion" || !strings.HasPrefix(c.ID, "cmpl-") || c.ID != chunks[0].ID {
			t.Errorf("chunk %d: %s", i, raws[i])
		}
	}
	last, fin := chunks[len(chunks)-1], chunks[len(chunks)-2]
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.CompletionTokens != 5 || !strings.Contains(raws[len(raws)-1], `"choices":[]`) {
		t.Errorf("usage chunk %s", raws[len(raws)-1])
	}
	if len(fin.Choices) != 1 || fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "stop" || fin.Choices[0].Text != "" {
		t.Errorf("finish chunk %s", raws[len(raws)-2])
	}
	// Without echo or include_usage: the text alone, then the finish.
	chunks, raws, _ = streamText(t, s, `{"prompt":"Unix is","stream":true}`)
	if got := text(chunks); got != "an operating system. END more" || chunks[len(chunks)-1].Usage != nil || chunks[0].Choices[0].Text != "an operating" {
		t.Errorf("plain stream %q: %v", got, raws)
	}
}

// TestTextCompletionRealEngine runs /v1/completions on a real (tiny, random)
// model: its answer is the engine's own for the same raw prompt and seed, in
// both modes, streamed or not; a prompt of token ids is fed as given; a prompt
// too long for the context is a 400 that names the prompt.
func TestTextCompletionRealEngine(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	for _, mode := range []engine.Mode{engine.Diffusion, engine.AR} {
		want, err := e.Generate(context.Background(), engine.Request{Prompt: "Unix is", Raw: true, Mode: mode, Seed: 9,
			Sampling: engine.Sampling{MaxNewTokens: 24}})
		if err != nil {
			t.Fatal(err)
		}
		body := `{"model":"tiny","prompt":"Unix is","max_tokens":24,"seed":9,"mode":"` + string(mode) + `"}`
		code, r, raw := callText(t, s, body)
		if code != 200 || len(r.Choices) != 1 || r.Choices[0].Text != want.Text || r.Usage == nil ||
			r.Usage.PromptTokens != want.PromptTokens || r.Usage.CompletionTokens != len(want.Tokens) {
			t.Errorf("%s: %d %s; the engine wrote %q from %d prompt tokens", mode, code, raw, want.Text, want.PromptTokens)
		}
		chunks, _, done := streamText(t, s, strings.Replace(body, `"seed":9`, `"seed":9,"stream":true`, 1))
		if got := text(chunks); !done || got != want.Text {
			t.Errorf("%s streamed %q (done %v), want %q", mode, got, done, want.Text)
		}
	}
	ids := e.Tokenizer().Encode("Unix is")
	want, err := e.Generate(context.Background(), engine.Request{PromptIDs: ids, Mode: engine.AR, Seed: 9, Sampling: engine.Sampling{MaxNewTokens: 8}})
	if err != nil {
		t.Fatal(err)
	}
	idsJSON, _ := json.Marshal(ids)
	if code, r, raw := callText(t, s, `{"prompt":`+string(idsJSON)+`,"max_tokens":8,"seed":9,"mode":"ar"}`); code != 200 || r.Choices[0].Text != want.Text ||
		r.Usage.PromptTokens != len(ids) {
		t.Errorf("token ids: %d %s; want %q from %d tokens", code, raw, want.Text, len(ids))
	}
	if code, r, raw := callText(t, s, `{"prompt":[999999999],"max_tokens":8}`); code != 400 || r.Error == nil || r.Error.Code != "invalid_value" {
		t.Errorf("an id outside the vocabulary: %d %s", code, raw)
	}
	long := strings.Repeat("Unix is an operating system. ", 4000)
	code, r, raw := callText(t, s, `{"prompt":"`+long+`"}`)
	if code != 400 || r.Error == nil || r.Error.Code != "context_length_exceeded" || r.Error.Param == nil || *r.Error.Param != "prompt" ||
		!strings.Contains(r.Error.Message, "in the prompt") {
		t.Errorf("too long: %d %.300s", code, raw)
	}
}

// TestEchoLogprobs: a text completion with echo and logprobs lists the
// prompt's tokens before the answer's, as the model read them — the first
// with null, each other with its log probability given those before it, the
// engine's own — which is how an evaluation harness (lm-eval's
// local-completions: token ids, max_tokens 1, logprobs 1, echo) scores a
// continuation; a text prompt's BOS comes first, at offset 0, taking no room.
func TestEchoLogprobs(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	type lists struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []*float32           `json:"token_logprobs"`
		TopLogprobs   []map[string]float32 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	read := func(body string) (string, lists) {
		t.Helper()
		code, _, raw := callText(t, s, body)
		var r struct {
			Choices []struct {
				Text     string
				Logprobs *lists
			}
		}
		if err := json.Unmarshal([]byte(raw), &r); err != nil || code != 200 || len(r.Choices) != 1 || r.Choices[0].Logprobs == nil {
			t.Fatalf("%s: %d %s", body, code, raw)
		}
		return r.Choices[0].Text, *r.Choices[0].Logprobs
	}
	ids := e.Tokenizer().Encode("Bell Labs wrote Unix in 1969 and") // (where the random model writes a token before its end)
	want, err := e.Generate(context.Background(), engine.Request{PromptIDs: ids, Mode: engine.AR, Sampling: engine.Sampling{MaxNewTokens: 1},
		Logprobs: true, TopLogprobs: 1, PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	idsJSON, _ := json.Marshal(ids)
	text, l := read(`{"prompt":[` + string(idsJSON) + `],"max_tokens":1,"logprobs":1,"echo":true,"temperature":0,"seed":1234}`)
	n := len(ids) + len(want.Tokens)
	if len(l.Tokens) != n || len(l.TokenLogprobs) != n || len(l.TopLogprobs) != n || len(l.TextOffset) != n {
		t.Fatalf("%d tokens, %d logprobs, %d tops, %d offsets; want %d (the prompt's %d and the answer's)", len(l.Tokens), len(l.TokenLogprobs),
			len(l.TopLogprobs), len(l.TextOffset), n, len(ids))
	}
	if l.TokenLogprobs[0] != nil || l.TopLogprobs[0] != nil {
		t.Errorf("the first token: %v %v; want null", l.TokenLogprobs[0], l.TopLogprobs[0])
	}
	for i := 1; i < len(ids); i++ {
		p := want.PromptLogprobs[i-1]
		if l.TokenLogprobs[i] == nil || *l.TokenLogprobs[i] != p.Logprob || len(l.TopLogprobs[i]) != 1 || l.TextOffset[i] < l.TextOffset[i-1] {
			t.Errorf("prompt token %d: %v %v at %d; the engine's %+v", i, l.TokenLogprobs[i], l.TopLogprobs[i], l.TextOffset[i], p)
		}
	}
	if len(want.Tokens) != 1 {
		t.Fatalf("the engine wrote %d tokens: the test wants one after the prompt", len(want.Tokens))
	}
	if last := l.TokenLogprobs[n-1]; last == nil || *last != want.Logprobs[0].Logprob || l.TextOffset[n-1] != len(text)-len(want.Text) {
		t.Errorf("the answer's token: %v at %d; the engine's %+v, text %q", last, l.TextOffset[n-1], want.Logprobs[0], text)
	}

	_, l = read(`{"prompt":"Unix is","max_tokens":1,"logprobs":0,"echo":true}`)
	if l.TextOffset[0] != 0 || l.TextOffset[1] != 0 || l.TokenLogprobs[0] != nil || l.TokenLogprobs[1] == nil || l.Tokens[1] == "" {
		t.Errorf("a text prompt: %+v; want its BOS first, taking no room, then the text's tokens from offset 0", l)
	}
}
