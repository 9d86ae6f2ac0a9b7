package ui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
)

func TestFirstRunThenEncyclopedia(t *testing.T) {
	// The first-run card and the model notice name what the card says the Mini was
	// trained on, so a shipped Mini's sources reach the screen with no code edit.
	was := readMiniCard
	readMiniCard = func() (assets.MiniCard, error) { return assets.MiniCard{TrainedOn: "the Test Dictionary"}, nil }
	defer func() { readMiniCard = was }()
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	fa := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	asUI(func() { w.Resize(fyne.NewSize(1000, 800)) })
	a := newApp(fa, w, Deps{Settings: st, Loader: LoaderFunc(func(context.Context) (Model, error) { return &fakeModel{answers: wikiAnswers}, nil }),
		System: System{Hardware: func() []string { return []string{"GPU: Test GPU, 24 GB VRAM"} }, MiniReady: func() error { return nil }}})
	defer a.shutdown()
	var texts []string
	var open *widget.Button
	for _, o := range test.LaidOutObjects(w.Content()) {
		switch x := o.(type) {
		case *widget.Label:
			texts = append(texts, x.Text)
		case *widget.Button:
			if x.Text == "Open the Encyclopedia" {
				open = x
			}
		}
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "Test GPU") || !strings.Contains(all, "Darkroom Mini is built in and ready") ||
		!strings.Contains(all, "encyclopedia (the Test Dictionary) that runs") {
		t.Errorf("first-run screen says:\n%s", all)
	}
	if n := a.noticeText(); !strings.Contains(n, "encyclopedia (the Test Dictionary) that runs") {
		t.Errorf("model notice: %q", n)
	}
	if open == nil {
		t.Fatal("no way into the app")
	}
	tap(open)
	if a.tabs.Selected().Text != "Encyclopedia" || w.Content().(*fyne.Container).Objects[0] != a.tabs {
		t.Error("not on the Encyclopedia")
	}
	if !st.Get().FirstRunDone {
		t.Error("first run not remembered")
	}
}

func TestSettingsResetToModelDefaults(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	s := a.Settings
	s.ResetSampling()
	if s.undoReset.Visible() {
		t.Error("a reset with no values of the user's offers Undo")
	}
	typeText(s.fields["max_steps"], "12")
	typeText(s.fields["t_min"], "0.3")
	if got := a.deps.Settings.Get().Sampling; got.MaxSteps != 12 || got.TMin != 0.3 {
		t.Fatalf("typed values not saved: %+v", got)
	}
	if a.sampling().MaxSteps != 12 {
		t.Error("generation does not use the setting")
	}
	s.fields["max_steps"].SetText("9999") // out of bounds: not saved
	if a.deps.Settings.Get().Sampling.MaxSteps != 12 {
		t.Error("out-of-range value saved")
	}
	asUI(func() { a.Encyclopedia.Navigate("Unix") }) // loads the model, so its defaults are known
	a.Encyclopedia.run.Wait()
	s.ResetSampling()
	if got := a.deps.Settings.Get().Sampling; got != (settings.Sampling{}) {
		t.Errorf("after reset %+v", got)
	}
	if s.fields["max_steps"].Text != "" || !strings.Contains(s.fields["max_steps"].PlaceHolder, "4") {
		t.Errorf("field %q placeholder %q", s.fields["max_steps"].Text, s.fields["max_steps"].PlaceHolder)
	}
	// Undo brings the user's values back; an edit after a reset takes the offer away.
	if !s.undoReset.Visible() || s.undoReset.Text != "Undo (bring back 2 values)" {
		t.Errorf("after the reset: undo shown %v, %q", s.undoReset.Visible(), s.undoReset.Text)
	}
	tap(s.undoReset)
	if got := a.deps.Settings.Get().Sampling; got.MaxSteps != 12 || got.TMin != 0.3 || s.fields["max_steps"].Text != "12" || s.undoReset.Visible() {
		t.Errorf("after Undo: %+v, field %q, undo shown %v", got, s.fields["max_steps"].Text, s.undoReset.Visible())
	}
	s.ResetSampling()
	typeText(s.fields["t_max"], "0.9")
	if s.undoReset.Visible() {
		t.Error("an edit after the reset left Undo offered")
	}
	s.ResetSampling()
	s.ResetSampling() // nothing more cleared: the offer is the last reset's
	tap(s.undoReset)
	if got := a.deps.Settings.Get().Sampling; got.TMax != 0.9 || got.MaxSteps != 0 {
		t.Errorf("Undo after a second reset: %+v; want t_max 0.9 alone back", got)
	}
	s.theme.SetSelected("light")
	if a.deps.Settings.Get().Theme != "light" {
		t.Error("theme not saved")
	}
}

func TestServerToggleUsesTheHook(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	var calls []bool
	done := make(chan struct{}, 4)
	fa := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	a := newApp(fa, w, Deps{Settings: st, System: System{SetServer: func(on bool) (string, error) {
		calls = append(calls, on)
		done <- struct{}{}
		return "http://127.0.0.1:4242/?token=x", nil
	}}})
	defer a.shutdown()
	tap(a.Settings.server)
	<-done
	waitFor(t, "the address", func() bool {
		return strings.Contains(uiRead(func() string { return a.Settings.srvLbl.Text }), "127.0.0.1:4242")
	})
	if !st.Get().ServerEnabled || len(calls) != 1 || !calls[0] {
		t.Errorf("calls %v, saved %v", calls, st.Get().ServerEnabled)
	}
	tap(a.Settings.server)
	<-done
	if st.Get().ServerEnabled || len(calls) != 2 || calls[1] {
		t.Errorf("calls %v, saved %v", calls, st.Get().ServerEnabled)
	}
}

// TestNoDimText: no text shown on a screen is drawn in the theme's disabled
// colour (widget.LowImportance), which reads at about 1.6:1 on the dark
// background: the Desktop's description and the last click, the Library's model
// notes and the GPU card's note could hardly be read.
func TestNoDimText(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, t.TempDir())
	for _, tab := range []string{"Encyclopedia", "Desktop", "Chat", "Race", "Library", "Settings"} {
		asUI(func() { a.Show(tab) })
		var dim []string
		asUI(func() {
			for _, o := range test.LaidOutObjects(a.win.Content()) {
				if l, ok := o.(*widget.Label); ok && l.Visible() && strings.TrimSpace(l.Text) != "" && l.Importance == widget.LowImportance {
					dim = append(dim, l.Text)
				}
			}
		})
		for _, s := range dim {
			t.Errorf("%s: %q is drawn in the disabled colour", tab, s)
		}
	}
}
