package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// The shapes an OpenAI client reads.
type chatResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
		PromptDetails    *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// callAPI posts body to path with the token and decodes the JSON answer.
func callAPI(t *testing.T, s *Server, method, path, body string) (int, chatResponse, string) {
	t.Helper()
	resp, raw := do(t, nil, method, base(s)+path, body, map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json"})
	var r chatResponse
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("%s %s: %d, body %q is not JSON: %v", method, path, resp.StatusCode, raw, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	return resp.StatusCode, r, raw
}

// withDefaults is a fake that also reports the model's sampling defaults.
type withDefaults struct{ *fakeGen }

func (withDefaults) GenerationDefaults() engine.Sampling {
	return engine.Sampling{TMin: 0.4, TMax: 0.8}
}

func TestModels(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{}, ModelID: "darkroom-mini"})
	code, _, raw := callAPI(t, s, "GET", "/v1/models", "")
	var list struct {
		Object string
		Data   []struct{ ID, Object, OwnedBy string }
	}
	_ = json.Unmarshal([]byte(raw), &list)
	if code != 200 || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "darkroom-mini" || list.Data[0].Object != "model" {
		t.Errorf("models %d %s", code, raw)
	}
	if code, _, raw := callAPI(t, s, "GET", "/v1/models/darkroom-mini", ""); code != 200 || !strings.Contains(raw, `"id":"darkroom-mini"`) {
		t.Errorf("model %d %s", code, raw)
	}
	if code, r, _ := callAPI(t, s, "GET", "/v1/models/gpt-4", ""); code != 404 || r.Error == nil || r.Error.Code != "model_not_found" {
		t.Errorf("unknown model %d %+v", code, r.Error)
	}
	if code, r, _ := callAPI(t, s, "GET", "/v1/embeddings", ""); code != 404 || r.Error == nil {
		t.Errorf("unknown endpoint %d", code)
	}
	if code, r, _ := callAPI(t, s, "GET", "/v1/chat/completions", ""); code != 405 && (code != 404 || r.Error == nil) {
		t.Errorf("GET completions %d", code)
	}
}

func TestChatCompletion(t *testing.T) {
	g := &fakeGen{commits: []string{"Unix is"}, final: "Unix is an operating system."}
	s := start(t, Options{Engine: withDefaults{g}, ModelID: "darkroom-mini"})
	code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"model":"darkroom-mini","messages":[
		{"role":"system","content":"Be brief."},{"role":"developer","content":"Answer in English."},
		{"role":"user","content":"What is Unix?"},{"role":"assistant","content":[{"type":"text","text":"An OS."}]},
		{"role":"user","content":"More?"}],"max_tokens":64,"temperature":0.5,"seed":42,"top_p":0.9}`)
	if code != 200 || r.Object != "chat.completion" || !strings.HasPrefix(r.ID, "chatcmpl-") || r.Model != "darkroom-mini" || r.Created == 0 {
		t.Fatalf("%d %s", code, raw)
	}
	if len(r.Choices) != 1 || r.Choices[0].Message.Role != "assistant" || r.Choices[0].Message.Content != "Unix is an operating system." ||
		r.Choices[0].FinishReason == nil || *r.Choices[0].FinishReason != "stop" {
		t.Errorf("choices %s", raw)
	}
	if r.Usage == nil || r.Usage.PromptTokens != 7 || r.Usage.CompletionTokens != 5 || r.Usage.TotalTokens != 12 {
		t.Errorf("usage %s", raw)
	}
	req := g.lastRequest(t)
	want := []engine.Message{{Role: "system", Content: "Be brief.\n\nAnswer in English."}, {Role: "user", Content: "What is Unix?"},
		{Role: "model", Content: "An OS."}, {Role: "user", Content: "More?"}}
	if !reflect.DeepEqual(req.Messages, want) {
		t.Errorf("messages %+v, want %+v", req.Messages, want)
	}
	if req.Sampling.MaxNewTokens != 64 || req.Seed != 42 || req.Mode != engine.Diffusion ||
		req.Sampling.TMax != 0.4 || req.Sampling.TMin != 0.2 {
		t.Errorf("request %+v", req)
	}

	// AR mode: temperature is the sampling temperature; no seed → a fresh one each time.
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"mode":"ar","temperature":0,"max_completion_tokens":5}`)
	ar := g.lastRequest(t)
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"mode":"ar"}`)
	ar2 := g.lastRequest(t)
	if ar.Mode != engine.AR || ar.Sampling.Temperature != 0 || ar.Sampling.MaxNewTokens != 5 || ar.Seed == ar2.Seed {
		t.Errorf("AR requests %+v / %+v", ar, ar2)
	}
	// frequency_penalty: the model's own without it, α with it, 0 is off.
	for body, want := range map[string]float64{`"mode":"ar"`: 0, `"mode":"ar","frequency_penalty":0.5`: 0.5, `"mode":"ar","frequency_penalty":0`: -1} {
		callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],`+body+`}`)
		if got := g.lastRequest(t).Sampling.FrequencyPenalty; got != want {
			t.Errorf("%s: Sampling.FrequencyPenalty %g, want %g", body, got, want)
		}
	}
	// presence_penalty: off without it, β with it; below 0 (a wish for repetition) refused.
	for body, want := range map[string]float64{`"mode":"ar"`: 0, `"mode":"ar","presence_penalty":0.5`: 0.5, `"presence_penalty":1.5`: 1.5} {
		callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],`+body+`}`)
		if got := g.lastRequest(t).Sampling.PresencePenalty; got != want {
			t.Errorf("%s: Sampling.PresencePenalty %g, want %g", body, got, want)
		}
	}
	for _, bad := range []string{`-0.5`, `2.5`} {
		if code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"presence_penalty":`+bad+`}`); code != 400 ||
			r.Error == nil || r.Error.Param == nil || *r.Error.Param != "presence_penalty" {
			t.Errorf("presence_penalty %s: %d %s", bad, code, raw)
		}
	}
	// top_p and vLLM's top_k: read as given (top_k -1 is off); out of range refused.
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"mode":"ar","temperature":0.7,"top_p":0.9,"top_k":40}`)
	if got := g.lastRequest(t).Sampling; got.TopP != 0.9 || got.TopK != 40 {
		t.Errorf("top_p 0.9, top_k 40: %+v", got)
	}
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_k":-1}`)
	if got := g.lastRequest(t).Sampling; got.TopP != 0 || got.TopK != 0 {
		t.Errorf("top_k -1: %+v", got)
	}
	for _, bad := range []string{`"top_p":0`, `"top_p":1.5`, `"top_k":-2`} {
		if code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],`+bad+`}`); code != 400 ||
			r.Error == nil || r.Error.Param == nil || !strings.HasPrefix(bad, `"`+*r.Error.Param+`"`) {
			t.Errorf("%s: %d %s", bad, code, raw)
		}
	}
	// logit_bias: token ids as strings; bad keys and values refused.
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"mode":"ar","logit_bias":{"818":-100,"5":2.5}}`)
	if got := g.lastRequest(t).Sampling.LogitBias; len(got) != 2 || got[818] != -100 || got[5] != 2.5 {
		t.Errorf("logit_bias: %v", got)
	}
	for _, bad := range []string{`{"x":1}`, `{"-3":1}`, `{"5":101}`} {
		if code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logit_bias":`+bad+`}`); code != 400 ||
			r.Error == nil || r.Error.Param == nil || *r.Error.Param != "logit_bias" {
			t.Errorf("logit_bias %s: %d %s", bad, code, raw)
		}
	}
	// temperature 0 in diffusion mode stays positive.
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temperature":0}`)
	if d := g.lastRequest(t); !(d.Sampling.TMin > 0 && d.Sampling.TMax > 0 && d.Sampling.TMax < 0.1) {
		t.Errorf("temperature 0 → %+v", d.Sampling)
	}
}

func TestChatLengthAndStop(t *testing.T) {
	g := &fakeGen{final: "alpha beta STOP gamma"}
	s := start(t, Options{Engine: g})
	_, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stop":["STOP","zzz"]}`)
	if r.Choices[0].Message.Content != "alpha beta " || *r.Choices[0].FinishReason != "stop" {
		t.Errorf("stop: %s", raw)
	}
	lg := &lengthGen{fakeGen{final: "cut short"}}
	s2 := start(t, Options{Engine: lg})
	if _, r, raw := callAPI(t, s2, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2}`); *r.Choices[0].FinishReason != "length" {
		t.Errorf("length: %s", raw)
	}
}

// lengthGen stops at max_tokens.
type lengthGen struct{ fakeGen }

func (l *lengthGen) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	res, err := l.fakeGen.Generate(ctx, req)
	if res != nil {
		res.StopReason = "max_tokens"
	}
	return res, err
}

func TestChatErrors(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}})
	for _, c := range []struct {
		name, body, param string
		status            int
	}{
		{"not json", `{"messages":`, "", 400},
		{"no messages", `{"messages":[]}`, "messages", 400},
		{"tool role", `{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].role", 400},
		{"late system", `{"messages":[{"role":"user","content":"x"},{"role":"system","content":"y"}]}`, "messages[1].role", 400},
		{"system only", `{"messages":[{"role":"system","content":"y"}]}`, "messages", 400},
		{"image part", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x"}}]}]}`, "messages[0].content", 400},
		{"n", `{"messages":[{"role":"user","content":"x"}],"n":9}`, "n", 400},
		{"max_tokens", `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, "max_tokens", 400},
		{"temperature", `{"messages":[{"role":"user","content":"x"}],"temperature":3}`, "temperature", 400},
		{"frequency_penalty", `{"messages":[{"role":"user","content":"x"}],"frequency_penalty":2.5}`, "frequency_penalty", 400},
		{"negative frequency_penalty", `{"messages":[{"role":"user","content":"x"}],"frequency_penalty":-0.5}`, "frequency_penalty", 400},
		{"mode", `{"messages":[{"role":"user","content":"x"}],"mode":"fast"}`, "mode", 400},
		{"stop", `{"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]}`, "stop", 400},
		{"too big", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", maxRequestBytes) + `"}]}`, "", 413},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", c.body)
			if code != c.status || r.Error == nil || r.Error.Message == "" || r.Error.Type != "invalid_request_error" {
				t.Fatalf("%d %.300s", code, raw)
			}
			if c.param != "" && (r.Error.Param == nil || *r.Error.Param != c.param) {
				t.Errorf("param %v, want %q", r.Error.Param, c.param)
			}
		})
	}
	s2 := start(t, Options{Engine: errGen{}})
	if code, r, raw := callAPI(t, s2, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`); code != 500 || r.Error == nil ||
		r.Error.Type != "server_error" || !strings.Contains(r.Error.Message, "device lost") {
		t.Errorf("engine error: %d %s", code, raw)
	}
}

// TestChatWrongTypeInPlainWords: a field sent as the wrong kind of JSON value is
// named, with what it takes, in the API's terms; it read "json: cannot unmarshal
// string into Go struct field ChatRequest.temperature of type float64".
func TestChatWrongTypeInPlainWords(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}})
	for _, c := range []struct{ body, param, want string }{
		{`{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, "temperature", "temperature must be a number, not a string"},
		{`{"messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, "max_tokens", "max_tokens must be a whole number, not 1.5"},
		{`{"messages":[{"role":7,"content":"x"}]}`, "messages.role", "messages.role must be a string, not a number"},
		{`{"messages":{"role":"user"}}`, "messages", "messages must be an array, not an object"},
		{`{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, "stream", "stream must be true or false, not a string"},
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", c.body)
		if code != 400 || r.Error == nil || r.Error.Message != c.want || r.Error.Param == nil || *r.Error.Param != c.param ||
			strings.Contains(raw, "Go ") {
			t.Errorf("%s:\n got %d %s\nwant 400, %q (param %s)", c.body, code, raw, c.want, c.param)
		}
	}
}

// streamChunks posts a streaming request and sends each parsed chunk on the
// returned channel; the channel closes at the end of the stream, and ended
// reports whether [DONE] came last.
func streamChunks(t *testing.T, s *Server, body string) (chunks <-chan chatResponse, ended *bool) {
	t.Helper()
	req, _ := http.NewRequest("POST", base(s)+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan chatResponse, 64)
	done := new(bool)
	go func() {
		defer close(ch)
		for ev := range readSSE(resp.Body) {
			if ev.name != "" {
				t.Errorf("named event %q in an OpenAI stream", ev.name)
			}
			if *done {
				t.Errorf("data after [DONE]: %q", ev.data)
			}
			if ev.data == "[DONE]" {
				*done = true
				continue
			}
			var c chatResponse
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				t.Errorf("chunk %q: %v", ev.data, err)
				return
			}
			ch <- c
		}
	}()
	return ch, done
}

// stream collects a whole streamed answer.
func stream(t *testing.T, s *Server, body string) ([]chatResponse, bool) {
	t.Helper()
	ch, done := streamChunks(t, s, body)
	var out []chatResponse
	for c := range ch {
		out = append(out, c)
	}
	return out, *done
}

// content joins the streamed deltas.
func content(chunks []chatResponse) string {
	var b strings.Builder
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				b.WriteString(*ch.Delta.Content)
			}
		}
	}
	return b.String()
}

func TestChatStreaming(t *testing.T) {
	// Commits grow the text; the second ends in half a character (U+FFFD),
	// which must be held back until the next commit completes it.
	commits := []string{"Unix is", "Unix is an operating sys\uFFFD", "Unix is an operating system café"}
	gate := make(chan struct{})
	g := &fakeGen{commits: commits, final: "Unix is an operating system café.", gate: gate}
	s := start(t, Options{Engine: g, ModelID: "darkroom-mini"})
	ch, done := streamChunks(t, s, `{"messages":[{"role":"user","content":"What is Unix?"}],"stream":true,"stream_options":{"include_usage":true}}`)
	recv := func() chatResponse { return next(t, ch) }
	chunks := []chatResponse{recv()} // the role chunk comes before any text
	// Each committed canvas arrives as its own delta before the next is written.
	for i, want := range []string{"Unix is", " an operating sys", "tem café"} {
		gate <- struct{}{}
		c := recv()
		if len(c.Choices) != 1 || c.Choices[0].Delta.Content == nil || *c.Choices[0].Delta.Content != want {
			t.Fatalf("delta %d: %+v, want %q", i, c, want)
		}
		chunks = append(chunks, c)
	}
	gate <- struct{}{}
	for c := range ch {
		chunks = append(chunks, c)
	}
	if !*done {
		t.Error("no [DONE]")
	}
	first := chunks[0]
	if first.Object != "chat.completion.chunk" || first.Choices[0].Delta.Role != "assistant" || first.Model != "darkroom-mini" {
		t.Errorf("first chunk %+v", first)
	}
	for i, c := range chunks {
		if c.ID != first.ID || c.Created != first.Created || c.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d id %q created %d", i, c.ID, c.Created)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && strings.ContainsRune(*ch.Delta.Content, '\uFFFD') {
				t.Errorf("chunk %d sent half a character: %q", i, *ch.Delta.Content)
			}
		}
	}
	if got := content(chunks); got != "Unix is an operating system café." {
		t.Errorf("streamed content %q", got)
	}
	fin := chunks[len(chunks)-2]
	if len(fin.Choices) != 1 || fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "stop" {
		t.Errorf("finish chunk %+v", fin)
	}
	u := chunks[len(chunks)-1]
	if len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != 7 || u.Usage.CompletionTokens != 6 {
		t.Errorf("usage chunk %+v", u)
	}
	for _, c := range chunks[:len(chunks)-1] {
		if c.Usage != nil {
			t.Error("usage before the last chunk")
		}
	}

	// Without include_usage there is no usage chunk.
	s2 := start(t, Options{Engine: &fakeGen{final: "x"}})
	chunks, _ = stream(t, s2, `{"messages":[{"role":"user","content":"x"}],"stream":true}`)
	if last := chunks[len(chunks)-1]; last.Usage != nil || *last.Choices[0].FinishReason != "stop" {
		t.Errorf("last chunk %+v", last)
	}
}

func TestChatStreamingStop(t *testing.T) {
	g := &fakeGen{commits: []string{"one two ST", "one two STOP three"}, final: "one two STOP three four"}
	s := start(t, Options{Engine: g})
	chunks, done := stream(t, s, `{"messages":[{"role":"user","content":"x"}],"stream":true,"stop":"STOP"}`)
	if got := content(chunks); got != "one two " || !done {
		t.Errorf("content %q, done %v", got, done)
	}
	if fin := chunks[len(chunks)-1]; *fin.Choices[0].FinishReason != "stop" {
		t.Errorf("finish %+v", fin)
	}
}

func TestChatStreamingError(t *testing.T) {
	s := start(t, Options{Engine: errGen{}})
	chunks, done := stream(t, s, `{"messages":[{"role":"user","content":"x"}],"stream":true}`)
	if !done || len(chunks) != 2 || chunks[1].Error == nil || !strings.Contains(chunks[1].Error.Message, "device lost") {
		t.Errorf("chunks %+v done %v", chunks, done)
	}
}

func TestHoldBack(t *testing.T) {
	for _, c := range []struct {
		text  string
		stops []string
		want  int
	}{
		{"hello", nil, 5},
		{"hello\uFFFD", nil, 5},
		{"hello wor", []string{"world"}, 6},
		{"hello w", []string{"xx", "wo"}, 6},
		{"hello", []string{"x"}, 5},
		{"", []string{"abc"}, 0},
	} {
		if got := holdBack(c.text, c.stops); got != c.want {
			t.Errorf("holdBack(%q, %q) = %d, want %d", c.text, c.stops, got, c.want)
		}
	}
	if i, stop := firstStop("a STOP b END", []string{"END", "STOP"}); i != 2 || stop != "STOP" {
		t.Errorf("firstStop = %d, %q", i, stop)
	}
	if i, _ := firstStop("abc", []string{"x"}); i != -1 {
		t.Error("firstStop")
	}
}

// TestChatDefaultMode: a request without "mode" runs the model's APIMode (the
// faster mode here) and says so in system_fingerprint and the X-Darkroom-Mode
// headers; a request naming a mode gets it; a model without one gets diffusion.
func TestChatDefaultMode(t *testing.T) {
	g := &fakeGen{final: "ok"}
	s := start(t, Options{Engine: g, ModelID: "diffusiongemma-26b", APIMode: engine.AR,
		APIModeReason: "the printer (AR): faster on this machine"})
	hdr := map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json"}
	resp, raw := do(t, nil, "POST", base(s)+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, hdr)
	if g.lastRequest(t).Mode != engine.AR || !strings.Contains(raw, `"system_fingerprint":"darkroom-ar"`) ||
		resp.Header.Get("X-Darkroom-Mode") != "ar" || !strings.Contains(resp.Header.Get("X-Darkroom-Mode-Reason"), "faster") {
		t.Errorf("no mode: %s %v", raw, resp.Header)
	}
	resp, raw = do(t, nil, "POST", base(s)+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"mode":"diffusion"}`, hdr)
	if g.lastRequest(t).Mode != engine.Diffusion || !strings.Contains(raw, `"system_fingerprint":"darkroom-diffusion"`) ||
		resp.Header.Get("X-Darkroom-Mode") != "diffusion" || resp.Header.Get("X-Darkroom-Mode-Reason") != "" {
		t.Errorf("diffusion asked for: %s %v", raw, resp.Header)
	}
	s2 := start(t, Options{Engine: g, ModelID: "darkroom-mini"})
	if _, _, raw := callAPI(t, s2, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`); g.lastRequest(t).Mode != engine.Diffusion || !strings.Contains(raw, `"system_fingerprint":"darkroom-diffusion"`) {
		t.Errorf("no default: %s", raw)
	}
}

// TestChatDefaultSystem: a chat request with no system message is given the
// model's System (the built-in Mini's training turn, without which it answers
// with a page); one that brings its own keeps it alone.
func TestChatDefaultSystem(t *testing.T) {
	g := &fakeGen{final: "ok"}
	s := start(t, Options{Engine: g, ModelID: "darkroom-mini", System: "You are Darkroom Mini."})
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"What is Unix?"}]}`)
	want := []engine.Message{{Role: "system", Content: "You are Darkroom Mini."}, {Role: "user", Content: "What is Unix?"}}
	if req := g.lastRequest(t); !reflect.DeepEqual(req.Messages, want) {
		t.Errorf("no system message: %+v; want %+v", req.Messages, want)
	}
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"x"}]}`)
	if req := g.lastRequest(t); len(req.Messages) != 2 || req.Messages[0].Content != "Be brief." {
		t.Errorf("own system message: %+v", req.Messages)
	}
	plain := start(t, Options{Engine: g, ModelID: "other"})
	callAPI(t, plain, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	if req := g.lastRequest(t); len(req.Messages) != 1 || req.Messages[0].Role != "user" {
		t.Errorf("a model with no System: %+v", req.Messages)
	}
}

// TestChatAnswerOpensWithTheEntrysLead: a question about an entry the model's
// folder holds opens the API's answer with the entry's opening sentences, as the
// app's Chat does, and X-Darkroom-Lead says so; the client's own opening, or
// "no_lead", leaves the model alone, as does any other question.
func TestChatAnswerOpensWithTheEntrysLead(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system from Bell Labs. It runs.</p>", nil)
	g := &fakeGen{final: "ok"}
	s := start(t, Options{Engine: g, ModelID: "darkroom-mini", Leads: &leads})
	hdr := map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json"}
	const lead = "**Unix**: An operating system from Bell Labs. It runs."
	for _, tc := range []struct{ body, opening string }{
		{`{"messages":[{"role":"user","content":"What is unix?"}]}`, lead},
		{`{"messages":[{"role":"user","content":"What is Unix?"},{"role":"assistant","content":"x"},{"role":"user","content":"And Bell Labs?"}]}`, ""},
		{`{"messages":[{"role":"user","content":"What is Unix?"}],"darkroom":{"no_lead":true}}`, ""},
		{`{"messages":[{"role":"user","content":"What is Unix?"}],"darkroom":{"opening":"Unix is"}}`, "Unix is"},
		{`{"messages":[{"role":"user","content":"Tell me about Unix."}],"stream":true}`, lead},
	} {
		resp, raw := do(t, nil, "POST", base(s)+"/v1/chat/completions", tc.body, hdr)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, raw)
		}
		if got := g.lastRequest(t); got.Opening+got.Lead != tc.opening || (got.Lead != "") != (tc.opening == lead) || got.LeadEnds != (got.Lead != "") {
			t.Errorf("%s: opening %q, lead %q; want %q", tc.body, got.Opening, got.Lead, tc.opening)
		}
		if said, want := resp.Header.Get("X-Darkroom-Lead") != "", tc.opening == lead; said != want {
			t.Errorf("%s: X-Darkroom-Lead %q", tc.body, resp.Header.Get("X-Darkroom-Lead"))
		}
	}
	// As in the app's Chat: a term not held is a tentative heading, and where
	// no entry is held the Library answer is the reply held once begun; not
	// with "no_lead".
	for _, tc := range []struct {
		body, opening string
		tentative     bool
		reply         string
	}{
		{`{"messages":[{"role":"user","content":"What is a server room?"}]}`, "**server room", true, assets.ChatElsewhere()},
		{`{"messages":[{"role":"user","content":"Hello!"}]}`, "", false, assets.ChatElsewhere()},
		{`{"messages":[{"role":"user","content":"What is Unix?"}]}`, "**Unix", false, ""},
		{`{"messages":[{"role":"user","content":"Hello!"}],"darkroom":{"no_lead":true}}`, "", false, ""},
	} {
		if resp, raw := do(t, nil, "POST", base(s)+"/v1/chat/completions", tc.body, hdr); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, raw)
		}
		if got := g.lastRequest(t); got.Opening != tc.opening || got.OpeningTentative != tc.tentative || got.Reply != tc.reply {
			t.Errorf("%s: opening %q (tentative %v), reply %q; want %q (%v), %q", tc.body, got.Opening, got.OpeningTentative, got.Reply,
				tc.opening, tc.tentative, tc.reply)
		}
	}
}

// TestWrongEndpointSaysWhichThereAre: a request to an endpoint this server does
// not have names the ones it has, and a path without /v1 (an SDK given the base
// URL http://127.0.0.1:PORT) says the base URL wants /v1. They said 'unknown API
// endpoint POST /v1/responses' and, without /v1, '404 page not found' in
// plain text, which no OpenAI client can read.
func TestWrongEndpointSaysWhichThereAre(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}, ModelID: "darkroom-mini"})
	offers := "this server offers GET /v1/models, POST /v1/chat/completions, POST /v1/completions, POST /v1/responses and POST /v1/messages"
	for _, path := range []string{"/v1/embeddings", "/v1/audio/speech"} {
		code, r, raw := callAPI(t, s, "POST", path, `{"model":"darkroom-mini","prompt":"hi"}`)
		if code != 404 || r.Error == nil || r.Error.Code != "unknown_url" || r.Error.Message != "unknown API endpoint POST "+path+": "+offers {
			t.Errorf("POST %s: %d %s; want 404 saying %q", path, code, raw, offers)
		}
	}
	host := strings.TrimPrefix(base(s), "http://")
	for _, path := range []string{"/chat/completions", "/models", "/completions"} {
		code, r, raw := callAPI(t, s, "POST", path, `{"messages":[{"role":"user","content":"hi"}]}`)
		want := "the API is under /v1: set the base URL to http://" + host + "/v1 (POST /v1/chat/completions, POST /v1/completions, POST /v1/responses, POST /v1/messages, GET /v1/models)"
		if code != 404 || r.Error == nil || r.Error.Code != "unknown_url" || r.Error.Message != want {
			t.Errorf("POST %s: %d %s; want 404 saying %q", path, code, raw, want)
		}
	}
}

// TestNoMessagesShowsTheShape: a request without messages (a completions-style
// {"prompt": "…"} sent to the chat endpoint, or an empty list) shows what the
// field looks like; it said only 'messages must hold at least one message'.
func TestNoMessagesShowsTheShape(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}})
	want := `messages must hold at least one message, e.g. "messages": [{"role": "user", "content": "What is Unix?"}]`
	for _, body := range []string{`{"prompt":"What is Unix?"}`, `{"messages":[]}`} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", body)
		if code != 400 || r.Error == nil || r.Error.Message != want {
			t.Errorf("%s: %d %s\nwant %q", body, code, raw, want)
		}
	}
}

// TestJSONMode: response_format json_object asks the engine for one JSON
// object (engine.Request.JSON) written by the printer — the mode a request
// names none of, saying why — with no entry's lead, though the question is
// about one; a json_schema is refused in words (it was ignored once, and the
// answer came back as prose a client failed to parse), and so are diffusion
// and an opening with JSON; response_format text is what the server does
// anyway.
func TestJSONMode(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system from Bell Labs.</p>", nil)
	g := &fakeGen{final: `{"a": 1}`}
	s := start(t, Options{Engine: g, Leads: &leads, APIMode: engine.Diffusion})
	const ask = `{"messages":[{"role":"user","content":"What is Unix?"}],"response_format":{"type":"json_object"}`
	resp, raw := do(t, nil, "POST", base(s)+"/v1/chat/completions", ask+"}", map[string]string{"Authorization": "Bearer " + s.Token()})
	if req := g.lastRequest(t); resp.StatusCode != 200 || !req.JSON || req.Mode != engine.AR || req.Lead != "" || req.Opening != "" ||
		resp.Header.Get("X-Darkroom-Mode-Reason") != jsonMode {
		t.Errorf("json_object: %d %s; request %+v, mode reason %q", resp.StatusCode, raw, req, resp.Header.Get("X-Darkroom-Mode-Reason"))
	}
	callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"What is Unix?"}],"response_format":{"type":"text"}}`)
	if req := g.lastRequest(t); req.JSON || req.Mode != engine.Diffusion || req.Lead == "" {
		t.Errorf("response_format text: request %+v", req)
	}
	for _, c := range []struct{ body, param, says string }{
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","allOf":[]}}}}`,
			"response_format.json_schema.schema", `the keyword "allOf" is supported with one schema only`},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}}`, "response_format.json_schema", "needs its schema"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}`, "response_format", `want "text", "json_object" or "json_schema"`},
		{ask + `,"mode":"diffusion"}`, "response_format", `"mode": "ar"`},
		{ask + `,"darkroom":{"opening":"Unix"}}`, "darkroom.opening", "begins with its object"},
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", c.body)
		if code != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != c.param || !strings.Contains(r.Error.Message, c.says) {
			t.Errorf("%s: %d %s; want 400 about %s saying %q", c.body, code, raw, c.param, c.says)
		}
	}
}

// TestJSONModeRealEngine: on a real (tiny, random) model a json_object answer
// is the beginning of a JSON object, a whole one where it stopped by itself.
func TestJSONModeRealEngine(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	for _, seed := range []string{"1", "2", "3"} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Describe Unix as JSON."}],`+
			`"response_format":{"type":"json_object"},"max_tokens":40,"temperature":1,"seed":`+seed+`}`)
		if code != 200 || len(r.Choices) != 1 {
			t.Fatalf("%d %s", code, raw)
		}
		text, finish := r.Choices[0].Message.Content, *r.Choices[0].FinishReason
		ok, closed := sampler.JSONPrefix(text)
		if !ok || closed != (finish == "stop") || closed && !json.Valid([]byte(text)) {
			t.Errorf("seed %s: %q (%s): prefix %v, closed %v", seed, text, finish, ok, closed)
		}
	}
}

// TestChatAnswerLength: a chat completion that asks for no max_tokens gets the
// model's answer length (Options.AnswerTokens: 2048 for DiffusionGemma, whose
// generation config says 256, one canvas, which cut a general assistant's
// answers short, as OpenAI's clients leave max_tokens out for a whole answer);
// max_tokens, where given, is kept; a model with none gets its own default.
func TestChatAnswerLength(t *testing.T) {
	g := &fakeGen{final: "An answer."}
	s := start(t, Options{Engine: g, AnswerTokens: 2048})
	for body, want := range map[string]int{
		`{"messages":[{"role":"user","content":"x"}]}`:                              2048,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":100}`:             100,
		`{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":3000}`: 3000,
	} {
		if code, _, raw := callAPI(t, s, "POST", "/v1/chat/completions", body); code != 200 {
			t.Fatalf("%s: %d %s", body, code, raw)
		}
		if got := g.lastRequest(t).Sampling.MaxNewTokens; got != want {
			t.Errorf("%s: max new tokens %d, want %d", body, got, want)
		}
	}
	g0 := &fakeGen{final: "An answer."}
	s0 := start(t, Options{Engine: g0})
	callAPI(t, s0, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	if got := g0.lastRequest(t).Sampling.MaxNewTokens; got != 0 {
		t.Errorf("a model with no answer length: max new tokens %d, want 0 (its own default)", got)
	}
}

// TestJSONSchemaRealEngine: on a real (tiny, random) model a json_schema
// answer is the beginning of an instance of the schema — a whole one where it
// stopped by itself — through chat completions and the Responses API's flat
// text.format alike.
func TestJSONSchemaRealEngine(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	const schema = `{"type":"object","properties":{"name":{"type":"string","enum":["Unix","Plan 9"]},"year":{"type":"integer"},` +
		`"open":{"type":"boolean"}},"required":["name","year","open"],"additionalProperties":false}`
	compiled, err := sampler.CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	closedOnes := 0
	for _, seed := range []string{"1", "2", "3", "4"} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Describe Unix as JSON."}],`+
			`"response_format":{"type":"json_schema","json_schema":{"name":"os","strict":true,"schema":`+schema+`}},"max_tokens":60,"temperature":1,"seed":`+seed+`}`)
		if code != 200 || len(r.Choices) != 1 {
			t.Fatalf("%d %s", code, raw)
		}
		text, finish := r.Choices[0].Message.Content, *r.Choices[0].FinishReason
		ok, closed := sampler.SchemaPrefix(compiled, text)
		if !ok || closed != (finish == "stop") {
			t.Errorf("seed %s: %q (%s): prefix %v, closed %v", seed, text, finish, ok, closed)
		}
		if closed {
			closedOnes++
			var v struct {
				Name *string
				Year *int
				Open *bool
			}
			if err := json.Unmarshal([]byte(text), &v); err != nil || v.Name == nil || v.Year == nil || v.Open == nil {
				t.Errorf("seed %s: %q is not an instance: %v", seed, text, err)
			}
		}
		code, rr, rraw := responsesCall(t, s, `{"input":"Describe Unix as JSON.","text":{"format":{"type":"json_schema","name":"os","schema":`+schema+`}},`+
			`"max_output_tokens":60,"temperature":1,"seed":`+seed+`,"mode":"ar"}`)
		if code != 200 || len(rr.Output) != 1 || (*rr.Output[0].Content)[0].Text != text {
			t.Errorf("seed %s: the Responses API's answer %s, want chat's %q", seed, rraw, text)
		}
	}
	t.Logf("%d of 4 answers closed", closedOnes)
}

// TestChatStreamTextChanged: where the engine's final text differs from what was
// already streamed (a committed canvas decoded again across a token boundary; here a
// whole word), the stream cannot take back what it sent, but the rest of the answer
// still comes, from the same place in the new text: it was dropped, the stream ending
// after the first commit's text. A client reading the thinking and then the answer
// of a /v1/messages stream lost the answer so, on a busy machine.
func TestChatStreamTextChanged(t *testing.T) {
	gate := make(chan struct{})
	g := &fakeGen{commits: []string{"Unix is a"}, final: "Unix was an operating system.", gate: gate}
	s := start(t, Options{Engine: g, ModelID: "darkroom-mini"})
	ch, done := streamChunks(t, s, `{"messages":[{"role":"user","content":"What is Unix?"}],"stream":true}`)
	chunks := []chatResponse{next(t, ch)} // the role chunk
	gate <- struct{}{}
	if c := next(t, ch); len(c.Choices) != 1 || c.Choices[0].Delta.Content == nil || *c.Choices[0].Delta.Content != "Unix is a" {
		t.Fatalf("first delta %+v", c)
	}
	gate <- struct{}{}
	for c := range ch {
		chunks = append(chunks, c)
	}
	if got := content(chunks); !*done || got != "an operating system." {
		t.Errorf("after the first commit the stream sent %q (done %v), want the rest of the final text from the same place", got, *done)
	}
}
