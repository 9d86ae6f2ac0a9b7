package ui

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/app/ui/internal/tiny"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
)

// TestSettingsShowsDefaultValuesBeforeLoading: before any generation loaded the
// model, the empty fields show its defaults as values ("model default: 0.7"),
// read from its config; they used to say only "model default".
func TestSettingsShowsDefaultValuesBeforeLoading(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	a.deps.System.SamplingDefaults = func() (engine.Sampling, error) {
		return engine.Sampling{MaxSteps: 12, TMax: 0.7, Temperature: 0}, nil
	}
	asUI(func() { a.Show("Settings") })
	for key, want := range map[string]string{"max_steps": "model default: 12", "t_max": "model default: 0.7", "temperature": "model default: 0"} {
		if got := a.Settings.fields[key].PlaceHolder; got != want {
			t.Errorf("%s: placeholder %q, want %q", key, got, want)
		}
	}
}

// TestSamplingDefaultsReadTheActiveModelsConfig: the app's defaults hook reads
// the model's generation config without loading the model.
func TestSamplingDefaultsReadTheActiveModelsConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := tiny.Write(dir); err != nil {
		t.Fatal(err)
	}
	t.Setenv(modelEnv, dir)
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := samplingDefaults(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := engine.SamplingDefaults(cfg.Generation); !reflect.DeepEqual(got, want) || got.MaxSteps == 0 {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
}

// TestSettingsWheelScrollsThePage: the mouse wheel over a field scrolls the
// Settings page (each entry's own scroller used to swallow it).
func TestSettingsWheelScrollsThePage(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	asUI(func() {
		a.win.Resize(fyne.NewSize(1000, 500))
		a.Show("Settings")
	})
	page := a.Settings.content.(*container.Scroll)
	asUI(func() { a.Settings.advanced.Open(0) })                  // the sampling fields are under Advanced
	for _, key := range []string{"max_new_tokens", "max_steps"} { // the first fields
		e := a.Settings.fields[key]
		var before float32
		asUI(func() {
			page.ScrollToTop()
			top := fyne.CurrentApp().Driver().AbsolutePositionForObject(e).Y - fyne.CurrentApp().Driver().AbsolutePositionForObject(page).Y
			page.Offset.Y = top - 100 // the field on screen, with room to scroll on
			page.Refresh()
			before = page.Offset.Y
			pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(e).Add(fyne.NewPos(10, e.Size().Height/2))
			test.Scroll(a.win.Canvas(), pos, 0, -60)
		})
		if page.Offset.Y <= before {
			t.Errorf("the wheel over the %s field did not scroll the page (offset %.0f, before %.0f)", key, page.Offset.Y, before)
		}
	}
}

// TestLightThemeStatusColoursAreReadable: the light theme's "Fits" green and
// "Tight" orange read at a contrast of at least 4.5:1 (WCAG AA) on its background.
func TestLightThemeStatusColoursAreReadable(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true; v.Theme = "light" })
	fa := test.NewTempApp(t)
	a := newApp(fa, test.NewTempWindow(t, nil), Deps{Settings: st,
		Loader: LoaderFunc(func(context.Context) (Model, error) { return &fakeModel{answers: wikiAnswers}, nil })})
	defer a.shutdown()
	th := fa.Settings().Theme()
	bg := th.Color(theme.ColorNameBackground, theme.VariantLight)
	for _, n := range []fyne.ThemeColorName{theme.ColorNameSuccess, theme.ColorNameWarning} {
		if c := contrast(th.Color(n, theme.VariantLight), bg); c < 4.5 {
			t.Errorf("%s on the light background: contrast %.1f:1", n, c)
		}
	}
}

// contrast is the WCAG contrast ratio of two colours.
func contrast(a, b color.Color) float64 {
	lum := func(c color.Color) float64 {
		r, g, b, _ := c.RGBA()
		lin := func(v uint32) float64 {
			x := float64(v) / 0xffff
			if x <= 0.03928 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// noBrowser is an app whose OpenURL fails, as on a machine without a browser.
type noBrowser struct{ fyne.App }

func (noBrowser) OpenURL(*url.URL) error { return errors.New("xdg-open: no method available") }

// TestOpenInBrowserShowsTheAddress: "Open in browser" that starts the local
// server ticks "Run the local server"; when no browser opens it says so, and
// the page's address is shown either way, to copy.
func TestOpenInBrowserShowsTheAddress(t *testing.T) {
	const link = "http://127.0.0.1:4242/wiki/Unix?token=abc"
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	fa := test.NewTempApp(t)
	a := newApp(fa, test.NewTempWindow(t, nil), Deps{Settings: st, System: System{
		OpenPage:  func(string) (string, error) { return link, nil },
		SetServer: func(bool) (string, error) { return "http://127.0.0.1:4242", nil },
	}})
	defer a.shutdown()
	a.fyneApp = noBrowser{fa}
	e := a.Encyclopedia
	asUI(e.openInBrowser)
	waitFor(t, "the browser line", func() bool {
		uiMu.Lock()
		defer uiMu.Unlock()
		return e.browserBox.Visible()
	})
	got := shownText(e.content)
	if !strings.Contains(got, "Could not open a browser") || e.browserURL.Text != link {
		t.Errorf("screen says:\n%s\naddress %q", got, e.browserURL.Text)
	}
	var copyB *widget.Button
	walkObjects(e.browserBox, func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Copy" {
			copyB = b
		}
	})
	tap(copyB)
	if got := fa.Clipboard().Content(); got != link {
		t.Errorf("copied %q", got)
	}
	if !a.Settings.server.Checked || !strings.Contains(a.Settings.srvLbl.Text, "127.0.0.1:4242") {
		t.Errorf("Settings: server checked %v, %q", a.Settings.server.Checked, a.Settings.srvLbl.Text)
	}
}

// TestSettingsRepetitionPenalty: the AR repetition penalty sits beside the AR
// temperature, shows the model's default (its repetition_penalty) while empty, and
// a typed value reaches the generation's Sampling; an out-of-range one is not saved.
func TestSettingsRepetitionPenalty(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	a.deps.System.SamplingDefaults = func() (engine.Sampling, error) {
		return engine.Sampling{MaxSteps: 12, RepetitionPenalty: 1.2}, nil
	}
	asUI(func() { a.Show("Settings") })
	keys := make([]string, len(settings.SamplingBounds))
	for i, b := range settings.SamplingBounds {
		keys[i] = b.Key
	}
	if i := slices.Index(keys, "temperature"); i < 0 || i+1 >= len(keys) || keys[i+1] != "repetition_penalty" {
		t.Errorf("sampling fields %v: want repetition_penalty right after temperature", keys)
	}
	e := a.Settings.fields["repetition_penalty"]
	if e == nil {
		t.Fatal("no repetition penalty field")
	}
	if got := e.PlaceHolder; got != "model default: 1.2" {
		t.Errorf("placeholder %q, want the model's default", got)
	}
	typeText(e, "1.3")
	if got := a.deps.Settings.Get().Sampling.RepetitionPenalty; got != 1.3 || a.sampling().RepetitionPenalty != 1.3 {
		t.Errorf("typed 1.3: saved %v, generation uses %v", got, a.sampling().RepetitionPenalty)
	}
	asUI(func() { e.SetText("5") }) // out of bounds: not saved
	if got := a.deps.Settings.Get().Sampling.RepetitionPenalty; got != 1.3 {
		t.Errorf("out-of-range 5 saved as %v", got)
	}
}

// TestLocalServerPortInUseSaysWhatToDo: turning the local server on where its
// port is taken says so in red, with what to do, and leaves the box unticked,
// since nothing listens; it said, in the grey of a status line and with the box
// ticked, 'Could not switch the local server: server: 127.0.0.1:8797: another
// program is using that port (…)'. (The wish stays saved: the next start tries
// again.)
func TestLocalServerPortInUseSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true; v.ServerPort = 8797 })
	a := newApp(test.NewTempApp(t), test.NewTempWindow(t, nil), Deps{Settings: st, System: System{
		SetServer: func(on bool) (string, error) {
			return "", fmt.Errorf("server: 127.0.0.1:8797: %w", server.ErrPortInUse)
		},
	}})
	defer a.shutdown()
	s := a.Settings
	asUI(func() { s.server.SetChecked(true) })
	waitFor(t, "the server's answer", func() bool { return uiRead(func() string { return s.srvLbl.Text }) != "" })
	want := "Port 8797 is in use by another program (another darkroom serve, or a second Darkroom?): " +
		"choose another port, or leave it empty for a free one, then tick the box again."
	uiMu.Lock()
	defer uiMu.Unlock()
	if s.srvLbl.Text != want || s.srvLbl.Importance != widget.DangerImportance || s.server.Checked {
		t.Errorf("port in use: %q (importance %v), box ticked %v\nwant %q in red, the box unticked",
			s.srvLbl.Text, s.srvLbl.Importance, s.server.Checked, want)
	}
}

// TestLocalServerPortMovesOnEnter: a port typed while the local server runs
// says how to move it there, and Enter in the port box moves it (stopped, then
// started on the new port); the port was only 'read by the server's next start',
// so a typed port did nothing and the line kept saying the old address.
func TestLocalServerPortMovesOnEnter(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	var mu sync.Mutex
	var calls []string
	a := newApp(test.NewTempApp(t), test.NewTempWindow(t, nil), Deps{Settings: st, System: System{
		SetServer: func(on bool) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			port := st.Get().ServerPort
			calls = append(calls, fmt.Sprintf("%v %d", on, port))
			return fmt.Sprintf("http://127.0.0.1:%d/", port), nil
		},
	}})
	defer a.shutdown()
	s := a.Settings
	asUI(func() { s.server.SetChecked(true) })
	label := func() string { return uiRead(func() string { return s.srvLbl.Text }) }
	waitFor(t, "the server on", func() bool { return strings.HasPrefix(label(), "Listening on") })
	typeText(s.port, "8797")
	if got, want := label(), "Listening on http://127.0.0.1:0/ (this computer only) — press Enter in the port box to move it to port 8797"; got != want {
		t.Errorf("port typed: %q, want %q", got, want)
	}
	asUI(func() { s.port.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn}) })
	waitFor(t, "the server moved", func() bool { return label() == "Listening on http://127.0.0.1:8797/ (this computer only)" })
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"true 0", "false 8797", "true 8797"}; !slices.Equal(calls, want) {
		t.Errorf("server switched %v, want %v", calls, want)
	}
}

// TestLocalServerShowsTheAPI: with the local server on, Settings gives what an
// API client needs — the API base and its key — in a line that can be selected
// and copied; it gave only the browser address (the key inside it as ?token=…),
// in a label nothing could be copied from.
func TestLocalServerShowsTheAPI(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	a := newApp(test.NewTempApp(t), test.NewTempWindow(t, nil), Deps{Settings: st, System: System{
		SetServer: func(on bool) (string, error) { return "http://darkroom-ab.localhost:4242/?token=k3y", nil },
		ServerAPI: func() (string, string) { return "http://127.0.0.1:4242/v1", "k3y" },
	}})
	defer a.shutdown()
	s := a.Settings
	asUI(func() { s.server.SetChecked(true) })
	want := "Listening on http://darkroom-ab.localhost:4242/?token=k3y (this computer only)\nAPI base: http://127.0.0.1:4242/v1 · API key: k3y"
	waitFor(t, "the server on", func() bool { return uiRead(func() string { return s.srvLbl.Text }) == want })
	if !s.srvLbl.Selectable {
		t.Error("the server's line cannot be selected, to copy the key")
	}
	// A request to copy, for a terminal or a demo's page, with the address and key.
	if !uiRead(s.examples.Visible) {
		t.Fatal("no example requests while the server runs")
	}
	for _, o := range s.examples.Objects {
		b := o.(*widget.Button)
		tap(b)
		got := a.fyneApp.Clipboard().Content()
		if !strings.Contains(got, "http://127.0.0.1:4242/v1/chat/completions") || !strings.Contains(got, "Bearer k3y") {
			t.Errorf("%s copied %q", b.Text, got)
		}
	}
	if note := uiRead(func() string { return s.exampleNote.Text }); !strings.HasPrefix(note, "Copied: a chat request") {
		t.Errorf("after a copy: %q", note)
	}
	asUI(func() { s.server.SetChecked(false) })
	waitFor(t, "the server off", func() bool { return uiRead(func() string { return s.srvLbl.Text }) == "Off" })
	if uiRead(s.examples.Visible) {
		t.Error("example requests offered for a server that is off")
	}
}

// TestSettingsGPULayers: Settings' GPU layers field (empty: auto) saves a whole
// number of layers and has the model loaded again with it; anything else is refused
// with what to type, and not saved; emptying it is auto again.
func TestSettingsGPULayers(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	loads := 0
	a.deps.Loader = LoaderFunc(func(context.Context) (Model, error) { loads++; return a.model, nil })
	a.models.loader = a.deps.Loader
	asUI(func() { a.Show("Settings") })
	e := a.Settings.gpuLayers
	if e.Text != "" || e.PlaceHolder != "auto: as many as fit" {
		t.Fatalf("GPU layers %q, placeholder %q; want empty, auto", e.Text, e.PlaceHolder)
	}
	if _, err := a.models.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	typeText(e, "16")
	if got := a.deps.Settings.Get().GPULayers; got != 16 {
		t.Errorf("typed 16: saved %d", got)
	}
	if _, err := a.models.Get(context.Background()); err != nil || loads != 2 {
		t.Errorf("after the change: %d loads (%v), want the model loaded again", loads, err)
	}
	for _, bad := range []string{"abc", "0", "-2", "1001"} {
		asUI(func() { e.SetText(bad) })
		if err := e.Validate(); err == nil || !strings.Contains(err.Error(), "or empty for auto") {
			t.Errorf("%q: %v", bad, err)
		}
		if got := a.deps.Settings.Get().GPULayers; got != 16 {
			t.Errorf("%q saved as %d", bad, got)
		}
	}
	asUI(func() { e.SetText("") })
	if got := a.deps.Settings.Get().GPULayers; got != 0 {
		t.Errorf("emptied: saved %d, want 0 (auto)", got)
	}
}
