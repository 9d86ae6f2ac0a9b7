// Package develop turns a generation's events into the text of a page as it
// develops: the text committed so far, then the current canvas with the positions
// accepted so far as their tokens' text and the rest as noise runes about as wide
// as the token they stand for; and the status line under the page, developing
// (Draft.Status) and finished (DoneStatus). The desktop app and the browser mode
// draw the same developing page, and say the same about it, from it. It also
// says what an encyclopedia page is, for the app, the browser and `darkroom
// wiki` alike: the request that writes it (PageRequest: a known title's entry,
// or the model's own page) and the start page that explains it (StartPage).
package develop

import (
	"strings"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/engine"
)

// Vocabulary is what drawing a developing canvas needs from the model.
type Vocabulary interface {
	TokenText(id int) string // one token's text on its own
	IsEnd(id int) bool       // the id ends a generation (EOS, end of turn, pad)
}

// Draft accumulates a generation's events. Use one Draft per generation; the zero
// value is not usable, call New.
type Draft struct {
	vocab  Vocabulary
	decode func(ids []int) string

	committed  string // text of the canvases committed so far
	nCommitted int    // tokens in committed
	canvas     int
	accepted   []bool // positions of the current canvas accepted so far
	frame      uint32
}

// New returns a Draft drawing with vocab. decode, if not nil, decodes the
// committed tokens a step event carries, so a consumer that coalesces events (and
// may miss a canvas's commit event) still shows the right committed text; without
// it the text of the last commit event seen is used. A nil vocab draws the argmax
// draft text the engine sends instead of noise.
func New(vocab Vocabulary, decode func(ids []int) string) *Draft {
	return &Draft{vocab: vocab, decode: decode}
}

// Committed is the text of the canvases committed so far.
func (d *Draft) Committed() string { return d.committed }

// Accepted is how many positions of the current canvas have been accepted so far.
func (d *Draft) Accepted() int {
	n := 0
	for _, a := range d.accepted {
		if a {
			n++
		}
	}
	return n
}

// Text returns the page's text after ev.
func (d *Draft) Text(ev engine.Event) string {
	switch ev.Kind {
	case engine.EventCommit, engine.EventDone, engine.EventToken:
		d.committed, d.nCommitted = ev.Text, len(ev.Committed)
		d.accepted = nil
		d.canvas = ev.Canvas + 1
		return ev.Text
	case engine.EventStep:
	default:
		return d.committed
	}
	if d.vocab == nil {
		return ev.Text // committed text + the argmax draft
	}
	if len(ev.Committed) != d.nCommitted && d.decode != nil {
		d.committed, d.nCommitted = d.decode(ev.Committed), len(ev.Committed)
	}
	if ev.Canvas != d.canvas || len(d.accepted) != len(ev.Draft) {
		d.canvas = ev.Canvas
		d.accepted = make([]bool, len(ev.Draft))
	}
	d.frame++
	var b strings.Builder
	b.WriteString(d.committed)
	for i, id := range ev.Draft {
		if i < len(ev.Accepted) && ev.Accepted[i] {
			d.accepted[i] = true
		}
		if d.accepted[i] {
			if d.vocab.IsEnd(id) {
				break // the page ends here
			}
			b.WriteString(d.vocab.TokenText(id))
			continue
		}
		// Noise about as wide as what will stand here: the sampled token and the
		// current argmax, averaged; a position heading for the end is narrow.
		w := utf8.RuneCountInString(d.vocab.TokenText(id))
		if i < len(ev.Argmax) {
			if d.vocab.IsEnd(ev.Argmax[i]) {
				w = 1
			} else {
				w = (w + utf8.RuneCountInString(d.vocab.TokenText(ev.Argmax[i])) + 1) / 2
			}
		}
		b.WriteString(htmlsafe.NoiseText(min(max(w, 1), 8), d.frame*1000003+uint32(i)))
	}
	return b.String()
}
