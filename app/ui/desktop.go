package ui

import (
	"context"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// maxWarmTokens caps the previous screen's tokens passed as the warm-start canvas
// (one canvas; the engine fills a shorter one with noise).
const maxWarmTokens = 256

// Desktop is the generative "OS": every click on the screen sends the fixed UI
// constitution plus the click record, and the next screen develops in place,
// warm-started from the previous screen's tokens.
type Desktop struct {
	app *App

	view     *desktopScreen
	status   *widget.Label
	clickLbl *widget.Label
	errLabel *widget.Label
	stop     *widget.Button
	power    *widget.Button // "Start the desktop" while off, then "Restart"
	content  fyne.CanvasObject
	run      runner
	// offDoc is the "screen is off" page. It is drawn as a window like the
	// model's screens, but its controls do not reach the model.
	offDoc *htmlsafe.Doc

	prevTokens []int  // tokens of the screen shown, the next warm start
	app0       string // the active app of the screen shown ("desktop" when none)
	Clicks     []assets.Click

	// back shows the screen before the last click again (Back), from past:
	// the finished screens before shown, the last one drawn; a click that
	// drew junk costs one tap, not a restart.
	back  *widget.Button
	shown desktopShot
	past  []desktopShot
}

// desktopShot is a finished Desktop screen, as Back brings it back.
type desktopShot struct {
	doc    *htmlsafe.Doc
	tokens []int
	app0   string
	status string
}

// maxPastScreens bounds the screens Back can go through.
const maxPastScreens = 20

func newDesktop(a *App) *Desktop {
	d := &Desktop{app: a, app0: "desktop"}
	d.view = newDesktopScreen(d.onLink, d.screenClick, func() string { return d.app0 })
	d.status = widget.NewLabel("Ready")
	d.status.Truncation = fyne.TextTruncateEllipsis
	d.clickLbl = widget.NewLabel("")
	secondaryText(d.clickLbl)
	d.clickLbl.Truncation = fyne.TextTruncateEllipsis // it quotes generated text: never let it widen the window
	d.errLabel = widget.NewLabel("")
	d.errLabel.Wrapping = fyne.TextWrapWord
	d.errLabel.Importance = widget.DangerImportance
	d.errLabel.Hide()
	d.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() { d.run.Stop() })
	d.stop.Disable()
	d.power = widget.NewButtonWithIcon("Start the desktop", theme.ComputerIcon(), func() {
		d.prevTokens = nil
		d.app0 = "desktop"
		d.shown, d.past = desktopShot{}, nil
		d.Click(assets.Click{ElementID: "power", Text: "Power on", App: "desktop"})
	})
	d.power.Importance = widget.HighImportance
	d.back = widget.NewButtonWithIcon("Back", theme.NavigateBackIcon(), d.Back)
	d.back.Disable()
	bar := container.NewBorder(nil, nil, container.NewHBox(d.power, d.back), d.stop, d.clickLbl)
	intro := widget.NewLabel("A make-believe computer drawn by the model: every click draws the next whole screen, " +
		"in the model's own mode. The polaroid develops it from the previous screen instead of from scratch.")
	intro.Wrapping = fyne.TextWrapWord
	secondaryText(intro)
	top := container.NewVBox(bar, intro, d.errLabel)
	d.content = container.NewBorder(top, d.status, nil, nil, d.view.root)
	d.offDoc = htmlsafe.Parse(`<h2>The screen is off</h2><p>Press <strong>Start the desktop</strong>: the model draws a desktop with a menu bar, windows and app icons. ` +
		`Every link on it is a button; clicking one sends the click to the model, which draws the next screen.</p>`)
	d.view.SetDoc(d.offDoc)
	return d
}

// screenClick is a click on the screen (a window control, a task-bar button, a
// link). While the screen is off it draws nothing, as on a computer that is
// off: the off page stays and the status line says how to turn it on.
func (d *Desktop) screenClick(c assets.Click) {
	if d.view.Doc() == d.offDoc {
		d.status.SetText("The computer is off: press " + d.power.Text + " to turn it on.")
		return
	}
	d.Click(c)
}

func (d *Desktop) onLink(l htmlsafe.Inline) {
	id, ok := assets.UIElementFromHref(l.Href)
	if !ok {
		if l.ID == "" {
			return
		}
		id = l.ID
	}
	d.screenClick(assets.Click{ElementID: id, Text: l.Text, App: d.app0})
}

// Click sends a click and develops the next screen; a click during a generation
// cancels it.
func (d *Desktop) Click(c assets.Click) {
	d.Clicks = append(d.Clicks, c)
	d.clickLbl.SetText("Clicked " + c.ElementID + " (" + c.Text + ") in " + c.App)
	d.errLabel.Hide()
	d.stop.Enable()
	d.power.SetText("Restart")
	d.power.SetIcon(theme.ViewRefreshIcon())
	setEnabled(d.back, d.shown.doc != nil || len(d.past) > 0) // Back leaves this screen half drawn
	warm := d.prevTokens
	if len(warm) > maxWarmTokens {
		warm = warm[:maxWarmTokens]
	}
	d.run.Start(func(ctx context.Context, seq int64) {
		current := func() bool { return d.run.Current(seq) }
		var label string // the mode, for the status line
		res, shown, err := d.app.developPage(ctx, current, func(info ModelInfo) engine.Request {
			req := engine.Request{
				Messages: []engine.Message{
					{Role: "system", Content: assets.DesktopSystemOr(d.app.deps.Settings.Get().DesktopPrompt)},
					{Role: "user", Content: assets.DesktopPrompt(c)},
				},
				Mode:    desktopMode(info),
				Opening: assets.DesktopOpening(),
			}
			if req.Mode == engine.Diffusion {
				req.CanvasIDs = warm
			}
			label = pageModeLabel(info, req.Mode)
			return req
		}, d.view, d.status)
		if err != nil {
			onUI(func() {
				if current() {
					d.stop.Disable()
					d.status.SetText("Error")
					d.errLabel.SetText(plainError("draw the next screen", err))
					showWrapped(d.errLabel, d.content.Size().Width, d.content)
					d.updateBack()
				}
			})
			return
		}
		doc := htmlsafe.Parse(res.Text)
		st := develop.PageDoneStatus(res, label, false)
		onUI(func() {
			if !current() {
				return
			}
			if res.StopReason != engine.StopCancelled || shown == nil {
				d.view.SetDoc(doc)
			} // else the screen stays as it had developed
			d.status.SetText(st)
			d.stop.Disable()
			if res.StopReason != engine.StopCancelled {
				d.prevTokens = res.Tokens
				d.app0 = "desktop"
				if doc.Title != "" {
					d.app0 = doc.Title
				}
				if d.shown.doc != nil {
					d.past = append(d.past, d.shown)
					if len(d.past) > maxPastScreens {
						d.past = d.past[1:]
					}
				}
				d.shown = desktopShot{doc: doc, tokens: res.Tokens, app0: d.app0, status: st}
			}
			d.updateBack()
		})
	})
}

// Back shows the screen before the last click again, without asking the model:
// the last finished screen where a click was stopped or failed, else the one
// before it. The next click starts from the screen shown.
func (d *Desktop) Back() {
	if d.view.Doc() == d.shown.doc || d.shown.doc == nil { // the finished screen is up: go to the one before
		if len(d.past) == 0 {
			return
		}
		d.shown = d.past[len(d.past)-1]
		d.past = d.past[:len(d.past)-1]
	}
	d.run.Stop()
	d.run.Invalidate() // a screen still developing must not draw over this one
	d.view.SetDoc(d.shown.doc)
	d.prevTokens, d.app0 = d.shown.tokens, d.shown.app0
	d.errLabel.Hide()
	d.stop.Disable()
	d.clickLbl.SetText("Back to the screen before")
	d.status.SetText("Back · " + d.shown.status)
	d.updateBack()
}

// updateBack enables Back where there is a screen to go back to.
func (d *Desktop) updateBack() {
	setEnabled(d.back, len(d.past) > 0 || d.shown.doc != nil && d.view.Doc() != d.shown.doc)
}

// desktopMode is the mode the Desktop draws in: the model's own, as the
// Encyclopedia's Automatic mode picks it (pageMode) — DiffusionGemma's
// polaroid, warm-started from the previous screen; Darkroom Mini's printer,
// which draws one whole window on 68% of held-out clicks against its
// polaroid's 3% (train eval --desktops 40, assets/training/session26/).
func desktopMode(info ModelInfo) engine.Mode { return pageMode(info, "") }
