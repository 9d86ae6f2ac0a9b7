package ui

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/ui/htmlview"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// Encyclopedia is the generative encyclopedia: type a topic (or tap a link) and
// the page for it develops from noise in place.
type Encyclopedia struct {
	app *App

	address  *keyEntry
	back     *widget.Button
	forward  *widget.Button
	reload   *widget.Button
	stop     *widget.Button
	view     *htmlview.View
	scroll   *container.Scroll
	status   *widget.Label
	errLabel *widget.Label
	stopped  *widget.Label  // says the page shown is a stopped, partial one
	mode     *widget.Select // the page mode: automatic (the model's), polaroid or printer (settings.Values.PageMode)
	// The entry bar, over a page the model's folder holds an entry for: says
	// whether the page is that entry or the model's own, and ownBtn writes it
	// again the other way ("Let the model write it", "Show the entry"); over
	// one it holds none for, similar links the entries it may have meant
	// (assets.Leads.Similar).
	entryBar *fyne.Container
	entryMsg *widget.Label
	ownBtn   *widget.Button
	similar  *fyne.Container
	// suggest, under the address as a topic is typed, links to the entries
	// whose titles begin with it (assets.Leads.Prefixed).
	suggest *fyne.Container
	// The browser line: what happened to "Open in browser" and the page's
	// address, selectable and with a Copy button, whether or not a browser opened.
	browserBox *fyne.Container
	browserMsg *widget.Label
	browserURL *widget.Entry
	content    fyne.CanvasObject

	history []string         // visited titles; pos is the one shown
	pos     int              // -1: the start page, before history[0] as in a browser
	cache   map[string]*page // finished pages by title, for back/forward
	own     map[string]bool  // titles with entries whose page the model writes alone (ownBtn) until next navigated to
	// prev is the page Reload replaced (after a swap, the newer one), which
	// prevBtn by the status line brings back ("Previous version", "Newer
	// version"), until another page is shown.
	prev    otherVersion[*page]
	prevBtn *widget.Button
	run     runner
}

// page is a finished generated page.
type page struct {
	title   string
	html    string
	doc     *htmlsafe.Doc
	tokens  []int
	status  string
	known   bool     // the model's folder holds title's entry
	own     bool     // and the model wrote the page alone all the same
	similar []string // where it holds none, entries the title may have meant
}

func newEncyclopedia(a *App) *Encyclopedia {
	e := &Encyclopedia{app: a, pos: -1, cache: map[string]*page{}, own: map[string]bool{}}
	e.address = newKeyEntry(a)
	e.address.SetPlaceHolder("Type a topic and press Enter — e.g. Unix")
	e.address.OnSubmitted = func(s string) { e.Navigate(s) }
	e.address.OnChanged = e.suggestFor
	e.back = widget.NewButtonWithIcon("", theme.NavigateBackIcon(), e.Back)
	e.forward = widget.NewButtonWithIcon("", theme.NavigateNextIcon(), e.Forward)
	e.reload = widget.NewButtonWithIcon("", theme.ViewRefreshIcon(), e.Reload)
	e.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), e.Stop)
	e.stop.Disable()
	go1 := widget.NewButtonWithIcon("", theme.SearchIcon(), func() { e.Navigate(e.address.Text) })
	browser := widget.NewButtonWithIcon("Open in browser", theme.ComputerIcon(), e.openInBrowser)
	if a.deps.System.OpenPage == nil {
		browser.Hide()
	}
	e.view = htmlview.New(e.onLink)
	e.scroll = container.NewVScroll(container.NewPadded(e.view))
	e.status = widget.NewLabel("")
	e.status.Truncation = fyne.TextTruncateEllipsis
	e.errLabel = widget.NewLabel("")
	e.errLabel.Wrapping = fyne.TextWrapWord
	e.errLabel.Importance = widget.DangerImportance
	e.errLabel.Hide()
	e.stopped = widget.NewLabelWithStyle(stoppedNote, fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
	e.stopped.Wrapping = fyne.TextWrapWord
	e.stopped.Importance = widget.WarningImportance
	e.stopped.Hide()

	e.mode = widget.NewSelect([]string{modeAuto, modeLabel(engine.Diffusion), modeLabel(engine.AR)}, nil)
	e.mode.SetSelected(pickedLabel(a.deps.Settings.Get().PageMode))
	e.mode.OnChanged = func(label string) { // kept for the next start; the next page uses it
		if m := pickedMode(label); m != a.deps.Settings.Get().PageMode {
			if err := a.deps.Settings.Update(func(v *settings.Values) { v.PageMode = m }); err != nil {
				e.showError(plainError("save the page mode", err))
			}
		}
	}
	bar := container.NewBorder(nil, nil,
		container.NewHBox(e.back, e.forward, e.reload),
		container.NewHBox(go1, e.stop, browser),
		e.address)
	e.browserMsg = widget.NewLabel("")
	e.browserMsg.Wrapping = fyne.TextWrapWord
	e.browserURL = widget.NewEntry()
	copyURL := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		a.fyneApp.Clipboard().SetContent(e.browserURL.Text)
	})
	hideURL := widget.NewButtonWithIcon("", theme.CancelIcon(), func() { e.browserBox.Hide() })
	e.browserBox = container.NewVBox(e.browserMsg, container.NewBorder(nil, nil, nil, container.NewHBox(copyURL, hideURL), e.browserURL))
	e.browserBox.Hide()
	e.ownBtn = widget.NewButtonWithIcon(develop.LetModelWrite, theme.DocumentCreateIcon(), e.toggleOwn)
	e.entryMsg = widget.NewLabel("")
	e.entryMsg.Wrapping = fyne.TextWrapWord
	e.similar = container.NewHBox()
	e.entryBar = container.NewBorder(nil, nil, nil, e.ownBtn, container.NewVBox(e.entryMsg, e.similar))
	e.entryBar.Hide()
	e.suggest = container.NewHBox()
	e.suggest.Hide()
	top := container.NewVBox(bar, e.suggest, a.modelNotice(), e.errLabel, e.stopped, e.browserBox, e.entryBar)
	// The mode picker sits by the status line, which names the mode a page was
	// written in; the toolbar keeps its room for the address.
	e.prevBtn = widget.NewButtonWithIcon("Previous version", theme.HistoryIcon(), e.SwapVersion)
	e.prevBtn.Importance = widget.LowImportance
	e.prevBtn.Hide()
	bottom := container.NewBorder(nil, nil, nil, container.NewHBox(e.prevBtn, fitOptions(e.mode)), e.status)
	e.content = container.NewBorder(top, bottom, nil, nil, e.scroll)
	e.showWelcome()
	e.updateButtons()
	return e
}

// startHow is the start page's sentence on how a page is written here.
const startHow = "With the polaroid the whole page starts as noise and develops in a few passes; with the printer it is " +
	"typed out word by word. The picker at the bottom chooses; its automatic mode takes the one this model writes best in."

// showWelcome draws the start page: what a page is (develop.StartPage), for
// the model a page would be asked of — whether its pages are entries is its
// folder's (App.startLeads).
func (e *Encyclopedia) showWelcome() {
	e.view.SetDoc(htmlsafe.Parse(develop.StartPage(e.app.startLeads(), startHow, assets.WikiHref)))
	e.status.SetText("Ready")
}

func (e *Encyclopedia) onLink(l htmlsafe.Inline) {
	if title, ok := assets.TitleFromHref(l.Href); ok {
		e.Navigate(title)
		return
	}
	e.showError(fmt.Sprintf("This page links to %q, which is not an encyclopedia page.", l.Href))
}

// Navigate opens the page for title: a new history entry, generated afresh.
func (e *Encyclopedia) Navigate(title string) {
	title = assets.CleanLine(title)
	if title == "" {
		return
	}
	if err := assets.ReadableTitle(title); err != nil { // pasted control characters, say: never sent to the model
		e.showError(fmt.Sprintf("There is no page for %q: %v. Type a topic in words.", title, err))
		return
	}
	if e.pos < len(e.history)-1 { // a new page after going back drops the forward history
		e.history = e.history[:e.pos+1]
	}
	e.history = append(e.history, title)
	e.pos = len(e.history) - 1
	delete(e.own, title) // a title navigated to anew opens its entry again
	e.forgetPrev()
	e.generate(title)
}

// The entry bar's own words: on an entry's page, and on the model's own page
// for a title it holds an entry for (its buttons' and the rest are
// develop's, which browser mode shares).
const (
	entryNote = "This page is the entry the model's folder holds, as written."
	ownNote   = "The model wrote this page alone, without the entry: it reads like one and is often wrong."
)

// suggestFor offers, under the address, the entries whose titles begin with
// typed (assets.Leads.Prefixed: "compi" — compile, compiler…), each a link
// that opens it: the model's folder holds thousands, and a title a letter off
// gets the model's invention. Nothing while the address shows the page's
// own title, or holds nothing.
func (e *Encyclopedia) suggestFor(typed string) {
	e.suggest.RemoveAll()
	typed = strings.TrimSpace(typed)
	var titles []string
	if typed != "" && (e.pos < 0 || typed != e.history[e.pos]) {
		titles = e.app.startLeads().Prefixed(typed, develop.SuggestMax)
	}
	if len(titles) == 0 {
		e.suggest.Hide()
		return
	}
	linkRow(e.suggest, widget.NewLabel("Entries:"), titles, e.content.Size().Width, e.Navigate)
	e.suggest.Show()
}

// linkRow fills row with label, then a link for each of titles that open
// calls with it, on one line no wider than room (0: unknown): a row wider
// than the window would widen the window's least size (an HBox asks for all
// of it). The Encyclopedia's suggestions and entry bar, and Chat's, use it.
func linkRow(row *fyne.Container, label fyne.CanvasObject, titles []string, room float32, open func(title string)) {
	row.RemoveAll()
	if label != nil {
		row.Add(label)
	}
	used := row.MinSize().Width
	for _, t := range titles {
		l := widget.NewHyperlink(t, nil)
		l.OnTapped = func() { open(t) }
		if used += l.MinSize().Width + theme.Padding(); room > 0 && used > room && len(row.Objects) > 0 {
			break
		}
		row.Add(l)
	}
}

// toggleOwn writes the page shown again the other way: the model's own page
// for a title whose entry it shows, the entry for one the model wrote alone.
func (e *Encyclopedia) toggleOwn() {
	if e.pos < 0 {
		return
	}
	title := e.history[e.pos]
	e.own[title] = !e.own[title]
	delete(e.cache, title)
	e.forgetPrev()
	e.generate(title)
}

// showEntryBar, over the page of a title whose entry the model's folder holds
// (known), says which the page is — own: the model's — and offers the other;
// over one it holds no entry for, it offers the entries the title may have
// meant (similar), where there are any.
func (e *Encyclopedia) showEntryBar(known, own bool, similar []string) {
	e.similar.RemoveAll()
	switch {
	case known && own:
		e.entryMsg.SetText(ownNote)
		e.ownBtn.SetText(develop.ShowEntry)
		e.ownBtn.Show()
	case known:
		e.entryMsg.SetText(entryNote)
		e.ownBtn.SetText(develop.LetModelWrite)
		e.ownBtn.Show()
	case len(similar) > 0:
		e.entryMsg.SetText(develop.SimilarNote)
		e.ownBtn.Hide()
		linkRow(e.similar, nil, similar, e.content.Size().Width, e.Navigate)
	default:
		e.entryBar.Hide()
		return
	}
	// The message wraps to the room beside the button before the bar is laid
	// out, as showWrapped does for a label alone.
	room := e.content.Size().Width
	if e.ownBtn.Visible() {
		room -= e.ownBtn.MinSize().Width + theme.Padding()
	}
	showWrapped(e.entryMsg, room, e.content)
	e.entryBar.Show()
	e.content.Refresh()
}

// modelChanged redraws the start page, if it is shown, for the model now
// active or loaded: whether its pages are entries is the model's.
func (e *Encyclopedia) modelChanged() {
	if e.pos == -1 {
		e.showWelcome()
	}
}

// Back shows the previous page (from the cache when it finished developing), and
// from the first page the start page with its suggested topics.
func (e *Encyclopedia) Back() {
	switch {
	case e.pos > 0:
		e.pos--
		e.showOrGenerate(e.history[e.pos])
	case e.pos == 0:
		e.pos = -1
		e.showStart()
	}
}

// Forward shows the next page of the history.
func (e *Encyclopedia) Forward() {
	if e.pos < len(e.history)-1 {
		e.pos++
		e.showOrGenerate(e.history[e.pos])
	}
}

// Reload regenerates the current page; the page it replaces comes back with
// "Previous version" by the status line (SwapVersion) — a page the model
// writes differently each time is often worth keeping.
func (e *Encyclopedia) Reload() {
	if e.pos < 0 {
		return
	}
	title := e.history[e.pos]
	e.forgetPrev()
	if p, ok := e.cache[title]; ok {
		e.prev.keep(p)
	}
	delete(e.cache, title)
	e.generate(title)
}

// SwapVersion shows the page Reload replaced ("Previous version"), or back the
// one it wrote ("Newer version"); where the reload was stopped or failed, the
// previous page comes back as the page.
func (e *Encyclopedia) SwapVersion() {
	if !e.hasPrev() {
		return
	}
	var p *page
	e.run.Stop()
	e.run.Invalidate()
	if shown, ok := e.cache[(*e.prev.v).title]; ok {
		p = e.prev.swap(shown)
	} else { // the reload was stopped or failed
		p = e.prev.take()
	}
	e.cache[p.title] = p
	e.showPage(p, "")
	e.showPrev()
}

// hasPrev reports whether there is another version of the page shown.
func (e *Encyclopedia) hasPrev() bool {
	return e.prev.has() && e.pos >= 0 && e.history[e.pos] == (*e.prev.v).title
}

// forgetPrev drops the page Reload replaced: another page is shown.
func (e *Encyclopedia) forgetPrev() {
	e.prev.forget()
	e.prevBtn.Hide()
}

// showPrev offers the other version of the page shown, where there is one.
func (e *Encyclopedia) showPrev() {
	if !e.hasPrev() {
		e.prevBtn.Hide()
		return
	}
	e.prevBtn.SetText(e.prev.label("version"))
	e.prevBtn.Show()
}

// openInBrowser shows the current page in the system browser through the local
// server (loopback only, with a per-run token in the URL).
func (e *Encyclopedia) openInBrowser() {
	title := "Unix"
	if e.pos >= 0 {
		title = e.history[e.pos]
	}
	open := e.app.deps.System.OpenPage
	go func() {
		link, err := open(title)
		onUI(func() {
			if err != nil {
				e.showError(plainError("start the local server", err))
				return
			}
			if e.app.Settings != nil {
				e.app.Settings.serverStarted(serverAddress(link))
			}
			u, err := url.Parse(link)
			if err == nil {
				err = e.app.open(u)
			}
			if err != nil {
				e.browserMsg.SetText("Could not open a browser (" + err.Error() + "). Open this address in one yourself:")
				e.browserMsg.Importance = widget.WarningImportance
			} else {
				e.browserMsg.SetText("Opened in your browser. The page's address, for another browser on this computer:")
				e.browserMsg.Importance = widget.MediumImportance
			}
			e.browserMsg.Refresh()
			e.browserURL.SetText(link)
			e.browserBox.Show()
		})
	}()
}

// serverAddress is the scheme and host of a page's link: where the local server listens.
func serverAddress(link string) string {
	u, err := url.Parse(link)
	if err != nil || u.Host == "" {
		return link
	}
	return u.Scheme + "://" + u.Host
}

// Stop cancels the running generation; the page keeps what was committed.
func (e *Encyclopedia) Stop() { e.run.Stop() }

func (e *Encyclopedia) showOrGenerate(title string) {
	e.forgetPrev()
	p, ok := e.cache[title]
	if !ok {
		e.generate(title)
		return
	}
	e.run.Stop()
	e.run.Invalidate() // a generation still winding down must not draw over this page
	e.showPage(p, "From history · ")
}

// showPage shows the finished page p, its status line after prefix.
func (e *Encyclopedia) showPage(p *page, prefix string) {
	e.address.SetText(p.title)
	e.hideError()
	e.stopped.Hide()
	e.view.SetDoc(p.doc)
	e.scroll.ScrollToTop()
	e.status.SetText(prefix + p.status)
	e.showEntryBar(p.known, p.own, p.similar)
	e.stop.Disable()
	e.updateButtons()
}

// showStart goes back to the start page, stopping a page still developing.
func (e *Encyclopedia) showStart() {
	e.forgetPrev()
	e.run.Stop()
	e.run.Invalidate() // a generation still winding down must not draw over it
	e.address.SetText("")
	e.hideError()
	e.stopped.Hide()
	e.showWelcome()
	e.entryBar.Hide()
	e.scroll.ScrollToTop()
	e.stop.Disable()
	e.updateButtons()
}

func (e *Encyclopedia) updateButtons() {
	setEnabled(e.back, e.pos >= 0)
	setEnabled(e.forward, e.pos < len(e.history)-1)
	setEnabled(e.reload, e.pos >= 0)
}

func (e *Encyclopedia) showError(msg string) {
	e.errLabel.SetText(msg)
	showWrapped(e.errLabel, e.content.Size().Width, e.content)
}

func (e *Encyclopedia) hideError() { e.errLabel.Hide() }

// generate starts developing the page for title, cancelling any page in progress.
func (e *Encyclopedia) generate(title string) {
	e.address.SetText(title)
	e.hideError()
	e.stopped.Hide()
	e.stop.Enable()
	e.updateButtons()
	e.status.SetText("Starting…")
	e.entryBar.Hide()
	e.prevBtn.Hide() // offered again when this page ends (showPrev)
	e.scroll.ScrollToTop()
	picked := e.mode.Selected
	own := e.own[title]
	e.run.Start(func(ctx context.Context, seq int64) {
		current := func() bool { return e.run.Current(seq) }
		var leads *assets.Leads // the model's, for its links (htmlsafe.Relink)
		var mode engine.Mode
		var label string // the mode's, in the status line
		typed := title
		res, shown, err := e.app.developPage(ctx, current, func(info ModelInfo) engine.Request {
			leads, mode = info.Leads, pageMode(info, picked)
			label = pageModeLabel(info, mode)
			if title = develop.PageTitle(typed, info.Leads); title != typed { // "compilers": the entry for "compiler"
				e.retitle(current, typed, title)
			}
			req := develop.PageRequest(title, e.app.deps.Settings.Get().PagePrompt, info.Leads, own) // the entry, where the model's folder holds it, unless own
			req.Mode = mode
			return req
		}, e.view, e.status)
		if err != nil {
			onUI(func() {
				if current() {
					e.stop.Disable()
					e.status.SetText("Error")
					e.showError(plainError("write the page for "+title, err))
					e.showPrev()
				}
			})
			return
		}
		text := htmlsafe.Relink(res.Text, leads.Has)
		doc := htmlsafe.Parse(text)
		st := develop.PageDoneStatus(res, label, leads.Len() > 0)
		partial := res.StopReason == engine.StopCancelled && shown != nil
		known := leads.Has(title)
		var similar []string
		if !known {
			similar = leads.Similar(title, develop.SimilarMax)
		}
		onUI(func() {
			if !current() {
				return
			}
			if partial { // the page as it had developed, undecided parts and all
				showWrapped(e.stopped, e.content.Size().Width, e.content)
			} else {
				e.view.SetDoc(doc)
			}
			e.status.SetText(st)
			e.stop.Disable()
			e.showEntryBar(known, own, similar)
			switch {
			case res.StopReason == engine.StopCancelled:
			case len(res.Tokens) == 0:
				e.showError("The model wrote nothing for this topic. Try another one, or Reload.")
			default:
				e.cache[title] = &page{title: title, html: text, doc: doc, tokens: res.Tokens, status: st, known: known, own: own, similar: similar}
			}
			e.showPrev()
		})
	})
}

// retitle shows the page being written for typed under title, the entry's
// title it names (develop.PageTitle): in the address, and in the history,
// where it is the page shown — if the run (current) still owns the screen.
func (e *Encyclopedia) retitle(current func() bool, typed, title string) {
	onUI(func() {
		if !current() {
			return
		}
		if e.pos >= 0 && e.history[e.pos] == typed {
			e.history[e.pos] = title
		}
		e.address.SetText(title)
		if e.own[typed] {
			e.own[title] = true
		}
	})
}

// pageMode is the mode a page is written in: the one picked in the
// Encyclopedia's mode picker, else the model's (ModelInfo.Mode, as Chat's
// automatic mode: the printer for Darkroom Mini, whose pages and answers read
// more like English that way and come several times sooner on a CPU; the faster
// one here for a model that writes equally well both ways). A server that runs
// one way only (ModelInfo.OneMode) writes in its own.
func pageMode(info ModelInfo, picked string) engine.Mode {
	if info.OneMode != "" {
		return engine.Diffusion
	}
	if m := pickedMode(picked); m != "" {
		return engine.Mode(m)
	}
	return info.defaultMode()
}

// pageModeLabel names mode in a page screen's status line (the Encyclopedia's,
// the Desktop's): the server's own mode on a server that runs one.
func pageModeLabel(info ModelInfo, mode engine.Mode) string {
	if info.OneMode != "" {
		return serverModeLabel
	}
	return modeLabel(mode)
}

// stoppedNote marks a page whose generation was stopped.
const stoppedNote = "Stopped: this page is partial, as it had developed when you stopped it. Reload to write it in full."

// developPage runs the request that request builds from the shared model's
// Info (a known title's opening, say) on that model and draws the page
// developing into view (throttled), with the status line. It returns the finished result and
// the last frame drawn (nil if none was); the caller draws the final page, or
// keeps that frame when the run was stopped. current reports whether this run
// still owns the UI.
func (a *App) developPage(ctx context.Context, current func() bool, request func(ModelInfo) engine.Request, view pageView, status *widget.Label) (*engine.Result, *htmlsafe.Doc, error) {
	m, err := a.loadModel(ctx, current, status)
	if err != nil {
		return nil, nil, fmt.Errorf("load the model: %w", err)
	}
	req := request(m.Info())
	req.Sampling = a.sampling()
	req.Seed = a.seed()
	dev := develop.New(m, m.Decode)
	var shown *htmlsafe.Doc // written by the throttle's goroutine, read after th.Close
	th := newThrottle(frameInterval, func(ev engine.Event) {
		doc := htmlsafe.Parse(dev.Text(ev))
		st := dev.Status(ev)
		shown = doc
		onUI(func() {
			if current() {
				view.SetDoc(doc)
				status.SetText(st)
			}
		})
		if a.frameHook != nil && current() {
			a.frameHook(view, ev)
		}
	})
	req.OnEvent = func(ev engine.Event) {
		// The caller draws the end (the final page, or the last frame when
		// stopped): a done event must not displace the last step still pending.
		if ev.Kind != engine.EventDone {
			th.Push(ev)
		}
	}
	res, err := m.Generate(ctx, req)
	th.Close()
	return res, shown, err
}

func setEnabled(w fyne.Disableable, on bool) {
	if on {
		w.Enable()
	} else {
		w.Disable()
	}
}
