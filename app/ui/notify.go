package ui

import (
	"fyne.io/fyne/v2"
)

// Long work ends while the user looks elsewhere: a 17–52 GB download runs for
// an hour, a conversion for minutes, and the user plays a game meanwhile. The
// desktop's notifications say when it has ended — unless Darkroom is in front
// on the screen that shows it, which says so itself.

// watchForeground keeps a.front: whether Darkroom's window is in front
// (Fyne's lifecycle; true until it says otherwise).
func (a *App) watchForeground() {
	a.front = true
	if a.fyneApp == nil {
		return
	}
	lc := a.fyneApp.Lifecycle()
	lc.SetOnEnteredForeground(func() { a.front = true })
	lc.SetOnExitedForeground(func() { a.front = false })
}

// notify sends a desktop notification, unless the window is in front showing
// screen, where the news is already on screen. Call on the UI goroutine.
func (a *App) notify(screen, title, content string) {
	if a.fyneApp == nil || (a.front && a.shown() == screen) {
		return
	}
	a.fyneApp.SendNotification(fyne.NewNotification(title, content))
}

// notifyEnded tells of a download or a conversion that ended (ev, a final
// event of the model titled title); was is the state before it — a
// conversion's end follows "converting". One the user cancelled is not news.
func (l *LibraryScreen) notifyEnded(ev DownloadEvent, was, title string) {
	converting := was == "converting"
	switch {
	case ev.State == "done" && converting:
		l.app.notify("Library", "Conversion finished", title+" is converted and ready to use.")
	case ev.State == "done":
		l.app.notify("Library", "Download finished", title+" is downloaded and ready to use.")
	case ev.State == "failed" && ev.Err != nil:
		what, doing := "Download failed", "download "+title
		if converting {
			what, doing = "Conversion failed", "convert "+title
		}
		l.app.notify("Library", what, libraryProblem(doing, ev.Err))
	}
}
