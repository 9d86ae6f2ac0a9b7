package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
)

// extChunk is a streamed chunk as a client of the Darkroom extension reads it.
type extChunk struct {
	Choices []struct {
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Darkroom *api.Step `json:"darkroom"`
}

// streamExt posts body and returns its chunks and whether [DONE] ended them.
func streamExt(t *testing.T, s *Server, body string) ([]extChunk, bool) {
	t.Helper()
	req, _ := http.NewRequest("POST", base(s)+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	var out []extChunk
	done := false
	for ev := range readSSE(resp.Body) {
		if ev.data == "[DONE]" {
			done = true
			continue
		}
		var c extChunk
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev.data, err)
		}
		out = append(out, c)
	}
	return out, done
}

// TestDarkroomStepsExtension: with "darkroom": {"steps": true} a stream of a
// real (tiny) model carries its developing canvas step by step, each step after
// the text committed before it, and the run's totals in the finish chunk; the
// opening starts the answer. The text is the same as without the extension, and
// without it no chunk has a darkroom object.
func TestDarkroomStepsExtension(t *testing.T) {
	e := tinyengine.Load(t, enginetest.Options{})
	s := start(t, Options{Engine: tinyengine.Paced{Engine: e, Step: 10 * time.Millisecond}, ModelID: "tiny", FrameInterval: time.Nanosecond})
	const opening = "<h1>Unix</h1>\n"
	plain := `{"messages":[{"role":"user","content":"Unix?"}],"max_tokens":32,"seed":5,"stream":true,"darkroom":{"opening":"<h1>Unix</h1>\n"}}`
	ext := strings.Replace(plain, `"darkroom":{`, `"darkroom":{"steps":true,`, 1)

	chunks, done := streamExt(t, s, ext)
	if !done {
		t.Fatal("no [DONE]")
	}
	var text strings.Builder
	var steps []api.Step
	var final *api.Step
	lastCanvas, lastStep := -1, 0
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				final = c.Darkroom
			}
		}
		if c.Darkroom == nil || len(c.Choices) > 0 {
			continue
		}
		st := *c.Darkroom
		steps = append(steps, st)
		if st.Step < 1 || len(st.Draft) != 16 || len(st.Argmax) != 16 || len(st.Accepted) != 16 {
			t.Fatalf("step %+v: want a step number and the 16 positions of the tiny model's canvas", st)
		}
		if st.Canvas < lastCanvas || (st.Canvas == lastCanvas && st.Step <= lastStep) {
			t.Errorf("step %d.%d after %d.%d", st.Canvas, st.Step, lastCanvas, lastStep)
		}
		if st.Canvas > 0 && text.Len() == 0 {
			t.Errorf("a step of canvas %d came before the text of the canvases before it", st.Canvas)
		}
		lastCanvas, lastStep = st.Canvas, st.Step
	}
	if len(steps) == 0 {
		t.Fatal("no step chunks")
	}
	if !strings.HasPrefix(text.String(), opening) {
		t.Errorf("text %q does not start with the opening", text.String())
	}
	if final == nil || len(final.Canvases) == 0 || final.ForwardPasses < len(steps) || final.Committed == 0 {
		t.Errorf("finish chunk's totals %+v", final)
	}
	if final != nil && final.Canvases[0].Steps < 1 {
		t.Errorf("canvas stats %+v", final.Canvases)
	}

	chunks, _ = streamExt(t, s, plain)
	var same strings.Builder
	for _, c := range chunks {
		if c.Darkroom != nil {
			t.Fatalf("a darkroom object without the steps extension: %+v", *c.Darkroom)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				same.WriteString(*ch.Delta.Content)
			}
		}
	}
	if same.String() != text.String() {
		t.Errorf("without steps %q, with %q", same.String(), text.String())
	}
}
