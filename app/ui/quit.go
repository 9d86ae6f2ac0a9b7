package ui

import (
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
)

// Closing the window.
//
// A download of a 19 GB model, a conversion, a move of the models folder or the
// GPU support's download could run for an hour; closing the window ended them
// without a word. Now the window asks first when one runs, saying what stops and
// what becomes of it (a download goes on from its partial files when resumed; a
// conversion starts over), with "Keep running" the default. The window's size is
// kept for the next start.

// requestClose is the window's close button (SetCloseIntercept): it closes, or
// asks first while long work runs.
func (a *App) requestClose() {
	work := a.runningWork()
	if len(work) == 0 {
		a.quit()
		return
	}
	msg := widget.NewLabel("Closing Darkroom stops:\n• " + strings.Join(work, "\n• "))
	msg.Wrapping = fyne.TextWrapWord
	d := dialog.NewCustomConfirm("Quit Darkroom?", "Quit", "Keep running", msg, func(quit bool) {
		if quit {
			a.quit()
		}
	}, a.win)
	d.SetConfirmImportance(widget.DangerImportance)
	d.Resize(fyne.NewSize(scaled(520, 0).Width, d.MinSize().Height))
	d.Show()
}

// quit keeps the window's size for the next start and closes the window (the
// app then ends).
func (a *App) quit() {
	if s := a.win.Canvas().Size(); s.Width >= smallestWindowSize.Width && s.Height >= smallestWindowSize.Height {
		a.deps.Settings.Update(func(v *settings.Values) { v.WindowWidth, v.WindowHeight = s.Width, s.Height })
	}
	if a.closeHook != nil {
		a.closeHook()
		return
	}
	a.win.Close()
}

// runningWork is what closing the window would stop, one line each: the
// Library's downloads and conversions and its move of the models folder, and
// the GPU support's install.
func (a *App) runningWork() []string {
	var work []string
	l := a.Library
	for name, ev := range l.live {
		title := name
		if c := l.byName[name]; c != nil {
			title = c.entry.Title
		}
		switch ev.State {
		case "downloading", "verifying":
			work = append(work, title+": downloading, "+formatBytes(ev.Done)+" of "+formatBytes(ev.Total)+
				" (Resume in the Library goes on from there)")
		case "converting":
			work = append(work, title+": converting on this PC (it starts over next time)")
		}
	}
	sort.Strings(work) // l.live is a map
	if l.stopFn != nil {
		work = append(work, "moving the models folder (every model stays where it was; moving again goes on from what was copied)")
	}
	if a.gpuWork != nil {
		work = append(work, "GPU support: "+a.gpuWork()+" (installing again goes on from what was downloaded)")
	}
	return work
}

// savedWindowSize is the size the window had when it was last closed, where it
// is one the screens fit (else defaultWindowSize).
func savedWindowSize(w, h float32) fyne.Size {
	if w < smallestWindowSize.Width || h < smallestWindowSize.Height || w > 16384 || h > 16384 {
		return defaultWindowSize
	}
	return fyne.NewSize(w, h)
}
