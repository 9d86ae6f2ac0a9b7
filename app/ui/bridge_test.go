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
