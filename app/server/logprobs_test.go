package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// tokenGen is a fake printer: it writes its words one token each (EventToken),
// token i with id 100+i and, where the request asks for logprobs, the log
// probability −0.25·(i+1) and as alternatives itself and then id 7.
type tokenGen struct {
	words []string

	mu       sync.Mutex
	requests []engine.Request
}

func (g *tokenGen) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	g.mu.Lock()
	g.requests = append(g.requests, req)
	g.mu.Unlock()
	res := &engine.Result{Tokens: []int{}, PromptTokens: 7, StopReason: engine.StopEOS}
	for i, w := range g.words {
		if n := req.Sampling.MaxNewTokens; n > 0 && len(res.Tokens) == n {
			res.StopReason = engine.StopMaxTokens
			break
		}
		id := 100 + i
		res.Text += w
		res.Tokens = append(res.Tokens, id)
		ev := engine.Event{Kind: engine.EventToken, Committed: slices.Clone(res.Tokens), Text: res.Text}
		if req.Logprobs {
			lp := engine.TokenLogprob{ID: id, Logprob: -0.25 * float32(i+1)}
			for _, alt := range []engine.TopLogprob{{ID: id, Logprob: lp.Logprob}, {ID: 7, Logprob: -3}}[:req.TopLogprobs] {
				lp.Top = append(lp.Top, alt)
			}
			res.Logprobs = append(res.Logprobs, lp)
			ev.Logprob = &lp
		}
		if req.OnEvent != nil {
			req.OnEvent(ev)
		}
	}
	return res, nil
}

func (g *tokenGen) last(t *testing.T) engine.Request {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.requests) == 0 {
		t.Fatal("no generation was requested")
	}
	return g.requests[len(g.requests)-1]
}

// wordVocab names tokenGen's tokens: id 100+i is words[i], 7 is "alt".
type wordVocab []string

func (v wordVocab) TokenText(id int) string {
	if id == 7 {
		return "alt"
	}
	return v[id-100]
}

func (wordVocab) IsEnd(int) bool { return false }

// chatLogprobs is the chat logprobs an OpenAI client reads.
type chatLogprobs struct {
	Content []struct {
		Token       string  `json:"token"`
		Logprob     float32 `json:"logprob"`
		Bytes       []int   `json:"bytes"`
		TopLogprobs []struct {
			Token   string  `json:"token"`
			Logprob float32 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"content"`
}

// chatWithLogprobs posts body to the chat endpoint: its status, headers, the
// answer's text and logprobs (a stream's joined, with each chunk's tokens
// checked against its text).
func chatWithLogprobs(t *testing.T, s *Server, body string) (int, http.Header, string, *chatLogprobs, string) {
	t.Helper()
	resp, raw := do(t, nil, "POST", base(s)+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + s.Token()})
	type choice struct {
		Message struct{ Content string }
		Delta   struct{ Content string }
		// RawMessage: a chunk says null or the object, and the test tells them apart.
		Logprobs json.RawMessage `json:"logprobs"`
	}
	decode := func(data string) []choice {
		var c struct{ Choices []choice }
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		return c.Choices
	}
	read := func(raw json.RawMessage) *chatLogprobs {
		if string(raw) == "null" || len(raw) == 0 {
			return nil
		}
		var lp chatLogprobs
		if err := json.Unmarshal(raw, &lp); err != nil {
			t.Fatalf("logprobs %s: %v", raw, err)
		}
		return &lp
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cs := decode(raw)
		if len(cs) == 0 {
			return resp.StatusCode, resp.Header, "", nil, raw
		}
		return resp.StatusCode, resp.Header, cs[0].Message.Content, read(cs[0].Logprobs), raw
	}
	var text strings.Builder
	var all *chatLogprobs
	for ev := range readSSE(strings.NewReader(raw)) {
		if ev.data == "[DONE]" {
			continue
		}
		for _, c := range decode(ev.data) {
			text.WriteString(c.Delta.Content)
			lp := read(c.Logprobs)
			if lp == nil {
				continue
			}
			if all == nil {
				all = &chatLogprobs{}
			}
			// A chunk's tokens spell its text (where their bytes are whole
			// characters), the last one whole though a stop string cut it.
			var toks []byte
			for _, tok := range lp.Content {
				toks = append(toks, intBytes(tok.Bytes)...)
			}
			if utf8.Valid(toks) && !strings.HasPrefix(string(toks), c.Delta.Content) {
				t.Errorf("a chunk's tokens %q, its text %q", toks, c.Delta.Content)
			}
			all.Content = append(all.Content, lp.Content...)
		}
	}
	return resp.StatusCode, resp.Header, text.String(), all, raw
}

// TestChatLogprobs: logprobs true returns each token's log probability and
// its alternatives in OpenAI's shape, whole or one chunk's tokens at a time;
// with no mode named the request runs in AR mode and says why, and the answer
// is the model's alone (no entry's lead, though the folder holds one); a stop
// string's cut leaves out the tokens after it, a token it cuts in two kept.
func TestChatLogprobs(t *testing.T) {
	words := []string{"Unix", " is", " an", " OS", "."}
	g := &tokenGen{words: words}
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system from Bell Labs.</p>", nil)
	s := start(t, Options{Engine: g, Vocab: wordVocab(words), Leads: &leads, APIMode: engine.Diffusion})
	const ask = `{"messages":[{"role":"user","content":"What is Unix?"}],"logprobs":true,"top_logprobs":2`
	for _, stream := range []bool{false, true} {
		body := ask + "}"
		if stream {
			body = ask + `,"stream":true}`
		}
		code, hdr, text, lp, raw := chatWithLogprobs(t, s, body)
		if code != 200 || text != "Unix is an OS." || lp == nil || len(lp.Content) != len(words) {
			t.Fatalf("stream %v: %d %q %+v\n%s", stream, code, text, lp, raw)
		}
		if hdr.Get("X-Darkroom-Mode") != "ar" || hdr.Get("X-Darkroom-Mode-Reason") != logprobsMode {
			t.Errorf("stream %v: mode %q (%q)", stream, hdr.Get("X-Darkroom-Mode"), hdr.Get("X-Darkroom-Mode-Reason"))
		}
		req := g.last(t)
		if req.Mode != engine.AR || !req.Logprobs || req.TopLogprobs != 2 || req.Lead != "" || req.Opening != "" {
			t.Errorf("stream %v: request %+v", stream, req)
		}
		for i, c := range lp.Content {
			if c.Token != words[i] || c.Logprob != -0.25*float32(i+1) || string(intBytes(c.Bytes)) != words[i] ||
				len(c.TopLogprobs) != 2 || c.TopLogprobs[0].Token != words[i] || c.TopLogprobs[1].Token != "alt" || c.TopLogprobs[1].Logprob != -3 {
				t.Errorf("stream %v: token %d: %+v", stream, i, c)
			}
		}
	}
	// Without logprobs: null, and the entry's lead as before.
	if code, _, _, lp, raw := chatWithLogprobs(t, s, `{"messages":[{"role":"user","content":"What is Unix?"}]}`); code != 200 || lp != nil ||
		!strings.Contains(raw, `"logprobs":null`) || g.last(t).Lead == "" || g.last(t).Mode != engine.Diffusion {
		t.Errorf("without logprobs: %d %s; request %+v", code, raw, g.last(t))
	}
	for _, c := range []struct {
		stop string
		text string
		toks int
	}{{" an", "Unix is", 2}, {"n O", "Unix is a", 3}, {"Unix", "", 0}} {
		for _, stream := range []bool{false, true} {
			body := `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"stop":"` + c.stop + `","stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
			code, _, text, lp, raw := chatWithLogprobs(t, s, body)
			n := 0
			if lp != nil {
				n = len(lp.Content)
			}
			if code != 200 || text != c.text || n != c.toks {
				t.Errorf("stop %q, stream %v: %q with %d tokens' logprobs, want %q with %d\n%s", c.stop, stream, text, n, c.text, c.toks, raw)
			}
		}
	}
	for _, c := range []struct{ extra, param, says string }{
		{`"top_logprobs":21`, "top_logprobs", "0 to 20"},
		{`"logprobs":false,"top_logprobs":2`, "top_logprobs", `needs "logprobs": true`},
		{`"logprobs":true,"mode":"diffusion"`, "logprobs", `"mode": "ar"`},
		{`"logprobs":true,"darkroom":{"opening":"Unix"}`, "darkroom.opening", "not the model's picks"},
	} {
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],`+c.extra+`}`)
		if code != 400 || r.Error == nil || r.Error.Param == nil || *r.Error.Param != c.param || !strings.Contains(r.Error.Message, c.says) {
			t.Errorf("%s: %d %s; want 400 about %s saying %q", c.extra, code, raw, c.param, c.says)
		}
	}
	// Asked for none: answered as before.
	for _, extra := range []string{`"logprobs":false`, `"logprobs":null`, `"top_logprobs":0`, `"logprobs":false,"top_logprobs":null`} {
		if code, _, _, lp, raw := chatWithLogprobs(t, s, `{"messages":[{"role":"user","content":"x"}],`+extra+`}`); code != 200 || lp != nil {
			t.Errorf("%s: %d %s, want 200 without logprobs", extra, code, raw)
		}
	}
}

func intBytes(b []int) []byte {
	out := make([]byte, len(b))
	for i, v := range b {
		out[i] = byte(v)
	}
	return out
}

// TestTextCompletionLogprobs: logprobs N on /v1/completions returns OpenAI's
// parallel lists — tokens, token_logprobs, top_logprobs (N each) and each
// token's offset in the text — whole, and streamed a chunk's tokens at a time.
func TestTextCompletionLogprobs(t *testing.T) {
	words := []string{"Unix", " is", " an", " OS", "."}
	g := &tokenGen{words: words}
	s := start(t, Options{Engine: g, Vocab: wordVocab(words)})
	type lists struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float32            `json:"token_logprobs"`
		TopLogprobs   []map[string]float32 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	check := func(name string, l lists, top int) {
		t.Helper()
		if !slices.Equal(l.Tokens, words) || !slices.Equal(l.TextOffset, []int{0, 4, 7, 10, 13}) || len(l.TokenLogprobs) != 5 || len(l.TopLogprobs) != 5 {
			t.Fatalf("%s: %+v", name, l)
		}
		for i := range words {
			if l.TokenLogprobs[i] != -0.25*float32(i+1) || len(l.TopLogprobs[i]) != top || (top == 2 && l.TopLogprobs[i]["alt"] != -3) {
				t.Errorf("%s: token %d: %g %v", name, i, l.TokenLogprobs[i], l.TopLogprobs[i])
			}
		}
	}
	_, _, raw := callText(t, s, `{"prompt":"Unix","logprobs":2}`)
	var whole struct {
		Choices []struct {
			Text     string
			Logprobs lists
		}
	}
	if err := json.Unmarshal([]byte(raw), &whole); err != nil || len(whole.Choices) != 1 || whole.Choices[0].Text != "Unix is an OS." {
		t.Fatalf("%s (%v)", raw, err)
	}
	check("whole", whole.Choices[0].Logprobs, 2)
	if req := g.last(t); req.Mode != engine.AR || !req.Logprobs || req.TopLogprobs != 2 {
		t.Errorf("request %+v", req)
	}
	callText(t, s, `{"prompt":"Unix","logprobs":0}`)
	if req := g.last(t); !req.Logprobs || req.TopLogprobs != 0 {
		t.Errorf("logprobs 0: request %+v; want the tokens' own logprobs, no alternatives (as OpenAI's and vLLM's)", req)
	}
	_, raws, done := streamText(t, s, `{"prompt":"Unix","logprobs":0,"stream":true}`)
	var joined lists
	for _, r := range raws {
		var c struct {
			Choices []struct {
				Text     string
				Logprobs *lists
			}
		}
		if err := json.Unmarshal([]byte(r), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			if ch.Logprobs == nil {
				continue
			}
			if got := strings.Join(ch.Logprobs.Tokens, ""); got != ch.Text {
				t.Errorf("a chunk's tokens %q, its text %q", got, ch.Text)
			}
			joined.Tokens = append(joined.Tokens, ch.Logprobs.Tokens...)
			joined.TokenLogprobs = append(joined.TokenLogprobs, ch.Logprobs.TokenLogprobs...)
			joined.TopLogprobs = append(joined.TopLogprobs, ch.Logprobs.TopLogprobs...)
			joined.TextOffset = append(joined.TextOffset, ch.Logprobs.TextOffset...)
		}
	}
	if !done {
		t.Error("no [DONE]")
	}
	check("streamed", joined, 0)
}

// TestLogprobsRealEngine: on a real (tiny, random) model a chat answer's
// logprobs are the engine's own for that answer, one per token, whose bytes
// spell the answer; asking for them changes no token of a seeded run.
func TestLogprobsRealEngine(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	const body = `{"messages":[{"role":"user","content":"What is Unix?"}],"max_tokens":12,"seed":5,"temperature":0.8,"mode":"ar"`
	_, _, plain, _, _ := chatWithLogprobs(t, s, body+"}")
	for _, stream := range []string{"false", "true"} {
		code, _, text, lp, raw := chatWithLogprobs(t, s, body+`,"logprobs":true,"top_logprobs":3,"stream":`+stream+`}`)
		if code != 200 || text != plain || lp == nil || len(lp.Content) == 0 {
			t.Fatalf("stream %s: %d %q (without logprobs %q)\n%.500s", stream, code, text, plain, raw)
		}
		var spelled []byte
		for i, c := range lp.Content {
			spelled = append(spelled, intBytes(c.Bytes)...)
			if c.Logprob > 0 || len(c.TopLogprobs) != 3 || c.TopLogprobs[0].Logprob < c.TopLogprobs[1].Logprob || c.TopLogprobs[0].Logprob < c.Logprob {
				t.Errorf("stream %s: token %d: %+v", stream, i, c)
			}
		}
		// (A random model writes byte tokens that make no character, which the
		// answer's text shows as U+FFFD: there the bytes cannot spell it.)
		if utf8.Valid(spelled) && string(spelled) != text {
			t.Errorf("stream %s: the tokens' bytes spell %q, the answer is %q", stream, spelled, text)
		}
	}
	res, err := e.Generate(context.Background(), engine.Request{Messages: []engine.Message{{Role: "user", Content: "What is Unix?"}},
		Mode: engine.AR, Seed: 5, Sampling: engine.Sampling{MaxNewTokens: 12, Temperature: 0.8}, Logprobs: true, TopLogprobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, lp, _ := chatWithLogprobs(t, s, body+`,"logprobs":true,"top_logprobs":3}`)
	if len(lp.Content) != len(res.Logprobs) {
		t.Fatalf("%d logprobs, the engine's %d", len(lp.Content), len(res.Logprobs))
	}
	for i, c := range lp.Content {
		tok := e.TokenText(res.Logprobs[i].ID)
		if c.Logprob != res.Logprobs[i].Logprob || string(intBytes(c.Bytes)) != tok || c.Token != strings.ToValidUTF8(tok, "\uFFFD") {
			t.Errorf("token %d: %+v, the engine's %+v (%q)", i, c, res.Logprobs[i], tok)
		}
	}
}
