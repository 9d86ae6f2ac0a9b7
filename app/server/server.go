// Package server owns Darkroom's local HTTP server: browser mode (encyclopedia
// pages under /wiki/ that develop in the browser as the model denoises them) and an
// OpenAI-compatible API (/v1/models, /v1/chat/completions with SSE streaming).
// `darkroom serve` and the desktop app's "Open in browser" both run it.
//
// Safety (DESIGN "Rules for bad input and safety"): the server listens on
// loopback only; every request must carry the per-run token (the ?token= query,
// which sets a SameSite=Strict HttpOnly cookie, the cookie, or an
// "Authorization: Bearer" header); requests whose Host is not a loopback name
// (DNS rebinding) or that come from another origin are refused; every response
// carries a Content-Security-Policy that allows nothing but this origin, and all
// model HTML is reduced by app/htmlsafe before it is served. The only script is
// the server's own static develop.js.
package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
)

// Generator runs one generation at a time; *engine.Engine is one. The server
// calls it from request goroutines; Generate must honour ctx cancellation.
type Generator interface {
	Generate(ctx context.Context, req engine.Request) (*engine.Result, error)
}

// Vocabulary tells what single tokens look like, so a developing page can show
// undecided positions as noise of about the right width. *engine.Engine is
// adapted automatically; a Generator that also implements Vocabulary is used as
// is. Without one, drafts show the current argmax text without noise.
type Vocabulary interface {
	TokenText(id int) string // one token's text on its own
	IsEnd(id int) bool       // the id ends a generation (EOS, end of turn, pad)
}

// Options configure a Server. Only Engine is required.
type Options struct {
	Engine  Generator
	Vocab   Vocabulary // see Vocabulary; nil: derived from Engine where possible
	ModelID string     // the model's name in /v1/models and completions; default "darkroom"

	// Addr is where to listen, "127.0.0.1:0" (a random port) by default. The
	// host must be a loopback address or "localhost"; an empty host means
	// 127.0.0.1. Anything else is refused: the server is never reachable from
	// other machines.
	Addr string
	// Token is the per-run secret; empty means a fresh random one. NoToken turns
	// the token check off (Host and Origin are still checked).
	Token   string
	NoToken bool

	// Pages: the sampling knobs, mode and seed the encyclopedia pages are
	// written with (zero: the model's defaults, diffusion, seed 1 — what
	// `darkroom wiki` writes).
	Sampling engine.Sampling
	Mode     engine.Mode
	Seed     uint64
	// FrameInterval is the least time between two draft events of a developing
	// page (default 50 ms: at most 20 redraws a second).
	FrameInterval time.Duration
	// CacheSize is how many finished pages are kept (default 256).
	CacheSize int

	// Logf, if set, receives one line per failed generation or server error.
	Logf func(format string, args ...any)
}

// Server is the local HTTP server. Create it with New, then Start it.
type Server struct {
	opts    Options
	token   string
	vocab   Vocabulary
	handler http.Handler
	pages   *pageCache

	mu   sync.Mutex
	http *http.Server
	ln   net.Listener
	base string // "http://127.0.0.1:PORT" once started
	stop context.CancelFunc

	closeOnce sync.Once
	closeErr  error
	closed    bool // under mu
	done      chan struct{}
	serveErr  error
	page      *pageRun // the running page generation, if any
	pageSeq   uint64
}

// TokenCookie is the name of the cookie that carries the token after a browser
// opened a URL with ?token=.
const TokenCookie = "darkroom_token"

// ErrNotLoopback reports an address that would be reachable from other machines.
var ErrNotLoopback = errors.New("the server listens on loopback only (127.0.0.1, ::1 or localhost)")

// New checks opts and prepares a server; nothing listens until Start.
func New(opts Options) (*Server, error) {
	if opts.Engine == nil {
		return nil, errors.New("server: no engine")
	}
	addr, err := loopbackAddr(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	opts.Addr = addr
	if opts.ModelID == "" {
		opts.ModelID = "darkroom"
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
	s := &Server{opts: opts, token: opts.Token, pages: newPageCache(opts.CacheSize)}
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
	s.vocab = opts.Vocab
	if s.vocab == nil {
		switch g := opts.Engine.(type) {
		case Vocabulary:
			s.vocab = g
		case *engine.Engine:
			s.vocab = newEngineVocab(g)
		}
	}
	s.handler = s.guard(s.routes())
	return s, nil
}

// loopbackAddr returns addr with a default host and port, or ErrNotLoopback.
func loopbackAddr(addr string) (string, error) {
	if addr == "" {
		return "127.0.0.1:0", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
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
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.opts.Addr, err)
	}
	s.ln = ln
	s.base = "http://" + ln.Addr().String()
	// Every request context derives from base, so Close ends open streams at once.
	base, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.http = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second,
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

// Token is the per-run token ("" with NoToken). API clients send it as
// "Authorization: Bearer TOKEN" (the OpenAI API key).
func (s *Server) Token() string { return s.token }

// URL is the absolute URL of path (e.g. "/wiki/Unix", "/v1") with the token in
// the query, ready to open in a browser; "" before Start.
func (s *Server) URL(path string) string {
	s.mu.Lock()
	base := s.base
	s.mu.Unlock()
	if base == "" {
		return ""
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if s.token == "" {
		return base + path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return base + path + sep + "token=" + url.QueryEscape(s.token)
}

// PageURL is URL of the encyclopedia page for title.
func (s *Server) PageURL(title string) string { return s.URL(wikiPath(title)) }

// Handler is the server's complete HTTP handler (security checks included), for
// tests and for embedding in another server.
func (s *Server) Handler() http.Handler { return s.handler }

// ClearCache forgets the finished pages (after the model changed).
func (s *Server) ClearCache() { s.pages.clear() }

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
	mux.HandleFunc("GET /wiki", s.handleSearch)
	mux.HandleFunc("GET /wiki/{slug...}", s.handlePage)
	mux.HandleFunc("GET /events/wiki/{slug...}", s.handlePageEvents)
	mux.HandleFunc("GET /static/{file}", s.handleStatic)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{id}", s.handleModel)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", fmt.Sprintf("unknown API endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// securityHeaders go on every response, errors included.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// guard applies the checks every request must pass: loopback Host, same
// origin, and the token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		api := strings.HasPrefix(r.URL.Path, "/v1/")
		deny := func(status int, code, msg string) {
			if api {
				apiError(w, status, "invalid_request_error", code, msg)
				return
			}
			http.Error(w, msg, status)
		}
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !isLoopbackHost(host) {
			deny(http.StatusForbidden, "forbidden_host", "refused: the Host header is not a loopback address")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
			deny(http.StatusForbidden, "cross_origin", "refused: cross-origin request")
			return
		}
		// Browsers say where a request comes from. "same-site" includes other
		// ports of this machine (another local web app): refused as well, since
		// the SameSite cookie would ride along.
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			deny(http.StatusForbidden, "cross_origin", "refused: request from another site")
			return
		}
		if s.token == "" {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		var given, via string
		if t := q.Get("token"); t != "" {
			given, via = t, "query"
		} else if a := r.Header.Get("Authorization"); a != "" {
			t, ok := strings.CutPrefix(a, "Bearer ")
			if !ok {
				deny(http.StatusUnauthorized, "invalid_api_key", "refused: the Authorization header must be \"Bearer TOKEN\"")
				return
			}
			given, via = strings.TrimSpace(t), "header"
		} else if c, err := r.Cookie(TokenCookie); err == nil {
			given, via = c.Value, "cookie"
		}
		if given == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="darkroom"`)
			deny(http.StatusUnauthorized, "missing_api_key", "refused: this server needs the token it printed at start (open the URL with ?token=…, or send Authorization: Bearer TOKEN)")
			return
		}
		if subtle.ConstantTimeCompare([]byte(given), []byte(s.token)) != 1 {
			status := http.StatusForbidden
			if api {
				status = http.StatusUnauthorized // what OpenAI answers to a wrong key
			}
			deny(status, "invalid_api_key", "refused: wrong token")
			return
		}
		if via == "query" && !api {
			// A browser arriving with ?token=: keep the token in a cookie and
			// drop it from the address bar (it would otherwise sit in history).
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.token, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode})
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				q.Del("token")
				u := *r.URL
				u.RawQuery = q.Encode()
				u.Scheme, u.Host = "", ""
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
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

// engineVocab adapts *engine.Engine's tokenizer to Vocabulary.
type engineVocab struct {
	e   *engine.Engine
	end []int
}

func newEngineVocab(e *engine.Engine) Vocabulary {
	if e.Tokenizer() == nil || e.Config() == nil {
		return nil
	}
	v := &engineVocab{e: e}
	cfg := e.Config()
	v.end = append(v.end, cfg.Generation.EOSTokenIDs...)
	v.end = append(v.end, cfg.EOSTokenIDs...)
	v.end = append(v.end, e.Tokenizer().EndOfGeneration()...)
	if p := e.Tokenizer().Pad(); p >= 0 {
		v.end = append(v.end, p)
	}
	return v
}

func (v *engineVocab) TokenText(id int) string { return v.e.Tokenizer().DecodeToken(id) }
func (v *engineVocab) IsEnd(id int) bool       { return slices.Contains(v.end, id) }
