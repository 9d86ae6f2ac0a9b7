package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
)

// Model generates with one model of a server. It is safe for concurrent use;
// like an engine it runs the generations it is given as they come (the server
// queues them).
type Model struct {
	server *Server
	info   api.Model

	mu     sync.Mutex
	pieces []string       // the text of each id
	ids    map[string]int // pieces' ids by text
}

// The ids every Model has: a token that ends the answer, and an empty piece
// that stands for tokens whose text came with another piece (see Generate).
const (
	EndID   = 0
	EmptyID = 1
)

// Open checks that the server lists the model id and returns it.
func Open(ctx context.Context, s *Server, id string) (*Model, error) {
	list, err := s.Models(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range list {
		if m.ID == id {
			return New(s, m), nil
		}
	}
	names := make([]string, len(list))
	for i, m := range list {
		names[i] = m.ID
	}
	return nil, &Error{Host: s.Host(), Status: 404, Code: "model_not_found",
		Message: fmt.Sprintf("it lists %s, not %q", strings.Join(names, ", "), id)}
}

// New returns the model info of server s, without asking the server.
func New(s *Server, info api.Model) *Model {
	return &Model{server: s, info: info, pieces: []string{"", ""}, ids: map[string]int{}}
}

// Info is the model as the server lists it.
func (m *Model) Info() api.Model { return m.info }

// Server is the server the model runs on.
func (m *Model) Server() *Server { return m.server }

// TokenText is the text of a piece this Model received (a canvas position's
// token text from a Darkroom server, a content delta from others).
func (m *Model) TokenText(id int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id < 0 || id >= len(m.pieces) {
		return ""
	}
	return m.pieces[id]
}

// Decode joins the pieces' text.
func (m *Model) Decode(ids []int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(m.pieces) {
			b.WriteString(m.pieces[id])
		}
	}
	return b.String()
}

// OneMode is "" for a model of a Darkroom server, which runs the mode a request
// asks for. For any other server it says why the model runs one way only: such a
// server runs its models its own way (vLLM a diffusion model as diffusion), so
// no mode is sent to it, and Generate refuses a request for AR (ErrOneMode).
func (m *Model) OneMode() string {
	if m.info.Darkroom() {
		return ""
	}
	return fmt.Sprintf("the server at %s offers one mode, its own: it is not a Darkroom server, so it cannot be asked for the printer (AR)",
		m.server.Host())
}

// ErrOneMode is wrapped by the error of a request for AR to a model that runs
// one way only (see OneMode).
var ErrOneMode = errors.New("the server offers one mode")

type oneModeError struct{ why string }

func (e *oneModeError) Error() string {
	return e.why + ": write in its own mode, or use a local model or a Darkroom server for the printer"
}

func (e *oneModeError) Unwrap() error { return ErrOneMode }

// IsEnd reports whether id is EndID.
func (m *Model) IsEnd(id int) bool { return id == EndID }

// Close releases nothing: the server holds the weights.
func (m *Model) Close() error { return nil }

// piece returns the id of text, numbering it if it is new.
func (m *Model) piece(text string) int {
	if text == "" {
		return EmptyID
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.ids[text]; ok {
		return id
	}
	id := len(m.pieces)
	m.pieces = append(m.pieces, text)
	m.ids[text] = id
	return id
}

// body is the request for req.
func (m *Model) body(req engine.Request) ([]byte, error) {
	if req.Raw || (len(req.Messages) == 0 && req.Prompt == "") {
		return nil, errors.New("a remote model takes chat messages or a prompt, not raw tokens")
	}
	if req.Logprobs {
		return nil, errors.New("a remote model's answers come without log probabilities here: ask its server for them")
	}
	if len(req.Tools) > 0 || slices.ContainsFunc(req.Messages, func(m engine.Message) bool { return m.Role == "tool" || len(m.ToolCalls) > 0 }) {
		return nil, errors.New("a remote model's tool calls are not passed on here: ask its server for them")
	}
	r := api.ChatRequest{Model: m.info.ID, Options: api.Options{Stream: true, StreamOptions: &api.StreamOptions{IncludeUsage: true}}}
	for _, msg := range req.Messages {
		role := msg.Role
		if role == "model" {
			role = "assistant"
		}
		r.Messages = append(r.Messages, api.TextMessage(role, msg.Content))
	}
	if len(req.Messages) == 0 {
		r.Messages = []api.Message{api.TextMessage("user", req.Prompt)}
	}
	if n := req.Sampling.MaxNewTokens; n > 0 {
		r.MaxTokens = &n
	}
	if req.Seed != 0 {
		seed := int64(req.Seed >> 1) // non-negative: some servers refuse a negative seed
		r.Seed = &seed
	}
	if m.info.Darkroom() {
		// req.Lead is not sent: a Darkroom server holds its own model folder's
		// leads (and a remote model's ModelInfo has none to send).
		r.Darkroom = &api.Extension{Opening: req.Opening, Steps: true}
		r.Mode = req.Mode // sent when set: a request without one runs the server's choice
	}
	if req.JSON {
		r.ResponseFormat = &api.ResponseFormat{Type: "json_object"} // the server holds its answer to JSON
		if req.JSONSchema != nil {                                  // and to the schema
			r.ResponseFormat = &api.ResponseFormat{Type: "json_schema", JSONSchema: &api.JSONSchema{Name: "answer", Schema: req.JSONSchema.Raw()}}
		}
	}
	if req.Mode == engine.AR && req.Sampling.Temperature > 0 {
		t := req.Sampling.Temperature
		r.Temperature = &t
	}
	return json.Marshal(r)
}

// ErrCut is wrapped by the error of a stream that ended before the answer did.
var ErrCut = errors.New("the connection was cut before the answer ended")

// Generate streams req's answer, reporting it through req.OnEvent as the engine
// does: a Darkroom server's steps as EventStep (Draft and Argmax are ids of the
// positions' token texts, EndID for a token that ends the answer), every
// content delta as EventCommit, then EventDone. Committed holds one id per
// delta and EmptyID for the rest of the tokens the server counted, so its
// length is the server's count where it gave one. Without a Darkroom server the
// opening (Request.Opening) is not sent but starts the text, as it would.
//
// A Darkroom server runs req.Mode (its own choice when none is set); any other
// server runs its own mode, and a request for engine.AR fails with ErrOneMode
// before anything is sent.
//
// Cancelling ctx closes the stream and returns what arrived, with StopReason
// "cancelled". A stream cut short returns what arrived too, with an error that
// wraps ErrCut; any other failure returns an *Error.
func (m *Model) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	if why := m.OneMode(); why != "" && req.Mode == engine.AR {
		return nil, &oneModeError{why}
	}
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := m.server.do(ctx, "POST", "/chat/completions", body)
	if err != nil {
		if ctx.Err() != nil {
			return &engine.Result{StopReason: engine.StopCancelled, Elapsed: time.Since(start)}, nil
		}
		return nil, err
	}
	defer resp.Body.Close()

	g := &generation{m: m, req: req, start: start, res: &engine.Result{}}
	if req.Opening != "" && !m.info.Darkroom() {
		g.text.WriteString(req.Opening)
		g.committed = append(g.committed, m.piece(req.Opening))
	}
	err = readEvents(resp.Body, g.chunk)
	switch {
	case ctx.Err() != nil:
		return g.finish(engine.StopCancelled), nil
	case errors.Is(err, errDone) || (err == nil && g.reason != ""): // a finish reason, then [DONE] or the end
		if g.reason == "" {
			g.reason = engine.StopEOS
		}
		return g.finish(g.reason), nil
	case errors.As(err, new(*streamError)):
		return g.finish(engine.StopCancelled), err
	}
	// The body ended (or broke) before the answer did.
	res := g.finish(engine.StopCancelled)
	return res, fmt.Errorf("the server at %s stopped answering mid-way (%d characters arrived and are kept): %w",
		m.server.Host(), len(res.Text), ErrCut)
}

// errDone ends readEvents at "data: [DONE]".
var errDone = errors.New("[DONE]")

// streamError is an error the server sent inside the stream.
type streamError struct{ host, msg string }

func (e *streamError) Error() string {
	return fmt.Sprintf("the server at %s failed mid-answer: %s", e.host, e.msg)
}

// readEvents calls fn with the data of every SSE event until fn fails or the
// stream ends (nil at EOF).
func readEvents(r io.Reader, fn func(data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				if err := fn(data.String()); err != nil {
					return err
				}
				data.Reset()
			}
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		// Comments (": keep-alive") and other fields are skipped.
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if data.Len() > 0 {
		return fn(data.String())
	}
	return nil
}

// generation is the state of one streamed answer.
type generation struct {
	m     *Model
	req   engine.Request
	start time.Time
	res   *engine.Result

	text      strings.Builder
	committed []int // piece ids of the committed text
	tokens    int   // the server's count of committed tokens, if it sent one
	canvas    int   // the current canvas
	deltas    int
	passes    int
	reason    string
	elapsed   time.Duration // the server's, if it sent one
}

func (g *generation) emit(ev engine.Event) {
	if g.req.OnEvent != nil {
		g.req.OnEvent(ev)
	}
}

// ids is the committed piece ids, padded with EmptyID to the server's count.
func (g *generation) ids() []int {
	ids := append([]int(nil), g.committed...)
	for len(ids) < g.tokens {
		ids = append(ids, EmptyID)
	}
	return ids
}

func (g *generation) elapsedNow() time.Duration {
	if g.elapsed > 0 {
		return g.elapsed
	}
	return time.Since(g.start)
}

func (g *generation) chunk(data string) error {
	if strings.TrimSpace(data) == api.Done {
		return errDone
	}
	var c struct {
		api.ChatCompletion
		Error json.RawMessage `json:"error"` // any server's shape: see errorBody
	}
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return &streamError{g.m.server.Host(), "a chunk is not JSON: " + clip(data, 200)}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		_, msg := errorBody([]byte(`{"error":` + string(c.Error) + `}`))
		return &streamError{g.m.server.Host(), msg}
	}
	if c.Usage != nil {
		g.res.PromptTokens = c.Usage.PromptTokens
		g.tokens = max(g.tokens, c.Usage.CompletionTokens)
	}
	if st := c.Darkroom; st != nil {
		g.passes = max(g.passes, st.ForwardPasses)
		g.elapsed = time.Duration(st.ElapsedMS * float64(time.Millisecond))
		g.tokens = max(g.tokens, st.Committed)
		if st.Canvases != nil {
			g.res.Canvases = st.Canvases
		}
		if st.Step > 0 && len(c.Choices) == 0 {
			g.canvas = st.Canvas
			g.step(st)
		}
	}
	for _, ch := range c.Choices {
		if d := ch.Delta; d != nil && d.Content != nil && *d.Content != "" {
			g.text.WriteString(*d.Content)
			g.committed = append(g.committed, g.m.piece(*d.Content))
			g.deltas++
			if g.res.FirstCanvasMS == 0 {
				g.res.FirstCanvasMS = float64(time.Since(g.start).Microseconds()) / 1000
			}
			canvas := g.canvas
			if !g.m.info.Darkroom() {
				canvas = g.deltas - 1 // canvas by canvas, as vLLM streams a diffusion model
			}
			g.emit(engine.Event{Kind: engine.EventCommit, Canvas: canvas, Committed: g.ids(), Text: g.text.String(),
				ForwardPasses: g.passes, Elapsed: g.elapsedNow()})
		}
		if f := ch.FinishReason; f != nil {
			switch *f {
			case api.FinishLength:
				g.reason = engine.StopMaxTokens
			default:
				g.reason = engine.StopEOS
			}
		}
	}
	return nil
}

// step reports a Darkroom server's denoising step.
func (g *generation) step(st *api.Step) {
	ids := func(texts []*string) []int {
		out := make([]int, len(texts))
		for i, t := range texts {
			out[i] = EndID
			if t != nil {
				out[i] = g.m.piece(*t)
			}
		}
		return out
	}
	var draft strings.Builder
	draft.WriteString(g.text.String())
	for _, t := range st.Argmax {
		if t == nil {
			break
		}
		draft.WriteString(*t)
	}
	g.emit(engine.Event{Kind: engine.EventStep, Canvas: st.Canvas, Step: st.Step, Guidance: st.Round > 0, Round: st.Round,
		Steps: st.Steps, Draft: ids(st.Draft),
		Accepted: st.Accepted, Argmax: ids(st.Argmax), Committed: g.ids(), Text: draft.String(),
		ForwardPasses: st.ForwardPasses, Elapsed: g.elapsedNow()})
}

// finish makes the result from what arrived.
func (g *generation) finish(reason string) *engine.Result {
	res := g.res
	res.Text = g.text.String()
	res.Tokens = g.ids()
	res.ForwardPasses = g.passes
	res.StopReason = reason
	res.Elapsed = time.Since(g.start) // as the user waited, the server's queue included
	res.ElapsedMS = float64(res.Elapsed.Microseconds()) / 1000
	if s := res.Elapsed.Seconds(); s > 0 {
		res.TokensPerS = float64(len(res.Tokens)) / s
	}
	if res.Canvases == nil && !g.m.info.Darkroom() {
		res.Canvases = make([]engine.CanvasStats, g.deltas) // their steps are unknown
	}
	g.emit(engine.Event{Kind: engine.EventDone, Canvas: max(len(res.Canvases)-1, 0), Committed: res.Tokens, Text: res.Text,
		ForwardPasses: res.ForwardPasses, Elapsed: res.Elapsed})
	return res
}
