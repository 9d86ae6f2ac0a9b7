// Package server owns Darkroom's local HTTP server: browser mode (encyclopedia
// pages under /wiki/ that develop in the browser as the model denoises them) and an
// OpenAI-compatible API (/v1/models, /v1/chat/completions, /v1/completions and
// /v1/responses with SSE streaming; Anthropic's /v1/messages too; the model's tokenizer at /tokenize, as vLLM's).
// `darkroom serve` and the desktop app's "Open in browser" both run it.
//
// Who may use it. The server listens on loopback only, and every request must
// carry the per-run token: API clients send it as "Authorization: Bearer
// TOKEN" (the OpenAI API key) to http://127.0.0.1:PORT/v1; a browser opens
// URL's address once, with ?token=, and keeps it in a cookie. That address's
// host is a name made for this run, darkroom-RANDOM.localhost (browsers send
// every *.localhost name to loopback, RFC 6761), and the cookie is host-only
// for that name. Browsers do not separate cookies by port, so a cookie for
// 127.0.0.1 or localhost would be sent to every other program serving pages
// on this computer, and a second Darkroom server would overwrite it; a cookie
// for a name only this run uses reaches this server alone. No cookie is ever
// set for another host name. Requests whose Host is neither a loopback name nor
// this run's (DNS rebinding), or that come from another origin (but API requests
// from the web pages the user allowed: origins.go), are refused;
// every response carries a Content-Security-Policy that allows nothing but this
// origin, and all model HTML is reduced by app/htmlsafe before it is served.
// The only script is the server's own static develop.js.
//
// Slow clients. Headers must arrive within 10 s and a body within 30 s, an
// idle connection is closed after 60 s and a stream write that blocks for
// 30 s ends the stream. A refused request is answered at once without reading
// its body and its connection is closed, so clients without the token cannot
// hold connections open.
//
// Load. One generation runs at a time. API requests wait their turn in a
// bounded queue (Options.QueueLimit); a request that finds it full is refused
// with 429 and Retry-After, and a stream that waits receives SSE comments so
// that clients and proxies keep the connection.
//
// Model switches. With Options.Model the server asks for the model on every
// request, so after the desktop app switches models or backends new requests
// run on the new engine; a request that finds its engine closed under it (the
// switch happened while it waited) runs once more on the current one.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// Generator runs one generation at a time; *engine.Engine is one. The server
// calls it from request goroutines; Generate must honour ctx cancellation.
type Generator interface {
	Generate(ctx context.Context, req engine.Request) (*engine.Result, error)
}

// Vocabulary tells what single tokens look like, so a developing page can show
// undecided positions as noise of about the right width. *engine.Engine is
// one (and decides which ids end a generation); a Generator that implements it
// is used as is. Without one, drafts show the current argmax text without noise.
type Vocabulary interface {
	TokenText(id int) string // one token's text on its own
	IsEnd(id int) bool       // the id ends a generation (EOS, end of turn, pad)
}

// checker is implemented by *engine.Engine: a request's checks without the
// model (see engine.Engine.Check), so that a client error is answered with a
// 4xx before a stream starts.
type checker interface {
	Check(req engine.Request) (engine.Checked, error)
}

// Model is what requests run on.
type Model struct {
	// ID names the model in /v1/models and in chat requests' "model": a stable
	// id such as "darkroom-mini" or a catalog name; default "darkroom".
	ID       string
	Engine   Generator
	Vocab    Vocabulary      // see Vocabulary; nil: derived from Engine where possible
	Sampling engine.Sampling // the knobs pages are written with (zero: the model's defaults)
	// APIMode is the mode of a chat completion that names none, and APIModeReason
	// why (models/speed.Choose: the faster mode here for a model that writes
	// equally well both ways); "" is diffusion.
	APIMode       engine.Mode
	APIModeReason string
	// System is the system turn a chat request without one is given (the
	// model's catalog.System; "": none).
	System string
	// AnswerTokens is the most new tokens of a chat completion that asks for
	// no max_tokens (catalog.AnswerTokens; 0: Sampling's, else the model's).
	AnswerTokens int
	// NoThinking is why the model does not think when asked
	// (catalog.NoThinking; "": it does): a request for thinking is refused
	// with it.
	NoThinking string
	// Leads are the entries the model's folder holds
	// (assets.Leads; nil: none): a page opens with its title's.
	Leads *assets.Leads
	// PageMode is the mode pages are written in ("": Options.Mode): the desktop
	// app's Encyclopedia's, so that browser mode writes the pages it does.
	PageMode engine.Mode
	// PagePrompt is the page prompt's template (assets.PagePrompt; "": the
	// built-in one): the desktop app's, from its Settings.
	PagePrompt string
}

// Options configure a Server. Engine (or Model) is required.
type Options struct {
	// Engine, Vocab, ModelID and Sampling are the model when it never changes
	// (see Model's fields).
	Engine   Generator
	Vocab    Vocabulary
	ModelID  string
	Sampling engine.Sampling
	// APIMode, APIModeReason, System, AnswerTokens, NoThinking and Leads are
	// the model's (see Model's fields).
	APIMode       engine.Mode
	APIModeReason string
	System        string
	AnswerTokens  int
	NoThinking    string
	Leads         *assets.Leads
	// Model, if set, is asked for the model on every request (and Engine,
	// Vocab, ModelID and Sampling are ignored): the desktop app's active model,
	// which the user may switch while the server runs.
	Model func(ctx context.Context) (Model, error)
	// Known, if set with Model, is the model pages are written by, where it is
	// known without loading it (ok false where not): its id, as Model names
	// it, and its entries — the loaded model's, or those of one whose entries
	// are read without its weights (the built-in Mini's). A page's shell,
	// which answers at once and leaves the model to its event stream, takes
	// what its links need from it (the entry a typed topic names, the model's
	// own page, entries a typo may have meant), and so do the start page and
	// the search box's suggestions. The desktop app's model loads on first
	// use — a 26B's in tens of seconds.
	Known func() (id string, leads *assets.Leads, ok bool)

	// Addr is where to listen, "127.0.0.1:0" (a random port) by default. The
	// host must be a loopback address or "localhost"; an empty host means
	// 127.0.0.1. Anything else is refused: the server is never reachable from
	// other machines.
	Addr string
	// Token is the per-run secret; empty means a fresh random one. NoToken turns
	// the token check off (Host and Origin are still checked).
	Token   string
	NoToken bool

	// Pages: the mode and seed the encyclopedia pages are written with (zero:
	// diffusion, seed 1 — what `darkroom wiki` writes).
	Mode engine.Mode
	Seed uint64
	// FrameInterval is the least time between two draft events of a developing
	// page (default 50 ms: at most 20 redraws a second).
	FrameInterval time.Duration
	// CacheSize is how many finished pages are kept (default 256).
	CacheSize int

	// QueueLimit is how many API requests may wait while one runs (default 8);
	// one more is refused with 429.
	QueueLimit int
	// KeepAlive is how often a waiting stream gets an SSE comment (default 10 s).
	KeepAlive time.Duration

	// Origins are the web pages allowed to call the API from a browser
	// (origins.go): "http://localhost:3000", as ParseOrigins reads them; none by
	// default. SetOrigins changes them while the server runs.
	Origins []string

	// Logf, if set, receives one line per failed generation or server error.
	Logf func(format string, args ...any)
}

// timeouts bound what a client may make the server wait for.
type timeouts struct {
	header, body, idle, write time.Duration
}

var defaultTimeouts = timeouts{header: 10 * time.Second, body: 30 * time.Second, idle: 60 * time.Second, write: 30 * time.Second}

// Server is the local HTTP server. Create it with New, then Start it.
type Server struct {
	opts     Options
	token    string
	runHost  string // this run's browser host name, "darkroom-….localhost"
	timeouts timeouts
	handler  http.Handler
	pages    *pageCache
	queue    *queue
	stored   *responseStore // the Responses API's stored responses (responses.go)

	mu        sync.Mutex
	http      *http.Server
	ln        net.Listener
	port      string
	stop      context.CancelFunc
	lastModel string // the id, page mode and page prompt of the model the pages in the cache were written by
	lastID    string // that model's id

	closeOnce sync.Once
	closeErr  error
	closed    bool // under mu
	done      chan struct{}
	serveErr  error
	page      *pageRun // the running page generation, if any
	pageSeq   uint64

	origins atomic.Pointer[[]string] // the web pages allowed to call the API (origins.go)
}

// TokenCookie is the name of the cookie that carries the token after a browser
// opened a URL with ?token=.
const TokenCookie = "darkroom_token"

// ErrNotLoopback reports an address that would be reachable from other machines.
var ErrNotLoopback = errors.New("the server listens on loopback only (127.0.0.1, ::1 or localhost)")

// New checks opts and prepares a server; nothing listens until Start.
func New(opts Options) (*Server, error) {
	if opts.Engine == nil && opts.Model == nil {
		return nil, errors.New("server: no engine")
	}
	addr, err := loopbackAddr(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	opts.Addr = addr
	if opts.Model == nil {
		m := Model{ID: opts.ModelID, Engine: opts.Engine, Vocab: opts.Vocab, Sampling: opts.Sampling,
			APIMode: opts.APIMode, APIModeReason: opts.APIModeReason, System: opts.System, AnswerTokens: opts.AnswerTokens, NoThinking: opts.NoThinking, Leads: opts.Leads}
		opts.Model = func(context.Context) (Model, error) { return m, nil }
	}
	if opts.Mode == "" {
		opts.Mode = engine.Diffusion
	}
	if opts.Mode != engine.Diffusion && opts.Mode != engine.AR {
		return nil, fmt.Errorf("server: unknown mode %q", opts.Mode)
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.FrameInterval <= 0 {
		opts.FrameInterval = 50 * time.Millisecond
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 256
	}
	if opts.QueueLimit <= 0 {
		opts.QueueLimit = 8
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 10 * time.Second
	}
	s := &Server{opts: opts, token: opts.Token, timeouts: defaultTimeouts, pages: newPageCache(opts.CacheSize),
		queue: newQueue(opts.QueueLimit), stored: newResponseStore(), runHost: runHostPrefix + randomHex(8) + runHostSuffix}
	if err := s.SetOrigins(opts.Origins); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if !opts.NoToken {
		if s.token == "" {
			b := make([]byte, 24)
			if _, err := rand.Read(b); err != nil {
				return nil, fmt.Errorf("server: make token: %w", err)
			}
			s.token = hex.EncodeToString(b)
		} else if len(s.token) < 16 || strings.ContainsFunc(s.token, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return nil, errors.New("server: the token must be at least 16 printable ASCII characters without spaces")
		}
	} else {
		s.token = ""
	}
	s.handler = s.guard(s.routes())
	return s, nil
}

// model is the model a request runs on now (Options.Model), with its
// vocabulary, id and page mode filled in. The page cache is dropped when the
// model or its page mode changed.
func (s *Server) model(ctx context.Context) (Model, error) {
	m, err := s.opts.Model(ctx)
	if err != nil {
		return Model{}, err
	}
	if m.Engine == nil {
		return Model{}, errors.New("no model is loaded")
	}
	if m.ID == "" {
		m.ID = "darkroom"
	}
	if m.Vocab == nil {
		if v, ok := m.Engine.(Vocabulary); ok {
			m.Vocab = v
		}
	}
	if m.PageMode == "" {
		m.PageMode = s.opts.Mode
	}
	s.mu.Lock()
	key := m.ID + " " + string(m.PageMode) + " " + m.PagePrompt // the pages cached were written by this model, in this mode, on this prompt
	changed := s.lastModel != "" && s.lastModel != key
	s.lastModel, s.lastID = key, m.ID
	s.mu.Unlock()
	if changed {
		s.pages.clear()
	}
	return m, nil
}

// shellLeads are the entries of the model a page's shell is written for,
// where they are known without loading a model (Options.Known).
func (s *Server) shellLeads(ctx context.Context) (*assets.Leads, bool) {
	if s.opts.Known != nil {
		_, leads, ok := s.opts.Known()
		return leads, ok
	}
	m, err := s.model(ctx)
	return m.Leads, err == nil
}

// generate runs req on *m; when m's engine was closed before it started (the
// app switched models or backends meanwhile), it runs once more on the model
// in use now, which *m then holds.
func (s *Server) generate(ctx context.Context, m *Model, req engine.Request) (*engine.Result, error) {
	res, err := m.Engine.Generate(ctx, req)
	if !errors.Is(err, engine.ErrClosed) {
		return res, err
	}
	now, merr := s.model(ctx)
	if merr != nil {
		return nil, fmt.Errorf("%w; then: %w", err, merr)
	}
	*m = now
	return m.Engine.Generate(ctx, req)
}

// ErrPortInUse is wrapped by Start and CheckAddr when another program holds the
// port asked for.
var ErrPortInUse = errors.New("another program is using that port (another darkroom serve, or the Darkroom app's local server?)")

// CheckAddr reports whether the server could listen on addr now: a loopback
// address whose port is free. `darkroom serve` asks before it loads a model,
// so that a port in use is said at once, not after the load.
func CheckAddr(addr string) error {
	a, err := loopbackAddr(addr)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	ln, err := listen(a)
	if err != nil {
		return err
	}
	return ln.Close()
}

// listen listens on the loopback address addr, a port in use wrapping ErrPortInUse.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if addrInUse(err) {
		return nil, fmt.Errorf("server: %s: %w", addr, ErrPortInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	return ln, nil
}

// loopbackAddr returns addr with a default host and port, or ErrNotLoopback.
func loopbackAddr(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "127.0.0.1:0", nil
	}
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		addr = ":" + addr // the port alone, as Settings takes it: "8765"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: write it as 127.0.0.1:PORT, or the port alone", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !isLoopbackHost(host) {
		return "", fmt.Errorf("address %q: %w", addr, ErrNotLoopback)
	}
	if host == "localhost" {
		host = "127.0.0.1" // never depend on what the resolver says localhost is
	}
	return net.JoinHostPort(host, port), nil
}

// isLoopbackHost reports whether host (no port) names this machine's loopback.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Start listens and serves in the background until Close or until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http != nil {
		return errors.New("server: already started")
	}
	if s.closed {
		return errors.New("server: closed")
	}
	ln, err := listen(s.opts.Addr)
	if err != nil {
		return err
	}
	s.ln = ln
	_, s.port, _ = net.SplitHostPort(ln.Addr().String())
	// Every request context derives from base, so Close ends open streams at once.
	base, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.http = &http.Server{Handler: s.handler, ReadHeaderTimeout: s.timeouts.header, IdleTimeout: s.timeouts.idle,
		BaseContext: func(net.Listener) context.Context { return base }}
	s.done = make(chan struct{})
	go func() {
		err := s.http.Serve(ln)
		s.mu.Lock()
		if !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
		s.mu.Unlock()
		close(s.done)
	}()
	if ctx != nil && ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				s.Close()
			case <-s.done:
			}
		}()
	}
	return nil
}

// Done is closed when the server has stopped serving (nil before Start).
func (s *Server) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Addr is the address the server listens on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// APIBase is the OpenAI base URL, "http://127.0.0.1:PORT/v1" ("" before Start).
func (s *Server) APIBase() string {
	if a := s.Addr(); a != "" {
		return "http://" + a + "/v1"
	}
	return ""
}

// Token is the per-run token ("" with NoToken). API clients send it as
// "Authorization: Bearer TOKEN" (the OpenAI API key).
func (s *Server) Token() string { return s.token }

// URL is the absolute browser URL of path (e.g. "/wiki/Unix"): on this run's
// host name, with the token in the query; "" before Start.
func (s *Server) URL(path string) string {
	s.mu.Lock()
	port := s.port
	s.mu.Unlock()
	if port == "" {
		return ""
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if s.token == "" {
		return "http://" + s.Addr() + path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return "http://" + net.JoinHostPort(s.runHost, port) + path + sep + "token=" + url.QueryEscape(s.token)
}

// PageURL is URL of the encyclopedia page for title.
func (s *Server) PageURL(title string) string { return s.URL(wikiPath(title)) }

// Handler is the server's complete HTTP handler (security checks included), for
// tests and for embedding in another server.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops a running page generation and shuts the server down: open
// streams end, and it waits up to five seconds for their handlers to return.
// Every call returns after the shutdown is complete.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Server) shutdown() error {
	s.cancelPage(errShutdown)
	s.mu.Lock()
	s.closed = true
	hs, done := s.http, s.done
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.stop() // ends streams and generations; Shutdown then waits for their handlers
	err := hs.Shutdown(ctx)
	if err != nil {
		err = hs.Close()
	}
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		err = s.serveErr
	}
	return err
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// routes is the unguarded mux.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handleHome)
	mux.HandleFunc("/", s.handleNoPage) // any other address a browser is sent to
	mux.HandleFunc("GET /wiki", s.handleSearch)
	mux.HandleFunc("GET /suggest", s.handleSuggest)
	mux.HandleFunc("GET /wiki/{slug...}", s.handlePage)
	mux.HandleFunc("GET /events/wiki/{slug...}", s.handlePageEvents)
	mux.HandleFunc("GET /static/{file}", s.handleStatic)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{id}", s.handleModel)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/completions", s.handleCompletion)
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("GET /v1/responses/{id}", s.handleGetResponse)
	mux.HandleFunc("DELETE /v1/responses/{id}", s.handleDeleteResponse)
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	mux.HandleFunc("GET /tokenizer_info", s.handleTokenizerInfo)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("POST /detokenize", s.handleDetokenize)
	// The API's paths asked with another method, and unknown paths under /v1.
	unhandled := func(w http.ResponseWriter, r *http.Request) {
		if allow := apiMethod(r.URL.Path); allow != "" {
			w.Header().Set("Allow", allow)
			apiError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
				fmt.Sprintf("%s %s is not supported; use %s", r.Method, r.URL.Path, allow))
			return
		}
		apiError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("unknown API endpoint %s %s: this server offers GET /v1/models, POST /v1/chat/completions, POST /v1/completions, POST /v1/responses and POST /v1/messages", r.Method, r.URL.Path))
	}
	for _, p := range []string{"/v1/", "/tokenizer_info", "/tokenize", "/detokenize"} {
		mux.HandleFunc(p, unhandled)
	}
	// An OpenAI client given the base URL without /v1 asks for these: say where
	// the API is, in the JSON it reads, not "404 page not found".
	for _, p := range []string{"/chat/completions", "/completions", "/models", "/models/", "/responses", "/messages", "/embeddings"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			apiError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
				fmt.Sprintf("the API is under /v1: set the base URL to http://%s/v1 (POST /v1/chat/completions, POST /v1/completions, POST /v1/responses, POST /v1/messages, GET /v1/models)", r.Host))
		})
	}
	return mux
}

// apiMethod is the method an API path answers to, or its methods ("GET,
// DELETE"), for an Allow header ("" for an unknown path).
func apiMethod(path string) string {
	switch {
	case path == "/v1/chat/completions", path == "/v1/completions", path == "/v1/responses", path == "/v1/messages",
		path == "/v1/messages/count_tokens", path == "/tokenize", path == "/detokenize":
		return http.MethodPost
	case path == "/v1/models", strings.HasPrefix(path, "/v1/models/") && !strings.Contains(path[len("/v1/models/"):], "/"),
		path == "/tokenizer_info":
		return http.MethodGet
	case strings.HasPrefix(path, "/v1/responses/") && !strings.Contains(path[len("/v1/responses/"):], "/"):
		return "GET, DELETE"
	}
	return ""
}

// errShutdown and errSuperseded are the causes a page generation is cancelled with.
var (
	errShutdown   = errors.New("the server is shutting down")
	errSuperseded = errors.New("another page was requested")
)

// pageRun is a running page generation.
type pageRun struct {
	id     uint64
	cancel context.CancelCauseFunc
}

// beginPage cancels the running page generation, if any, and registers a new
// one; end must be called when it finishes.
func (s *Server) beginPage(parent context.Context) (ctx context.Context, end func()) {
	ctx, cancel := context.WithCancelCause(parent)
	s.mu.Lock()
	if s.page != nil {
		s.page.cancel(errSuperseded)
	}
	s.pageSeq++
	run := &pageRun{id: s.pageSeq, cancel: cancel}
	s.page = run
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		if s.page == run {
			s.page = nil
		}
		s.mu.Unlock()
		cancel(nil)
	}
}

func (s *Server) cancelPage(cause error) {
	s.mu.Lock()
	if s.page != nil {
		s.page.cancel(cause)
		s.page = nil
	}
	s.mu.Unlock()
}
