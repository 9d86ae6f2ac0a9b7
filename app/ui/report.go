package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// systemReport is what "Copy system report" puts on the clipboard, for a bug
// report or a question about a slow or CPU-only run: which Darkroom this is,
// what it found on this PC and where it runs (System.Report: hardware, as
// `darkroom hw` prints it), the settings that decide how it runs, the model
// active and loaded, where its files are, and the problems met at start. No
// secret is in it: not the Hugging Face token, nor the local server's key.
func (a *App) systemReport() string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("%s", a.versionLine())
	b.WriteString("\n")
	if a.deps.System.Report != nil {
		b.WriteString(a.deps.System.Report())
	} else {
		line("Hardware: not detected in this build.")
	}
	b.WriteString("\n")
	v := a.deps.Settings.Get()
	layers := "auto"
	if v.GPULayers > 0 {
		layers = fmt.Sprint(v.GPULayers)
	}
	line("Backend setting: %s (GPU layers: %s)", v.Backend, layers)
	line("Active model: %s", a.activeModelName())
	if m := a.models.Loaded(); m != nil {
		info := m.Info()
		line("Loaded: %s on %s", info.Name, orUnknown(info.Backend, "an unknown backend"))
		if info.Fallback != "" {
			line("  %s", info.Fallback)
		}
		if info.FromDisk != "" {
			line("  %s", info.FromDisk)
		}
		if info.Mode.Reason != "" {
			line("  Chat and the API run %s", info.Mode.Reason)
		}
	} else {
		line("Loaded: none yet (a model loads on first use)")
	}
	server := "off"
	if v.ServerEnabled {
		server = "on"
	}
	line("Local server: %s", server)
	line("Settings file: %s", a.deps.Settings.Path())
	if a.deps.Chats != nil {
		line("Chats: %s", a.deps.Chats.Dir)
	}
	if len(a.deps.Problems) > 0 {
		line("Problems at start:")
		for _, p := range a.deps.Problems {
			line("  %s", p)
		}
	}
	if a.deps.LastCrash != "" {
		line("The last run's crash:")
		for _, l := range crashLines(a.deps.LastCrash, 40) {
			line("  %s", l)
		}
	}
	return b.String()
}

func orUnknown(s, unknown string) string {
	if s == "" {
		return unknown
	}
	return s
}

// versionLine is which Darkroom this is (System.Version), as Settings shows it
// and the system report begins.
func (a *App) versionLine() string {
	return orUnknown(a.deps.System.Version, "Darkroom (version unknown)")
}

// aboutCard is Settings' "About Darkroom": the version line, and "Copy system
// report", which puts systemReport on the clipboard and says so under it.
func (s *SettingsScreen) aboutCard() *widget.Card {
	a := s.app
	ver := widget.NewLabel(a.versionLine())
	ver.Wrapping = fyne.TextWrapWord
	ver.Selectable = true
	s.reportNote = widget.NewLabel("")
	s.reportNote.Wrapping = fyne.TextWrapWord
	s.reportNote.Hide()
	s.copyReport = widget.NewButtonWithIcon("Copy system report", theme.ContentCopyIcon(), func() {
		a.fyneApp.Clipboard().SetContent(a.systemReport())
		s.reportNote.SetText(reportCopied)
		s.reportNote.Show()
	})
	s.keys = widget.NewLabel("") // the app's keys, once bound (New)
	s.keys.Wrapping = fyne.TextWrapWord
	return widget.NewCard("About Darkroom", "", container.NewVBox(ver, s.keys, container.NewHBox(s.copyReport), s.reportNote))
}

// reportCopied is what Settings says once the system report is on the clipboard.
const reportCopied = "Copied: this PC, where Darkroom runs and the model in use, to paste into a bug report or a question (no keys or tokens)."
