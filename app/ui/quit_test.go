package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
)

// TestQuitAsksWhileWorkRuns: closing the window while a download, a conversion, a
// move of the models folder or GPU support's install runs asks first, naming each
// and what becomes of it; "Keep running" keeps the window, "Quit" closes it. With
// nothing running it closes at once. Either way the window's size is kept for the
// next start. Closing had ended an hour's download without a word.
func TestQuitAsksWhileWorkRuns(t *testing.T) {
	a := newTestApp(t, &fakeModel{}, "")
	closed := 0
	asUI(func() {
		a.closeHook = func() { closed++ }
		a.win.Resize(fyne.NewSize(1000, 700))
	})

	// Work running: a download, a conversion, GPU support.
	asUI(func() {
		a.Library.live["big"] = DownloadEvent{Name: "big", State: "downloading", Done: 8 << 30, Total: 19 << 30}
		a.Library.live["conv"] = DownloadEvent{Name: "conv", State: "converting"}
		a.Library.live["paused"] = DownloadEvent{Name: "paused", State: "paused", Done: 1, Total: 2}
		a.gpuWork = func() string { return "1.2 GB of 3.4 GB" }
		a.requestClose()
	})
	keep := dialogButton(a.win, "Keep running")
	if keep == nil || dialogButton(a.win, "Quit") == nil {
		t.Fatal("closing with a download running did not ask")
	}
	text := shownText(uiRead(func() fyne.CanvasObject { return a.win.Canvas().Overlays().Top() }))
	for _, want := range []string{
		"big: downloading, 8.6 GB of 20.4 GB (Resume in the Library goes on from there)",
		"conv: converting on this PC (it starts over next time)",
		"GPU support: 1.2 GB of 3.4 GB",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the question does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "paused") {
		t.Errorf("a paused download is named as stopping:\n%s", text)
	}
	tap(keep)
	if closed != 0 || a.deps.Settings.Get().WindowWidth != 0 {
		t.Fatalf("Keep running: closed %d, size kept %v", closed, a.deps.Settings.Get().WindowWidth)
	}

	asUI(a.requestClose)
	tap(dialogButton(a.win, "Quit"))
	if closed != 1 {
		t.Fatalf("Quit: closed %d", closed)
	}
	if v := a.deps.Settings.Get(); v.WindowWidth != 1000 || v.WindowHeight != 700 {
		t.Errorf("size kept %vx%v, want 1000x700", v.WindowWidth, v.WindowHeight)
	}
	if got := savedWindowSize(1000, 700); got != fyne.NewSize(1000, 700) {
		t.Errorf("opens at %v", got)
	}

	// Nothing running: it closes without asking.
	b := newTestApp(t, &fakeModel{}, "")
	bClosed := false
	asUI(func() {
		b.closeHook = func() { bClosed = true }
		b.requestClose()
	})
	if !bClosed || uiRead(func() bool { return b.win.Canvas().Overlays().Top() != nil }) {
		t.Errorf("with nothing running: closed %v, a dialog up", bClosed)
	}
}

// TestSavedWindowSize: a size the screens do not fit, or none, opens at the
// default.
func TestSavedWindowSize(t *testing.T) {
	for _, c := range []struct{ w, h float32 }{{0, 0}, {640, 480}, {1200, 500}, {1e6, 800}} {
		if got := savedWindowSize(c.w, c.h); got != defaultWindowSize {
			t.Errorf("savedWindowSize(%v, %v) = %v, want the default", c.w, c.h, got)
		}
	}
	if got := savedWindowSize(1600, 1000); got != fyne.NewSize(1600, 1000) {
		t.Errorf("savedWindowSize(1600, 1000) = %v", got)
	}
}

// TestKeysListed: Settings' About lists every key the app binds, with what it
// does, and Escape: the keys were in the README alone.
func TestKeysListed(t *testing.T) {
	a := newTestApp(t, &fakeModel{}, "")
	got := uiRead(func() string { return a.Settings.keys.Text })
	if n := strings.Count(got, " · ") + 1; n != len(a.keys)+1 {
		t.Errorf("%d keys listed, the app binds %d and Escape: %q", n, len(a.keys), got)
	}
	for _, want := range []string{"Keys: Alt+← back · Alt+→ forward · ", keyHint("F") + " search the chats", "Esc stop"} {
		if !strings.Contains(got, want) {
			t.Errorf("the keys line %q lacks %q", got, want)
		}
	}
}
