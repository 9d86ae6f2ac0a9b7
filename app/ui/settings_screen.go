package ui

import (
	"errors"
	"fmt"
	"image/color"
	"path/filepath"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/engine"
)

// System is what the app knows about this PC and the services around the UI.
// Every field may be nil; the screens then say the information is unavailable.
type System struct {
	Hardware func() []string // plain sentences: GPUs, RAM, disk, why CPU
	Backends func() string   // what backends were detected
	// Version is the binary's version line (version.Info's String), and Report
	// what hardware detection found, as `darkroom hw` prints it (hw.Info's
	// Report): Settings' "About Darkroom" shows the one and copies both.
	Version   string
	Report    func() string
	MiniReady func() error // nil when the built-in Darkroom Mini is usable
	// SetServer turns the local server (browser mode, API) on or off; it returns
	// the address it listens on. Provided by app/server.
	SetServer func(on bool) (url string, err error)
	// ServerAPI returns the running local server's OpenAI API base and key
	// ("" when it is off), for the Settings line.
	ServerAPI func() (base, key string)
	// SetServerOrigins gives the running local server the web pages allowed to
	// call its API (server.Server.SetOrigins; nothing when it is off: its next
	// start reads them from the settings).
	SetServerOrigins func([]string) error
	// OpenPage returns the browser URL of an encyclopedia page, starting the local
	// server if needed ("Open in browser").
	OpenPage func(title string) (url string, err error)
	// SamplingDefaults reads the active model's sampler defaults without loading
	// it (Settings shows them before the first generation).
	SamplingDefaults func() (engine.Sampling, error)
	GPU              GPUSupport // installs GPU support (gpu.go); nil: no card
}

// SettingsScreen edits the typed settings.
type SettingsScreen struct {
	app      *App
	backend  *widget.RadioGroup
	detected *widget.Label
	fields   map[string]*widget.Entry
	seed     *widget.Entry
	// gpuLayers is Values.GPULayers: empty for auto.
	gpuLayers *widget.Entry
	theme     *widget.Select
	advanced  *widget.Accordion // the Backend and Sampling cards, folded
	// textScale is Text size (settings.TextScales, shown as "100%").
	textScale *widget.Select
	server    *widget.Check
	srvLbl    *widget.Label
	// examples are "Copy curl" and "Copy JavaScript" under the server's
	// address while it runs: a chat request to it, with its key
	// (server.Examples); exampleNote says what was copied.
	examples    *fyne.Container
	exampleNote *widget.Label
	port        *widget.Entry
	origins     *widget.Entry // the web pages allowed to call the API (server.ParseOrigins)
	keys        *widget.Label // About's line of the app's keys (App.keysHelp)
	// pagePrompt and deskPrompt are the Demo prompts card's boxes (promptsCard).
	pagePrompt, deskPrompt *widget.Entry
	srvURL                 string // where the local server listens, "" when it is off
	errLbl                 *widget.Label
	content                fyne.CanvasObject

	// undoReset brings back the sampling values "Reset to model defaults"
	// cleared (resetFrom), until one is edited again.
	undoReset *widget.Button
	resetFrom settings.Sampling

	copyReport *widget.Button // "Copy system report" (aboutCard)
	reportNote *widget.Label  // says the report was copied
}

func newSettingsScreen(a *App) *SettingsScreen {
	s := &SettingsScreen{app: a, fields: map[string]*widget.Entry{}}
	v := a.deps.Settings.Get()
	s.errLbl = widget.NewLabel("")
	s.errLbl.Importance = widget.DangerImportance
	s.errLbl.Wrapping = fyne.TextWrapWord
	s.errLbl.Hide()

	s.backend = widget.NewRadioGroup(settings.BackendChoices, func(b string) {
		if b == "" || b == a.deps.Settings.Get().Backend {
			return
		}
		s.save(func(v *settings.Values) { v.Backend = b })
		a.modelChanged() // the next generation loads the model on the new backend
	})
	s.backend.Horizontal = true
	s.backend.SetSelected(v.Backend)
	s.detected = widget.NewLabel("Detected: " + call(a.deps.System.Backends, "unknown"))
	s.detected.Wrapping = fyne.TextWrapWord
	s.gpuLayers = widget.NewEntry()
	noScroller(s.gpuLayers)
	s.gpuLayers.SetPlaceHolder("auto: as many as fit")
	if v.GPULayers > 0 {
		s.gpuLayers.SetText(strconv.Itoa(v.GPULayers))
	}
	s.gpuLayers.Validator = func(t string) error {
		if _, err := gpuLayers(t); err != nil {
			return err
		}
		return nil
	}
	s.gpuLayers.OnChanged = func(t string) {
		n, err := gpuLayers(t)
		if err != nil || n == a.deps.Settings.Get().GPULayers {
			return
		}
		s.save(func(v *settings.Values) { v.GPULayers = n })
		a.modelChanged() // the next generation loads the model split anew
	}
	layers := widget.NewForm(widget.NewFormItem("GPU layers", s.gpuLayers))
	layers.Items[0].HintText = "of a model too big for the GPU, how many layers run there (the rest on the CPU)"
	backendCard := noteCard("Backend", "auto picks XLA on a supported GPU and the pure-Go backend otherwise",
		container.NewVBox(s.backend, s.detected, layers))

	form := widget.NewForm()
	for _, b := range settings.SamplingBounds {
		e := widget.NewEntry()
		noScroller(e)
		e.Validator = boundValidator(b)
		key := b.Key
		e.OnChanged = func(text string) {
			if e.Validate() != nil {
				return
			}
			x, _ := strconv.ParseFloat(strings.TrimSpace(text), 64)
			if x == s.app.deps.Settings.Get().Sampling.Get(key) {
				return // the field refilled with the value it holds (fillSampling)
			}
			s.undoReset.Hide() // an edit after a reset: the reset is no longer the last change
			s.save(func(v *settings.Values) { v.Sampling.Set(key, x) })
		}
		s.fields[key] = e
		form.Append(b.Label, e)
	}
	s.seed = widget.NewEntry()
	noScroller(s.seed)
	s.seed.SetPlaceHolder("random each time")
	s.seed.Validator = func(t string) error {
		if strings.TrimSpace(t) == "" {
			return nil
		}
		_, err := strconv.ParseUint(strings.TrimSpace(t), 10, 64)
		if err != nil {
			return fmt.Errorf("a whole number, or empty for random")
		}
		return nil
	}
	s.seed.OnChanged = func(t string) {
		if s.seed.Validate() == nil {
			n, _ := strconv.ParseUint(strings.TrimSpace(t), 10, 64)
			s.save(func(v *settings.Values) { v.Seed = n })
		}
	}
	form.Append("Seed", s.seed)
	reset := widget.NewButtonWithIcon("Reset to model defaults", theme.HistoryIcon(), s.ResetSampling)
	s.undoReset = widget.NewButtonWithIcon("Undo", theme.ContentUndoIcon(), s.UndoReset)
	s.undoReset.Hide()
	samplingCard := noteCard("Sampling", "Empty fields use the model's own defaults (shown greyed)",
		container.NewVBox(form, container.NewHBox(reset, s.undoReset)))
	s.fillSampling()

	s.theme = widget.NewSelect(settings.ThemeChoices, func(t string) {
		s.save(func(v *settings.Values) { v.Theme = t })
		a.applyTheme()
	})
	s.theme.SetSelected(v.Theme)
	var sizes []string
	for _, p := range settings.TextScales {
		sizes = append(sizes, scaleLabel(p))
	}
	s.textScale = widget.NewSelect(sizes, func(label string) {
		if p := scaleOf(label); p != s.textScaleInUse() { // (SetSelected calls this too)
			s.app.setTextScale(p)
		}
	})
	s.showTextScale()
	appearance := widget.NewForm(widget.NewFormItem("Theme", s.theme), widget.NewFormItem("Text size", s.textScale))
	themeCard := noteCard("Appearance", "Text size changes everything in the window; "+keyHint("=")+" and "+keyHint("−")+
		" change it on any screen, "+keyHint("0")+" puts it back", appearance)

	s.srvLbl = widget.NewLabel("")
	s.srvLbl.Wrapping = fyne.TextWrapWord
	s.srvLbl.Selectable = true // the address and the API key are there to copy
	s.server = widget.NewCheck("Run the local server (browser mode and OpenAI-compatible API on 127.0.0.1)", nil)
	if a.deps.System.SetServer == nil {
		s.server.Disable()
		s.srvLbl.SetText("The local server is not part of this build.")
	} else {
		s.server.SetChecked(v.ServerEnabled) // started by Run once the app is up
	}
	s.server.OnChanged = s.setServer
	port := widget.NewEntry() // read by the server's next start; Enter moves a running one
	s.port = port
	noScroller(port)
	port.SetPlaceHolder("random free port")
	if v.ServerPort != 0 {
		port.SetText(strconv.Itoa(v.ServerPort))
	}
	port.Validator = boundValidator(settings.ServerPortBound)
	port.OnChanged = func(text string) {
		if port.Validate() == nil {
			n, _ := strconv.Atoi(strings.TrimSpace(text))
			s.save(func(v *settings.Values) { v.ServerPort = n })
			if s.srvURL != "" { // running on the port it started on: say how to move it
				to := fmt.Sprintf("port %d", n)
				if n == 0 {
					to = "a random free port"
				}
				s.srvLbl.SetText("Listening on " + s.srvURL + " (this computer only) — press Enter in the port box to move it to " + to)
			}
		}
	}
	port.OnSubmitted = func(string) { s.moveServer() }
	// Web pages that may call the API from a browser (a demo on its own dev
	// server): at once, without a restart, which would change the API key.
	origins := widget.NewEntry()
	noScroller(origins)
	origins.SetPlaceHolder("none (e.g. http://localhost:3000)")
	origins.SetText(strings.Join(v.ServerOrigins, ", "))
	origins.Validator = func(text string) error { _, err := server.ParseOrigins(text); return err }
	origins.OnChanged = func(text string) {
		list, err := server.ParseOrigins(text)
		if err != nil {
			return // the box says why
		}
		s.save(func(v *settings.Values) { v.ServerOrigins = list })
		if set := a.deps.System.SetServerOrigins; set != nil {
			if err := set(list); err != nil {
				s.errLbl.SetText(plainError("allow the web pages", err))
				s.errLbl.Show()
			}
		}
	}
	s.origins = origins
	originsItem := widget.NewFormItem("Web pages that may call the API", origins)
	originsItem.HintText = "Their origins, separated by commas; a page still needs the API key"
	serverCard := widget.NewCard("Local server", "", container.NewVBox(s.server,
		widget.NewForm(widget.NewFormItem(settings.ServerPortBound.Label, port), originsItem), s.srvLbl, s.examplesRow()))

	chatsDir := "not available"
	if a.deps.Chats != nil {
		chatsDir = a.deps.Chats.Dir
	}
	storage := widget.NewLabel("Settings: " + a.deps.Settings.Path() + "\nChats: " + chatsDir +
		"\nModels: see the Library")
	storage.Wrapping = fyne.TextWrapWord
	openErr := widget.NewLabel("") // why a folder did not open
	openErr.Wrapping = fyne.TextWrapWord
	openErr.Importance = widget.DangerImportance
	openErr.Hide()
	showOpenErr := func(msg string) { openErr.SetText(msg); openErr.Show() }
	openSettings := widget.NewButtonWithIcon("Open settings folder", theme.FolderIcon(), func() {
		openErr.Hide()
		a.openFolder(filepath.Dir(a.deps.Settings.Path()), showOpenErr)
	})
	openChats := widget.NewButtonWithIcon("Open chats folder", theme.FolderIcon(), func() {
		openErr.Hide()
		a.openFolder(chatsDir, showOpenErr)
	})
	if a.deps.Chats == nil {
		openChats.Disable()
	}
	storageCard := widget.NewCard("Storage", "", container.NewVBox(storage, container.NewHBox(openSettings, openChats), openErr))

	// What anyone may want first; the backend and the sampler's knobs, which
	// only someone who knows them needs, folded under Advanced (they opened
	// the page: "Backend: auto go xla", then "Entropy bound").
	s.advanced = widget.NewAccordion(widget.NewAccordionItem("Advanced: backend and sampling",
		container.NewVBox(backendCard, samplingCard)))
	s.content = container.NewVScroll(container.NewPadded(container.NewVBox(s.errLbl, themeCard, gpuCard(a, true), serverCard,
		s.promptsCard(), storageCard, s.advanced, s.aboutCard())))
	return s
}

// noScroller removes an entry's own scroller, which would catch the mouse wheel
// meant for the page: the settings hold short numbers.
func noScroller(e *widget.Entry) {
	e.Wrapping = fyne.TextWrapOff
	e.Scroll = fyne.ScrollNone
}

func call(f func() string, fallback string) string {
	if f == nil {
		return fallback
	}
	return f()
}

func boundValidator(b settings.Bound) fyne.StringValidator {
	return func(t string) error {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil
		}
		x, err := strconv.ParseFloat(t, 64)
		if err != nil || (b.Int && x != float64(int64(x))) {
			if b.Int {
				return fmt.Errorf("a whole number")
			}
			return fmt.Errorf("a number")
		}
		if x < b.Min || x > b.Max {
			return fmt.Errorf("between %g and %g", b.Min, b.Max)
		}
		return nil
	}
}

func (s *SettingsScreen) save(fn func(*settings.Values)) {
	if err := s.app.deps.Settings.Update(fn); err != nil {
		s.errLbl.SetText(plainError("save the settings", err))
		s.errLbl.Show()
	}
}

// fillSampling shows the overrides, with the model's defaults as placeholders.
func (s *SettingsScreen) fillSampling() {
	v := s.app.deps.Settings.Get()
	s.showDefaults()
	for _, b := range settings.SamplingBounds {
		e := s.fields[b.Key]
		if x := v.Sampling.Get(b.Key); x != 0 {
			e.SetText(strconv.FormatFloat(x, 'g', -1, 64))
		} else {
			e.SetText("")
		}
	}
	if v.Seed != 0 {
		s.seed.SetText(strconv.FormatUint(v.Seed, 10))
	}
}

// showDefaults writes the active model's defaults, as values, into the empty
// fields' placeholders: the loaded model's, else those its config files give.
func (s *SettingsScreen) showDefaults() {
	var d engine.Sampling
	known, answer := false, 0
	if m := s.app.models.Loaded(); m != nil {
		d, known, answer = m.Info().Defaults, true, m.Info().AnswerTokens
	} else if f := s.app.deps.System.SamplingDefaults; f != nil {
		var err error
		d, err = f()
		known = err == nil
	}
	defaults := settings.Sampling{MaxNewTokens: d.MaxNewTokens, MaxSteps: d.MaxSteps, TMin: d.TMin, TMax: d.TMax,
		EntropyBound: d.EntropyBound, ConfidenceThreshold: d.ConfidenceThreshold, StabilityThreshold: d.StabilityThreshold,
		Temperature: d.Temperature, RepetitionPenalty: d.RepetitionPenalty, Guidance: d.Guidance,
		GuidanceRounds: d.GuidanceRounds, GuidanceInWord: d.GuidanceInWord}
	for _, b := range settings.SamplingBounds {
		hint := "the model's default"
		if known {
			hint = fmt.Sprintf("model default: %g", defaults.Get(b.Key))
			if b.Key == "max_new_tokens" && answer > 0 { // Chat's and the API's answers run longer (ModelInfo.AnswerTokens)
				hint += fmt.Sprintf(" (a page); %d (a chat answer)", answer)
			}
		}
		s.fields[b.Key].SetPlaceHolder(hint)
	}
}

// serverStarted shows that the local server runs (started by "Open in browser")
// at url, without switching it again.
func (s *SettingsScreen) serverStarted(url string) {
	s.server.OnChanged = nil
	s.server.SetChecked(true)
	s.server.OnChanged = s.setServer
	s.srvLbl.Importance = widget.MediumImportance
	s.srvURL = url
	s.srvLbl.SetText(s.listening(url))
	s.showExamples()
}

// listening is the Settings line of a local server listening at url: the
// browser address, and what an API client needs (base and key), to copy.
func (s *SettingsScreen) listening(url string) string {
	line := "Listening on " + url + " (this computer only)"
	if f := s.app.deps.System.ServerAPI; f != nil {
		if base, key := f(); base != "" {
			line += "\nAPI base: " + base
			if key != "" {
				line += " · API key: " + key
			}
		}
	}
	return line
}

// ResetSampling clears every override: the model's defaults apply again.
func (s *SettingsScreen) ResetSampling() {
	was := s.app.deps.Settings.Get().Sampling
	s.save(func(v *settings.Values) { v.Sampling = settings.Sampling{} })
	s.fillSampling()
	if was != (settings.Sampling{}) { // values of the user's to bring back
		s.resetFrom = was
		s.undoReset.SetText(fmt.Sprintf("Undo (bring back %s)", plural.Count(setValues(was), "value", "values")))
		s.undoReset.Show()
	}
}

// UndoReset brings back the sampling values the last reset cleared.
func (s *SettingsScreen) UndoReset() {
	if !s.undoReset.Visible() {
		return
	}
	s.undoReset.Hide()
	was := s.resetFrom
	s.save(func(v *settings.Values) { v.Sampling = was })
	s.fillSampling()
}

// setValues counts the sampling values set (not the model's defaults).
func setValues(v settings.Sampling) int {
	n := 0
	for _, b := range settings.SamplingBounds {
		if v.Get(b.Key) != 0 {
			n++
		}
	}
	return n
}

func (s *SettingsScreen) setServer(on bool) {
	set := s.app.deps.System.SetServer
	if set == nil {
		return
	}
	s.save(func(v *settings.Values) { v.ServerEnabled = on })
	go func() {
		url, err := set(on)
		onUI(func() { s.showServer(on, url, err) })
	}()
}

// moveServer starts the running local server again on the port in the box.
func (s *SettingsScreen) moveServer() {
	set := s.app.deps.System.SetServer
	if set == nil || s.srvURL == "" || s.port.Validate() != nil {
		return
	}
	s.srvLbl.SetText("Moving the server…")
	go func() {
		_, _ = set(false)
		url, err := set(true)
		onUI(func() { s.showServer(true, url, err) })
	}()
}

// showServer shows the local server's state after it was switched on or off.
func (s *SettingsScreen) showServer(on bool, url string, err error) {
	s.srvLbl.Importance = widget.MediumImportance
	s.srvURL = ""
	switch {
	case err != nil:
		s.srvLbl.Importance = widget.DangerImportance
		s.srvLbl.SetText(s.serverProblem(err))
		if on { // nothing listens: a ticked box would say it does (the wish stays saved, for the next start)
			s.server.OnChanged = nil
			s.server.SetChecked(false)
			s.server.OnChanged = s.setServer
		}
	case on:
		s.srvURL = url
		s.srvLbl.SetText(s.listening(url))
	default:
		s.srvLbl.SetText("Off")
	}
	s.showExamples()
}

// serverProblem says why the local server could not be switched, and what to do.
func (s *SettingsScreen) serverProblem(err error) string {
	if !errors.Is(err, server.ErrPortInUse) {
		return plainError("switch the local server", err)
	}
	port := "That port"
	if p := s.app.deps.Settings.Get().ServerPort; p != 0 {
		port = fmt.Sprintf("Port %d", p)
	}
	return port + " is in use by another program (another darkroom serve, or a second Darkroom?): " +
		"choose another port, or leave it empty for a free one, then tick the box again."
}

// applyTheme sets the theme from the settings: the variant (the system's,
// dark or light) and the text size. Fyne redraws every window with it.
func (a *App) applyTheme() {
	if a.fyneApp == nil {
		return
	}
	v := a.deps.Settings.Get()
	t := &appTheme{Theme: theme.DefaultTheme(), scale: v.Scale()}
	switch v.Theme {
	case "dark":
		t.variant = new(fyne.ThemeVariant)
		*t.variant = theme.VariantDark
	case "light":
		t.variant = new(fyne.ThemeVariant)
		*t.variant = theme.VariantLight
	}
	a.fyneApp.Settings().SetTheme(t)
}

// appTheme is the default theme as the settings ask for it: the variant forced
// where variant is set (else the system's), every size multiplied by scale
// (Text size: text, icons, padding and bars alike, as a browser zooms, so that
// a larger text never overflows the boxes drawn for it), and the status
// colours that text uses (Fits, Tight, Won't fit) darkened on the light
// variant, where the default green and orange read at a contrast of about 2:1
// against white.
type appTheme struct {
	fyne.Theme
	variant *fyne.ThemeVariant
	scale   float32
}

func (t *appTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if t.variant != nil {
		v = *t.variant
	}
	if v == theme.VariantLight {
		switch n {
		case theme.ColorNameSuccess:
			return color.NRGBA{R: 0x1b, G: 0x6e, B: 0x20, A: 0xff} // about 6:1 on white
		case theme.ColorNameWarning:
			return color.NRGBA{R: 0x9a, G: 0x4f, B: 0x00, A: 0xff} // about 6:1
		}
	}
	return t.Theme.Color(n, v)
}

func (t *appTheme) Size(n fyne.ThemeSizeName) float32 {
	if t.scale <= 0 {
		return t.Theme.Size(n)
	}
	return t.Theme.Size(n) * t.scale
}

// scaled is a size given in pixels at the default text size (an icon's, a
// dialog's width) at the text size in use.
func scaled(w, h float32) fyne.Size {
	f := theme.Size(theme.SizeNameText) / theme.DefaultTheme().Size(theme.SizeNameText)
	return fyne.NewSize(w*f, h*f)
}

// setTextScale saves a text size (percent; settings.TextScales) and redraws
// the window with it; Settings' Text size shows it.
func (a *App) setTextScale(percent int) {
	a.Settings.save(func(v *settings.Values) { v.TextScale = percent })
	a.applyTheme()
	a.Settings.showTextScale()
	a.Chat.filterList() // the list's rows are as high as their text, measured there
}

// stepTextScale is Ctrl+= (up) and Ctrl+− (down): the next text size.
func (a *App) stepTextScale(up bool) {
	a.setTextScale(settings.StepTextScale(a.deps.Settings.Get().TextScale, up))
}

// showTextScale shows the text size in use in Text size.
func (s *SettingsScreen) showTextScale() {
	s.textScale.SetSelected(scaleLabel(s.textScaleInUse()))
}

// textScaleInUse is the text size in use, in percent.
func (s *SettingsScreen) textScaleInUse() int {
	return int(s.app.deps.Settings.Get().Scale()*100 + 0.5)
}

// scaleLabel is a text size as Text size offers it ("100%").
func scaleLabel(percent int) string { return strconv.Itoa(percent) + "%" }

// scaleOf reads scaleLabel's text back (0 where it is not one).
func scaleOf(label string) int {
	p, _ := strconv.Atoi(strings.TrimSuffix(label, "%"))
	return p
}

// examplesRow is "Copy curl" and "Copy JavaScript": a chat request to the
// running server, with its address and key, to paste into a terminal or a
// demo's page (server.Examples); hidden while the server is off.
func (s *SettingsScreen) examplesRow() fyne.CanvasObject {
	s.exampleNote = widget.NewLabel("")
	s.exampleNote.Wrapping = fyne.TextWrapWord
	copyExample := func(label string, pick func(curl, js string) string) *widget.Button {
		return widget.NewButtonWithIcon(label, theme.ContentCopyIcon(), func() {
			f := s.app.deps.System.ServerAPI
			if f == nil {
				return
			}
			base, key := f()
			if base == "" {
				return
			}
			s.app.fyneApp.Clipboard().SetContent(pick(server.Examples(base, key)))
			s.exampleNote.SetText("Copied: a chat request to this server, with its API key (which changes when the server restarts).")
			s.exampleNote.Show()
		})
	}
	s.examples = container.NewHBox(
		copyExample("Copy curl", func(curl, _ string) string { return curl }),
		copyExample("Copy JavaScript", func(_, js string) string { return js }))
	s.showExamples()
	return container.NewVBox(s.examples, s.exampleNote)
}

// showExamples shows the example buttons while the server runs.
func (s *SettingsScreen) showExamples() {
	s.exampleNote.Hide()
	if s.srvURL != "" {
		s.examples.Show()
	} else {
		s.examples.Hide()
	}
}

// ShowMaxNewTokens opens Settings on Max new tokens, under Advanced, the
// cursor in it ("Allow longer answers" under an answer cut at its length
// limit).
func (s *SettingsScreen) ShowMaxNewTokens() {
	s.app.Show("Settings")
	s.advanced.Open(0)
	e := s.fields["max_new_tokens"]
	if scroll, ok := s.content.(*container.Scroll); ok {
		scrollTo(scroll, e, 40)
	}
	s.app.win.Canvas().Focus(e)
}

// gpuLayers reads the GPU layers field: empty is auto (0), else a whole number from 1
// to settings.MaxGPULayers.
func gpuLayers(t string) (int, error) {
	t = strings.TrimSpace(t)
	if t == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 1 || n > settings.MaxGPULayers {
		return 0, fmt.Errorf("a whole number of layers from 1 to %d, or empty for auto", settings.MaxGPULayers)
	}
	return n, nil
}
