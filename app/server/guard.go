package server

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// The checks every request passes before a handler sees it (see the package
// doc): loopback or this run's Host, same origin (or, for the API, a web page's
// origin the user allowed: origins.go), the token, and a body that arrives in
// time.

// maxRequestBytes bounds a request body.
const maxRequestBytes = 8 << 20

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

// A run's browser host name is runHostPrefix + random hex + runHostSuffix,
// new at every start (Server.runHost).
const (
	runHostPrefix = "darkroom-"
	runHostSuffix = ".localhost"
)

// earlierRunHost reports whether host has the form of a run's browser host
// name, as a bookmark from an earlier start has.
func earlierRunHost(host string) bool {
	name, ok := strings.CutPrefix(strings.ToLower(host), runHostPrefix)
	if !ok {
		return false
	}
	hex, ok := strings.CutSuffix(name, runHostSuffix)
	return ok && hex != "" && strings.Trim(hex, "0123456789abcdef") == ""
}

// guard applies the checks every request must pass.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		w.Header().Set("X-Request-Id", "req_"+randomHex(12))
		api := apiPath(r.URL.Path)
		deny := func(status int, code, msg string) {
			hangUp(w)
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
		onRunHost := strings.EqualFold(host, s.runHost)
		if !onRunHost && !isLoopbackHost(host) {
			msg := "refused: the Host header is not a loopback address"
			if earlierRunHost(host) {
				msg = "refused: " + host + " is the address of an earlier start of Darkroom's server, and each start makes a new one: " +
					"open the address it printed this time (darkroom serve's Browser line; in the app, Settings → Local server)"
			}
			deny(http.StatusForbidden, "forbidden_host", msg)
			return
		}
		origin := r.Header.Get("Origin")
		if s.allowedOrigin(origin, r.URL.Path) { // a web page the user allowed to call the API (origins.go)
			corsHeaders(w.Header(), origin)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				preflight(w, r)
				return
			}
		} else {
			if origin != "" && origin != "http://"+r.Host {
				msg := "refused: cross-origin request"
				if api {
					msg = "refused: a request from the web page " + origin + ", which is not allowed to use this API: " +
						"allow it in Settings → Local server (web pages that may call the API), or with darkroom serve --allow-origin " + origin
				}
				deny(http.StatusForbidden, "cross_origin", msg)
				return
			}
			// Browsers say where a request comes from. "same-site" includes other
			// ports of this machine and other *.localhost names: refused as well.
			if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
				deny(http.StatusForbidden, "cross_origin", "refused: request from another site")
				return
			}
		}
		if s.token != "" {
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
			} else if k := r.Header.Get("X-Api-Key"); k != "" && api {
				given, via = strings.TrimSpace(k), "header" // Anthropic's clients send the key so
			} else if c, err := r.Cookie(TokenCookie); err == nil && onRunHost {
				given, via = c.Value, "cookie"
			}
			if given == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="darkroom"`)
				deny(http.StatusUnauthorized, "missing_api_key", "refused: this server needs the token it printed at start (open the URL with ?token=…, or send Authorization: Bearer TOKEN, or x-api-key: TOKEN)")
				return
			}
			if subtle.ConstantTimeCompare([]byte(given), []byte(s.token)) != 1 {
				status := http.StatusForbidden
				if api {
					status = http.StatusUnauthorized // what OpenAI answers to a wrong key
				}
				msg := "refused: wrong token: the token is in the address this server printed when it started, a new one at every start " +
					"unless fixed with --token: open that address (darkroom serve's Browser line; in the app, Settings → Local server)"
				if api {
					msg = "refused: wrong token: the API key is the token this server printed when it started, a new one at every start " +
						"unless fixed with --token (darkroom serve's API key line; in the app, Settings → Local server)"
				}
				deny(status, "invalid_api_key", msg)
				return
			}
			if via == "query" && !api && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
				s.arrive(w, r, onRunHost)
				return
			}
		}
		if !s.readBody(w, r, api) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// arrive answers a browser that opened a URL with the right ?token=. On this
// run's host name it keeps the token in a host-only cookie and redirects to
// the same path without it (it would otherwise sit in the history); on any
// other host name it sends the browser to this run's, where the cookie
// reaches no other server.
func (s *Server) arrive(w http.ResponseWriter, r *http.Request, onRunHost bool) {
	q := r.URL.Query()
	if !onRunHost {
		host := s.runHost
		if _, port, err := net.SplitHostPort(r.Host); err == nil {
			host = net.JoinHostPort(host, port)
		}
		http.Redirect(w, r, "http://"+host+localPath(r.URL.EscapedPath())+"?"+q.Encode(), http.StatusSeeOther)
		return
	}
	// No Domain attribute: the cookie is host-only, sent to this run's name alone.
	http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	q.Del("token")
	to := localPath(r.URL.EscapedPath())
	if len(q) > 0 {
		to += "?" + q.Encode()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// localPath makes a request path safe to redirect to: one leading slash, so
// that "//evil.example/" (or "/\evil.example", which browsers read alike)
// cannot become a protocol-relative address on another site.
func localPath(p string) string {
	return "/" + strings.TrimLeft(p, `/\`)
}

// hangUp makes the response at hand the connection's last, and stops reading
// from it: net/http would otherwise drain a refused request's body after the
// answer, so a client that trickles it could hold the connection for as long
// as it likes.
func hangUp(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// readBody reads a request's body into memory before the handler runs, within
// the body timeout and the size limit; it answers 408 or 413 (and closes the
// connection) and returns false when the client is too slow or sends too much.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, api bool) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	fail := func(status int, code, msg string) bool {
		hangUp(w)
		if api {
			apiError(w, status, "invalid_request_error", code, msg)
		} else {
			http.Error(w, msg, status)
		}
		return false
	}
	if r.ContentLength > maxRequestBytes {
		return fail(http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the request body is larger than %d bytes", maxRequestBytes))
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.timeouts.body)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fail(http.StatusInternalServerError, "server_error", "cannot read the request: "+err.Error())
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	_ = rc.SetReadDeadline(time.Time{}) // a stream may run for minutes after the body
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fail(http.StatusRequestTimeout, "request_timeout", fmt.Sprintf("the request body did not arrive within %v", s.timeouts.body))
	case err != nil:
		return fail(http.StatusBadRequest, "invalid_body", "cannot read the request body: "+err.Error())
	case len(b) > maxRequestBytes:
		return fail(http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the request body is larger than %d bytes", maxRequestBytes))
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return true
}
