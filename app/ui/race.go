package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/app/ui/htmlview"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// Race runs one prompt twice at the same time on the same weights: AR, the
// "printer" (one token per forward pass), and diffusion, the "polaroid" (a whole
// canvas per few passes), each with live tokens/s and forward passes.
type Race struct {
	app *App

	topic   *keyEntry
	startB  *widget.Button
	stopB   *widget.Button
	panes   [2]*racePane
	summary *widget.Label
	content fyne.CanvasObject
	run     runner

	second *modelHost // a second instance of the active model for the AR pane
}

type racePane struct {
	mode   engine.Mode
	title  string
	view   *htmlview.View
	stats  *widget.Label
	result *engine.Result
}

func newRace(a *App) *Race {
	r := &Race{app: a, second: newModelHost(a.deps.Loader)}
	r.topic = newKeyEntry(a)
	r.topic.SetText("Unix")
	r.topic.SetPlaceHolder("Topic of the page both write")
	r.topic.OnSubmitted = func(string) { r.Start() }
	r.startB = widget.NewButtonWithIcon("Race", theme.MediaPlayIcon(), r.Start)
	r.startB.Importance = widget.HighImportance
	r.stopB = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() { r.run.Stop() })
	r.stopB.Disable()
	r.summary = widget.NewLabel("Both write the same encyclopedia page with the same weights, started together. " +
		"The race loads a second copy of the active model: on a GPU, and on Windows, it needs twice the memory; " +
		"on Linux's CPU path the two share most of its weights, mapped from its files.")
	r.summary.Wrapping = fyne.TextWrapWord
	r.panes[0] = &racePane{mode: engine.AR, title: "Printer — autoregressive, one token per forward pass"}
	r.panes[1] = &racePane{mode: engine.Diffusion, title: "Polaroid — diffusion, a whole canvas at a time"}
	var cols []fyne.CanvasObject
	for _, p := range r.panes {
		p.view = htmlview.New(r.onLink)
		p.stats = widget.NewLabel("—")
		p.stats.Truncation = fyne.TextTruncateEllipsis
		head := widget.NewLabelWithStyle(p.title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		head.Truncation = fyne.TextTruncateEllipsis
		cols = append(cols, container.NewBorder(container.NewVBox(head, p.stats, widget.NewSeparator()), nil, nil, nil,
			container.NewVScroll(container.NewPadded(p.view))))
	}
	bar := container.NewBorder(nil, nil, widget.NewLabel("Topic"), container.NewHBox(r.startB, r.stopB), r.topic)
	split := container.NewHSplit(cols[0], cols[1])
	r.content = container.NewBorder(container.NewVBox(bar, a.modelNotice()), r.summary, nil, nil, split)
	return r
}

// onLink races the topic a page links to, as a link in the Encyclopedia opens
// its page: links are drawn as links, and one that did nothing would look broken.
func (r *Race) onLink(l htmlsafe.Inline) {
	title, ok := assets.TitleFromHref(l.Href)
	if !ok {
		r.summary.SetText(fmt.Sprintf("This page links to %q, which is not an encyclopedia page.", l.Href))
		return
	}
	r.topic.SetText(title)
	r.Start()
}

// raceNeedsTopic is the Race's line when Race is pressed with no topic.
const raceNeedsTopic = "Type a topic first (e.g. Unix): both write the encyclopedia page for it."

// Start starts both runs together (cancelling a race in progress).
func (r *Race) Start() {
	title := assets.CleanLine(r.topic.Text)
	if title == "" { // a Race button that does nothing would look broken
		r.summary.SetText(raceNeedsTopic)
		r.app.win.Canvas().Focus(r.topic)
		return
	}
	r.startB.Disable()
	r.stopB.Enable()
	r.summary.SetText("Loading two instances of the model…")
	for _, p := range r.panes {
		p.result = nil
		p.view.SetDoc(nil)
		p.stats.SetText("waiting…")
	}
	r.run.Start(func(ctx context.Context, seq int64) {
		current := func() bool { return r.run.Current(seq) }
		polaroid, err := r.app.models.Get(ctx)
		var printer Model // nil where the model runs one way only
		oneMode := ""
		if err == nil {
			oneMode = polaroid.Info().OneMode
		}
		if err == nil && oneMode == "" {
			printer, err = r.second.Get(ctx)
		}
		if err != nil {
			onUI(func() {
				if current() {
					r.summary.SetText(plainError("start the race", err))
					r.startB.Enable()
					r.stopB.Disable()
				}
			})
			return
		}
		if t := develop.PageTitle(title, polaroid.Info().Leads); t != title { // "compilers": the entry for "compiler"
			title = t
			onUI(func() {
				if current() {
					r.topic.SetText(t)
				}
			})
		}
		onUI(func() {
			if !current() {
				return
			}
			r.summary.SetText("Racing…")
			if oneMode != "" {
				r.summary.SetText("Only the polaroid runs: " + oneMode + ".")
				r.panes[0].stats.SetText("No printer: this server offers one mode")
			}
		})
		models := [2]Model{printer, polaroid}
		seed := r.app.seed()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, p := range r.panes {
			if models[i] == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				dev := develop.New(models[i], models[i].Decode)
				th := newThrottle(frameInterval, func(ev engine.Event) {
					doc := htmlsafe.Parse(dev.Text(ev))
					st := raceStats(ev, len(ev.Committed)+dev.Accepted())
					onUI(func() {
						if current() {
							p.view.SetDoc(doc)
							p.stats.SetText(st)
						}
					})
				})
				<-start // started together
				res, err := models[i].Generate(ctx, engine.Request{Prompt: assets.EncyclopediaPrompt(title),
					Opening: assets.EncyclopediaOpening(title), Lead: raceLead(models[i].Info(), title), Mode: p.mode,
					Sampling: r.app.sampling(), Seed: seed, OnEvent: th.Push})
				th.Close()
				errs[i] = err
				if err == nil {
					doc := htmlsafe.Parse(htmlsafe.Relink(res.Text, models[i].Info().Leads.Has))
					st := raceFinal(res)
					onUI(func() {
						if current() {
							p.result = res
							p.view.SetDoc(doc)
							p.stats.SetText(st)
						}
					})
				}
			}()
		}
		close(start)
		wg.Wait()
		onUI(func() {
			if !current() {
				return
			}
			r.startB.Enable()
			r.stopB.Disable()
			for i, err := range errs {
				if err != nil {
					r.summary.SetText(plainError("run the "+string(r.panes[i].mode)+" side", err))
					return
				}
			}
			if oneMode != "" {
				r.summary.SetText(oneModeSummary(oneMode, r.panes[1].result))
				return
			}
			r.summary.SetText(raceSummary(r.panes[0].result, r.panes[1].result, polaroid.Info().Speed) + unequalTerms(printer, polaroid))
		})
	})
}

// unequalTerms is the race summary's last sentence where its two copies of the
// model ran on different backends — the printer's, loaded second, on the CPU (all
// of it, or split with the GPU) where the GPU held the first one
// (models.BackendFor) — so that its speeds are
// not read as the modes' on one device; "" where they ran alike.
func unequalTerms(printer, polaroid Model) string {
	if printer == nil {
		return ""
	}
	pi, qi := printer.Info(), polaroid.Info()
	if pi.Backend == qi.Backend {
		return ""
	}
	s := " Not on equal terms: the printer's copy of the model ran on " + pi.Backend + ", the polaroid's on " + qi.Backend
	if pi.Fallback != "" {
		s += " (" + lowerFirst(strings.TrimSuffix(pi.Fallback, ".")) + ")"
	}
	return s + "."
}

// raceStats is a pane's line while it runs.
func raceStats(ev engine.Event, tokens int) string {
	rate := 0.0
	if s := ev.Elapsed.Seconds(); s > 0 {
		rate = float64(tokens) / s
	}
	return fmt.Sprintf("%s%s · %.1f tokens/s · %.1f s", plural.Count(tokens, "token", "tokens"), passesPart(ev.ForwardPasses),
		rate, ev.Elapsed.Seconds())
}

// raceFinal is a pane's line for its finished run: its tokens, those of the
// entry's first sentence held among them said (develop.TokenCount), since
// the rate counts the written ones only.
func raceFinal(res *engine.Result) string {
	return fmt.Sprintf("Finished: %s%s · %.1f tokens/s · %.2f s",
		develop.TokenCount(res), passesPart(res.ForwardPasses), res.TokensPerS, res.Elapsed.Seconds())
}

// passesPart is " · N forward passes", or "" for none: a remote server that is
// not Darkroom reports no forward passes, which are unknown, not zero.
func passesPart(n int) string {
	if n == 0 {
		return ""
	}
	return " · " + plural.Count(n, "forward pass", "forward passes")
}

// oneModeSummary is the summary of a race with no printer: the model runs one
// way only, for the reason why.
func oneModeSummary(why string, diff *engine.Result) string {
	s := "Only the polaroid ran: " + why + "."
	if diff != nil {
		s += "  " + raceFinal(diff) + "."
	}
	return s + "  To race the printer against it, use a local model or a Darkroom server's."
}

// tokensPerForward is how many tokens res's model wrote a forward pass: the
// held ones (the heading, the entry's first sentence) were written by none,
// and counted had given the printer 2.5 a pass.
func tokensPerForward(res *engine.Result) float64 {
	if res.ForwardPasses == 0 {
		return 0
	}
	return float64(len(res.Tokens)-res.HeldTokens) / float64(res.ForwardPasses)
}

// raceSummary compares the two finished runs and, with this PC's speed estimate
// for the model (nil: none), says in one line why the winner wins here.
func raceSummary(ar, diff *engine.Result, est *speed.Estimate) string {
	if ar == nil || diff == nil {
		return "Stopped."
	}
	side := func(res *engine.Result) string {
		return fmt.Sprintf("%s, %s, %.2f tokens per pass, %.1f tokens/s.", develop.TokenCount(res),
			plural.Count(res.ForwardPasses, "forward pass", "forward passes"), tokensPerForward(res), res.TokensPerS)
	}
	s := "Printer: " + side(ar) + "  Polaroid: " + side(diff)
	if ar.TokensPerS > 0 && diff.TokensPerS > 0 {
		ratio := diff.TokensPerS / ar.TokensPerS
		winner := engine.Diffusion
		if ratio >= 1 {
			s += fmt.Sprintf("  Diffusion was %.1f× faster here.", ratio)
		} else {
			winner = engine.AR
			s += fmt.Sprintf("  AR was %.1f× faster here.", 1/ratio)
		}
		if est.Known() {
			if est.Faster() == winner {
				s += "  " + speed.Why(est, winner)
			} else {
				s += fmt.Sprintf("  This PC's estimate expected the %s (about %s tokens/s against %s): %s.",
					speed.Name(est.Faster()), speed.Rate(est.Of(est.Faster()).TokensPerS),
					speed.Rate(est.Of(winner).TokensPerS), speed.Because(est))
			}
		}
	}
	if ar.StopReason == engine.StopCancelled || diff.StopReason == engine.StopCancelled {
		s = "Stopped early. " + s
	}
	return s
}

// raceLead is the first sentence of title's entry where the model's folder
// holds it (assets.Leads.Sentence), held after the heading as the Encyclopedia
// holds the whole entry: the Race holds no more, so that both its models have
// a page to write.
func raceLead(info ModelInfo, title string) string {
	s, _ := info.Leads.Sentence(title)
	return s
}
