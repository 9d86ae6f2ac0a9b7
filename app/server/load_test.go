package server

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// TestLoad runs 16 streaming clients against a real (tiny) model on loopback
// for 5 s, or for DARKROOM_LOAD_SECONDS (the bounded load test is 60):
// no errors other than 429, and no goroutine or file descriptor left behind.
// It logs the requests served, peak RSS and the peak fd count (of the test
// process, which holds the clients too).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test")
	}
	secs := 5
	if v := os.Getenv("DARKROOM_LOAD_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("DARKROOM_LOAD_SECONDS=%q: want a whole number of seconds", v)
		}
		secs = n
	}
	const clients = 16
	e := tinyengine.Load(t, enginetest.Options{})
	s, err := New(Options{Engine: e, ModelID: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	goroutines, fds := runtime.NumGoroutine(), countFDs()

	var ok, limited, failed atomic.Int64
	var firstErr atomic.Value
	fail := func(msg string) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, msg)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	var peakFDs atomic.Int64
	sampled := make(chan struct{})
	go func() { // the fd count, every 100 ms
		defer close(sampled)
		for ctx.Err() == nil {
			if n := int64(countFDs()); n > peakFDs.Load() {
				peakFDs.Store(n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"messages":[{"role":"user","content":"What is Unix? ` + strconv.Itoa(i) + `"}],"max_tokens":32,"stream":true,"stream_options":{"include_usage":true}}`
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", s.APIBase()+"/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+s.Token())
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						fail(err.Error())
					}
					return
				}
				switch resp.StatusCode {
				case http.StatusOK:
					done, errChunk := readStream(resp)
					switch {
					case errChunk != "":
						fail("in-stream error: " + errChunk)
					case done:
						ok.Add(1)
					case ctx.Err() == nil:
						fail("stream ended without [DONE]")
					}
				case http.StatusTooManyRequests:
					limited.Add(1)
					resp.Body.Close()
					wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
					select { // a well-behaved client honours Retry-After, within the test's time
					case <-time.After(time.Duration(max(wait, 1)) * time.Second / 4):
					case <-ctx.Done():
					}
				default:
					fail("status " + resp.Status)
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	<-sampled
	tr.CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t.Logf("%d s, %d streaming clients: %d streams completed, %d answered 429, %d errors; peak RSS %s, peak fds %d (%d before)",
		secs, clients, ok.Load(), limited.Load(), failed.Load(), peakRSS(), peakFDs.Load(), fds)
	if failed.Load() != 0 {
		t.Errorf("%d errors other than 429; the first: %v", failed.Load(), firstErr.Load())
	}
	if ok.Load() == 0 {
		t.Error("no stream completed")
	}
	// Nothing left behind once the server is closed.
	deadline := time.Now().Add(5 * time.Second)
	for (runtime.NumGoroutine() > goroutines+2 || countFDs() > fds) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutines+2 {
		t.Errorf("%d goroutines after the load, %d before", g, goroutines)
	}
	if n := countFDs(); n > fds {
		t.Errorf("%d open fds after the load, %d before", n, fds)
	}
}

// readStream reads an SSE completion stream to its end: whether [DONE] came,
// and the first in-stream error's data, if any.
func readStream(resp *http.Response) (done bool, errData string) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			done = true
		case strings.HasPrefix(line, `data: {"error"`):
			errData = line
		}
	}
	return done, errData
}

// countFDs is the number of this process's open file descriptors (-1 where
// /proc is missing).
func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// peakRSS is this process's peak resident set (VmHWM), or "unknown".
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
