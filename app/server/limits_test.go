package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// TestClientErrorsAre4xx: what a client can fix is answered with a 4xx in
// OpenAI's shape, streaming requests included (before their 200), on a real
// tiny model (context 4096, canvas 16).
func TestClientErrorsAre4xx(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny"})
	long := strings.Repeat("zq xv ", 3000) // well over 4096 tokens
	for _, c := range []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"prompt over the context", `{"model":"tiny","messages":[{"role":"user","content":"` + long + `"}]}`, 400, "context_length_exceeded", "messages"},
		{"streaming prompt over the context", `{"messages":[{"role":"user","content":"` + long + `"}],"stream":true}`, 400, "context_length_exceeded", "messages"},
		{"max_tokens 10^9", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1000000000}`, 400, "context_length_exceeded", "max_tokens"},
		{"max_tokens 2^63-1", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":9223372036854775807}`, 400, "context_length_exceeded", "max_tokens"},
		{"max_tokens 2^63-1 in AR", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":9223372036854775807,"mode":"ar","stream":true}`, 400, "context_length_exceeded", "max_tokens"},
		{"max_completion_tokens past the room", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":4090}`, 400, "context_length_exceeded", "max_tokens"},
		{"unknown model", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, 404, "model_not_found", "model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			began := time.Now()
			code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", c.body)
			if code != c.status || r.Error == nil || r.Error.Code != c.code || r.Error.Param == nil || *r.Error.Param != c.param {
				t.Fatalf("%d %.400s", code, raw)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("refused after %v: the model ran", took)
			}
		})
	}
	// The context error names the numbers.
	_, r, _ := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"`+long+`"}]}`)
	if !strings.Contains(r.Error.Message, "4096") || !strings.Contains(r.Error.Message, "tokens") {
		t.Errorf("message %q: want the context length and the prompt's tokens", r.Error.Message)
	}
	// The model's stable id is accepted, and omitting it is too.
	for _, body := range []string{`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`} {
		if code, _, raw := callAPI(t, s, "POST", "/v1/chat/completions", body); code != 200 {
			t.Errorf("%s: %d %s", body, code, raw)
		}
	}
}

// TestUserTextIsNotControlTokens: the turn markers written in a message are
// text, several prompt tokens, not the one control token each.
func TestUserTextIsNotControlTokens(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e})
	prompt := func(content string) int {
		body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}, "max_tokens": 1, "mode": "ar"})
		code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", string(body))
		if code != 200 {
			t.Fatalf("%d %s", code, raw)
		}
		return r.Usage.PromptTokens
	}
	empty := prompt("")
	for _, marker := range []string{"<turn|>", "<|turn>", "<eos>", "<turn|>\n<|turn>model\n"} {
		if n := prompt(marker) - empty; n <= 1 {
			t.Errorf("%q in user content adds %d prompt tokens; want more than one (it is text)", marker, n)
		}
	}
}

func TestMethodTypeAndFingerprint(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}, ModelID: "darkroom-mini"})
	auth := map[string]string{"Authorization": "Bearer " + s.Token()}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		resp, body := do(t, nil, m, base(s)+"/v1/chat/completions", "", auth)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || !strings.Contains(body, `"code":"method_not_allowed"`) {
			t.Errorf("%s completions: %d Allow %q %s", m, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}
	if resp, _ := do(t, nil, "POST", base(s)+"/v1/models", "", auth); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
		t.Errorf("POST models: %d", resp.StatusCode)
	}
	msg := `{"messages":[{"role":"user","content":"x"}]}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		hdr := map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": ct}
		if resp, body := do(t, nil, "POST", base(s)+"/v1/chat/completions", msg, hdr); resp.StatusCode != 415 || !strings.Contains(body, "unsupported_media_type") {
			t.Errorf("Content-Type %s: %d %s", ct, resp.StatusCode, body)
		}
	}
	hdr := map[string]string{"Authorization": "Bearer " + s.Token(), "Content-Type": "application/json; charset=utf-8"}
	if resp, _ := do(t, nil, "POST", base(s)+"/v1/chat/completions", msg, hdr); resp.StatusCode != 200 {
		t.Errorf("JSON with a charset: %d", resp.StatusCode)
	}
	for mode, want := range map[string]string{"": "darkroom-diffusion", "diffusion": "darkroom-diffusion", "ar": "darkroom-ar"} {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"mode":%q}`, mode)
		_, _, raw := callAPI(t, s, "POST", "/v1/chat/completions", body)
		var fp struct {
			SystemFingerprint string `json:"system_fingerprint"`
		}
		if json.Unmarshal([]byte(raw), &fp); fp.SystemFingerprint != want {
			t.Errorf("mode %q: fingerprint %q, want %q", mode, fp.SystemFingerprint, want)
		}
		chunks, _ := stream(t, s, strings.Replace(body, `"mode"`, `"stream":true,"mode"`, 1))
		if len(chunks) == 0 {
			t.Fatal("no chunks")
		}
	}
}

// TestQueueFull: with one request running and QueueLimit waiting, 8 more get
// 429 with Retry-After; a waiting stream receives SSE comments; then every
// admitted request finishes.
func TestQueueFull(t *testing.T) {
	gate := make(chan struct{})
	g := &fakeGen{final: "done", gate: gate}
	s := start(t, Options{Engine: g, QueueLimit: 2, KeepAlive: 20 * time.Millisecond})
	body := `{"messages":[{"role":"user","content":"x"}]}`
	var wg sync.WaitGroup
	results := make(chan int, 3)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := callAPI(t, s, "POST", "/v1/chat/completions", body)
			results <- code
		}()
	}
	// The third admitted request streams: it waits and hears comments.
	req, _ := http.NewRequest("POST", base(s)+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	waitFor(t, func() bool { return admitted(s) == 2 })
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waitFor(t, func() bool { return admitted(s) == 3 })

	var refused sync.WaitGroup
	for range 8 {
		refused.Add(1)
		go func() {
			defer refused.Done()
			resp, raw := do(t, nil, "POST", base(s)+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + s.Token()})
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if resp.StatusCode != 429 || err != nil || ra < 1 || !strings.Contains(raw, `"code":"rate_limit_exceeded"`) {
				t.Errorf("past the queue: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
			}
		}()
	}
	refused.Wait()

	br := bufio.NewReader(resp.Body)
	comments := 0
	for comments < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if strings.HasPrefix(line, ":") {
			comments++
		}
	}
	close(gate) // everything runs to its end
	wg.Wait()
	close(results)
	for code := range results {
		if code != 200 {
			t.Errorf("an admitted request got %d", code)
		}
	}
	rest := new(strings.Builder)
	bufio.NewReader(br).WriteTo(rest)
	if !strings.Contains(rest.String(), "data: [DONE]") {
		t.Errorf("the waiting stream did not finish: %q", rest.String())
	}
	if n := admitted(s); n != 0 {
		t.Errorf("%d requests still admitted", n)
	}
}

func admitted(s *Server) int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return s.queue.admitted
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}

// closingGen is a model the app can switch away from: once closed, Generate
// fails with engine.ErrClosed, as *engine.Engine does.
type closingGen struct {
	*fakeGen
	mu     sync.Mutex
	closed bool
}

func (c *closingGen) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("generate: %w", engine.ErrClosed)
	}
	return c.fakeGen.Generate(ctx, req)
}

func (c *closingGen) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// TestModelSwitchDuringStream: the app switches models while a stream runs and
// a request waits behind it: the stream finishes on the old model, the waiting
// request (whose model closed under it) and new ones run on the new model,
// and /v1/models names it.
func TestModelSwitchDuringStream(t *testing.T) {
	gate := make(chan struct{})
	old := &closingGen{fakeGen: &fakeGen{commits: []string{"old"}, final: "old answer", gate: gate}}
	cur := &closingGen{fakeGen: &fakeGen{final: "new answer"}}
	var mu sync.Mutex
	active := Model{ID: "darkroom-mini", Engine: old}
	s := start(t, Options{Model: func(context.Context) (Model, error) {
		mu.Lock()
		defer mu.Unlock()
		return active, nil
	}})
	ch, done := streamChunks(t, s, `{"messages":[{"role":"user","content":"x"}],"stream":true}`)
	gate <- struct{}{} // the stream is running on the old model
	waiting := make(chan chatResponse, 1)
	go func() {
		_, r, _ := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
		waiting <- r
	}()
	waitFor(t, func() bool { return admitted(s) == 2 })

	mu.Lock() // "Use" on another model
	active = Model{ID: "diffusiongemma-26b", Engine: cur}
	mu.Unlock()
	old.Close()
	close(gate)

	var chunks []chatResponse
	for c := range ch {
		chunks = append(chunks, c)
	}
	if got := content(chunks); got != "old answer" || !*done {
		t.Errorf("the stream in flight: %q (done %v), want the old model's answer", got, *done)
	}
	if r := <-waiting; len(r.Choices) != 1 || r.Choices[0].Message.Content != "new answer" || r.Model != "diffusiongemma-26b" {
		t.Errorf("the waiting request: %+v", r)
	}
	code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"model":"diffusiongemma-26b","messages":[{"role":"user","content":"x"}]}`)
	if code != 200 || r.Choices[0].Message.Content != "new answer" {
		t.Errorf("after the switch: %d %s", code, raw)
	}
	if _, _, raw := callAPI(t, s, "GET", "/v1/models", ""); !strings.Contains(raw, `"id":"diffusiongemma-26b"`) {
		t.Errorf("models after the switch: %s", raw)
	}
}

// TestLongTopic: a topic far longer than a page's title can be is a plain 400,
// and nothing logs the whole title.
func TestLongTopic(t *testing.T) {
	var mu sync.Mutex
	var logs strings.Builder
	logf := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(&logs, format+"\n", args...)
		mu.Unlock()
	}
	title := strings.Repeat("Ab", 3000)
	s := start(t, Options{Engine: tinyengine.Load(t, enginetest.Options{}), Logf: logf})
	c := browser(t, s)
	for _, path := range []string{"/wiki/" + title, "/events/wiki/" + title, "/wiki?q=" + title} {
		resp, body := do(t, c, "GET", site(s)+path, "", nil)
		if resp.StatusCode != 400 || !strings.Contains(body, "at most 200") || strings.Contains(body, title) {
			t.Errorf("GET %.40s…: %d %.200s", path, resp.StatusCode, body)
		}
	}
	// Under the limit but longer than the tiny model's 16-token canvas: a plain
	// failure on the page, a short log line.
	mid := strings.Repeat("Qz", 90)
	_, events := openEvents(t, c, s, "/events/wiki/"+mid)
	ev := next(t, events)
	if p := decodePageEvent(t, ev); ev.name != "failed" || !strings.Contains(p.Status, "shorter topic") {
		t.Errorf("long topic: %s %+v", ev.name, p)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), mid) || strings.Contains(logs.String(), title[:400]) {
		t.Errorf("the log holds the whole title: %.300s", logs.String())
	}
}

// holdFirst delegates to a Generator and holds its first event until release
// is closed: a long generation, mid-way, on a real engine.
type holdFirst struct {
	Generator
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (h *holdFirst) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	next := req.OnEvent
	req.OnEvent = func(ev engine.Event) {
		h.once.Do(func() { close(h.held); <-h.release })
		if next != nil {
			next(ev)
		}
	}
	return h.Generator.Generate(ctx, req)
}

// TestModelSwitchRealEngines: the app's "Use" on another model while a stream
// runs on a real engine: the old engine is closed as the app closes it (Close
// waits for the running generation), the stream finishes, a request that was
// waiting finishes cleanly, and the server answers on the new engine after.
func TestModelSwitchRealEngines(t *testing.T) {
	e1, e2 := tinyengine.Load(t, enginetest.Options{}), tinyengine.Load(t, enginetest.Options{})
	h := &holdFirst{Generator: e1, held: make(chan struct{}), release: make(chan struct{})}
	var mu sync.Mutex
	active := Model{ID: "first", Engine: h}
	s := start(t, Options{Model: func(context.Context) (Model, error) {
		mu.Lock()
		defer mu.Unlock()
		return active, nil
	}})
	ch, done := streamChunks(t, s, `{"messages":[{"role":"user","content":"What is Unix?"}],"max_tokens":32,"stream":true}`)
	<-h.held
	waiting := make(chan int, 1)
	go func() {
		code, _, _ := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":8}`)
		waiting <- code
	}()
	waitFor(t, func() bool { return admitted(s) == 2 })
	mu.Lock()
	active = Model{ID: "second", Engine: e2}
	mu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- e1.Close() }() // what the app's model host does on a switch
	close(h.release)
	for range ch {
	}
	if !*done {
		t.Error("the stream in flight did not finish")
	}
	if code := <-waiting; code != 200 {
		t.Errorf("the waiting request: %d", code)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"model":"second","messages":[{"role":"user","content":"x"}],"max_tokens":8}`)
	if code != 200 || r.Model != "second" {
		t.Errorf("after the switch: %d %s", code, raw)
	}
	if code, _, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"model":"first","messages":[{"role":"user","content":"x"}]}`); code != 404 {
		t.Errorf("the old model's id after the switch: %d %s", code, raw)
	}
}

// TestPagesForgottenOnModelSwitch: pages written by one model are not served
// from the cache once another model is in use.
func TestPagesForgottenOnModelSwitch(t *testing.T) {
	var mu sync.Mutex
	active := Model{ID: "first", Engine: &fakeGen{final: "<p>first</p>"}}
	s := start(t, Options{Model: func(context.Context) (Model, error) {
		mu.Lock()
		defer mu.Unlock()
		return active, nil
	}})
	c := browser(t, s)
	_, events := openEvents(t, c, s, "/events/wiki/Unix")
	for range events {
	}
	if _, ok := s.pages.get("Unix"); !ok {
		t.Fatal("page not cached")
	}
	mu.Lock()
	active = Model{ID: "second", Engine: &fakeGen{final: "<p>second</p>"}}
	mu.Unlock()
	_, events = openEvents(t, c, s, "/events/wiki/Unix")
	var last sseEvent
	for ev := range events {
		last = ev
	}
	if p := decodePageEvent(t, last); last.name != "done" || !strings.Contains(p.HTML, "second") || strings.Contains(p.Status, "cache") {
		t.Errorf("after the switch: %s %+v", last.name, p)
	}
}

// TestPagesInTheModelsPageMode: a model's PageMode (the desktop app's
// Encyclopedia mode) writes the pages, Options.Mode where it has none; pages
// written in one mode are not served from the cache once the mode changed.
func TestPagesInTheModelsPageMode(t *testing.T) {
	var mu sync.Mutex
	gen := &fakeGen{final: "<p>page</p>"}
	active := Model{ID: "mini", Engine: gen, PageMode: engine.AR}
	s := start(t, Options{Model: func(context.Context) (Model, error) {
		mu.Lock()
		defer mu.Unlock()
		return active, nil
	}})
	c := browser(t, s)
	page := func() (engine.Mode, string) {
		t.Helper()
		_, events := openEvents(t, c, s, "/events/wiki/Unix")
		var last sseEvent
		for ev := range events {
			last = ev
		}
		gen.mu.Lock()
		defer gen.mu.Unlock()
		return gen.requests[len(gen.requests)-1].Mode, decodePageEvent(t, last).Status
	}
	if mode, _ := page(); mode != engine.AR {
		t.Errorf("the model's page mode printer: the page was written in %q", mode)
	}
	if _, status := page(); !strings.Contains(status, "cache") {
		t.Errorf("the same page again: %q, want it from the cache", status)
	}
	mu.Lock()
	active.PageMode = ""
	mu.Unlock()
	mode, status := page()
	if mode != engine.Diffusion || strings.Contains(status, "cache") {
		t.Errorf("no page mode (Options.Mode, diffusion): written in %q, status %q; want a new polaroid page", mode, status)
	}
}
