package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Web pages that call the API.
//
// A demo built as a web page (served by its own dev server, http://localhost:3000,
// say) calls the API from the browser: a request from another origin, which the
// guard refuses, and which the browser itself sends only after a CORS preflight
// the server answers. Origins lists the pages' origins the user allows (the
// Settings' box, `darkroom serve --allow-origin`); for them alone, and for the API
// alone (/v1/: browser mode's pages and cookie stay this server's), the server
// answers the preflight and names the origin in Access-Control-Allow-Origin. The
// token is still asked of every request but the preflight (a browser sends no
// Authorization with it): a page may use the API only with the key the user gave
// it. No wildcard: each origin is named.

// ParseOrigins reads the allowed origins from text as a person types them
// (separated by spaces, commas or new lines): each an http or https origin —
// scheme, host and port, nothing after them — written in its normal form
// ("http://localhost:3000"; a trailing "/" is dropped). Duplicates go.
func ParseOrigins(text string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		o, err := parseOrigin(f)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out, nil
}

// parseOrigin is one origin in its normal form, or why it is none.
func parseOrigin(s string) (string, error) {
	if strings.Contains(s, "*") {
		return "", fmt.Errorf("%q: name each web page's origin (as in http://localhost:3000); there is no wildcard", s)
	}
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not a web page's origin: write it as http://HOST:PORT, e.g. http://localhost:3000", s)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%q: an origin starts with http:// or https://", s)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: an origin is the scheme, host and port alone, with no path (as in http://localhost:3000)", s)
	}
	return scheme + "://" + strings.ToLower(u.Host), nil
}

// SetOrigins replaces the web pages' origins allowed to call the API (see
// ParseOrigins), at once for the next requests: the desktop app's Settings
// change them without restarting the server (a restart would change its token).
func (s *Server) SetOrigins(origins []string) error {
	var clean []string
	for _, o := range origins {
		n, err := parseOrigin(o)
		if err != nil {
			return err
		}
		clean = append(clean, n)
	}
	s.origins.Store(&clean)
	return nil
}

// allowedOrigin reports whether a request from origin (its Origin header) to path
// is one the user allowed: an API path, from a listed origin.
func (s *Server) allowedOrigin(origin, path string) bool {
	if origin == "" || !apiPath(path) {
		return false
	}
	list := s.origins.Load()
	return list != nil && slices.Contains(*list, strings.ToLower(origin))
}

// corsHeaders names origin as allowed on a response to it.
func corsHeaders(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
}

// preflight answers a browser's CORS preflight (OPTIONS with
// Access-Control-Request-Method) from an allowed origin: the methods the API
// takes, the headers the page asked to send (Authorization and Content-Type, and
// the extra headers client libraries add), for 10 minutes; and, to a page on a
// public site that Chrome asks about reaching this computer (Private Network
// Access), that it may.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
		h.Set("Access-Control-Allow-Headers", asked)
	} else {
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	}
	h.Set("Access-Control-Max-Age", "600")
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	w.WriteHeader(http.StatusNoContent)
}
