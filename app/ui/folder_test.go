package ui

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// TestOpenFolders: the Library's Open beside the models folder, and Settings'
// "Open settings folder" and "Open chats folder", open those folders in the
// file manager (a file: URL to the desktop's handler); one that cannot be opened
// says so beside its buttons.
func TestOpenFolders(t *testing.T) {
	a, _ := libraryApp(t, "http://127.0.0.1:1", download.Options{}, hw.Info{RAMTotal: 16 << 30})
	var opened []string
	fail := error(nil)
	asUI(func() {
		a.openURL = func(u *url.URL) error {
			opened = append(opened, u.String())
			return fail
		}
	})
	waitFor(t, "the models folder", func() bool { return uiRead(func() string { return a.Library.storeDir }) != "" })
	tap(buttonOnScreen(t, a.Library.content, "Open"))
	want := storage.NewFileURI(uiRead(func() string { return a.Library.storeDir })).String()
	if len(opened) != 1 || opened[0] != want {
		t.Fatalf("Library's Open opened %q, want %q", opened, want)
	}

	asUI(func() { a.Show("Settings") })
	tap(buttonOnScreen(t, a.Settings.content, "Open settings folder"))
	tap(buttonOnScreen(t, a.Settings.content, "Open chats folder"))
	if len(opened) != 3 || opened[1] != storage.NewFileURI(filepath.Dir(a.deps.Settings.Path())).String() ||
		opened[2] != storage.NewFileURI(a.deps.Chats.Dir).String() {
		t.Errorf("Settings opened %q", opened[1:])
	}
	fail = errors.New("no file manager")
	tap(buttonOnScreen(t, a.Settings.content, "Open chats folder"))
	if text := shownText(a.Settings.content); !strings.Contains(text, "no file manager") {
		t.Errorf("a folder that did not open is not said:\n%s", text)
	}
}

// buttonOnScreen is the shown button labelled text under root.
func buttonOnScreen(t *testing.T, root fyne.CanvasObject, text string) *widget.Button {
	t.Helper()
	b := onScreen(root, func(b *widget.Button) bool { return b.Text == text && b.Visible() })
	if b == nil {
		t.Fatalf("no %q button on screen", text)
	}
	return b
}
