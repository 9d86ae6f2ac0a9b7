// Package remote runs generations on a server that speaks the OpenAI chat API:
// vLLM, another Darkroom's `darkroom serve`, or any compatible server. Server
// lists the models (GET /v1/models) and Model generates with one of them (POST
// /v1/chat/completions, streamed as SSE, the key sent as a Bearer token),
// reporting the stream as engine events and an engine.Result, as a local engine
// does, so the desktop app's screens draw a remote page as they draw a local one.
// The bodies are app/api's types, the ones a Darkroom server encodes.
//
// What a remote stream cannot tell is not made up. Remote text has no token
// ids: a Model numbers the pieces of text it receives (a vocabulary of its own,
// see TokenText), so ids are handles into that Model only, never the server's
// token ids, and Decode of them gives back the text. A Darkroom server (its
// /v1/models says owned_by "darkroom") is asked for its Darkroom extension: the
// developing canvas of every step, as token texts, so a page develops step by
// step; any other server streams committed text only, drawn canvas by canvas
// (vLLM sends a diffusion model's canvases as whole content deltas). Counts the
// server reports (usage, forward passes, canvases) are used; those it does not
// are left zero. Sampling other than max new tokens, the seed and (AR) the
// temperature is the server's; warm starts (Request.CanvasIDs) and thinking are
// not sent, and raw prompts are refused. Only a Darkroom server is told the mode
// (Request.Mode); any other runs its models its own way, one mode only
// (Model.OneMode), and a request for AR is refused rather than run as something
// else.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/darkroomlabs/darkroom/app/api"
)

// Server is an OpenAI-compatible server.
type Server struct {
	// BaseURL is the API's base, with or without the /v1:
	// "http://gpu-box:8000/v1", "http://127.0.0.1:8080".
	BaseURL string
	// Key is the API key, sent as "Authorization: Bearer KEY" ("" sends none).
	// It never appears in errors or logs.
	Key string
	// HTTP is the client (nil: one without an overall timeout, since a stream
	// lasts as long as the answer; connecting is bounded by dialTimeout).
	HTTP *http.Client
}

const dialTimeout = 10 * time.Second

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   dialTimeout,
	ResponseHeaderTimeout: 0, // a busy server may queue a request for minutes
	MaxIdleConnsPerHost:   4,
	IdleConnTimeout:       90 * time.Second,
}}

// Host is the server's host[:port], for display ("gpu-box:8000").
func (s *Server) Host() string {
	u, err := url.Parse(strings.TrimSpace(s.BaseURL))
	if err != nil || u.Host == "" {
		return strings.TrimSpace(s.BaseURL)
	}
	return u.Host
}

// BaseURL is a server address as typed, as it is kept: trimmed, and with
// http:// where no scheme is given ("gpu-box:8000" → "http://gpu-box:8000"), as
// a browser's address bar takes it.
func BaseURL(typed string) string {
	u := strings.TrimSpace(typed)
	if u != "" && !strings.Contains(u, "://") {
		u = "http://" + u
	}
	return u
}

// endpoint is the URL of an API path ("/models") under the base URL's /v1.
func (s *Server) endpoint(path string) (string, error) {
	raw := BaseURL(s.BaseURL)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not a server address: write it as http://HOST:PORT or https://HOST/v1", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, "/v1") {
		p += "/v1"
	}
	u.Path = p + path
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

func (s *Server) client() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return defaultClient
}

// do sends a request and returns the response of a 2xx, or the error the
// status means (see Error).
func (s *Server) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	u, err := s.endpoint(path)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
	}
	if s.Key != "" {
		req.Header.Set("Authorization", "Bearer "+s.Key)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Host: s.Host(), Unreachable: true, cause: unwrapURL(err)}
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, statusError(s.Host(), resp)
	}
	return resp, nil
}

// unwrapURL drops *url.Error's "Post URL:" prefix, which repeats the address.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Models lists the server's models.
func (s *Server) Models(ctx context.Context) ([]api.Model, error) {
	resp, err := s.do(ctx, http.MethodGet, "/models", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list api.ModelList
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("the server at %s answered /v1/models with something that is not a model list: %w", s.Host(), err)
	}
	return list.Data, nil
}

// Error is a failure to use a server, in words a person can act on.
type Error struct {
	Host        string
	Unreachable bool          // no connection could be made
	Status      int           // the HTTP status, when the server answered
	Code        string        // the OpenAI error code, if any ("model_not_found")
	Message     string        // the server's own message, if any
	RetryAfter  time.Duration // 429 and 503: when to try again, if the server said
	cause       error
}

func (e *Error) Unwrap() error { return e.cause }

func (e *Error) Error() string {
	switch {
	case e.Unreachable:
		why := ""
		if e.cause != nil {
			why = " (" + e.cause.Error() + ")"
			if errors.Is(e.cause, syscall.ECONNREFUSED) {
				why = " (connection refused: nothing listens there)"
			}
		}
		return fmt.Sprintf("cannot reach the server at %s%s: check that it is running and that the address is right", e.Host, why)
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return fmt.Sprintf("the server at %s refused the key (%d): check the key in the Library's server card", e.Host, e.Status)
	case e.Status == http.StatusNotFound:
		if e.Code == "model_not_found" || strings.Contains(strings.ToLower(e.Message), "model") {
			return fmt.Sprintf("the server at %s no longer has this model (404: %s): choose one of its models again in the Library", e.Host, e.Message)
		}
		return fmt.Sprintf("the server at %s has no OpenAI API at this address (404): check the address (it usually ends in /v1)", e.Host)
	case e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable:
		when := "shortly"
		if e.RetryAfter > 0 {
			when = fmt.Sprintf("in %d s", int(e.RetryAfter.Round(time.Second)/time.Second))
		}
		if e.Status == http.StatusServiceUnavailable && e.Message != "" {
			return fmt.Sprintf("the server at %s is not ready (503: %s): try again %s", e.Host, e.Message, when)
		}
		return fmt.Sprintf("the server at %s is busy (%d): try again %s", e.Host, e.Status, when)
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("the server at %s failed (%d): %s", e.Host, e.Status, msg)
}

// statusError reads an error response: OpenAI's {"error": {...}}, vLLM's
// {"message": ...} or {"detail": ...}, or plain text.
func statusError(host string, resp *http.Response) *Error {
	e := &Error{Host: host, Status: resp.StatusCode}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = max(time.Until(t), 0)
		}
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e.Code, e.Message = errorBody(raw)
	return e
}

// errorBody reads the code and message of an error body.
func errorBody(raw []byte) (code, msg string) {
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return "", clip(strings.TrimSpace(string(raw)), 300)
	}
	var inner struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
	}
	if len(body.Error) > 0 && json.Unmarshal(body.Error, &inner) == nil && inner.Message != "" {
		if c, ok := inner.Code.(string); ok {
			code = c
		}
		return code, clip(inner.Message, 300)
	}
	var s string
	if json.Unmarshal(body.Error, &s) == nil && s != "" {
		return "", clip(s, 300)
	}
	if body.Message != "" {
		return "", clip(body.Message, 300)
	}
	if body.Detail != nil {
		return "", clip(fmt.Sprint(body.Detail), 300)
	}
	return "", clip(strings.TrimSpace(string(raw)), 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
