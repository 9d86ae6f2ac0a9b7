package ui

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Library is the models library as the Library screen uses it (wire.go adapts
// the models package's manager to it). Methods may block on disk or network;
// the screen calls them off the UI goroutine.
type Library interface {
	// Entries lists the catalog with local state and fit per profile.
	Entries() ([]LibraryEntry, error)
	Start(name, profile string) error // start (or restart) a download
	Pause(name string) error
	Resume(name string) error
	Cancel(name string) error // stop and remove partial files
	Delete(name string) error // remove a downloaded model
	SetActive(name, profile string) error
	ActiveName() string // display name of the active model
	// Store is the models folder and its free space in bytes.
	Store() (dir string, free int64, err error)
	Hub() (token, mirror string)
	SetHub(token, mirror string) error
	// MoveStore moves every model to dir and keeps using it; progress reports bytes.
	MoveStore(dir string, progress func(done, total int64)) error
	// Subscribe calls fn (from any goroutine) on every download event until the
	// returned function is called.
	Subscribe(fn func(DownloadEvent)) (cancel func())
}

// LibraryEntry is one catalog card.
type LibraryEntry struct {
	Name        string // catalog id, e.g. "diffusiongemma-26b-a4b-it"
	Title       string // "DiffusionGemma 26B-A4B-it"
	Description string
	Repo        string
	License     string
	Builtin     bool
	Profiles    []ProfileFit
	Profile     string // the profile downloaded or selected
	State       string // "available", "downloading", "paused", "ready", "failed", "built in"
	Active      bool
	Progress    DownloadEvent
}

// ProfileFit is one quantization profile with its fit on this PC.
type ProfileFit struct {
	Name    string // "bf16", "int8", "int4"
	Bytes   int64  // download size
	Verdict string // "fits", "tight", "won't fit"
	Detail  string // the numbers behind the verdict
}

// DownloadEvent is progress of one model's download.
type DownloadEvent struct {
	Name  string
	State string // "downloading", "paused", "verifying", "done", "failed", "cancelled"
	Done  int64
	Total int64
	Rate  float64 // bytes/s
	ETA   time.Duration
	Err   string
}

// LibraryScreen shows the catalog as cards.
type LibraryScreen struct {
	app     *App
	cards   *fyne.Container
	store   *widget.Label
	errs    *widget.Label
	token   *widget.Entry
	mirror  *widget.Entry
	content fyne.CanvasObject

	entries  []LibraryEntry
	byName   map[string]*libraryCard
	live     map[string]DownloadEvent // latest event of downloads in progress
	unsub    func()
	selected map[string]string // chosen profile per entry
}

type libraryCard struct {
	entry    LibraryEntry
	card     *widget.Card
	progress *widget.ProgressBar
	progLbl  *widget.Label
	buttons  *fyne.Container
	profile  *widget.Select
	fit      *widget.Label
}

func newLibraryScreen(a *App) *LibraryScreen {
	l := &LibraryScreen{app: a, byName: map[string]*libraryCard{}, selected: map[string]string{}, live: map[string]DownloadEvent{}}
	l.cards = container.NewVBox()
	l.store = widget.NewLabel("")
	l.store.Wrapping = fyne.TextWrapWord
	l.errs = widget.NewLabel("")
	l.errs.Wrapping = fyne.TextWrapWord
	l.errs.Importance = widget.DangerImportance
	l.errs.Hide()
	l.token = widget.NewPasswordEntry()
	l.token.SetPlaceHolder("hf_… (only for gated or private models)")
	l.mirror = widget.NewEntry()
	l.mirror.SetPlaceHolder("https://huggingface.co")
	saveHub := widget.NewButton("Save", func() {
		if a.deps.Library == nil {
			return
		}
		if err := a.deps.Library.SetHub(strings.TrimSpace(l.token.Text), strings.TrimSpace(l.mirror.Text)); err != nil {
			l.showError(plainError("save the Hugging Face settings", err))
		}
	})
	hub := widget.NewForm(
		widget.NewFormItem("HF token", l.token),
		widget.NewFormItem("Mirror", l.mirror),
	)
	hubCard := widget.NewCard("Hugging Face", "Token and mirror used for downloads (HF_TOKEN and HF_ENDPOINT work too). "+
		"The token is kept in plain text in Darkroom's settings file.",
		container.NewBorder(nil, nil, nil, saveHub, hub))
	move := widget.NewButtonWithIcon("Move…", theme.FolderOpenIcon(), l.chooseStore)
	if a.deps.Library == nil {
		move.Disable()
	}
	storeRow := container.NewBorder(nil, nil, nil, move, l.store)
	body := container.NewVBox(storeRow, l.errs, l.cards, hubCard)
	l.content = container.NewVScroll(container.NewPadded(body))
	if a.deps.Library == nil {
		l.store.SetText("The models library is not available in this build.")
	} else {
		l.unsub = a.deps.Library.Subscribe(l.onEvent)
		tok, mir := a.deps.Library.Hub()
		l.token.SetText(tok)
		l.mirror.SetText(mir)
	}
	l.Refresh()
	return l
}

// chooseStore asks for a new models folder and moves everything there.
func (l *LibraryScreen) chooseStore() {
	dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil || u == nil {
			return
		}
		dir := u.Path()
		l.store.SetText("Moving the models to " + dir + "…")
		go func() {
			err := l.app.deps.Library.MoveStore(dir, func(done, total int64) {
				onUI(func() {
					l.store.SetText(fmt.Sprintf("Moving the models to %s… %s of %s", dir, formatBytes(done), formatBytes(total)))
				})
			})
			if err != nil {
				onUI(func() { l.showError(plainError("move the models", err)) })
			}
			l.Refresh()
		}()
	}, l.app.win)
}

func (l *LibraryScreen) showError(msg string) {
	l.errs.SetText(msg)
	l.errs.Show()
}

// Refresh reloads the catalog and store info (off the UI goroutine).
func (l *LibraryScreen) Refresh() {
	lib := l.app.deps.Library
	if lib == nil {
		return
	}
	go func() {
		entries, err := lib.Entries()
		dir, free, serr := lib.Store()
		onUI(func() {
			if err != nil {
				l.showError(plainError("read the models library", err))
			} else {
				l.errs.Hide()
			}
			if serr != nil {
				l.store.SetText("Models folder: " + dir + " (free space unknown: " + serr.Error() + ")")
			} else {
				l.store.SetText(fmt.Sprintf("Models folder: %s — %s free", dir, formatBytes(free)))
			}
			if err == nil {
				l.entries = entries
				l.rebuild()
			}
		})
	}()
}

func (l *LibraryScreen) rebuild() {
	l.byName = map[string]*libraryCard{}
	var objs []fyne.CanvasObject
	for _, e := range l.entries {
		c := l.newCard(e)
		l.byName[e.Name] = c
		objs = append(objs, c.card)
	}
	l.cards.Objects = objs
	l.cards.Refresh()
}

func (l *LibraryScreen) newCard(e LibraryEntry) *libraryCard {
	// Events are newer than a listing that raced with them.
	if ev, ok := l.live[e.Name]; ok {
		e.State, e.Progress = ev.State, ev
	}
	c := &libraryCard{entry: e}
	sub := e.Repo
	if e.Builtin {
		sub = "Built in — no download needed"
	}
	if e.Active {
		sub += " · active model"
	}
	desc := widget.NewLabel(e.Description)
	desc.Wrapping = fyne.TextWrapWord
	c.fit = widget.NewLabel("")
	c.fit.Wrapping = fyne.TextWrapWord
	var names []string
	for _, p := range e.Profiles {
		names = append(names, p.Name)
	}
	c.profile = widget.NewSelect(names, func(s string) {
		l.selected[e.Name] = s
		c.showFit(s)
	})
	sel := l.selected[e.Name]
	if sel == "" {
		sel = e.Profile
	}
	if sel == "" && len(names) > 0 {
		sel = names[len(names)-1]
	}
	if sel != "" {
		c.profile.SetSelected(sel)
	}
	if e.State == "downloading" || e.State == "paused" || e.State == "converting" {
		c.profile.Disable()
	}
	profileRow := fyne.CanvasObject(container.NewBorder(nil, nil, widget.NewLabel("Profile"), nil, c.profile))
	if e.Builtin { // nothing to choose: it ships as it is
		profileRow = widget.NewLabel("")
		profileRow.Hide()
	}
	c.progress = widget.NewProgressBar()
	c.progLbl = widget.NewLabel("")
	c.progLbl.Truncation = fyne.TextTruncateEllipsis
	c.buttons = container.NewHBox()
	l.setButtons(c, e.State)
	l.showProgress(c, e.Progress)
	meta := []string{}
	if e.License != "" {
		meta = append(meta, "License: "+e.License)
	}
	content := container.NewVBox(desc, profileRow, c.fit, c.progress, c.progLbl, c.buttons, widget.NewLabel(strings.Join(meta, " · ")))
	c.card = widget.NewCard(e.Title, sub, content)
	return c
}

func (c *libraryCard) showFit(profile string) {
	for _, p := range c.entry.Profiles {
		if p.Name == profile {
			if p.Verdict == "unknown" {
				c.fit.SetText(p.Detail)
				c.fit.Importance = widget.LowImportance
				c.fit.Refresh()
				return
			}
			badge := map[string]string{"fits": "✔ Fits", "tight": "▲ Tight", "won't fit": "✖ Won't fit"}[p.Verdict]
			if badge == "" {
				badge = p.Verdict
			}
			size := ""
			if p.Bytes > 0 {
				size = formatBytes(p.Bytes) + " download · "
			} else if p.Name != "bf16" && !c.entry.Builtin {
				size = "made locally from the bf16 download · "
			}
			c.fit.SetText(size + badge + " — " + p.Detail)
			switch p.Verdict {
			case "fits":
				c.fit.Importance = widget.SuccessImportance
			case "tight":
				c.fit.Importance = widget.WarningImportance
			default:
				c.fit.Importance = widget.DangerImportance
			}
			c.fit.Refresh()
		}
	}
}

// setButtons shows the actions that make sense in state.
func (l *LibraryScreen) setButtons(c *libraryCard, state string) {
	lib := l.app.deps.Library
	name := c.entry.Name
	// act runs fn off the UI goroutine; download events then update the card, and
	// actions that change what is on disk reload the list.
	act := func(label string, icon fyne.Resource, fn func() error) *widget.Button {
		return widget.NewButtonWithIcon(label, icon, func() {
			go func() {
				err := fn()
				if err != nil {
					onUI(func() { l.showError(plainError(strings.ToLower(label)+" "+c.entry.Title, err)) })
				}
				if err != nil || (label != "Pause" && label != "Resume") {
					l.Refresh()
				}
			}()
		})
	}
	var bs []fyne.CanvasObject
	switch state {
	case "built in", "ready":
		if !c.entry.Active {
			use := act("Use", theme.ConfirmIcon(), func() error {
				err := lib.SetActive(name, c.profile.Selected)
				if err == nil {
					onUI(l.app.modelChanged)
				}
				return err
			})
			use.Importance = widget.HighImportance
			if c.entry.Builtin && l.app.deps.System.MiniReady != nil && l.app.deps.System.MiniReady() != nil {
				use.Disable()
			}
			bs = append(bs, use)
		} else {
			bs = append(bs, widget.NewLabelWithStyle("Active", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		}
		if state == "ready" {
			bs = append(bs, act("Delete", theme.DeleteIcon(), func() error { return lib.Delete(name) }))
		}
	case "converting":
		bs = append(bs, widget.NewLabel("Converting to "+c.profile.Selected+" on this PC…"))
	case "downloading", "verifying":
		bs = append(bs, act("Pause", theme.MediaPauseIcon(), func() error { return lib.Pause(name) }),
			act("Cancel", theme.CancelIcon(), func() error { return lib.Cancel(name) }))
	case "paused":
		bs = append(bs, act("Resume", theme.MediaPlayIcon(), func() error { return lib.Resume(name) }),
			act("Cancel", theme.CancelIcon(), func() error { return lib.Cancel(name) }))
	default: // available, failed, cancelled
		dl := act("Download", theme.DownloadIcon(), func() error { return lib.Start(name, c.profile.Selected) })
		dl.Importance = widget.HighImportance
		bs = append(bs, dl)
	}
	c.buttons.Objects = bs
	c.buttons.Refresh()
}

func (l *LibraryScreen) showProgress(c *libraryCard, ev DownloadEvent) {
	if ev.Total <= 0 && ev.State == "" {
		c.progress.Hide()
		c.progLbl.Hide()
		return
	}
	c.progress.Show()
	c.progLbl.Show()
	if ev.Total > 0 {
		c.progress.SetValue(float64(ev.Done) / float64(ev.Total))
	}
	c.progLbl.SetText(progressText(ev))
}

func progressText(ev DownloadEvent) string {
	s := fmt.Sprintf("%s of %s", formatBytes(ev.Done), formatBytes(ev.Total))
	switch ev.State {
	case "downloading":
		if ev.Rate > 0 {
			s += fmt.Sprintf(" · %s/s", formatBytes(int64(ev.Rate)))
		}
		if ev.ETA > 0 {
			s += " · " + ev.ETA.Round(time.Second).String() + " left"
		}
	case "failed":
		s += " · failed: " + ev.Err
	default:
		s += " · " + ev.State
	}
	return s
}

// onEvent runs on the downloader's goroutine.
func (l *LibraryScreen) onEvent(ev DownloadEvent) {
	onUI(func() {
		switch ev.State {
		case "done", "failed", "cancelled":
			delete(l.live, ev.Name)
		default:
			l.live[ev.Name] = ev
		}
		c := l.byName[ev.Name]
		if c == nil {
			return
		}
		stateChanged := c.entry.State != ev.State
		c.entry.State = ev.State
		c.entry.Progress = ev
		l.showProgress(c, ev)
		if stateChanged {
			l.setButtons(c, ev.State)
			if ev.State == "done" || ev.State == "failed" || ev.State == "cancelled" {
				l.Refresh()
			}
		}
	})
}

// formatBytes uses decimal units, as the models library and disk makers do.
func formatBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTP"[exp])
}

// modelChanged reloads the shared model after the active model changed.
func (a *App) modelChanged() {
	for _, n := range a.notices {
		n.SetText(a.noticeText())
	}
	a.models.Reset()
	a.Race.second.Reset()
	a.Library.Refresh()
}
