package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
)

// TestCopySystemReport: "Copy system report" puts on the clipboard which
// Darkroom this is, what hardware detection found, the backend setting, the
// model active and loaded and where the files are — and says it did; never the
// Hugging Face token.
func TestCopySystemReport(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	const token = "hf_secretsecretsecret"
	if err := a.deps.Settings.Update(func(v *settings.Values) { v.HFToken = token }); err != nil {
		t.Fatal(err)
	}
	a.deps.System.Version = "Darkroom 9.9.9 (build 7, go1.26.8, linux/amd64)"
	a.deps.System.Report = func() string { return "No NVIDIA GPU found, so Darkroom runs on the CPU.\nBackend: go (cpu)\n" }
	card := (&SettingsScreen{app: a.App}).aboutCard() // the System fields set above
	copyBtn := findCardButton(t, card, "Copy system report")
	copied := func() string { return uiRead(func() string { return a.fyneApp.Clipboard().Content() }) }

	test.Tap(copyBtn)
	got := copied()
	for _, want := range []string{"Darkroom 9.9.9 (build 7", "No NVIDIA GPU found", "Backend: go (cpu)", "Backend setting: auto (GPU layers: auto)",
		"Active model: Darkroom Mini", "Loaded: none yet", "Settings file: " + a.deps.Settings.Path(), "Chats: "} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, token) {
		t.Errorf("the report holds the Hugging Face token:\n%s", got)
	}
	labels, _ := cardTexts(card)
	if !strings.Contains(strings.Join(labels, "\n"), reportCopied) {
		t.Errorf("after the copy the card says %q; want %q", labels, reportCopied)
	}

	asUI(func() { a.Encyclopedia.Navigate("Unix") })
	a.Encyclopedia.run.Wait()
	test.Tap(copyBtn)
	if got := copied(); !strings.Contains(got, "Loaded: Darkroom Mini on fake") {
		t.Errorf("once the model is loaded, the report lacks it:\n%s", got)
	}
}
