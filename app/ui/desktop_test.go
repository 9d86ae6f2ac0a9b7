package ui

import (
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
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
