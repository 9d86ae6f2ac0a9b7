package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
)

// fakeGen is a scripted Generator. For each request it emits one EventStep per
// draft (Text = the draft), one EventCommit per commit (Text = the commit), then
// returns final. With gate set, it waits for a value on gate before each step,
// each commit and the end (or for cancellation).
type fakeGen struct {
	drafts  []string
	commits []string
	final   string
	gate    chan struct{}
	started chan string // receives the prompt of each generation, if set

	mu       sync.Mutex
	requests []engine.Request
	cancels  int
}

func (f *fakeGen) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if f.started != nil {
		f.started <- req.Prompt
	}
	cancelled := func() (*engine.Result, error) {
		f.mu.Lock()
		f.cancels++
		f.mu.Unlock()
		return &engine.Result{Text: "", Tokens: []int{}, PromptTokens: 7, StopReason: "cancelled"}, nil
	}
	emit := func(ev engine.Event) {
		if req.OnEvent != nil {
			req.OnEvent(ev)
		}
	}
	wait := func() bool {
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
			}
		}
		return ctx.Err() == nil
	}
	for i, d := range f.drafts {
		if !wait() {
			return cancelled()
		}
		emit(engine.Event{Kind: engine.EventStep, Step: i + 1, Text: d, ForwardPasses: i + 2})
	}
	for i, c := range f.commits {
		if !wait() {
			return cancelled()
		}
		emit(engine.Event{Kind: engine.EventCommit, Canvas: i, Text: c})
	}
	if !wait() {
		return cancelled()
	}
	toks := make([]int, len(strings.Fields(f.final)))
	res := &engine.Result{Text: f.final, Tokens: toks, PromptTokens: 7, StopReason: "eos",
		Canvases: []engine.CanvasStats{{Steps: len(f.drafts)}}, ForwardPasses: len(f.drafts) + 1, Elapsed: time.Millisecond}
	emit(engine.Event{Kind: engine.EventDone, Text: f.final})
	return res, nil
}

func (f *fakeGen) lastRequest(t *testing.T) engine.Request {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("no generation was requested")
	}
	return f.requests[len(f.requests)-1]
}

// start runs a server for the test with opts (Engine set by the caller).
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// base is the server's origin, "http://127.0.0.1:PORT".
func base(s *Server) string { return "http://" + s.Addr() }

// do sends a request with optional headers and returns the response and body.
func do(t *testing.T, c *http.Client, method, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if c == nil {
		c = noRedirect()
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// browser is a client with a cookie jar that has opened the token URL.
func browser(t *testing.T, s *Server) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, body := do(t, c, "GET", s.URL("/"), "", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "Darkroom") {
		t.Fatalf("home with token: %d %q", resp.StatusCode, body)
	}
	return c
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	name, data string
}

// readSSE reads events from r until EOF, sending each on the returned channel.
func readSSE(r io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != "" || ev.name != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

// openEvents opens a page's event stream with client c.
func openEvents(t *testing.T, c *http.Client, s *Server, path string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	req, _ := http.NewRequest("GET", base(s)+path, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp, readSSE(resp.Body)
}

func decodePageEvent(t *testing.T, ev sseEvent) pageEvent {
	t.Helper()
	var p pageEvent
	if err := json.Unmarshal([]byte(ev.data), &p); err != nil {
		t.Fatalf("event %s data %q: %v", ev.name, ev.data, err)
	}
	return p
}

// next receives one event or fails after a generous timeout (a hang, not a timing assertion).
func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event stream ended early")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	return sseEvent{}
}

// errGen fails every generation.
type errGen struct{}

func (errGen) Generate(context.Context, engine.Request) (*engine.Result, error) {
	return nil, errors.New("generate: device lost")
}
