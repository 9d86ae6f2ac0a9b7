package develop

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/engine"
)

// runeVocab: token id = rune + 100; id 1 ends the page.
type runeVocab struct{}

func (runeVocab) TokenText(id int) string { return string(rune(id - 100)) }
func (runeVocab) IsEnd(id int) bool       { return id == 1 }

func ids(s string) []int {
	var out []int
	for _, r := range s {
		out = append(out, int(r)+100)
	}
	return out
}

func TestDraftDevelops(t *testing.T) {
	d := New(runeVocab{}, nil)
	canvas := append(ids("<p>Hi</p>"), 1, 1)
	acc := make([]bool, len(canvas))
	acc[0], acc[1], acc[2] = true, true, true // "<p>"
	got := d.Text(engine.Event{Kind: engine.EventStep, Draft: canvas, Accepted: acc, Argmax: canvas})
	if !strings.HasPrefix(got, "<p>") || strings.Contains(got, "Hi") {
		t.Fatalf("step 1 = %q: want the accepted <p> then noise", got)
	}
	// Positions accepted earlier stay decided; the end token cuts the page.
	acc2 := make([]bool, len(canvas))
	for i := 3; i < len(canvas); i++ {
		acc2[i] = true
	}
	if got := d.Text(engine.Event{Kind: engine.EventStep, Draft: canvas, Accepted: acc2, Argmax: canvas}); got != "<p>Hi</p>" {
		t.Fatalf("step 2 = %q, want %q", got, "<p>Hi</p>")
	}
	// Counting stops at the end token: what follows it is not part of the page.
	if want := len(ids("<p>Hi</p>")) + 1; d.Accepted() != want {
		t.Errorf("Accepted() = %d, want %d", d.Accepted(), want)
	}
	// A commit resets the canvas and becomes the page's prefix.
	if got := d.Text(engine.Event{Kind: engine.EventCommit, Canvas: 0, Text: "<p>Hi</p>", Committed: ids("<p>Hi</p>")}); got != "<p>Hi</p>" {
		t.Fatalf("commit = %q", got)
	}
	next := ids("ok")
	got = d.Text(engine.Event{Kind: engine.EventStep, Canvas: 1, Draft: next, Accepted: make([]bool, 2), Argmax: next,
		Committed: ids("<p>Hi</p>")})
	if !strings.HasPrefix(got, "<p>Hi</p>") || utf8.RuneCountInString(got) != len("<p>Hi</p>")+2 {
		t.Errorf("next canvas = %q: want the committed text then two noise runes", got)
	}
}

// TestDraftDecodesMissedCommits: a consumer that coalesces events may never see
// a commit event; with decode the committed text still follows the step's tokens.
func TestDraftDecodesMissedCommits(t *testing.T) {
	decode := func(in []int) string {
		var b strings.Builder
		for _, id := range in {
			b.WriteString(runeVocab{}.TokenText(id))
		}
		return b.String()
	}
	d := New(runeVocab{}, decode)
	canvas := ids("x")
	got := d.Text(engine.Event{Kind: engine.EventStep, Canvas: 2, Draft: canvas, Accepted: []bool{true}, Argmax: canvas,
		Committed: ids("abc")})
	if got != "abcx" {
		t.Errorf("got %q, want %q", got, "abcx")
	}
	// Without a vocabulary the engine's argmax draft text is shown as is.
	if got := New(nil, nil).Text(engine.Event{Kind: engine.EventStep, Text: "draft"}); got != "draft" {
		t.Errorf("nil vocab: got %q", got)
	}
}
