package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTuned is start with the server's timeouts changed before it listens.
func startTuned(t *testing.T, opts Options, tune func(*timeouts)) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	tune(&s.timeouts)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCredentialStaysWithItsServer: a browser that opened Darkroom's URL and
// then visits pages of another program serving on this computer (another port,
// 127.0.0.1, localhost or another *.localhost name) sends that program no
// Darkroom credential; opening a second Darkroom server does not log the first
// tab out.
func TestCredentialStaysWithItsServer(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Cookie")+" "+r.Header.Get("Authorization")+" "+r.URL.RawQuery)
		mu.Unlock()
	}))
	defer spy.Close()
	_, spyPort, _ := net.SplitHostPort(spy.Listener.Addr().String())

	s1 := start(t, Options{Engine: &fakeGen{final: "<p>x</p>"}})
	c := browser(t, s1) // the first tab, logged in by its URL
	s2 := start(t, Options{Engine: &fakeGen{final: "<p>y</p>"}})
	if resp, _ := do(t, c, "GET", s2.URL("/"), "", nil); resp.StatusCode != 200 { // a second Darkroom, same browser
		t.Fatalf("second server: %d", resp.StatusCode)
	}
	for _, host := range []string{"127.0.0.1", "localhost", "other.localhost", "darkroom.localhost"} {
		if resp, _ := do(t, c, "GET", "http://"+net.JoinHostPort(host, spyPort)+"/page", "", nil); resp.StatusCode != 200 {
			t.Fatalf("spy on %s: %d", host, resp.StatusCode)
		}
	}
	mu.Lock()
	for _, h := range seen {
		if strings.Contains(h, s1.Token()) || strings.Contains(h, s2.Token()) || strings.Contains(h, TokenCookie) {
			t.Errorf("another local server received a Darkroom credential: %q", h)
		}
	}
	if len(seen) != 4 {
		t.Errorf("the spy saw %d requests, want 4", len(seen))
	}
	mu.Unlock()
	// The first tab is still logged in, with its own token; the second server's
	// cookie went to the second server's name only.
	if resp, _ := do(t, c, "GET", site(s1)+"/", "", nil); resp.StatusCode != 200 {
		t.Errorf("first tab after the second server opened: %d, want 200", resp.StatusCode)
	}
	u1, _ := url.Parse(site(s1))
	for _, ck := range c.Jar.Cookies(u1) {
		if ck.Value == s2.Token() {
			t.Error("the second server's token is sent to the first")
		}
	}
}

// TestNoOpenRedirect: a token URL whose path starts with // (or /\) redirects
// on this server, never to the site the path names.
func TestNoOpenRedirect(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{}})
	for _, origin := range []string{base(s), site(s)} {
		for _, path := range []string{"//evil.example/", `/\evil.example/`, "///evil.example/x"} {
			resp, _ := do(t, nil, "GET", origin+path+"?token="+s.Token(), "", nil)
			loc := resp.Header.Get("Location")
			u, err := url.Parse(loc)
			if resp.StatusCode != http.StatusSeeOther || err != nil || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, `/\`) ||
				(u.Host != "" && u.Hostname() != s.runHost) || !strings.Contains(u.Path, "evil.example") {
				t.Errorf("GET %s%s?token=…: %d → %q", origin, path, resp.StatusCode, loc)
			}
		}
	}
}

// rawRequest opens a connection and writes a request head; body bytes are
// the caller's to send.
func rawRequest(t *testing.T, s *Server, head string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	return conn
}

// trickle writes one byte of body per interval until the connection fails.
func trickle(conn net.Conn, interval time.Duration) {
	for {
		time.Sleep(interval)
		if _, err := conn.Write([]byte("x")); err != nil {
			return
		}
	}
}

// answer reads the status line the server sends on conn and whether it then
// closed the connection, failing after limit.
func answer(t *testing.T, conn net.Conn, limit time.Duration) (status string, closed bool) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(limit))
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no answer within %v: %v", limit, err)
	}
	_, err = io.Copy(io.Discard, br)
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	return strings.TrimSpace(line), !timedOut // EOF or a reset: the server closed it
}

// TestSlowClientsAreCut: a body trickled at a byte per interval is cut at the
// body timeout (408, connection closed); without the token such a request is
// refused at once without waiting for its body; slow headers are cut at the
// header timeout; and a hundred such clients do not delay a real request.
func TestSlowClientsAreCut(t *testing.T) {
	s := startTuned(t, Options{Engine: &fakeGen{final: "ok"}}, func(to *timeouts) {
		to.body, to.header = 500*time.Millisecond, 500*time.Millisecond
	})
	host := "Host: " + s.Addr() + "\r\n"
	post := "POST /v1/chat/completions HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nContent-Length: 1000\r\n"

	began := time.Now()
	conn := rawRequest(t, s, post+"Authorization: Bearer "+s.Token()+"\r\n\r\n")
	go trickle(conn, time.Second/4)
	status, closed := answer(t, conn, 5*time.Second)
	if took := time.Since(began); !strings.Contains(status, " 408 ") || !closed || took > 2*time.Second {
		t.Errorf("slow body: %q after %v (closed %v); want 408 and a closed connection after about 0.5 s", status, took, closed)
	}

	// Unauthenticated slow clients: each refused at once and closed.
	const n = 100
	var wg sync.WaitGroup
	statuses := make(chan string, n)
	for range n {
		conn := rawRequest(t, s, post+"\r\n")
		go trickle(conn, time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, closed := answer(t, conn, 3*time.Second)
			if !closed {
				status += " (left open)"
			}
			statuses <- status
		}()
	}
	slowHead := rawRequest(t, s, "GET /v1/models HTTP/1.1\r\n"+host) // never finishes its headers
	// Meanwhile a real request is answered promptly.
	began = time.Now()
	code, _, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	if took := time.Since(began); code != 200 || took > 2*time.Second {
		t.Errorf("authenticated request among slow clients: %d after %v: %s", code, took, raw)
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if !strings.Contains(st, " 401 ") || strings.Contains(st, "left open") {
			t.Errorf("unauthenticated slow body: %q, want 401 and closed", st)
			break
		}
	}
	slowHead.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.Copy(io.Discard, slowHead); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("slow headers: connection not closed by the header timeout: %v", err)
	}
}

// TestRequestIDEverywhere: every response, refusals included, has an x-request-id.
func TestRequestIDEverywhere(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}})
	seen := map[string]bool{}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		want         int
	}{
		{"GET", "/v1/models", map[string]string{"Authorization": "Bearer " + s.Token()}, 200},
		{"GET", "/v1/models", nil, 401},
		{"GET", "/v1/models", map[string]string{"Host": "evil.example"}, 403},
		{"GET", "/v1/nothing", map[string]string{"Authorization": "Bearer " + s.Token()}, 404},
		{"GET", "/wiki/Unix", nil, 401},
		{"GET", "/suggest?q=Un", nil, 401}, // the entries a model holds are the token holder's to read, as its pages are
	} {
		resp, _ := do(t, nil, c.method, base(s)+c.path, "", c.hdr)
		id := resp.Header.Get("X-Request-Id")
		if resp.StatusCode != c.want || !strings.HasPrefix(id, "req_") || seen[id] {
			t.Errorf("%s %s: %d, x-request-id %q", c.method, c.path, resp.StatusCode, id)
		}
		seen[id] = true
	}
}

func ExampleServer_URL() {
	s, _ := New(Options{Engine: &fakeGen{}, Token: "0123456789abcdef"})
	_ = s.Start(context.Background())
	defer s.Close()
	u, _ := url.Parse(s.URL("/"))
	fmt.Println(strings.HasPrefix(u.Hostname(), "darkroom-"), strings.HasSuffix(u.Hostname(), ".localhost"), u.Query().Get("token"))
	// Output: true true 0123456789abcdef
}
