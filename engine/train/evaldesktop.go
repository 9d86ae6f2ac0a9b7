package train

import (
	stdctx "context"
	"fmt"
	"regexp"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// DesktopReport scores the Desktop demo's screens on clicks held out of
// training (the corpus's held-out desktop records), each drawn as the app asks
// for it — the UI constitution and the click as the record holds them, the
// menu bar held as the opening (assets.DesktopOpening), no warm start — against
// the screen the training desktop draws for that click.
type DesktopReport struct {
	Clicks    int               `json:"clicks"`
	Diffusion DesktopModeReport `json:"diffusion"`
	AR        DesktopModeReport `json:"ar"`
}

// DesktopModeReport is one mode's scores on the held-out clicks.
type DesktopModeReport struct {
	// Window is the share of screens that are one whole window as the
	// constitution asks (DesktopWindow): menu bar, title, a section with its
	// title, every link a /ui/ID link with a label.
	Window float64 `json:"window"`
	// Title is the share whose window title (<h1>) is the real screen's.
	Title float64 `json:"title"`
	// RougeL is the mean ROUGE-L F1 of the screen's shown words with the real
	// screen's; Exact the share equal to it.
	RougeL  float64  `json:"rouge_l"`
	Exact   float64  `json:"exact"`
	Samples []Sample `json:"samples,omitempty"`
}

// desktopWindow and desktopLink are what DesktopWindow reads a screen by.
var (
	desktopWindow = regexp.MustCompile(`(?s)^<h1>[^<>]+</h1>\n<section><h2>[^<>]+</h2>.*</section>$`)
	desktopLink   = regexp.MustCompile(`<a href="/ui/[a-z0-9-]+">[^<>]+</a>`)
)

// DesktopWindow reports whether a Desktop screen is one whole window as the UI
// constitution (assets.DesktopSystem) draws it: the menu bar, a title <h1>,
// then one <section> with its <h2> title, and every link a /ui/ID link (ID
// lower case letters, digits and dashes) with a label.
func DesktopWindow(screen string) bool {
	rest, ok := strings.CutPrefix(screen, assets.DesktopOpening())
	if !ok || !desktopWindow.MatchString(rest) || strings.Count(rest, "<section>") != 1 {
		return false
	}
	return strings.Count(rest, "<a ") == len(desktopLink.FindAllString(rest, -1)) && strings.Count(rest, "</a>") == strings.Count(rest, "<a ")
}

// desktopTitle is a screen's window title, the text of its first <h1>.
func desktopTitle(screen string) string {
	_, rest, ok := strings.Cut(screen, "<h1>")
	if !ok {
		return ""
	}
	title, _, _ := strings.Cut(rest, "</h1>")
	return title
}

// drawDesktops draws the screens of clicks in each mode and scores them
// against the records' answers, keeping keep samples per mode.
func drawDesktops(ctx stdctx.Context, eng *engine.Engine, opts EvalOptions, clicks []Record, keep int) (*DesktopReport, error) {
	rep := &DesktopReport{Clicks: len(clicks)}
	for _, mode := range []engine.Mode{engine.Diffusion, engine.AR} {
		mr := &rep.Diffusion
		if mode == engine.AR {
			mr = &rep.AR
		}
		var window, title, exact int
		var rouge float64
		for i, c := range clicks {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			req := engine.Request{Mode: mode, Seed: opts.Seed + uint64(i), Messages: c.Messages(), Opening: assets.DesktopOpening()}
			if mode == engine.AR {
				req.Sampling.Temperature = opts.ARTemperature
				req.Sampling.RepetitionPenalty = opts.ARRepetitionPenalty
			}
			res, err := eng.Generate(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("eval: desktop click %q: %w", c.Title, err)
			}
			ok := DesktopWindow(res.Text)
			if ok {
				window++
			}
			if desktopTitle(res.Text) == desktopTitle(c.Answer) {
				title++
			}
			if res.Text == c.Answer {
				exact++
			}
			rouge += RougeL(ShownWords(res.Text, false), ShownWords(c.Answer, false))
			if len(mr.Samples) < keep {
				mr.Samples = append(mr.Samples, Sample{Title: c.Prompt, Text: res.Text})
			}
			fmt.Fprintf(opts.Log, "eval desktop %s %d/%d %q: %d tokens, window %v\n", mode, i+1, len(clicks), c.Title, len(res.Tokens), ok)
		}
		if n := float64(len(clicks)); n > 0 {
			mr.Window, mr.Title, mr.Exact, mr.RougeL = float64(window)/n, float64(title)/n, float64(exact)/n, rouge/n
		}
	}
	return rep, nil
}
