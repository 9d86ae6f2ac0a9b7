package ui

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/engine"
)

func TestThrottleCoalescesAndKeepsTheLast(t *testing.T) {
	var mu sync.Mutex
	var steps []int
	th := newThrottle(50*time.Millisecond, func(ev engine.Event) {
		mu.Lock()
		steps = append(steps, ev.Step)
		mu.Unlock()
	})
	for i := 1; i <= 200; i++ {
		th.Push(engine.Event{Kind: engine.EventStep, Step: i, Draft: []int{i}})
	}
	th.Close()
	th.Push(engine.Event{Step: 999}) // after Close: ignored
	mu.Lock()
	defer mu.Unlock()
	if len(steps) == 0 || len(steps) > 20 || steps[len(steps)-1] != 200 {
		t.Errorf("renders %v: want a few, ending with the last event", steps)
	}
}

func TestDeveloperDrawsUndecidedPositionsAsNoise(t *testing.T) {
	m := &fakeModel{}
	d := develop.New(m, m.Decode)
	tok := func(s string) []int {
		var ids []int
		for _, r := range s {
			ids = append(ids, int(r)+tokBase)
		}
		return ids
	}
	canvas := append(tok("<p>Hello</p>"), fakeEOS, fakeEOS)
	accepted := make([]bool, len(canvas))
	for i := 0; i < 6; i++ { // "<p>Hel" decided
		accepted[i] = true
	}
	draft := append([]int(nil), canvas...)
	for i := 6; i < len(draft); i++ {
		draft[i] = tokBase + 'x'
	}
	text := d.Text(engine.Event{Kind: engine.EventStep, Draft: draft, Accepted: accepted, Argmax: canvas, Committed: tok("<h1>A</h1>")})
	if !strings.HasPrefix(text, "<h1>A</h1><p>Hel") {
		t.Fatalf("draft %q", text)
	}
	rest := strings.TrimPrefix(text, "<h1>A</h1><p>Hel")
	if rest == "" || strings.IndexFunc(rest, func(r rune) bool { return !htmlsafe.IsNoise(r) }) >= 0 {
		t.Errorf("undecided part %q is not all noise", rest)
	}
	// Next step: the rest is decided, EOS included; nothing after it is drawn.
	for i := range accepted {
		accepted[i] = i >= 6
	}
	text = d.Text(engine.Event{Kind: engine.EventStep, Draft: canvas, Accepted: accepted, Argmax: canvas, Committed: tok("<h1>A</h1>")})
	if text != "<h1>A</h1><p>Hello</p>" {
		t.Errorf("developed %q", text)
	}
	doc := htmlsafe.Parse(text)
	if len(doc.Blocks) != 2 || doc.Title != "A" {
		t.Errorf("doc %+v", doc.Blocks)
	}
}

// TestDoneStatus: counts of one are singular, and a result with no steps and no
// forward passes (a remote server that is not a Darkroom) does not claim zero of
// them.
func TestDoneStatus(t *testing.T) {
	local := &engine.Result{Tokens: make([]int, 1), ForwardPasses: 1, Elapsed: time.Second, TokensPerS: 1,
		Canvases: []engine.CanvasStats{{Steps: 1}}}
	if got, want := doneStatus(local), "Done · 1 token in 1 step (1 canvas) · 1 forward pass · 1.00 s · 1.0 tokens/s"; got != want {
		t.Errorf("local: %q, want %q", got, want)
	}
	local.Tokens, local.ForwardPasses, local.Canvases = make([]int, 40), 12, []engine.CanvasStats{{Steps: 5}, {Steps: 6}}
	if got, want := doneStatus(local), "Done · 40 tokens in 11 steps (2 canvases) · 12 forward passes · 1.00 s · 1.0 tokens/s"; got != want {
		t.Errorf("local: %q, want %q", got, want)
	}
	remote := &engine.Result{Tokens: make([]int, 30), Elapsed: 2 * time.Second, TokensPerS: 15,
		Canvases: []engine.CanvasStats{{}, {}}}
	got := doneStatus(remote)
	if want := "Done · 30 tokens (2 canvases) · 2.00 s · 15.0 tokens/s"; got != want {
		t.Errorf("remote: %q, want %q", got, want)
	}
}
