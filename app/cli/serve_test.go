package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/speed"
)

func TestServeArguments(t *testing.T) {
	t.Setenv("DARKROOM_MODELS_DIR", t.TempDir()) // model names resolve in a folder of the test's own
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--addr", "0.0.0.0:8080"}, "loopback only"},
		{[]string{"serve", "--addr", "192.168.1.5:0"}, "loopback only"},
		{[]string{"serve", "--token", "x", "--no-token"}, "not both"},
		{[]string{"serve", "--token", "short"}, "at least 16"},
		{[]string{"serve", "--mode", "fast"}, "--mode"},
		{[]string{"serve", "extra"}, "unexpected argument"},
		{[]string{"serve", "--model", "/nonexistent/model"}, "/nonexistent/model"},
		{[]string{"serve", "--allow-origin", "localhost:3000"}, "http://HOST:PORT"},
		{[]string{"serve", "--allow-origin", "*"}, "no wildcard"},
	} {
		_, stderr, code := wikiRun(c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and one line with %q", c.args, code, stderr, c.want)
		}
	}
	// A port another program holds: said at once, before any model is looked
	// for or loaded (it was said after the load, in net's words: "listen tcp …:
	// bind: address already in use").
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, stderr, code := wikiRun("serve", "--addr", busy.Addr().String(), "--model", "/nonexistent/model")
	if want := "another program is using that port"; code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--addr") ||
		strings.Contains(stderr, "nonexistent") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a port in use: exit %d, stderr %q; want one line with %q and --addr, before the model", code, stderr, want)
	}
	if out, _, code := wikiRun("serve", "--help"); code != 0 || !strings.Contains(out, "-addr") || !strings.Contains(out, "-no-token") {
		t.Errorf("serve --help: exit %d, %q", code, out)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeModel(t *testing.T) {
	t.Setenv("DARKROOM_MODELS_DIR", t.TempDir())
	benchRates(t) // a primed calibration: serve starts without measuring this (loaded) machine first
	dir := writeWikiModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	errc := make(chan error, 1)
	// A fixed port, as a user who wants one gives it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	go func() {
		errc <- serve(ctx, &Env{Stdout: &stdout, Stderr: &stderr}, []string{"--model", dir, "--json", "--addr", addr,
			"--allow-origin", "http://localhost:3000/,http://127.0.0.1:5173"})
	}()
	var info serveInfo
	for deadline := time.Now().Add(60 * time.Second); ; {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			if err := json.Unmarshal([]byte(line), &info); err != nil {
				t.Fatalf("serve --json printed %q: %v", line, err)
			}
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("serve ended early: %v (stderr %q)", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed nothing; stderr %q", stderr.String())
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	if !strings.HasPrefix(info.URL, "http://darkroom-") || !strings.Contains(info.URL, ".localhost:"+port+"/?token="+info.Token) || len(info.Token) < 32 ||
		info.APIBase != "http://"+addr+"/v1" || info.Backend != "go" || info.Model != filepath.Base(dir) ||
		info.APIMode.Mode != engine.Diffusion || info.APIMode.Reason == "" || // a model the catalog does not know keeps diffusion
		info.PageMode != engine.Diffusion || // for its pages too
		strings.Join(info.Origins, " ") != "http://localhost:3000 http://127.0.0.1:5173" {
		t.Fatalf("info %+v", info)
	}
	// The API answers with the token as API key, and refuses without it.
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", info.APIBase+"/models", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(info.Token); code != 200 || !strings.Contains(body, info.Model) {
		t.Errorf("models: %d %s", code, body)
	}
	if code, _ := get(""); code != 401 {
		t.Errorf("models without the token: %d", code)
	}
	// A web page --allow-origin names calls it from a browser (with the key).
	req, _ := http.NewRequest("GET", info.APIBase+"/models", nil)
	req.Header.Set("Authorization", "Bearer "+info.Token)
	req.Header.Set("Origin", "http://127.0.0.1:5173")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:5173" {
		t.Errorf("the allowed web page: %d, ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	// Cancelling (what SIGINT/SIGTERM do) shuts it down cleanly.
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(stderr.String(), "Stopped.") {
		t.Errorf("stderr %q", stderr.String())
	}
	if _, err := http.Get(info.APIBase + "/models"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

// TestServeCtrlCBeforeServing: Ctrl-C while serve loads the model or measures
// this PC stops it there, saying so; it said 'darkroom: measure this machine's
// speed: context canceled' and then announced the server — its URLs, its key
// and 'Press Ctrl+C to stop.' — before 'Stopped.' (and while loading, 'darkroom
// serve: load …: context canceled').
func TestServeCtrlCBeforeServing(t *testing.T) {
	t.Setenv("DARKROOM_MODELS_DIR", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := writeWikiModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	ratesHere = func(c context.Context, device string) (*speed.Rates, error) {
		cancel() // Ctrl-C while this PC is measured
		return nil, fmt.Errorf("measure this machine's speed: %w", c.Err())
	}
	defer func() { ratesHere = speed.Here }()
	done, stop := context.WithCancel(context.Background())
	stop() // Ctrl-C while the model loads
	for name, c := range map[string]context.Context{"measuring": ctx, "loading": done} {
		var stdout, stderr lockedBuffer
		err := serve(c, &Env{Stdout: &stdout, Stderr: &stderr}, []string{"--model", dir, "--addr", "127.0.0.1:0"})
		if err != nil || stdout.String() != "" || !strings.HasSuffix(stderr.String(), serveStoppedEarly+"\n") ||
			strings.Contains(stderr.String(), "is serving") || strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("Ctrl-C while %s: %v, stdout %q, stderr %q; want nil, nothing on stdout, %q last", name, err, stdout.String(), stderr.String(), serveStoppedEarly)
		}
	}
}
