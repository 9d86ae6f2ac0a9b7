package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/app/server/servertest"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// startDarkroom runs a real `darkroom serve` server (app/server on a tiny random
// model, apiMode its choice for a request that names no mode) and returns its
// engine and the server as a client reaches it.
func startDarkroom(t *testing.T, apiMode engine.Mode) (*engine.Engine, *Server) {
	t.Helper()
	e := tinyengine.Load(t, enginetest.Options{})
	srv := servertest.Start(t, server.Options{Engine: tinyengine.Paced{Engine: e, Step: 10 * time.Millisecond}, ModelID: "tiny", FrameInterval: time.Nanosecond, APIMode: apiMode})
	return e, &Server{BaseURL: "http://" + srv.Addr(), Key: srv.Token()}
}

// TestDarkroomServer runs a real `darkroom serve` server (app/server on a tiny
// random model) and generates through it: the model is listed as Darkroom's,
// the page develops step by step (the canvas's 16 positions per step, drawn by
// app/develop as the screens draw a local page), and the answer is the one the
// engine writes locally for the same request, token count included.
func TestDarkroomServer(t *testing.T) {
	e, s := startDarkroom(t, "")

	list, err := s.Models(context.Background())
	if err != nil || len(list) != 1 || list[0].ID != "tiny" || !list[0].Darkroom() {
		t.Fatalf("models %+v, %v", list, err)
	}
	m, err := Open(context.Background(), s, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	const opening = "<h1>Unix</h1>\n"
	req := engine.Request{Prompt: "Write about Unix.", Opening: opening, Mode: engine.Diffusion, Seed: 10,
		Sampling: engine.Sampling{MaxNewTokens: 32}}
	var (
		steps, commits int
		drawn          []string
		counts         [][3]int // each step's canvas, step and steps so far
	)
	dev := develop.New(m, m.Decode)
	req.OnEvent = func(ev engine.Event) {
		switch ev.Kind {
		case engine.EventStep:
			steps++
			counts = append(counts, [3]int{ev.Canvas, ev.Step, ev.Steps})
			if len(ev.Draft) != 16 || len(ev.Accepted) != 16 || len(ev.Argmax) != 16 || ev.Step < 1 {
				t.Errorf("step event: %d positions, %d accepted marks, step %d", len(ev.Draft), len(ev.Accepted), ev.Step)
			}
		case engine.EventCommit:
			commits++
		}
		drawn = append(drawn, dev.Text(ev))
	}
	res, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if steps == 0 || commits == 0 {
		t.Fatalf("%d step events, %d commits: the page did not develop step by step", steps, commits)
	}

	// The server's engine request for the same chat: one user message, seed as sent.
	localCounts := map[[3]int]bool{}
	local, err := e.Generate(context.Background(), engine.Request{Messages: []engine.Message{{Role: "user", Content: req.Prompt}},
		Opening: opening, Mode: engine.Diffusion, Seed: req.Seed >> 1, Sampling: req.Sampling,
		OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventStep {
				localCounts[[3]int{ev.Canvas, ev.Step, ev.Steps}] = true
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Each step says the steps so far as the local engine does (the status
	// line's count: guidance rounds are not steps), on the later canvases too.
	for _, c := range counts {
		if !localCounts[c] {
			t.Errorf("remote step (canvas %d, step %d, %d steps so far) is none of the local engine's", c[0], c[1], c[2])
		}
	}
	if res.Text != local.Text || !strings.HasPrefix(res.Text, opening) {
		t.Errorf("remote text %q, local %q", res.Text, local.Text)
	}
	if len(res.Tokens) != len(local.Tokens) || res.PromptTokens != local.PromptTokens {
		t.Errorf("remote %d tokens (%d in the prompt), local %d (%d)", len(res.Tokens), res.PromptTokens, len(local.Tokens), local.PromptTokens)
	}
	if m.Decode(res.Tokens) != res.Text {
		t.Errorf("Decode(Tokens) = %q, Text %q", m.Decode(res.Tokens), res.Text)
	}
	if len(res.Canvases) != len(local.Canvases) || res.ForwardPasses != local.ForwardPasses || res.StopReason != local.StopReason {
		t.Errorf("remote %d canvases, %d passes, %q; local %d, %d, %q", len(res.Canvases), res.ForwardPasses, res.StopReason,
			len(local.Canvases), local.ForwardPasses, local.StopReason)
	}
	if last := drawn[len(drawn)-1]; last != res.Text {
		t.Errorf("the last frame drawn %q is not the answer %q", last, res.Text)
	}
}

// vllm is a fake server that streams like vLLM serving a diffusion model: each
// canvas as one whole content delta, the finish reason, usage at the end,
// [DONE]. fault changes one request's answer.
type vllm struct {
	t        *testing.T
	canvases []string
	key      string

	mu     sync.Mutex
	bodies []map[string]any
	fault  func(w http.ResponseWriter, r *http.Request) bool // true: handled
}

func (v *vllm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+v.key {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Unauthorized","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return
	}
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"google/diffusiongemma-26b","object":"model","owned_by":"vllm"}]}`)
		return
	case "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		v.t.Errorf("request body: %v", err)
	}
	v.mu.Lock()
	v.bodies = append(v.bodies, body)
	fault := v.fault
	v.mu.Unlock()
	if fault != nil && fault(w, r) {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(s string) {
		fmt.Fprintf(w, "data: %s\n\n", s)
		w.(http.Flusher).Flush()
	}
	send(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	for _, c := range v.canvases {
		b, _ := json.Marshal(c)
		send(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`)
	}
	send(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}`)
	send(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":96,"total_tokens":108}}`)
	send("[DONE]")
}

func (v *vllm) setFault(f func(w http.ResponseWriter, r *http.Request) bool) {
	v.mu.Lock()
	v.fault = f
	v.mu.Unlock()
}

func startVLLM(t *testing.T) (*vllm, *Server) {
	v := &vllm{t: t, key: "sk-secret-1234", canvases: []string{"Unix is an operating system ", "written at Bell Labs ", "in 1969."}}
	hs := httptest.NewServer(v)
	t.Cleanup(hs.Close)
	return v, &Server{BaseURL: hs.URL + "/v1/", Key: v.key}
}

// TestVLLMStream: a server that is not Darkroom gets a plain OpenAI request and
// its whole-canvas deltas become one committed canvas each; the opening starts
// the text; the token count is the server's usage.
func TestVLLMStream(t *testing.T) {
	v, s := startVLLM(t)
	m, err := Open(context.Background(), s, "google/diffusiongemma-26b")
	if err != nil {
		t.Fatal(err)
	}
	if m.Info().Darkroom() {
		t.Fatal("a vLLM model taken for Darkroom's")
	}
	var commits []engine.Event
	res, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix", Opening: "<h1>Unix</h1>\n", Seed: 8,
		Sampling: engine.Sampling{MaxNewTokens: 96}, OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventStep {
				t.Error("a step event from a server that sends none")
			}
			if ev.Kind == engine.EventCommit {
				commits = append(commits, ev)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := "<h1>Unix</h1>\n" + strings.Join(v.canvases, "")
	if res.Text != want || res.StopReason != "max_tokens" || len(res.Tokens) != 96 || res.PromptTokens != 12 || len(res.Canvases) != 3 {
		t.Errorf("result %q %q, %d tokens, %d prompt, %d canvases", res.Text, res.StopReason, len(res.Tokens), res.PromptTokens, len(res.Canvases))
	}
	if len(commits) != 3 || commits[2].Canvas != 2 || commits[2].Text != want || m.Decode(commits[1].Committed) != want[:len(want)-len("in 1969.")] {
		t.Errorf("commits %+v", commits)
	}
	body := v.bodies[0]
	if _, ok := body["darkroom"]; ok || body["stream"] != true || body["max_tokens"] != 96.0 || body["model"] != "google/diffusiongemma-26b" {
		t.Errorf("request %v", body)
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v", body["stream_options"])
	}
	if msgs, _ := body["messages"].([]any); len(msgs) != 1 {
		t.Errorf("messages %v", body["messages"])
	}
	if _, ok := body["mode"]; ok {
		t.Errorf("Darkroom's mode sent to another server: %v", body)
	}
}

// TestOneModeServer: a server that is not Darkroom offers one mode, its own. A
// request for AR is refused with a sentence that says so and what to do, before
// anything is sent (it used to run as the server's mode, so the Race's printer
// raced a second polaroid); a request for diffusion or none runs.
func TestOneModeServer(t *testing.T) {
	v, s := startVLLM(t)
	m := New(s, api.Model{ID: "google/diffusiongemma-26b", OwnedBy: "vllm"})
	why := m.OneMode()
	if !strings.Contains(why, "offers one mode") || !strings.Contains(why, s.Host()) {
		t.Errorf("OneMode %q", why)
	}
	res, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix", Mode: engine.AR})
	if !errors.Is(err, ErrOneMode) || res != nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "use a local model or a Darkroom server") {
		t.Errorf("AR on a one-mode server: %+v, %v", res, err)
	}
	v.mu.Lock()
	sent := len(v.bodies)
	v.mu.Unlock()
	if sent != 0 {
		t.Errorf("%d requests reached the server", sent)
	}
	for _, mode := range []engine.Mode{"", engine.Diffusion} {
		if res, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix", Mode: mode}); err != nil || res.Text == "" {
			t.Errorf("mode %q: %+v, %v", mode, res, err)
		}
	}
	if dr := New(s, api.Model{ID: "x", OwnedBy: api.OwnedBy}); dr.OneMode() != "" {
		t.Errorf("a Darkroom server's model runs one mode: %q", dr.OneMode())
	}
}

// TestDarkroomServerRunsTheModeAsked: a Darkroom server whose own choice is AR
// (its APIMode: the printer is faster there) still develops a page for a
// diffusion request and prints one for AR; the diffusion request used to go
// without its mode, so the server's choice ran and no step arrived.
func TestDarkroomServerRunsTheModeAsked(t *testing.T) {
	_, s := startDarkroom(t, engine.AR)
	m, err := Open(context.Background(), s, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode  engine.Mode
		steps bool
	}{{engine.Diffusion, true}, {engine.AR, false}} {
		steps := 0
		res, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix", Mode: c.mode, Seed: 4,
			OnEvent: func(ev engine.Event) {
				if ev.Kind == engine.EventStep {
					steps++
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		if (steps > 0) != c.steps || len(res.Tokens) == 0 {
			t.Errorf("%s: %d step events, %d tokens", c.mode, steps, len(res.Tokens))
		}
	}
}

// TestErrors: each failure reads as what to do, and never shows the key.
func TestErrors(t *testing.T) {
	v, s := startVLLM(t)
	ctx := context.Background()
	check := func(name string, err error, status int, words ...string) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Status != status {
			t.Errorf("%s: %v (%T), want status %d", name, err, err, status)
			return
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", name, err, w)
			}
		}
		if strings.Contains(err.Error(), v.key) {
			t.Errorf("%s: the error shows the key: %q", name, err)
		}
	}

	// Connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = (&Server{BaseURL: "http://" + addr, Key: v.key}).Models(ctx)
	var e *Error
	if !errors.As(err, &e) || !e.Unreachable || !strings.Contains(err.Error(), "cannot reach the server at "+addr) ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused: %v", err)
	}
	if _, err := (&Server{BaseURL: "ftp://gpu-box:8000"}).Models(ctx); err == nil || !strings.Contains(err.Error(), "http://") {
		t.Errorf("not http: %v", err) // with no scheme at all, http:// is meant (TestBaseURL)
	}

	_, err = (&Server{BaseURL: s.BaseURL, Key: "wrong"}).Models(ctx)
	check("401", err, 401, "refused the key")

	_, err = Open(ctx, s, "gone/model")
	check("unknown model", err, 404, "no longer has this model", "google/diffusiongemma-26b")

	m, err := Open(ctx, s, "google/diffusiongemma-26b")
	if err != nil {
		t.Fatal(err)
	}
	v.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"error":{"message":"The model `+"`google/diffusiongemma-26b`"+` does not exist.","type":"NotFoundError","code":404}}`)
		return true
	})
	_, err = m.Generate(ctx, engine.Request{Prompt: "x"})
	check("model removed", err, 404, "no longer has this model", "does not exist")

	v.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(429)
		fmt.Fprint(w, `{"error":{"message":"too many requests","code":"rate_limit_exceeded"}}`)
		return true
	})
	_, err = m.Generate(ctx, engine.Request{Prompt: "x"})
	check("429", err, 429, "busy", "try again in 7 s")
	if errors.As(err, &e) && e.RetryAfter != 7*time.Second {
		t.Errorf("retry after %v", e.RetryAfter)
	}

	v.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(503)
		fmt.Fprint(w, `{"error":{"message":"no model is available: loading","type":"server_error","code":"model_unavailable"}}`)
		return true
	})
	_, err = m.Generate(ctx, engine.Request{Prompt: "x"})
	check("503", err, 503, "not ready", "no model is available: loading", "try again in 5 s")

	v.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(500)
		fmt.Fprint(w, `{"object":"error","message":"CUDA out of memory","type":"InternalServerError","code":500}`)
		return true
	})
	_, err = m.Generate(ctx, engine.Request{Prompt: "x"})
	check("500", err, 500, "failed (500)", "CUDA out of memory")
}

// TestStreamCut: a stream that breaks after two canvases keeps them, and the
// error says the answer was cut; one that ends cleanly without [DONE] too.
func TestStreamCut(t *testing.T) {
	v, s := startVLLM(t)
	m := New(s, api.Model{ID: "google/diffusiongemma-26b"})
	for _, abort := range []bool{true, false} {
		v.setFault(func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range v.canvases[:2] {
				b, _ := json.Marshal(c)
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", b)
			}
			w.(http.Flusher).Flush()
			if abort {
				panic(http.ErrAbortHandler) // the connection is dropped
			}
			return true
		})
		res, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix"})
		if !errors.Is(err, ErrCut) || !strings.Contains(err.Error(), "stopped answering mid-way") {
			t.Errorf("abort %v: error %v", abort, err)
		}
		if res == nil || res.Text != v.canvases[0]+v.canvases[1] || res.StopReason != "cancelled" {
			t.Errorf("abort %v: partial result %+v", abort, res)
		}
	}
}

// TestStreamError: an error the server sends inside the stream is reported as
// the server's failure, with what had arrived.
func TestStreamError(t *testing.T) {
	v, s := startVLLM(t)
	m := New(s, api.Model{ID: "x", OwnedBy: "darkroom"})
	v.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Unix\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"the engine failed\",\"type\":\"server_error\"}}\n\ndata: [DONE]\n\n")
		return true
	})
	res, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix"})
	if err == nil || !strings.Contains(err.Error(), "failed mid-answer: the engine failed") || res == nil || res.Text != "Unix" {
		t.Errorf("%v, %+v", err, res)
	}
}

// TestCancel: cancelling closes the HTTP stream at once (the server sees its
// request end) and returns what had arrived as a cancelled result.
func TestCancel(t *testing.T) {
	v, s := startVLLM(t)
	m := New(s, api.Model{ID: "google/diffusiongemma-26b"})
	closed := make(chan struct{})
	v.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Unix is\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(closed)
		case <-time.After(30 * time.Second):
			t.Error("the stream was not closed")
		}
		return true
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var at time.Time
	res, err := m.Generate(ctx, engine.Request{Prompt: "Unix", OnEvent: func(ev engine.Event) {
		if ev.Kind == engine.EventCommit {
			at = time.Now()
			cancel()
		}
	}})
	if err != nil || res.StopReason != "cancelled" || res.Text != "Unix is" {
		t.Fatalf("%v, %+v", err, res)
	}
	if d := time.Since(at); d > 5*time.Second {
		t.Errorf("Generate returned %v after the cancel", d)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("the server's request did not end")
	}
}

// TestReadEvents: SSE comments are skipped, multi-line data is joined, and a
// last event without its blank line still counts.
func TestReadEvents(t *testing.T) {
	var got []string
	err := readEvents(strings.NewReader(": keep-alive\n\ndata: a\ndata: b\n\nevent: x\ndata:c"), func(d string) error {
		got = append(got, d)
		return nil
	})
	if err != nil || strings.Join(got, "|") != "a\nb|c" {
		t.Errorf("%q %v", got, err)
	}
	if err := readEvents(io.MultiReader(strings.NewReader("data: [DONE]\n\n")), func(d string) error { return errDone }); !errors.Is(err, errDone) {
		t.Error(err)
	}
}

func TestBaseURL(t *testing.T) {
	for typed, want := range map[string]string{
		"":                          "",
		"  ":                        "",
		"gpu-box:8000":              "http://gpu-box:8000",
		" 127.0.0.1:8797/v1 ":       "http://127.0.0.1:8797/v1",
		"https://api.example/v1":    "https://api.example/v1",
		"http://gpu-server:8000/v1": "http://gpu-server:8000/v1",
	} {
		if got := BaseURL(typed); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", typed, got, want)
		}
	}
}

// TestLogprobsNotAsked: a request for log probabilities is refused before
// anything is sent: the answer would come back without them.
func TestLogprobsNotAsked(t *testing.T) {
	v, s := startVLLM(t)
	m, err := Open(context.Background(), s, "google/diffusiongemma-26b")
	if err != nil {
		t.Fatal(err)
	}
	sent := len(v.bodies)
	_, err = m.Generate(context.Background(), engine.Request{Prompt: "Unix", Logprobs: true})
	if err == nil || !strings.Contains(err.Error(), "log probabilities") || len(v.bodies) != sent {
		t.Errorf("logprobs: %v, %d requests sent", err, len(v.bodies)-sent)
	}
}

// TestToolsNotPassedOn: a request that declares tools, or carries the
// model's calls and their results, is refused before anything is sent: the
// messages would reach the server as plain text and the calls would be lost.
func TestToolsNotPassedOn(t *testing.T) {
	v, s := startVLLM(t)
	m, err := Open(context.Background(), s, "google/diffusiongemma-26b")
	if err != nil {
		t.Fatal(err)
	}
	sent := len(v.bodies)
	user := engine.Message{Role: "user", Content: "Weather?"}
	for name, req := range map[string]engine.Request{
		"tools":   {Messages: []engine.Message{user}, Tools: []engine.Tool{{Name: "get_weather"}}},
		"calls":   {Messages: []engine.Message{user, {Role: "model", ToolCalls: []chat.ToolCall{{ID: "1", Name: "get_weather", Arguments: "{}"}}}, {Role: "tool", ToolCallID: "1", Content: "Sunny"}}},
		"results": {Messages: []engine.Message{user, {Role: "tool", Content: "Sunny"}}},
	} {
		if _, err := m.Generate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "tool calls are not passed on") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(v.bodies) != sent {
		t.Errorf("%d requests sent", len(v.bodies)-sent)
	}
}

// TestJSONAsked: a request for a JSON answer asks the server for one
// (response_format json_object), which holds the answer to it.
func TestJSONAsked(t *testing.T) {
	v, s := startVLLM(t)
	m, err := Open(context.Background(), s, "google/diffusiongemma-26b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix", JSON: true}); err != nil {
		t.Fatal(err)
	}
	if rf, _ := v.bodies[len(v.bodies)-1]["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format %v", v.bodies[len(v.bodies)-1]["response_format"])
	}
	// A schema is passed on as the server's json_schema.
	schema, err := sampler.CompileSchema([]byte(`{"type":"object","properties":{"os":{"type":"string"}},"required":["os"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix", JSON: true, JSONSchema: schema}); err != nil {
		t.Fatal(err)
	}
	rf, _ := v.bodies[len(v.bodies)-1]["response_format"].(map[string]any)
	if js, _ := rf["json_schema"].(map[string]any); rf["type"] != "json_schema" || js == nil || js["schema"].(map[string]any)["required"] == nil {
		t.Errorf("response_format with a schema: %v", rf)
	}
	if _, err := m.Generate(context.Background(), engine.Request{Prompt: "Unix"}); err != nil {
		t.Fatal(err)
	}
	if rf, ok := v.bodies[len(v.bodies)-1]["response_format"]; ok {
		t.Errorf("response_format %v sent for a text answer", rf)
	}
}
