package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
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
	res := &engine.Result{Text: f.final, Tokens: toks, PromptTokens: 7, StopReason: "eos", LeadHeld: req.Lead != "", // as the engine, where it fits
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

// base is the server's API origin, "http://127.0.0.1:PORT".
func base(s *Server) string { return "http://" + s.Addr() }

// site is the server's browser origin, "http://darkroom-….localhost:PORT",
// where the token cookie lives.
func site(s *Server) string {
	_, port, _ := net.SplitHostPort(s.Addr())
	return "http://" + net.JoinHostPort(s.runHost, port)
}

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
	return &http.Client{Transport: localhostTransport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// localhostTransport connects every *.localhost name to 127.0.0.1, as browsers
// do (RFC 6761), whatever this machine's resolver says.
var localhostTransport = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".localhost") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}}

// newBrowser is a client with a cookie jar that resolves *.localhost as a browser does.
func newBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: localhostTransport}
}

// browser is a client with a cookie jar that has opened the token URL.
func browser(t *testing.T, s *Server) *http.Client {
	t.Helper()
	c := newBrowser()
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
	req, _ := http.NewRequest("GET", site(s)+path, nil)
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

// next receives one event (or chunk) of a stream, or fails after a generous
// timeout (a hang, not a timing assertion).
func next[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended early")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("nothing arrived within 30 s")
	}
	var zero T
	return zero
}

// errGen fails every generation.
type errGen struct{}

func (errGen) Generate(context.Context, engine.Request) (*engine.Result, error) {
	return nil, errors.New("generate: device lost")
}
