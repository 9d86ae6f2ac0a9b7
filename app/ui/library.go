package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/speed"
	"github.com/darkroomlabs/darkroom/models/store"
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
	// Convert makes profile from the downloaded model on this PC, reporting as
	// download events ("converting", then "done" or "failed").
	Convert(name, profile string) error
	ActiveName() string // display name of the active model
	// Store is the models folder and its free space in bytes.
	Store() (dir string, free int64, err error)
	Hub() (token, mirror string)
	SetHub(token, mirror string) error
	// PlanMove says what moving the models to the folder chosen would carry, and
	// where they would go (Store.MoveDir: a new folder inside chosen when it
	// holds other things).
	PlanMove(chosen string) (store.MovePlan, error)
	// MoveStore moves every model to dir (a plan's To) and keeps using it;
	// progress reports bytes copied. Cancelling ctx stops it with every model
	// where it was. Downloads cannot start while it runs.
	MoveStore(ctx context.Context, dir string, progress func(done, total int64)) error
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
	State       string // "available", "downloading", "paused", "elsewhere", "ready", "failed", "built in"
	Active      bool
	Progress    DownloadEvent
}

// ProfileFit is one quantization profile with its fit on this PC.
type ProfileFit struct {
	Name  string // "bf16", "int8", "int4", "nvfp4"
	Bytes int64  // download size (0: unknown, or made on this PC)
	// ConvertedFrom is the profile downloaded to make this one on this PC ("bf16"),
	// empty when the profile is downloaded as it is.
	ConvertedFrom string
	Made          bool   // this PC holds the conversion (ConvertedFrom profiles only)
	Verdict       string // "fits", "tight", "from disk", "won't fit", "unknown"
	Detail        string // why the verdict is "unknown"
	// The estimate behind a verdict: memory needed (of which the weights) at
	// Context tokens, against Budget bytes of Where ("RTX 4090 VRAM", "RAM");
	// it fits up to the share FitsAt of the budget and is tight up to TightAt.
	Need, Weights, Budget int64
	// Resident is the part of Need that stays in memory where the weights are mapped
	// from the model's files (the CPU): a "from disk" verdict's numbers. DiskRate is
	// the models folder's disk read rate (bytes/s) its speed estimate counts, 0 where
	// it was not measured (the estimate is then the in-memory one: at most).
	Resident        int64
	DiskRate        float64
	Context         int
	Where           string
	FitsAt, TightAt float64
	// OnCPU, where the PC has a GPU the model is too big for, says that it runs
	// on the CPU instead (models.Placement.CPUBecause; the estimate is the RAM's).
	OnCPU string
	// Split, where the PC has a GPU the model is too big for but its first layers
	// fit, says that it runs split between the GPU and the CPU
	// (models.Placement.Split): Need is then the GPU's part, HostNeed the RAM's (of
	// RAM bytes), HostResident of it what stays in memory, and Verdict the worse of
	// the two parts'.
	Split                  string
	HostNeed, HostResident int64
	RAM                    int64
	// GPU: the estimate is a GPU's, where the model runs (Where its VRAM).
	GPU bool
	// Keeps ranks how much of the model the profile keeps (catalog.Entry.Keeps: 2
	// bf16, 1 the 8-bit ones, 0 the 4-bit ones, −1 a 3-bit GGUF).
	Keeps int
	// Printer and Polaroid are each mode's estimated tokens/s on this PC for a
	// one-canvas answer (models/speed); zero, with SpeedNote saying why, when unknown.
	Printer, Polaroid float64
	SpeedNote         string
}

// DownloadEvent is progress of one model's download.
type DownloadEvent struct {
	Name string
	// State: "downloading", "paused", "verifying", "done", "failed", "cancelled",
	// or "elsewhere": another Darkroom (the app opened twice, `darkroom pull`) is
	// downloading it, saying what it does in Doing.
	State string
	Doing string
	Done  int64
	Total int64
	Rate  float64 // bytes/s
	ETA   time.Duration
	Err   error // why it failed
}

// LibraryScreen shows the catalog as cards.
type LibraryScreen struct {
	app     *App
	cards   *fyne.Container // the catalog's cards; a loading line until the first list arrives
	store   *widget.Label
	move    *widget.Button      // Move…: disabled while the models move
	moveBar *widget.ProgressBar // a move's copying
	moveRow *fyne.Container     // the bar and Stop beside it, shown while a move copies
	stopMv  *widget.Button      // Stop: ends a move's copying, every model staying where it was
	stopFn  context.CancelFunc  // the running move's, nil when none
	moveMsg *widget.Label       // under the models folder: a move's progress, result or failure
	body    *fyne.Container     // what the Library's scroll holds
	errs    *widget.Label
	token   *widget.Entry
	mirror  *widget.Entry
	saveHub *widget.Button
	hubMsg  *widget.Label  // under the Hugging Face box: what Save saved, or why not
	repo    *keyEntry      // "Another model from Hugging Face": owner/name or its address (library_hub.go)
	repoGet *widget.Button // its Download
	repoMsg *widget.Label  // under it: the download begun, or why not
	// repoQuants, under repoMsg, are a GGUF repo's quantizations as buttons where the
	// repo was named without one it holds (models.QuantChoice).
	repoQuants *fyne.Container
	content    fyne.CanvasObject

	entries  []LibraryEntry
	storeDir string // the models folder, as last read
	free     int64  // its free space in bytes, as last read (−1: unknown)
	// listings counts the listings Refresh started; shown is the number of the
	// one on screen. Listings run side by side and may land out of order: one
	// older than the one shown is dropped (it would hide what changed since).
	listings atomic.Uint64
	shown    uint64
	byName   map[string]*libraryCard
	watching bool                     // a watchElsewhere read is due
	live     map[string]DownloadEvent // latest event of downloads in progress
	unsub    func()
	selected map[string]string // chosen profile per entry
	rec      recommendation    // the download recommended for this PC (library_recommend.go)
	recLine  *fyne.Container   // over the cards: the recommendation and Show it
	// problems are the failures shown on each card until the user dismisses them
	// or acts on the card again; they outlive the card's rebuilds.
	problems map[string]string
}

type libraryCard struct {
	entry    LibraryEntry
	card     *widget.Card
	progress *widget.ProgressBar
	progLbl  *widget.Label
	buttons  *fyne.Container
	profile  *widget.Select
	fit      *widget.Label
	problem  *widget.Label
	probBox  *fyne.Container // problem and its Dismiss button
	rec      *widget.Label   // "Recommended for this PC: …" (library_recommend.go), hidden on the others
}

func newLibraryScreen(a *App) *LibraryScreen {
	l := &LibraryScreen{app: a, free: -1, byName: map[string]*libraryCard{}, selected: map[string]string{}, live: map[string]DownloadEvent{},
		problems: map[string]string{}}
	// The first list can take seconds (the fit and speed estimates measure this
	// PC once): say so rather than show a Library without models.
	loading := widget.NewLabel(libraryLoading)
	loading.Wrapping = fyne.TextWrapWord
	l.cards = container.NewVBox(loading)
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
	l.hubMsg = widget.NewLabel("")
	l.hubMsg.Wrapping = fyne.TextWrapWord
	l.hubMsg.Hide()
	l.saveHub = widget.NewButton("Save", func() {
		if a.deps.Library == nil {
			return
		}
		l.hubMsg.Show() // beside the box: the Library's top line is out of sight down here
		if err := a.deps.Library.SetHub(strings.TrimSpace(l.token.Text), strings.TrimSpace(l.mirror.Text)); err != nil {
			l.hubMsg.Importance = widget.DangerImportance
			l.hubMsg.SetText(plainError("save the Hugging Face settings", err))
			return
		}
		_, endpoint := a.deps.Library.Hub()
		l.hubMsg.Importance = widget.MediumImportance
		l.hubMsg.SetText("Saved: downloads come from " + endpoint + ".")
	})
	saveHub := l.saveHub
	l.token.OnSubmitted = func(string) { l.saveHub.OnTapped() } // Enter saves
	l.mirror.OnSubmitted = l.token.OnSubmitted
	hub := widget.NewForm(
		widget.NewFormItem("HF token", l.token),
		widget.NewFormItem("Mirror", l.mirror),
	)
	hubCard := noteCard("Hugging Face", "Token and mirror used for downloads (HF_TOKEN and HF_ENDPOINT work too). "+
		"The token is kept in plain text in Darkroom's settings file.",
		container.NewVBox(container.NewBorder(nil, nil, nil, saveHub, hub), l.hubMsg))
	l.move = widget.NewButtonWithIcon("Move…", theme.FolderOpenIcon(), l.chooseStore)
	if a.deps.Library == nil {
		l.move.Disable()
	}
	l.moveBar = widget.NewProgressBar()
	l.stopMv = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() {
		if l.stopFn != nil {
			l.stopFn()
			l.stopMv.Disable() // until the copy has stopped and said so
		}
	})
	l.moveRow = container.NewBorder(nil, nil, nil, l.stopMv, l.moveBar)
	l.moveRow.Hide()
	l.moveMsg = widget.NewLabel("")
	l.moveMsg.Wrapping = fyne.TextWrapWord
	l.moveMsg.Hide()
	open := widget.NewButtonWithIcon("Open", theme.FolderIcon(), func() {
		if l.storeDir != "" {
			a.openFolder(l.storeDir, l.showError)
		}
	})
	storeRow := container.NewBorder(nil, nil, nil, container.NewHBox(open, l.move), l.store)
	l.body = container.NewVBox(storeRow, l.moveRow, l.moveMsg, l.errs, l.recommendRow(), l.cards, l.hubRepoCard(), a.remoteCard(), hubCard)
	l.content = container.NewVScroll(container.NewPadded(l.body))
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

// chooseStore asks where the models should go, starting beside the models
// folder; confirmMove then says what the move would carry.
func (l *LibraryScreen) chooseStore() {
	d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil || u == nil {
			return
		}
		chosen := u.Path()
		go func() {
			plan, err := l.app.deps.Library.PlanMove(chosen)
			onUI(func() { l.confirmMove(plan, err) })
		}()
	}, l.app.win)
	d.SetTitleText("Choose the new models folder")
	d.SetConfirmText("Choose this folder")
	if l.storeDir != "" {
		if parent, err := storage.ListerForURI(storage.NewFileURI(filepath.Dir(l.storeDir))); err == nil {
			d.SetLocation(parent)
		}
	}
	d.Show()
}

// confirmMove says what moving the models would carry, in numbers, and moves
// them once the user agrees; a folder the models cannot move to is refused
// before anything moves (UI goroutine).
func (l *LibraryScreen) confirmMove(p store.MovePlan, err error) {
	win := l.app.win
	refuse := func(title, msg string) {
		d := dialog.NewConfirm(title, msg, func(again bool) {
			if again {
				l.chooseStore()
			}
		}, win)
		d.SetConfirmText("Choose another folder")
		d.SetDismissText("Cancel")
		d.Show()
	}
	what := movedWhat(p)
	switch {
	case err != nil:
		refuse("The models cannot move there", plainError("move the models", err))
		return
	case p.To == p.From:
		refuse("This is the models folder", "The models are in "+p.From+" already. Choose another folder to move them to.")
		return
	case !p.Fits():
		refuse("Not enough free space", fmt.Sprintf("Moving %s to %s needs %s free there: the %s to copy and %s to spare "+
			"for the disk's own needs. That disk has only %s free.\n\nFree some space on it, or choose another folder.",
			what, p.To, formatBytes(p.Need), formatBytes(p.Copy), formatBytes(p.Need-p.Copy), formatBytes(p.Free)))
		return
	}
	msg := fmt.Sprintf("%s will move\nfrom %s\nto %s", what, p.From, p.To)
	if p.Models == 0 {
		msg = "There are no downloaded models to move. New downloads will go to " + p.To
	}
	msg += "."
	if filepath.Base(p.To) == "darkroom-models" && filepath.Dir(p.To) != p.From {
		msg += "\nA new folder: the folder chosen holds other things, and a models folder should hold only models."
	}
	switch {
	case p.Models == 0:
	case p.Copy == 0:
		msg += "\n\nBoth folders are on the same disk: the models are renamed there, nothing is copied."
	default:
		if p.Free >= 0 {
			msg += fmt.Sprintf("\n\nThat disk has %s free; %s is copied there.", formatBytes(p.Free), formatBytes(p.Copy))
		}
		msg += " The old folder keeps the models until every one has arrived: if the move stops half-way, they stay where they are."
	}
	action := "Move " + what
	if p.Models == 0 {
		action = "Use this folder"
	}
	d := dialog.NewConfirm("Move the models?", msg, func(ok bool) {
		if ok {
			l.startMove(p)
		}
	}, win)
	d.SetConfirmText(action)
	d.SetDismissText("Cancel")
	d.Show()
}

// sayMove shows msg under the models folder, with the copy's progress bar and
// its Stop when bar, and lays the Library out again to make room for them (UI
// goroutine).
func (l *LibraryScreen) sayMove(msg string, importance widget.Importance, bar bool) {
	l.moveMsg.Importance = importance
	l.moveMsg.SetText(msg)
	if bar {
		l.moveRow.Show()
	} else {
		l.moveRow.Hide()
	}
	showWrapped(l.moveMsg, l.cards.Size().Width, l.body)
	l.content.Refresh()
}

// movedWhat is "2 models (15.3 GB)".
func movedWhat(p store.MovePlan) string {
	return plural.Count(p.Models, "model", "models") + " (" + formatBytes(p.Bytes) + ")"
}

// startMove moves the models as planned, showing the copy's progress under the
// models folder, then the result (UI goroutine).
func (l *LibraryScreen) startMove(p store.MovePlan) {
	what := movedWhat(p)
	moving := "Moving " + what + " to " + p.To + "…"
	l.move.Disable()
	l.moveBar.SetValue(0)
	ctx, stop := context.WithCancel(context.Background())
	l.stopFn = stop
	l.stopMv.Enable()
	l.sayMove(moving, widget.MediumImportance, p.Copy > 0)
	lib := l.app.deps.Library
	go func() {
		l.app.unloadModels() // the model in use lets its files go (modelHost.Unload); the next page loads it from the new folder
		var shown time.Time
		err := lib.MoveStore(ctx, p.To, func(done, total int64) {
			if time.Since(shown) < 100*time.Millisecond && done < total {
				return // the copy reports every megabyte
			}
			shown = time.Now()
			onUI(func() {
				if total > 0 {
					l.moveBar.SetValue(float64(done) / float64(total))
				}
				l.moveMsg.SetText(fmt.Sprintf("%s %s of %s copied.", moving, formatBytes(done), formatBytes(total)))
			})
		})
		stopped := ctx.Err() != nil
		stop()
		onUI(func() {
			l.move.Enable()
			l.stopFn = nil
			switch {
			case err != nil && stopped:
				l.sayMove("Stopped moving the models: every model is still in "+p.From+". Moving them to "+p.To+
					" again goes on from where this stopped.", widget.MediumImportance, false)
			case err != nil:
				l.sayMove(plainError("move the models", err), widget.DangerImportance, false)
			default:
				l.sayMove("Moved "+what+" to "+p.To+".", widget.MediumImportance, false)
			}
		})
		l.Refresh()
	}()
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
	n := l.listings.Add(1)
	go func() {
		entries, err := lib.Entries()
		dir, free, serr := lib.Store()
		onUI(func() {
			if n < l.shown {
				return
			}
			l.shown = n
			if err != nil {
				l.showError(plainError("read the models library", err))
			} else {
				l.errs.Hide()
			}
			l.storeDir, l.free = dir, free
			if serr != nil {
				l.free = -1
				l.store.SetText("Models folder: " + dir + " (free space unknown: " + serr.Error() + ")")
			} else {
				l.store.SetText(fmt.Sprintf("Models folder: %s — %s free", dir, formatBytes(free)))
			}
			if err == nil {
				l.entries = entries
			}
			if err == nil || l.entries == nil { // a failed first list: the error says why, not the loading line
				l.rebuild()
			}
		})
	}()
}

// libraryLoading is the Library's line while its first list is being read.
const libraryLoading = "Reading the models library and working out which models fit this PC and how fast they run here " +
	"(the first time, Darkroom measures this PC's speed: a few seconds)…"

func (l *LibraryScreen) rebuild() {
	l.byName = map[string]*libraryCard{}
	l.rec = recommended(l.entries, l.free)
	l.showRecommendation()
	var objs []fyne.CanvasObject
	for _, e := range l.entries {
		c := l.newCard(e)
		l.byName[e.Name] = c
		objs = append(objs, c.card)
	}
	l.cards.Objects = objs
	l.cards.Refresh()
	l.watchElsewhere()
}

// elsewherePoll is how often the Library reads again a download another
// process runs.
var elsewherePoll = 2 * time.Second // a variable for the tests

// watchElsewhere follows the downloads other processes run (a card "elsewhere"):
// while there is one, it reads the listing every elsewherePoll and moves those
// cards' bars, and rebuilds the cards once a state changes (the other process
// finished, paused or closed: this window can then resume, use or cancel it). One
// watch at a time; it runs on the UI goroutine, the reading off it.
func (l *LibraryScreen) watchElsewhere() {
	lib := l.app.deps.Library
	if l.watching || lib == nil || !slices.ContainsFunc(l.entries, func(e LibraryEntry) bool { return e.State == "elsewhere" }) {
		return
	}
	l.watching = true
	time.AfterFunc(elsewherePoll, func() {
		entries, err := lib.Entries()
		onUI(func() {
			l.watching = false
			if err != nil {
				l.watchElsewhere() // try again later
				return
			}
			same := len(entries) == len(l.entries)
			for i := 0; same && i < len(entries); i++ {
				same = entries[i].Name == l.entries[i].Name && entries[i].State == l.entries[i].State
			}
			l.entries = entries
			if !same {
				l.rebuild()
				return
			}
			for _, e := range entries {
				if c := l.byName[e.Name]; c != nil && e.State == "elsewhere" {
					c.entry.Progress = e.Progress
					l.showProgress(c, e.Progress)
				}
			}
			l.watchElsewhere()
		})
	})
}

func (l *LibraryScreen) newCard(e LibraryEntry) *libraryCard {
	// Events are newer than a listing that raced with them.
	if ev, ok := l.live[e.Name]; ok {
		e.State, e.Progress = ev.State, ev
	}
	if l.app.remoteActiveName() != "" {
		e.Active = false // a remote model is active (remote.go)
	}
	c := &libraryCard{entry: e}
	var subs []string
	if e.Repo != "" {
		subs = append(subs, e.Repo)
	}
	if e.Builtin {
		subs = []string{"Built in — no download needed"}
	}
	if e.Active {
		subs = append(subs, "active model")
	}
	sub := strings.Join(subs, " · ")
	desc := widget.NewLabel(e.Description)
	desc.Wrapping = fyne.TextWrapWord
	if e.Description == "" { // a model the catalog does not know: no blank lines
		desc.Hide()
	}
	c.fit = widget.NewLabel("")
	c.fit.Wrapping = fyne.TextWrapWord
	var names []string
	for _, p := range e.Profiles {
		names = append(names, p.Name)
	}
	c.profile = widget.NewSelect(names, func(s string) {
		l.selected[e.Name] = s
		c.showFit(s)
		if c.buttons != nil { // a downloaded model's actions depend on the profile: Use, or Convert
			l.setButtons(c, c.entry.State)
		}
	})
	sel := l.selected[e.Name]
	if sel == "" {
		sel = e.Profile
	}
	if sel == "" && e.Name == l.rec.name {
		sel = l.rec.profile // the profile recommended, not the card's largest
	}
	if sel == "" && len(names) > 0 {
		sel = names[len(names)-1]
	}
	if sel != "" {
		c.profile.SetSelected(sel)
	}
	if e.State == "downloading" || e.State == "paused" || e.State == "converting" || e.State == "elsewhere" {
		c.profile.Disable()
	}
	profileRow := fyne.CanvasObject(container.NewBorder(nil, nil, widget.NewLabel("Profile"), nil, c.profile))
	if e.Builtin || len(names) <= 1 { // nothing to choose: it ships, was made or was published as it is
		profileRow = widget.NewLabel("")
		profileRow.Hide()
	}
	c.progress = widget.NewProgressBar()
	c.progLbl = widget.NewLabel("")
	c.progLbl.Truncation = fyne.TextTruncateEllipsis
	c.problem = widget.NewLabel("")
	c.problem.Wrapping = fyne.TextWrapWord
	c.problem.Importance = widget.DangerImportance
	dismiss := widget.NewButtonWithIcon("Dismiss", theme.CancelIcon(), func() { l.setProblem(e.Name, "") })
	c.probBox = container.NewBorder(nil, nil, nil, container.NewVBox(dismiss), c.problem)
	l.showProblem(c)
	c.buttons = container.NewHBox()
	l.setButtons(c, e.State)
	l.showProgress(c, e.Progress)
	meta := []string{}
	if e.License != "" {
		meta = append(meta, "License: "+e.License)
	}
	license := widget.NewLabel(strings.Join(meta, " · "))
	license.Wrapping = fyne.TextWrapWord
	// The title and the repo go in the content, where they wrap: a Card's own
	// title and subtitle never do, and a long model name set the window's width.
	title := widget.NewRichText(&widget.TextSegment{Style: widget.RichTextStyleSubHeading, Text: e.Title})
	title.Wrapping = fyne.TextWrapWord
	subLbl := widget.NewLabel(sub)
	subLbl.Wrapping = fyne.TextWrapWord
	secondaryText(subLbl)
	rec := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	rec.Wrapping = fyne.TextWrapWord
	rec.Importance = widget.SuccessImportance
	if e.Name == l.rec.name {
		if l.rec.fromDisk { // recommended, but slow here: the from-disk fit line's colour
			rec.Importance = widget.WarningImportance
		}
		rec.SetText(l.rec.note(false))
	} else {
		rec.Hide()
	}
	c.rec = rec
	content := container.NewVBox(title, subLbl, rec, desc, profileRow, c.fit, c.progress, c.progLbl, c.probBox, c.buttons, license)
	c.card = widget.NewCard("", "", content)
	return c
}

// fittingProfile is the largest of the card's profiles that fits this PC
// (the profiles are listed largest first), "" when none does.
func (c *libraryCard) fittingProfile() string {
	for _, p := range c.entry.Profiles {
		if p.Verdict == "fits" {
			return p.Name
		}
	}
	return ""
}

// selectedProfile is the profile picked on the card.
func (c *libraryCard) selectedProfile() (ProfileFit, bool) {
	for _, p := range c.entry.Profiles {
		if p.Name == c.profile.Selected {
			return p, true
		}
	}
	return ProfileFit{}, false
}

func (c *libraryCard) showFit(profile string) {
	for _, p := range c.entry.Profiles {
		if p.Name == profile {
			if p.Verdict == "unknown" {
				c.fit.SetText(p.Detail)
				secondaryText(c.fit)
				c.fit.Refresh()
				return
			}
			size := ""
			switch {
			case p.ConvertedFrom != "":
				size = "Made on this PC from the " + p.ConvertedFrom + " download · "
			case p.Bytes > 0:
				size = formatBytes(p.Bytes) + " download · "
			}
			c.fit.SetText(size + fitText(p) + speedText(p))
			c.fit.SizeName = "" // the text size again after an unknown profile's note
			switch p.Verdict {
			case "fits":
				c.fit.Importance = widget.SuccessImportance
			case "tight", "from disk":
				c.fit.Importance = widget.WarningImportance
			default:
				c.fit.Importance = widget.DangerImportance
			}
			c.fit.Refresh()
		}
	}
}

// fitText says a profile's verdict with the numbers and the threshold behind it,
// so that "won't fit" beside "tight" one tenth of a gigabyte apart is explained.
func fitText(p ProfileFit) string {
	if p.Split != "" {
		return splitFitText(p)
	}
	fitsAt, tightAt := int64(float64(p.Budget)*p.FitsAt), int64(float64(p.Budget)*p.TightAt)
	of := fmt.Sprintf("%s of %s", formatBytes(p.Budget), p.Where)
	var s string
	switch p.Verdict {
	case "fits":
		need, limit := formatBytesPair(p.Need, fitsAt)
		s = fmt.Sprintf("✔ Fits — needs about %s of the %s, within the %.0f%% (%s) that leaves room to spare.",
			need, of, 100*p.FitsAt, limit)
	case "tight":
		need, limit := formatBytesPair(p.Need, tightAt)
		s = fmt.Sprintf("▲ Tight — needs about %s of the %s: more than the %.0f%% (%s) that runs comfortably, "+
			"within the %.0f%% (%s) limit. Close other programs before using it.",
			need, of, 100*p.FitsAt, formatBytes(fitsAt), 100*p.TightAt, limit)
	case "from disk":
		s = fmt.Sprintf("▲ From the disk — needs about %s, more than the %.0f%% of the %s (%s) a model may use, "+
			"but %s of it must stay in memory and the rest is weights read from the model's files as they are needed: "+
			"every answer reads what memory cannot keep from the disk again, so it writes slowly, and other programs "+
			"may respond slowly meanwhile.", formatBytes(p.Need), 100*p.TightAt, of, formatBytes(tightAt), formatBytes(p.Resident))
	default:
		need, limit := formatBytesPair(p.Need, tightAt)
		s = fmt.Sprintf("✖ Won't fit — needs about %s, more than the %.0f%% of the %s (%s) a model may use",
			need, 100*p.TightAt, of, limit)
		if p.TightAt < 1 {
			s += ": the rest is for the system and other programs"
		}
		s += "."
	}
	if p.Weights > 0 && p.Context > 0 {
		s += fmt.Sprintf(" Of that, %s is the weights; the rest is working memory for %d tokens of context.",
			formatBytes(p.Weights), p.Context)
	}
	if p.OnCPU != "" {
		s += " " + p.OnCPU + "."
	}
	return s
}

// splitFitText is fitText for a profile split between the GPU and the CPU
// (ProfileFit.Split): both parts' memory, the verdict the worse part's, and the
// sentence saying how many layers run where.
func splitFitText(p ProfileFit) string {
	gpu := fmt.Sprintf("%s of the %s of %s", formatBytes(p.Need), formatBytes(p.Budget), p.Where)
	ram := fmt.Sprintf("%s of the %s of RAM", formatBytes(p.HostNeed), formatBytes(p.RAM))
	var s string
	switch p.Verdict {
	case "fits":
		s = fmt.Sprintf("✔ Fits, split between the GPU and the CPU — needs about %s for the layers the GPU runs and the "+
			"rest of the model, and %s for the layers the CPU runs, each with room to spare.", gpu, ram)
	case "tight":
		s = fmt.Sprintf("▲ Tight, split between the GPU and the CPU — needs about %s and %s: more than runs "+
			"comfortably in one of them. Close other programs before using it.", gpu, ram)
	default: // from disk: the RAM's part (a split's GPU part never is)
		s = fmt.Sprintf("▲ From the disk, split between the GPU and the CPU — needs about %s, and %s, more than a model "+
			"may use there, but %s of that must stay in memory and the rest is weights read from the model's files as "+
			"they are needed: every answer reads what memory cannot keep from the disk again, so it writes slowly.",
			gpu, ram, formatBytes(p.HostResident))
	}
	return s + " " + p.Split + "."
}

// speedText says how fast each mode would write here, beside the fit.
func speedText(p ProfileFit) string {
	if p.Printer > 0 && p.Polaroid > 0 && p.Verdict == "from disk" && p.DiskRate > 0 {
		return fmt.Sprintf(" About %s tokens/s here as the printer (AR), %s as the polaroid (diffusion), with this "+
			"PC's disk reading %.1f GB/s.", speed.Rate(p.Printer), speed.Rate(p.Polaroid), p.DiskRate/1e9)
	}
	if p.Printer > 0 && p.Polaroid > 0 && p.Verdict == "from disk" {
		return fmt.Sprintf(" At most about %s tokens/s here as the printer (AR), %s as the polaroid (diffusion), "+
			"as fast as it would be in memory: less by how fast the disk reads.", speed.Rate(p.Printer), speed.Rate(p.Polaroid))
	}
	if p.Printer > 0 && p.Polaroid > 0 {
		return fmt.Sprintf(" About %s tokens/s here as the printer (AR), %s as the polaroid (diffusion).",
			speed.Rate(p.Printer), speed.Rate(p.Polaroid))
	}
	if p.SpeedNote != "" {
		return " Speed here: " + p.SpeedNote + "."
	}
	return ""
}

// formatBytesPair formats two sizes with enough decimals to tell them apart
// (24.04 GB needed against a 24.03 GB limit must not read "24.0 of 24.0").
func formatBytesPair(a, b int64) (string, string) {
	x, y := formatBytes(a), formatBytes(b)
	for digits := 2; x == y && a != b && digits <= 3; digits++ {
		x, y = formatBytesPrec(a, digits), formatBytesPrec(b, digits)
	}
	return x, y
}

// setButtons shows the actions that make sense in state.
func (l *LibraryScreen) setButtons(c *libraryCard, state string) {
	lib := l.app.deps.Library
	name := c.entry.Name
	// act runs fn off the UI goroutine; download events then update the card, and
	// actions that change what is on disk reload the list.
	act := func(label string, icon fyne.Resource, fn func() error) *widget.Button {
		return widget.NewButtonWithIcon(label, icon, func() {
			l.setProblem(name, "") // a new try: the old failure no longer applies
			go func() {
				err := fn()
				if err != nil {
					msg := libraryProblem(strings.ToLower(label)+" "+c.entry.Title, err)
					onUI(func() { l.setProblem(name, msg) })
				}
				if err != nil || (label != "Pause" && label != "Resume") {
					l.Refresh()
				}
			}()
		})
	}
	// ask asks question (detail says more), and runs run where the user answers
	// confirm; dismiss leaves things as they are.
	ask := func(question, detail, confirm, dismiss string, run func()) {
		d := dialog.NewConfirm(question, detail, func(ok bool) {
			if ok {
				run()
			}
		}, l.app.win)
		d.SetConfirmText(confirm)
		d.SetDismissText(dismiss)
		d.SetConfirmImportance(widget.DangerImportance)
		d.Show()
	}
	// confirmed is act for what cannot be undone: the user answers question
	// (detail, read at the tap, says what is lost) with confirm, or keeps things
	// with dismiss.
	confirmed := func(label string, icon fyne.Resource, question string, detail func() string, confirm, dismiss string,
		fn func() error) *widget.Button {
		b := act(label, icon, fn)
		run := b.OnTapped
		b.OnTapped = func() { ask(question, detail(), confirm, dismiss, run) }
		return b
	}
	cancel := func() *widget.Button {
		lost := func() string {
			kept := "The part downloaded so far"
			done := c.entry.Progress.Done // a paused download's, after a restart
			if ev, ok := l.live[name]; ok {
				done = ev.Done
			}
			if done > 0 {
				kept = "The " + formatBytes(done) + " downloaded so far"
			}
			return kept + " will be removed; Pause keeps it, to resume later."
		}
		return confirmed("Cancel", theme.CancelIcon(), "Cancel the download of "+c.entry.Title+"?", lost,
			"Cancel download", "Keep it", func() error { return lib.Cancel(name) })
	}
	// unfit is b asking first where the profile picked at the tap will not fit
	// this PC: what b does (what: "Download", "Use") — a download of gigabytes
	// the PC cannot run, a load that would push it into swap until it stops
	// answering — then needs "… anyway", with the numbers and a profile that
	// fits, where one does. Its fit line said so in red, and nothing more.
	unfit := func(b *widget.Button, what, consequence string) *widget.Button {
		run := b.OnTapped
		b.OnTapped = func() {
			pf, ok := c.selectedProfile()
			if !ok || pf.Verdict != "won't fit" {
				run()
				return
			}
			detail := strings.TrimPrefix(fitText(pf), "✖ Won't fit — ")
			detail = upperFirst(detail) + " " + consequence
			if alt := c.fittingProfile(); alt != "" {
				detail += " The " + alt + " profile fits."
			}
			ask(what+" "+c.entry.Title+" ("+pf.Name+") anyway?", detail, what+" anyway", "Cancel", run)
		}
		return b
	}
	var bs []fyne.CanvasObject
	switch state {
	case "built in", "ready":
		if pf, ok := c.selectedProfile(); ok && c.entry.State == "ready" && pf.ConvertedFrom != "" && !pf.Made {
			// Downloaded, but not yet in this profile (picked after the download, or a
			// restart came between the download and its conversion).
			conv := act("Convert to "+pf.Name, theme.ViewRefreshIcon(), func() error { return lib.Convert(name, pf.Name) })
			conv.Importance = widget.HighImportance
			bs = append(bs, conv)
		} else if !c.entry.Active {
			use := act("Use", theme.ConfirmIcon(), func() error {
				err := lib.SetActive(name, c.profile.Selected)
				if err == nil {
					err = l.app.leaveRemote()
				}
				if err == nil {
					onUI(l.app.modelChanged)
				}
				return err
			})
			use.Importance = widget.HighImportance
			unfit(use, "Use", "Loading it would make this computer slow to respond, or close Darkroom.")
			if c.entry.Builtin && l.app.deps.System.MiniReady != nil && l.app.deps.System.MiniReady() != nil {
				use.Disable()
			}
			bs = append(bs, use)
		} else {
			bs = append(bs, widget.NewLabelWithStyle("Active", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		}
		if state == "ready" {
			active := c.entry.Active
			bs = append(bs, confirmed("Delete", theme.DeleteIcon(), "Delete "+c.entry.Title+"?",
				func() string {
					return "Its files will be removed from this computer; using it again means downloading it again."
				},
				"Delete", "Keep it", func() error {
					if !active {
						return lib.Delete(name)
					}
					// The model in use lets its files go first (modelHost.Unload), and the
					// screens then use the one the Library falls back to.
					l.app.unloadModels()
					err := lib.Delete(name)
					onUI(l.app.modelChanged)
					return err
				}))
		}
	case "converting":
		bs = append(bs, widget.NewLabel("Converting to "+c.profile.Selected+" on this PC…"))
	case "downloading", "verifying":
		bs = append(bs, act("Pause", theme.MediaPauseIcon(), func() error { return lib.Pause(name) }), cancel())
	case "paused":
		bs = append(bs, act("Resume", theme.MediaPlayIcon(), func() error { return lib.Resume(name) }), cancel())
	case "elsewhere": // its bar moves as the other process writes (watchElsewhere)
		note := widget.NewLabel("Another Darkroom (a second window, or a `darkroom` command) is " + c.entry.Progress.Doing +
			": its progress shows here. If that one is closed first, Resume here goes on from where it stopped.")
		note.Wrapping = fyne.TextWrapWord
		bs = append(bs, note)
	default: // available, failed, cancelled
		dl := act("Download", theme.DownloadIcon(), func() error { return lib.Start(name, c.profile.Selected) })
		dl.Importance = widget.HighImportance
		unfit(dl, "Download", "It would not run on this PC.")
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
		s += " · failed (see below)"
	case "elsewhere":
		s += " · " + ev.Doing + " in another Darkroom"
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
		if ev.State == "failed" && ev.Err != nil {
			title := ev.Name
			if c := l.byName[ev.Name]; c != nil {
				title = c.entry.Title
			}
			l.setProblem(ev.Name, libraryProblem("download "+title, ev.Err))
		}
		c := l.byName[ev.Name]
		if c == nil {
			l.notifyEnded(ev, "", ev.Name)
			// A model with no card yet (a Hugging Face repo whose download just
			// began, listed in a Refresh still on its way, or ended before it):
			// its end is listed afresh, else the card would keep the state that
			// listing read ("downloading") for good.
			if ev.State == "done" || ev.State == "failed" || ev.State == "cancelled" {
				l.Refresh()
			}
			return
		}
		l.notifyEnded(ev, c.entry.State, c.entry.Title)
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

// setProblem shows msg on the card of the named entry until dismissed ("" clears
// it). It runs on the UI goroutine.
func (l *LibraryScreen) setProblem(name, msg string) {
	if msg == "" {
		delete(l.problems, name)
	} else {
		l.problems[name] = msg
	}
	if c := l.byName[name]; c != nil {
		l.showProblem(c)
	}
}

func (l *LibraryScreen) showProblem(c *libraryCard) {
	msg := l.problems[c.entry.Name]
	c.problem.SetText(msg)
	if msg == "" {
		c.probBox.Hide()
	} else {
		c.probBox.Show()
	}
}

// libraryProblem says in plain words why a download (or another Library
// action: what) failed and what to do next, then the cause as the system gave it.
func libraryProblem(what string, err error) string {
	var verify *download.VerifyError
	var held *store.HeldError
	advice := ""
	switch {
	case errors.As(err, &held): // a second Darkroom (window or command) on the same model
		return "Another Darkroom — a second window, or a `darkroom` command — is " + held.Doing +
			": wait for it to finish there, or close it, then try again."
	case errors.Is(err, hub.ErrUnauthorized):
		advice = "The model hub refused access: the model is gated or private. Accept its license on huggingface.co " +
			"while signed in, then paste your access token in the Hugging Face box below."
	case errors.Is(err, hub.ErrNotFound):
		advice = "The model hub (or the mirror set below) does not have this model's files: check the mirror address, " +
			"or clear it to use huggingface.co."
	case errors.Is(err, download.ErrNoSpace), errors.Is(err, syscall.ENOSPC):
		advice = "Not enough free disk space: free some space, or move the models folder to a bigger disk with Move…, " +
			"then resume. What was already downloaded is kept."
	case errors.As(err, &verify):
		advice = "A downloaded file arrived damaged (its checksum does not match the published one); it was set aside. " +
			"Download again."
	case errors.Is(err, download.ErrStalled):
		advice = "The download stalled: no data arrived for a while. Check the connection, then resume."
	case hub.Unreachable(err):
		advice = "Cannot reach the model hub — check the connection, or set a mirror in the Hugging Face box below."
		var uerr *url.Error
		if errors.As(err, &uerr) { // the system's reason, not the requests it happened under
			return advice + " (" + shortCause(uerr.Err) + ")"
		}
	default:
		return plainError(what, err)
	}
	return advice + " (" + shortCause(err) + ")"
}

// shortCause is an error's text cut to a readable length.
func shortCause(err error) string {
	msg := err.Error()
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	return msg
}

// formatBytes uses decimal units, as the models library and disk makers do.
func formatBytes(n int64) string { return formatBytesPrec(n, 1) }

func formatBytesPrec(n int64, digits int) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.*f %cB", digits, float64(n)/float64(div), "kMGTP"[exp])
}

// modelChanged reloads the shared model after the active model changed.
// unloadModels closes the loaded model instances (the screens' and the Race's second)
// and waits for them, before their files are deleted or moved (modelHost.Unload). Not
// on the UI goroutine.
func (a *App) unloadModels() {
	a.models.Unload()
	a.Race.second.Unload()
}

func (a *App) modelChanged() {
	a.models.Reset()
	a.refreshNotices()
	a.Encyclopedia.modelChanged()
	a.Race.second.Reset()
	a.Library.Refresh()
	if a.remote != nil {
		a.remote.rebuild()
	}
}
