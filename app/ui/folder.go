package ui

import (
	"net/url"

	"fyne.io/fyne/v2/storage"
)

// openFolder opens dir in the system's file manager (the desktop's handler for a
// file: URL, as Fyne opens links), or says why it could not through show.
func (a *App) openFolder(dir string, show func(string)) {
	u, err := url.Parse(storage.NewFileURI(dir).String())
	if err == nil {
		err = a.open(u)
	}
	if err != nil {
		show(plainError("open the folder "+dir, err))
	}
}

// open opens u with the desktop's handler for it: a web page in the browser, a
// folder in the file manager.
func (a *App) open(u *url.URL) error {
	if a.openURL != nil {
		return a.openURL(u)
	}
	return a.fyneApp.OpenURL(u)
}
