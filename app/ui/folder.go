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
		err = a.openURL(u)
	}
	if err != nil {
		show(plainError("open the folder "+dir, err))
	}
}
