// Package ui is Darkroom's desktop app on Fyne: the screens (Library, Encyclopedia,
// Desktop, Chat, Race, Settings), one file each, their widgets (htmlview; the
// Desktop's OS screen in desktop_screen.go), and the
// bridge that turns engine events into fyne.Do updates (bridge.go). It is the only
// package that imports Fyne. Screens talk to small interfaces defined here (Model,
// Loader, Library, …) so they are tested with fakes; wire.go connects the real
// engine and models packages.
package ui

import (
	"math/rand/v2"
	"net/url"
	"runtime"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// Deps are what the app is built on. Nil fields make the screens that need them
// say plainly what is missing.
type Deps struct {
	Loader   Loader          // opens the active model
	Settings *settings.Store // typed settings (required)
	Chats    *chats.Store    // chat threads
	Library  Library         // the models library (catalog, downloads, store)
	System   System          // hardware, backends, local server
	// Problems found while starting (damaged settings, unreadable chats…), shown once.
	Problems []string
	// LastCrash is the report the previous run left when it crashed (crash.go;
	// "": it ended cleanly); the system report carries its first lines.
	LastCrash string
}

// App is the main window's content and the state the screens share.
type App struct {
	fyneApp fyne.App
	win     fyne.Window
	deps    Deps
	models  *modelHost
	remote  *remoteSection // the Library's remote servers (remote.go)

	// frameHook, if set, is called off the UI goroutine after each developing
	// frame was drawn into a page view (tests, the window check's screenshots).
	frameHook func(v pageView, ev engine.Event)
	// closeHook, if set, closes the window in quit's place (tests: their
	// windows are closed once, by the test).
	closeHook func()
	// openURL, if set, opens links and folders in the Fyne app's OpenURL's
	// place (tests record them); see open.
	openURL func(*url.URL) error

	// gpuWork, while GPU support installs, says how far it is (for the question
	// closing the window asks; quit.go); nil otherwise.
	gpuWork func() string

	notices []*widget.Label // the "what this model is good for" lines
	keys    []appKey        // the app's key combinations (addShortcuts)
	front   bool            // the window is in front (watchForeground): no notification for what it shows

	tabs *container.AppTabs
	root *fyne.Container // swaps between the first-run screen and the tabs

	Encyclopedia *Encyclopedia
	Desktop      *Desktop
	Chat         *Chat
	Race         *Race
	Library      *LibraryScreen
	Settings     *SettingsScreen
}

// New builds the app's screens into win.
func New(fa fyne.App, win fyne.Window, deps Deps) *App {
	if deps.Settings == nil {
		deps.Settings, _ = settings.Open("")
	}
	deps.Loader = remoteLoader(deps.Settings, deps.Loader) // the active remote model (remote.go), else deps.Loader's
	a := &App{fyneApp: fa, win: win, deps: deps, models: newModelHost(deps.Loader)}
	a.models.onLoad = func(Model) { // a backend that fell back is said there; Thinking is offered or not
		onUI(func() {
			a.refreshNotices()
			a.Chat.updateThinking()
			a.Encyclopedia.modelChanged()
		})
	}
	a.applyTheme()
	a.Encyclopedia = newEncyclopedia(a)
	a.Desktop = newDesktop(a)
	a.Chat = newChat(a)
	a.Race = newRace(a)
	a.Library = newLibraryScreen(a)
	a.Settings = newSettingsScreen(a)
	a.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Encyclopedia", theme.SearchIcon(), a.Encyclopedia.content),
		container.NewTabItemWithIcon("Desktop", theme.ComputerIcon(), a.Desktop.content),
		container.NewTabItemWithIcon("Chat", theme.MailComposeIcon(), a.Chat.content),
		container.NewTabItemWithIcon("Race", theme.MediaFastForwardIcon(), a.Race.content),
		container.NewTabItemWithIcon("Library", theme.StorageIcon(), a.Library.content),
		container.NewTabItemWithIcon("Settings", theme.SettingsIcon(), a.Settings.content),
	)
	a.tabs.SetTabLocation(container.TabLocationLeading)
	a.tabs.OnSelected = func(t *container.TabItem) {
		switch t.Text {
		case "Library":
			a.Library.Refresh()
		case "Settings":
			a.Settings.showDefaults() // the model may have loaded, or changed, since
		}
		a.focusScreen(t.Text)
	}
	a.root = container.NewStack()
	if deps.Settings.Get().FirstRunDone {
		a.root.Objects = []fyne.CanvasObject{a.tabs}
	} else {
		a.root.Objects = []fyne.CanvasObject{newFirstRun(a)}
	}
	win.SetContent(a.root)
	if a.root.Objects[0] == a.tabs {
		a.focusScreen(a.tabs.Selected().Text) // ready to type a topic
	}
	a.addShortcuts()
	a.watchForeground()
	win.SetOnDropped(a.onDropped) // text files into the chat box (chat_attach.go)
	a.Settings.keys.SetText("Keys: " + a.keysHelp())
	for _, p := range deps.Problems {
		a.Encyclopedia.showError(p)
	}
	return a
}

// addShortcuts binds browser-like keys: Alt+Left/Right (back/forward), Ctrl+L
// (address bar), Ctrl+R (reload), Ctrl+N (a new chat), Ctrl+F (search the
// chats, on Chat) and Escape (stop the running generation). Back, forward and reload act on the screen shown
// (onScreen); they had always moved the Encyclopedia, unseen from another
// screen — Ctrl+R in Chat wrote a page no one was looking at. The
// window gives keys to the focused widget first, so the text boxes that keep the
// focus while the user works (keyEntry: the address bar, the chat box, …) hand
// these on to the app.
func (a *App) addShortcuts() {
	c := a.win.Canvas()
	e := a.Encyclopedia
	a.keys = []appKey{
		{desktop.CustomShortcut{KeyName: fyne.KeyLeft, Modifier: fyne.KeyModifierAlt}, "back", a.onScreen(map[string]func(){
			"Encyclopedia": e.Back, "Desktop": a.Desktop.Back}), nil},
		{desktop.CustomShortcut{KeyName: fyne.KeyRight, Modifier: fyne.KeyModifierAlt}, "forward", a.onScreen(map[string]func(){
			"Encyclopedia": e.Forward}), nil},
		{desktop.CustomShortcut{KeyName: fyne.KeyL, Modifier: fyne.KeyModifierShortcutDefault}, "the address bar", func() {
			a.Show("Encyclopedia")
			c.Focus(e.address)
		}, nil},
		{desktop.CustomShortcut{KeyName: fyne.KeyR, Modifier: fyne.KeyModifierShortcutDefault}, "reload the page, or regenerate the answer", a.onScreen(map[string]func(){
			"Encyclopedia": e.Reload, "Chat": a.Chat.Regenerate}), nil},
		{desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault}, "a new chat", func() {
			a.Show("Chat")
			a.Chat.StartNew()
		}, nil},
		{desktop.CustomShortcut{KeyName: fyne.KeyF, Modifier: fyne.KeyModifierShortcutDefault}, "search the chats", a.onScreen(map[string]func(){
			"Chat": a.Chat.FocusSearch}), nil},
		// Text size, as browsers zoom: Ctrl+= is Ctrl++ without Shift; with
		// it, and on the keypad, it is the same key.
		{desktop.CustomShortcut{KeyName: fyne.KeyEqual, Modifier: fyne.KeyModifierShortcutDefault}, "larger text", func() { a.stepTextScale(true) },
			[]desktop.CustomShortcut{{KeyName: fyne.KeyEqual, Modifier: fyne.KeyModifierShortcutDefault | fyne.KeyModifierShift},
				{KeyName: fyne.KeyPlus, Modifier: fyne.KeyModifierShortcutDefault}}},
		{desktop.CustomShortcut{KeyName: fyne.KeyMinus, Modifier: fyne.KeyModifierShortcutDefault}, "smaller text", func() { a.stepTextScale(false) }, nil},
		{desktop.CustomShortcut{KeyName: fyne.Key0, Modifier: fyne.KeyModifierShortcutDefault}, "text size 100%", func() { a.setTextScale(100) }, nil},
	}
	for _, k := range a.keys {
		for _, sc := range append([]desktop.CustomShortcut{k.shortcut}, k.also...) {
			c.AddShortcut(&sc, func(fyne.Shortcut) { k.do() })
		}
	}
	c.SetOnTypedKey(func(k *fyne.KeyEvent) {
		if k.Name == fyne.KeyEscape {
			a.stopAll()
		}
	})
}

// onScreen is a key's action on the screen shown: do's entry for its name,
// nothing on another screen or the first-run screen.
func (a *App) onScreen(do map[string]func()) func() {
	return func() {
		if f := do[a.shown()]; f != nil {
			f()
		}
	}
}

// shown is the screen shown: a tab's name, or "" for the first-run screen.
func (a *App) shown() string {
	if len(a.root.Objects) != 1 || a.root.Objects[0] != a.tabs {
		return ""
	}
	return a.tabs.Selected().Text
}

// appKey is one of the app's key combinations, what it does in words (for
// keysHelp) and the doing.
type appKey struct {
	shortcut desktop.CustomShortcut
	what     string
	do       func()
	also     []desktop.CustomShortcut // other combinations for the same (not listed)
}

// keysHelp is the app's keys in one line, as Settings' About lists them: each of
// a.keys with what it does, then Escape ("Alt+← back · … · Esc stop").
func (a *App) keysHelp() string {
	var parts []string
	for _, k := range a.keys {
		mod := ""
		switch k.shortcut.Modifier {
		case fyne.KeyModifierAlt:
			mod = "Alt+"
			if runtime.GOOS == "darwin" {
				mod = "⌥"
			}
		case fyne.KeyModifierShortcutDefault:
			mod = keyHint("")
		}
		key := string(k.shortcut.KeyName)
		switch k.shortcut.KeyName {
		case fyne.KeyLeft:
			key = "←"
		case fyne.KeyRight:
			key = "→"
		case fyne.KeyMinus:
			key = "−"
		}
		parts = append(parts, mod+key+" "+k.what)
	}
	return strings.Join(append(parts, "Esc stop"), " · ")
}

// stopAll stops every screen's running generation (Escape).
func (a *App) stopAll() {
	for _, r := range []*runner{&a.Encyclopedia.run, &a.Desktop.run, &a.Chat.run, &a.Race.run} {
		r.Stop()
	}
}

// keyEntry is a text box that leaves the app's keys to the app: in a plain
// Entry, Alt+Left, Ctrl+R, Ctrl+L and Escape went to the box, which ignored
// them, so none worked in the address bar after Enter or in the chat box while
// a reply was written. Its own keys (Ctrl+A, Ctrl+C, Ctrl+Left, …) stay its own.
type keyEntry struct {
	widget.Entry
	app *App
	// onEscape, where set, is Escape's in this box first: it reports whether it
	// took the key (else Escape stops, as everywhere).
	onEscape func() bool
}

// newKeyEntry is a single-line keyEntry.
func newKeyEntry(a *App) *keyEntry {
	e := &keyEntry{app: a}
	e.ExtendBaseWidget(e)
	return e
}

// TypedShortcut implements fyne.Shortcutable.
func (e *keyEntry) TypedShortcut(s fyne.Shortcut) {
	if !e.app.appShortcut(s) {
		e.Entry.TypedShortcut(s)
	}
}

// TypedKey implements fyne.Focusable: Escape stops, as it does off the box
// (unless the box's onEscape takes it).
func (e *keyEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape && (e.onEscape == nil || !e.onEscape()) {
		e.app.stopAll()
	}
	e.Entry.TypedKey(k)
}

// keyHint names the app key letter with the platform's shortcut modifier, as
// a hint beside what it does: "Ctrl+F" (on macOS "⌘F").
func keyHint(letter string) string {
	if runtime.GOOS == "darwin" {
		return "⌘" + letter
	}
	return "Ctrl+" + letter
}

// appShortcut runs s, reaching a text box, where it is one of the app's keys,
// and says whether it was. On macOS a box keeps Option+Left/Right, its word
// moves.
func (a *App) appShortcut(s fyne.Shortcut) bool {
	cs, ok := s.(*desktop.CustomShortcut)
	if !ok {
		return false
	}
	if runtime.GOOS == "darwin" && cs.Modifier == fyne.KeyModifierAlt && (cs.KeyName == fyne.KeyLeft || cs.KeyName == fyne.KeyRight) {
		return false
	}
	for _, k := range a.keys {
		if k.shortcut == *cs || slices.Contains(k.also, *cs) {
			k.do()
			return true
		}
	}
	return false
}

// Show switches to a screen by its tab name ("Encyclopedia", "Library", …),
// leaving the first-run screen if it is up.
func (a *App) Show(name string) {
	if a.shown() == "" { // the first-run screen
		a.root.Objects = []fyne.CanvasObject{a.tabs}
		a.root.Refresh()
	}
	for _, t := range a.tabs.Items {
		if t.Text == name {
			a.tabs.Select(t) // says nothing when t is already selected
		}
	}
	a.focusScreen(name)
}

// focusScreen puts the focus in the box the screen asks the user to type in —
// the Encyclopedia's address bar, the chat box, the Race's topic — so typing
// goes there; on the other screens nothing has it (not a box of a screen no
// longer shown, which took the keys typed there unseen).
func (a *App) focusScreen(name string) {
	var box fyne.Focusable
	switch name {
	case "Encyclopedia":
		box = a.Encyclopedia.address
	case "Chat":
		box = a.Chat.input
	case "Race":
		box = a.Race.topic
	}
	if box != nil {
		a.win.Canvas().Focus(box)
	} else {
		a.win.Canvas().Unfocus()
	}
}

// sampling is the user's sampling overrides (zero fields: the model's defaults).
func (a *App) sampling() engine.Sampling {
	s := a.deps.Settings.Get().Sampling
	return engine.Sampling{MaxNewTokens: s.MaxNewTokens, MaxSteps: s.MaxSteps, TMin: s.TMin, TMax: s.TMax,
		EntropyBound: s.EntropyBound, ConfidenceThreshold: s.ConfidenceThreshold,
		StabilityThreshold: s.StabilityThreshold, Temperature: s.Temperature, RepetitionPenalty: s.RepetitionPenalty,
		Guidance: s.Guidance, GuidanceRounds: s.GuidanceRounds, GuidanceInWord: s.GuidanceInWord}
}

// seed is the configured seed, or a fresh one per generation.
func (a *App) seed() uint64 {
	if s := a.deps.Settings.Get().Seed; s != 0 {
		return s
	}
	return rand.Uint64()
}

// modelNotice is the honest one-liner about what the active model is good for.
func (a *App) modelNotice() fyne.CanvasObject {
	l := widget.NewLabelWithStyle(a.noticeText(), fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
	l.Wrapping = fyne.TextWrapWord
	a.notices = append(a.notices, l)
	return l
}

func (a *App) noticeText() string {
	name := a.activeModelName()
	if name == "" || name == miniName {
		return "Darkroom Mini is a small computing encyclopedia" + miniSources() + " that runs on any PC. " +
			"It is not a general assistant: for that, get DiffusionGemma from the Library." + a.fallbackNote()
	}
	return "Active model: " + name + "." + a.fallbackNote()
}

// fallbackNote is " WHY (Settings → Advanced → Backend)." when the loaded model's backend is
// not the one asked for (XLA did not start, so the CPU runs), and " Its weights … from
// the disk …." when they do not all fit in memory (ModelInfo.FromDisk); else "".
func (a *App) fallbackNote() string {
	m := a.models.Loaded()
	if m == nil {
		return ""
	}
	var s string
	if f := m.Info().Fallback; f != "" {
		s = " " + strings.TrimSuffix(f, ".") + " (Settings → Advanced → Backend)."
	}
	if f := m.Info().FromDisk; f != "" {
		s += " " + strings.TrimSuffix(f, ".") + "."
	}
	return s
}

// refreshNotices writes every screen's model line again (UI goroutine).
func (a *App) refreshNotices() {
	for _, n := range a.notices {
		n.SetText(a.noticeText())
	}
}

// noteCard is a card whose note (what a Card calls its subtitle) wraps with the
// window: a Card's own subtitle never wraps, and one long sentence set the
// window's minimum width.
func noteCard(title, note string, content fyne.CanvasObject) *widget.Card {
	l := widget.NewLabel(note)
	l.Wrapping = fyne.TextWrapWord
	secondaryText(l)
	return widget.NewCard(title, "", container.NewVBox(l, content))
}

// secondaryText styles a label of secondary information (a card's note, what
// was clicked, an explanation under a title): the text colour at caption size.
// widget.LowImportance draws text in the theme's disabled colour — about 1.6:1
// on the dark background — which could hardly be read and looked like a
// greyed-out control.
func secondaryText(l *widget.Label) {
	l.Importance = widget.MediumImportance
	l.SizeName = theme.SizeNameCaptionText
}

// miniName is the display name of the built-in model.
const miniName = "Darkroom Mini"

// readMiniCard reads the built-in model's card (a variable for tests).
var readMiniCard = assets.ReadMiniCard

// miniSources is " (what the built-in model was trained on)", from its card, so
// the app's sentences follow a shipped model; empty when there is no card.
func miniSources() string {
	c, err := readMiniCard()
	if err != nil {
		return ""
	}
	return " (" + c.TrainedOn + ")"
}

// startLeads are the entries the model the screens would ask now holds, for
// the Encyclopedia's start page and address suggestions (knownModel's; none
// where they are not known before the model loads).
func (a *App) startLeads() *assets.Leads {
	_, leads, _ := a.knownModel()
	return leads
}

// knownModel is the model the screens would ask now, where it is known without
// loading it: its id as the local server names it (serverID) and its
// entries — the loaded model's, else, where the built-in Darkroom Mini is the
// active one, its embedded entries (builtinLeads). ok is false for another
// model not loaded yet, and where the Mini's entries cannot be read (loading
// the model says why). The local server's start page and page shells ask it
// (server.Options.Known), so they never wait for a load.
func (a *App) knownModel() (id string, leads *assets.Leads, ok bool) {
	if m := a.models.Loaded(); m != nil {
		return serverID(m.Info()), m.Info().Leads, true
	}
	if a.activeModelName() != miniName {
		return "", nil, false
	}
	leads, err := builtinLeads()
	return catalog.MiniID, leads, err == nil
}

func (a *App) activeModelName() string {
	if n := a.remoteActiveName(); n != "" {
		return n
	}
	if a.deps.Library == nil {
		return miniName
	}
	return a.deps.Library.ActiveName()
}
