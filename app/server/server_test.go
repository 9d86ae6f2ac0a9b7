package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestNewRefusesNonLoopback(t *testing.T) {
	for _, c := range []struct {
		addr, want string // want: the address used, "" = refused
	}{
		{"", "127.0.0.1:0"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"localhost:0", "127.0.0.1:0"},
		{"[::1]:9000", "[::1]:9000"},
		{":8080", "127.0.0.1:8080"},
		{"8080", "127.0.0.1:8080"}, // a port alone: it was 'address 8080: missing port in address'
		{" 8765 ", "127.0.0.1:8765"},
		{"127.8.9.10:0", "127.8.9.10:0"},
		{"0.0.0.0:8080", ""},
		{"[::]:8080", ""},
		{"192.168.1.10:80", ""},
		{"example.com:80", ""},
		{"localhost.evil.example:80", ""},
		{"no-port", ""},
	} {
		s, err := New(Options{Engine: &fakeGen{}, Addr: c.addr})
		switch {
		case c.want == "" && err == nil:
			t.Errorf("New(%q) accepted", c.addr)
		case c.want == "" && strings.Contains(c.addr, ":") && c.addr != "no-port" && !errors.Is(err, ErrNotLoopback):
			t.Errorf("New(%q): %v, want ErrNotLoopback", c.addr, err)
		case c.want != "" && err != nil:
			t.Errorf("New(%q): %v", c.addr, err)
		case c.want != "" && s.opts.Addr != c.want:
			t.Errorf("New(%q) listens on %q, want %q", c.addr, s.opts.Addr, c.want)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without an engine accepted")
	}
	// An address that is neither says how to write one, not 'missing port in address'.
	want := `address "no-port": write it as 127.0.0.1:PORT, or the port alone`
	if _, err := New(Options{Engine: &fakeGen{}, Addr: "no-port"}); err == nil || err.Error() != "server: "+want {
		t.Errorf("New(no-port): %v, want %q", err, "server: "+want)
	}
	if _, err := New(Options{Engine: &fakeGen{}, Token: "short"}); err == nil {
		t.Error("a 5-character token was accepted")
	}
}

// TestPortInUse: a port another program holds is ErrPortInUse, from CheckAddr
// and from Start alike, and a free one checks out.
func TestPortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	if err := CheckAddr(addr); !errors.Is(err, ErrPortInUse) {
		t.Errorf("CheckAddr(%s) = %v; want ErrPortInUse", addr, err)
	}
	s, err := New(Options{Addr: addr, Engine: &fakeGen{final: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrPortInUse) {
		t.Errorf("Start on %s = %v; want ErrPortInUse", addr, err)
	}
	if err := CheckAddr("127.0.0.1:0"); err != nil {
		t.Errorf("a free port: %v", err)
	}
	if err := CheckAddr("0.0.0.0:0"); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("not loopback: %v", err)
	}
}

func TestTokenRequired(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{}})
	tok := s.Token()
	if len(tok) < 32 {
		t.Fatalf("token %q is too short", tok)
	}
	if s2, _ := New(Options{Engine: &fakeGen{}}); s2.Token() == tok {
		t.Error("two servers share a token")
	}
	u, err := url.Parse(s.URL("/wiki/Unix"))
	if err != nil || u.Query().Get("token") != tok || u.Hostname() != s.runHost || u.Path != "/wiki/Unix" ||
		!strings.HasPrefix(u.Hostname(), "darkroom-") || !strings.HasSuffix(u.Hostname(), ".localhost") {
		t.Fatalf("URL %q", s.URL("/wiki/Unix"))
	}

	for _, path := range []string{"/", "/wiki/Unix", "/events/wiki/Unix", "/static/develop.js", "/v1/models"} {
		resp, body := do(t, nil, "GET", base(s)+path, "", nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d, want 401", path, resp.StatusCode)
		}
		if strings.Contains(body, tok) {
			t.Errorf("GET %s leaks the token", path)
		}
		wrong := http.StatusForbidden
		if strings.HasPrefix(path, "/v1/") {
			wrong = http.StatusUnauthorized // OpenAI's answer to a wrong key
		}
		resp, _ = do(t, nil, "GET", base(s)+path+"?token=wrong-token-wrong-token", "", nil)
		if resp.StatusCode != wrong {
			t.Errorf("GET %s with a wrong token: %d, want %d", path, resp.StatusCode, wrong)
		}
		resp, _ = do(t, nil, "GET", site(s)+path, "", map[string]string{"Cookie": TokenCookie + "=nope"})
		if resp.StatusCode != wrong {
			t.Errorf("GET %s with a wrong cookie: %d, want %d", path, resp.StatusCode, wrong)
		}
		resp, _ = do(t, nil, "GET", base(s)+path, "", map[string]string{"Authorization": "Bearer nope-nope-nope-nope"})
		if resp.StatusCode != wrong {
			t.Errorf("GET %s with a wrong bearer token: %d, want %d", path, resp.StatusCode, wrong)
		}
	}
	// API errors are OpenAI-style JSON.
	resp, body := do(t, nil, "POST", base(s)+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, nil)
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if resp.StatusCode != 401 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "missing_api_key" || e.Error.Message == "" {
		t.Errorf("API without key: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, nil, "GET", base(s)+"/v1/models", "", map[string]string{"Authorization": "Bearer " + tok})
	if resp.StatusCode != 200 || !strings.Contains(body, `"object":"list"`) {
		t.Errorf("API with Bearer: %d %s", resp.StatusCode, body)
	}
	resp, _ = do(t, nil, "GET", base(s)+"/v1/models", "", map[string]string{"Authorization": "Basic " + tok})
	if resp.StatusCode != 401 {
		t.Errorf("API with Basic auth: %d, want 401", resp.StatusCode)
	}

	// ?token= on this run's host sets a strict, HttpOnly, host-only cookie and
	// redirects to the URL without it.
	resp, _ = do(t, nil, "GET", s.URL("/wiki/Unix?regen=1"), "", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/wiki/Unix?regen=1" {
		t.Errorf("token URL: %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == TokenCookie {
			ck = c
		}
	}
	if ck == nil || ck.Value != tok || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Domain != "" {
		t.Fatalf("cookie %+v", ck)
	}
	resp, body = do(t, nil, "GET", site(s)+"/", "", map[string]string{"Cookie": TokenCookie + "=" + tok})
	if resp.StatusCode != 200 || !strings.Contains(body, "Darkroom") {
		t.Errorf("home with cookie: %d", resp.StatusCode)
	}
	// The cookie counts on this run's host only; elsewhere no cookie is set.
	if resp, _ = do(t, nil, "GET", base(s)+"/", "", map[string]string{"Cookie": TokenCookie + "=" + tok}); resp.StatusCode != 401 {
		t.Errorf("home on 127.0.0.1 with the cookie: %d, want 401", resp.StatusCode)
	}
	resp, _ = do(t, nil, "GET", base(s)+"/wiki/Unix?token="+tok, "", nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != s.URL("/wiki/Unix") || len(resp.Cookies()) != 0 {
		t.Errorf("token URL on 127.0.0.1: %d → %q, cookies %v; want the run's host, no cookie", resp.StatusCode, loc, resp.Cookies())
	}
	// A browser following the URL ends on the page with the cookie set.
	c := browser(t, s)
	resp, _ = do(t, c, "GET", site(s)+"/static/develop.js", "", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("script with the cookie: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestNoToken(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{}, NoToken: true})
	if s.Token() != "" || strings.Contains(s.URL("/"), "token") {
		t.Errorf("token %q, URL %q", s.Token(), s.URL("/"))
	}
	if resp, _ := do(t, nil, "GET", base(s)+"/v1/models", "", nil); resp.StatusCode != 200 {
		t.Errorf("no-token server: %d", resp.StatusCode)
	}
	// Host and Origin are still checked.
	if resp, _ := do(t, nil, "GET", base(s)+"/v1/models", "", map[string]string{"Host": "evil.example"}); resp.StatusCode != 403 {
		t.Errorf("no-token server, foreign Host: %d", resp.StatusCode)
	}
}

func TestHostAndOriginChecks(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{}})
	auth := "Bearer " + s.Token()
	port := s.Addr()[strings.LastIndex(s.Addr(), ":"):]
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"plain", map[string]string{}, 200},
		{"localhost host", map[string]string{"Host": "localhost" + port}, 200},
		{"rebinding host", map[string]string{"Host": "evil.example" + port}, 403},
		{"rebinding host no port", map[string]string{"Host": "evil.example"}, 403},
		{"lan host", map[string]string{"Host": "192.168.1.2" + port}, 403},
		{"localhost suffix", map[string]string{"Host": "localhost.evil.example"}, 403},
		{"same origin", map[string]string{"Origin": base(s)}, 200},
		{"cross origin", map[string]string{"Origin": "http://evil.example"}, 403},
		{"other loopback port", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"null origin", map[string]string{"Origin": "null"}, 403},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site fetch (another local port)", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"same-origin fetch", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200},
		{"typed URL", map[string]string{"Sec-Fetch-Site": "none"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.hdr["Authorization"] = auth
			resp, body := do(t, nil, "GET", base(s)+"/v1/models", "", c.hdr)
			if resp.StatusCode != c.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") ||
				strings.Contains(csp, "http") || strings.Contains(csp, "unsafe") {
				t.Errorf("CSP %q", csp)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Error("CORS header set")
			}
		})
	}
	// A cross-origin POST (what a hostile web page could send) is refused.
	resp, _ := do(t, nil, "POST", base(s)+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Origin": "http://evil.example", "Cookie": TokenCookie + "=" + s.Token(), "Content-Type": "text/plain"})
	if resp.StatusCode != 403 {
		t.Errorf("cross-origin POST with the cookie: %d", resp.StatusCode)
	}
}

func TestStartCloseEndsStreams(t *testing.T) {
	gate := make(chan struct{})
	g := &fakeGen{drafts: []string{"<p>a</p>", "<p>b</p>"}, final: "<p>b</p>", gate: gate}
	s, err := New(Options{Engine: g})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL("/") != "" {
		t.Error("URL before Start")
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("second Start accepted")
	}
	c := browser(t, s)
	_, events := openEvents(t, c, s, "/events/wiki/Unix")
	gate <- struct{}{}
	if ev := next(t, events); ev.name != "draft" {
		t.Fatalf("first event %+v", ev)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("Start after Close accepted")
	}
	// The stream ends (with a "failed" event or just EOF) and the generation was cancelled.
	for ev := range events {
		if ev.name == "done" {
			t.Errorf("page finished after Close: %+v", ev)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancels != 1 {
		t.Errorf("%d cancelled generations, want 1", g.cancels)
	}
}

// TestEarlierRunsAddressSaysSo: a bookmark of an earlier run's page — its host
// name, darkroom-….localhost, is made anew at every start, while a fixed port
// stays — is refused in words that say why and where to go; it was told
// 'refused: the Host header is not a loopback address', which is not so.
func TestEarlierRunsAddressSaysSo(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{}})
	_, port, _ := net.SplitHostPort(s.Addr())
	old := "http://" + net.JoinHostPort("darkroom-0123456789abcdef.localhost", port)
	for _, path := range []string{"/wiki/Unix", "/?token=" + s.Token(), "/v1/models"} {
		resp, body := do(t, nil, "GET", old+path, "", nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s on an earlier run's host: %d, want 403", path, resp.StatusCode)
		}
		if strings.Contains(body, "not a loopback address") || !strings.Contains(body, "earlier start") ||
			!strings.Contains(body, "darkroom serve") || !strings.Contains(body, "Settings → Local server") {
			t.Errorf("GET %s on an earlier run's host says %q; want why (an earlier start's address) and where the new one is", path, body)
		}
		if strings.Contains(body, s.Token()) || strings.Contains(body, s.runHost) {
			t.Errorf("GET %s on an earlier run's host gives away this run's address or token: %q", path, body)
		}
	}
	// Another name still gets the rebinding refusal.
	if resp, body := do(t, nil, "GET", base(s)+"/", "", map[string]string{"Host": "evil.example"}); resp.StatusCode != 403 ||
		!strings.Contains(body, "not a loopback address") {
		t.Errorf("foreign host: %d %q", resp.StatusCode, body)
	}
}

// TestWrongTokenSaysWhereTheRightOneIs: the token is new at every start, so a
// script or a bookmark keeps an earlier one; a wrong token is told where this
// start's is, where it was told only 'refused: wrong token'.
func TestWrongTokenSaysWhereTheRightOneIs(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{}})
	for _, c := range []struct {
		url string
		hdr map[string]string
	}{
		{base(s) + "/v1/models", map[string]string{"Authorization": "Bearer sk-an-earlier-start-of-it"}},
		{base(s) + "/wiki/Unix?token=an-earlier-start-of-it", nil},
		{site(s) + "/", map[string]string{"Cookie": TokenCookie + "=an-earlier-start-of-it"}},
	} {
		_, body := do(t, nil, "GET", c.url, "", c.hdr)
		if !strings.Contains(body, "wrong token") || !strings.Contains(body, "new one at every start") ||
			!strings.Contains(body, "darkroom serve") || !strings.Contains(body, "Settings → Local server") {
			t.Errorf("GET %s with a wrong token says %q; want where this start's token is", c.url, body)
		}
		if strings.Contains(body, s.Token()) {
			t.Errorf("GET %s with a wrong token gives the token away", c.url)
		}
	}
}
