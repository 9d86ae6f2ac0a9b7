package ui

import (
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// TestDesktopPowerButtonSaysRestart: once the desktop runs, its power button
// says Restart (it kept saying "Start the desktop").
func TestDesktopPowerButtonSaysRestart(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: func(engine.Request) string { return "<h1>Desktop</h1><p>icons</p>" }}, "")
	d := a.Desktop
	asUI(func() { a.Show("Desktop") })
	if got := shownText(d.content); !strings.Contains(got, "Start the desktop") {
		t.Fatalf("the screen is off and says:\n%s", got)
	}
	tap(d.power)
	d.run.Wait()
	if got := shownText(d.content); strings.Contains(got, "Start the desktop") || !strings.Contains(got, "Restart") {
		t.Errorf("the desktop runs and says:\n%s", got)
	}
}

// desktopScreenHTML is a screen as the UI constitution asks for it.
const desktopScreenHTML = `<nav><a href="/ui/menu-apps">Applications</a> <a href="/ui/menu-help">Help</a></nav>` +
	`<h1>Files</h1><p><a href="/ui/app-gimp">gimp</a> <a href="/ui/app-files">files</a></p>` +
	`<section id="files"><h2>Files</h2><p>Your home folder holds <a href="/ui/open-docs">Documents</a>.</p></section>`

// TestDesktopDrawsAnOSScreen: the generated screen is drawn as an OS screen (a
// task bar with the menu and a button per window, icons, windows with a title
// bar and controls), and clicking any element — an icon, a window control —
// draws the next screen warm-started from this one.
func TestDesktopDrawsAnOSScreen(t *testing.T) {
	m := &fakeModel{answers: func(engine.Request) string { return desktopScreenHTML }}
	d := poweredDesktop(t, m)

	icons, buttons, labels := desktopScreenParts(d)
	var names []string
	for _, i := range icons {
		names = append(names, i.text)
	}
	if strings.Join(names, ",") != "gimp,files" {
		t.Errorf("desktop icons %q", names)
	}
	byText := map[string]*widget.Button{}
	controls := 0
	for _, b := range buttons {
		byText[b.Text] = b
		if b.Text == "" {
			controls++
		}
	}
	if byText["Applications"] == nil || byText["Help"] == nil || byText["Files"] == nil {
		t.Errorf("task bar buttons %v", byText)
	}
	if controls != 3 || !strings.Contains(strings.Join(labels, "\n"), "Files") {
		t.Errorf("%d window controls, labels %q", controls, labels)
	}

	// An icon: its own element.
	first := m.Calls()[0].result.Tokens
	tap(icons[0])
	d.run.Wait()
	last := d.Clicks[len(d.Clicks)-1]
	if last.ElementID != "app-gimp" || last.App != "Files" {
		t.Errorf("icon click %+v", last)
	}
	if req := m.Calls()[1].req; len(req.CanvasIDs) == 0 || req.CanvasIDs[0] != first[0] {
		t.Error("the next screen is not warm-started from the last")
	}
	// A window's close control.
	for _, b := range buttons {
		if b.Text == "" && b.Icon == theme.WindowCloseIcon() {
			tap(b)
		}
	}
	d.run.Wait()
	if last := d.Clicks[len(d.Clicks)-1]; last.ElementID != "close-files" {
		t.Errorf("close click %+v", last)
	}
}

// desktopScreenParts is what the Desktop's screen draws now: its icons, its
// buttons (task bar, window controls) and its labels, read under uiMu.
func desktopScreenParts(d *Desktop) (icons []*tapTile, buttons []*widget.Button, labels []string) {
	uiMu.Lock()
	defer uiMu.Unlock()
	walkObjects(d.view.root, func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *tapTile:
			icons = append(icons, x)
		case *widget.Button:
			buttons = append(buttons, x)
		case *widget.Label:
			labels = append(labels, x.Text)
		case *container.Scroll:
			walkObjects(x.Content, func(o fyne.CanvasObject) {
				switch y := o.(type) {
				case *widget.Button:
					buttons = append(buttons, y)
				case *widget.Label:
					labels = append(labels, y.Text)
				}
			})
		}
	})
	return icons, buttons, labels
}

// docText is the text of the page a view shows, read under uiMu.
func docText(v pageView) string {
	uiMu.Lock()
	defer uiMu.Unlock()
	var b strings.Builder
	if doc := v.Doc(); doc != nil {
		for in := range doc.Inlines() {
			b.WriteString(in.Text)
		}
	}
	return b.String()
}

// TestDesktopOffScreenClosesWithoutDrawing: the "screen is off" page is drawn
// as a window, with a title bar (minimize, maximize, close) and a task-bar
// button. Closing it made the model draw a screen, as if Start had been
// pressed. On a computer that is off nothing happens: the off page stays and
// says how to turn it on; only "Start the desktop" starts the model, and on the
// running desktop closing a window is a click again.
func TestDesktopOffScreenClosesWithoutDrawing(t *testing.T) {
	m := &fakeModel{answers: func(engine.Request) string { return desktopScreenHTML }}
	a := newTestApp(t, m, "")
	d := a.Desktop
	asUI(func() { a.Show("Desktop") })
	const off = "The screen is off"
	if !strings.Contains(docText(d.view), off) {
		t.Fatalf("the Desktop starts with %q", docText(d.view))
	}
	controlOf := func(icon fyne.Resource) *widget.Button {
		_, buttons, _ := desktopScreenParts(d)
		for _, b := range buttons {
			if b.Icon == icon {
				return b
			}
		}
		t.Fatalf("no control with the %s icon on the screen", icon.Name())
		return nil
	}
	tap(controlOf(theme.WindowCloseIcon()))
	d.run.Wait()
	if n := len(m.Calls()); n != 0 || len(d.Clicks) != 0 {
		t.Fatalf("closing the off screen's window asked the model for %d screen(s) (clicks %+v)", n, d.Clicks)
	}
	if got := docText(d.view); !strings.Contains(got, off) {
		t.Fatalf("after closing it the screen shows %q", got)
	}
	if got := shownText(d.content); !strings.Contains(got, "Start the desktop") || strings.Contains(got, "Restart") {
		t.Errorf("after closing the off screen's window the Desktop says:\n%s", got)
	} else if status := uiRead(func() string { return d.status.Text }); !strings.Contains(status, "Start the desktop") {
		t.Errorf("closing the off screen's window says %q; want how to turn the computer on", status)
	}
	// Its other controls and its task-bar button draw nothing either.
	tap(controlOf(theme.ContentRemoveIcon()))
	tap(controlOf(theme.ViewFullScreenIcon()))
	tap(controlOf(theme.FileApplicationIcon()))
	d.run.Wait()
	if n := len(m.Calls()); n != 0 {
		t.Fatalf("the off screen's controls asked the model for %d screen(s)", n)
	}

	tap(d.power)
	d.run.Wait()
	if n := len(m.Calls()); n != 1 || strings.Contains(docText(d.view), off) {
		t.Fatalf("Start the desktop: %d screen(s) asked for, the screen shows %q", n, docText(d.view))
	}
	tap(controlOf(theme.WindowCloseIcon()))
	d.run.Wait()
	if n := len(m.Calls()); n != 2 || !strings.HasPrefix(d.Clicks[len(d.Clicks)-1].ElementID, "close-") {
		t.Errorf("closing a window of the running desktop: %d screens asked for, clicks %+v", n, d.Clicks)
	}
}

// TestDesktopDrawsInTheModelsMode: the Desktop draws in the model's own mode,
// as the Encyclopedia's Automatic does — for a model whose mode is the printer
// (Darkroom Mini), an AR request with no warm start, and the status line names
// it; it had always asked for the polaroid, in which the Mini drew a whole
// window on 3% of held-out clicks against its printer's 68%.
func TestDesktopDrawsInTheModelsMode(t *testing.T) {
	m := &fakeModel{answers: func(engine.Request) string { return desktopScreenHTML },
		mode: speed.Choice{Mode: engine.AR, Reason: "the printer (AR): reads better"}}
	d := poweredDesktop(t, m)
	icons, _, _ := desktopScreenParts(d)
	if len(icons) == 0 {
		t.Fatal("no icons drawn")
	}
	tap(icons[0])
	d.run.Wait()
	calls := m.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	for i, c := range calls {
		if c.req.Mode != engine.AR || len(c.req.CanvasIDs) != 0 {
			t.Errorf("call %d: mode %q, %d warm-start ids; want the printer, none", i, c.req.Mode, len(c.req.CanvasIDs))
		}
	}
	if st := uiRead(func() string { return d.status.Text }); !strings.Contains(st, modeLabel(engine.AR)) {
		t.Errorf("status %q does not name the printer", st)
	}
}

// poweredDesktop opens the Desktop of a test app on m and powers it on, its
// first screen drawn.
func poweredDesktop(t *testing.T, m *fakeModel) *Desktop {
	t.Helper()
	a := newTestApp(t, m, "")
	d := a.Desktop
	asUI(func() { a.Show("Desktop") })
	tap(d.power)
	d.run.Wait()
	return d
}

// TestDesktopBack: Back shows the screen before the last click again, without
// asking the model — screen by screen to the first — and the next click starts
// from the screen shown (its tokens the warm start); where a click failed, Back
// brings back the last finished screen. Restart forgets them.
func TestDesktopBack(t *testing.T) {
	m, failing := numberedModel(`<h1>Screen %d</h1><p><a href="/ui/next">next</a></p>`)
	d := poweredDesktop(t, m)
	click := func() {
		asUI(func() { d.Click(assets.Click{ElementID: "next", Text: "next", App: d.app0}) })
		d.run.Wait()
	}
	screen := func() string { return docText(d.view) }
	calls := func() int { return len(m.Calls()) }
	if !strings.Contains(screen(), "Screen 1") || !d.back.Disabled() {
		t.Fatalf("the first screen: %q, Back enabled %v", screen(), !d.back.Disabled())
	}
	click()
	click()
	if !strings.Contains(screen(), "Screen 3") || d.back.Disabled() {
		t.Fatalf("after two clicks: %q, Back disabled %v", screen(), d.back.Disabled())
	}
	if w := uiRead(func() float32 { return d.app.win.Content().MinSize().Width }); w > smallestWindowSize.Width {
		t.Errorf("with Back the window needs %.0f px, more than the smallest supported %.0f", w, smallestWindowSize.Width)
	}
	before := calls()
	tap(d.back)
	if !strings.Contains(screen(), "Screen 2") || d.app0 != "Screen 2" || calls() != before {
		t.Errorf("Back: %q (app %q), %d model calls; want screen 2 from memory", screen(), d.app0, calls()-before)
	}
	tap(d.back)
	if !strings.Contains(screen(), "Screen 1") || !d.back.Disabled() {
		t.Errorf("Back again: %q, Back enabled %v; want the first screen and no further back", screen(), !d.back.Disabled())
	}
	click() // from screen 1: screen 4, and Back to 1
	if !strings.Contains(screen(), "Screen 4") {
		t.Fatalf("a click after Back: %q", screen())
	}
	first := d.past[len(d.past)-1].tokens
	if got := m.Calls()[len(m.Calls())-1].req.CanvasIDs; !slices.Equal(got, first[:min(len(first), maxWarmTokens)]) {
		t.Errorf("the click after Back warm-started from %d tokens, not the first screen's %d", len(got), len(first))
	}

	// A screen left half drawn (a click stopped): Back brings the last finished one.
	asUI(func() { d.view.SetDoc(htmlsafe.Parse("<h1>Scre</h1><p>half drawn</p>")) })
	asUI(d.updateBack)
	tap(d.back)
	if !strings.Contains(screen(), "Screen 4") {
		t.Errorf("Back from a half-drawn screen: %q; want screen 4", screen())
	}
	// A click that fails leaves its screen up, with the error; Back goes on back.
	failing(true)
	click()
	if !d.errLabel.Visible() || d.back.Disabled() {
		t.Fatalf("after a failed click: error shown %v, Back enabled %v", d.errLabel.Visible(), !d.back.Disabled())
	}
	tap(d.back)
	if !strings.Contains(screen(), "Screen 1") || d.errLabel.Visible() {
		t.Errorf("Back after a failed click: %q, error shown %v; want screen 1, the error gone", screen(), d.errLabel.Visible())
	}
	failing(false)
	tap(d.power) // Restart
	d.run.Wait()
	if !d.back.Disabled() {
		t.Error("after Restart Back goes to the screens before it")
	}
}
