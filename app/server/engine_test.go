package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// TestRealEngine runs the whole server on a real (tiny, random) model: the
// API in both forms and a browser page developing.
func TestRealEngine(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: e, ModelID: "tiny", FrameInterval: time.Millisecond})
	if m, err := s.model(context.Background()); err != nil || m.Vocab == nil {
		t.Fatal("no vocabulary derived from the engine")
	}

	if code, _, raw := callAPI(t, s, "GET", "/v1/models", ""); code != 200 || !strings.Contains(raw, `"id":"tiny"`) {
		t.Errorf("models %d %s", code, raw)
	}
	body := `{"model":"tiny","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is Unix?"}],"max_tokens":20,"seed":3}`
	code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", body)
	if code != 200 || len(r.Choices) != 1 || r.Usage == nil {
		t.Fatalf("completion %d %s", code, raw)
	}
	if r.Usage.PromptTokens < 5 || r.Usage.CompletionTokens > 20 || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
		t.Errorf("usage %+v", *r.Usage)
	}
	if fr := *r.Choices[0].FinishReason; fr != "stop" && fr != "length" {
		t.Errorf("finish reason %q", fr)
	}
	// The same seed streams the same answer, canvas by canvas.
	chunks, done := stream(t, s, strings.Replace(body, `"seed":3`, `"seed":3,"stream":true,"stream_options":{"include_usage":true}`, 1))
	if !done || content(chunks) != r.Choices[0].Message.Content {
		t.Errorf("streamed %q (done %v), non-streamed %q", content(chunks), done, r.Choices[0].Message.Content)
	}
	if u := chunks[len(chunks)-1].Usage; u == nil || u.CompletionTokens != r.Usage.CompletionTokens {
		t.Errorf("streamed usage %+v", u)
	}
	// AR mode on the same weights.
	if code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Unix?"}],"mode":"ar","max_tokens":4}`); code != 200 || r.Usage.CompletionTokens > 4 {
		t.Errorf("AR completion %d %s", code, raw)
	}

	// A client sends the whole conversation again with its next message: the prompt
	// the last request encoded is read from the cache, in whole chunks of 256 tokens,
	// and usage says how many (OpenAI's prompt_tokens_details.cached_tokens).
	long := strings.Repeat("Unix is an operating system. ", 60)
	first := `{"messages":[{"role":"user","content":"` + long + `"}],"max_tokens":4,"seed":3}`
	if code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", first); code != 200 || r.Usage.PromptTokens < 300 ||
		r.Usage.PromptDetails == nil || r.Usage.PromptDetails.CachedTokens != 0 {
		t.Errorf("a long first message: %d %s", code, raw)
	}
	next := `{"messages":[{"role":"user","content":"` + long + `"},{"role":"assistant","content":"It is."},{"role":"user","content":"Who wrote it?"}],"max_tokens":4,"seed":3}`
	if code, r, raw := callAPI(t, s, "POST", "/v1/chat/completions", next); code != 200 || r.Usage.PromptDetails == nil ||
		r.Usage.PromptDetails.CachedTokens < 256 || r.Usage.PromptDetails.CachedTokens%256 != 0 {
		t.Errorf("the next message: %d %s", code, raw)
	}

	// A browser page develops: drafts, then the finished page, all sanitized.
	c := browser(t, s)
	_, events := openEvents(t, c, s, "/events/wiki/Unix")
	var names []string
	var final pageEvent
	for ev := range events {
		names = append(names, ev.name)
		var p pageEvent
		if err := json.Unmarshal([]byte(ev.data), &p); err != nil {
			t.Fatal(err)
		}
		checkSafe(t, ev.name, p.HTML)
		final = p
	}
	// (How many drafts get through depends on the machine's speed; the
	// fake-generator tests pin the draft-per-step behaviour.)
	if len(names) < 1 || names[len(names)-1] != "done" {
		t.Errorf("events %v", names)
	}
	if !strings.HasPrefix(final.Status, "Done") {
		t.Errorf("final status %q", final.Status)
	}
	if _, ok := s.pages.get("Unix"); !ok {
		t.Error("page not cached")
	}
}
