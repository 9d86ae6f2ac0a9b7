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

// TestSettingsWebPagesMayCallTheAPI: the origins typed in Settings → Local server
// are kept once they read as origins (a box that does not say why it refuses
// one), and reach the running server at once (no restart: it would change the
// API key); its next start reads them from the settings.
func TestSettingsWebPagesMayCallTheAPI(t *testing.T) {
	a := newTestApp(t, &fakeModel{}, "")
	var given [][]string
	a.deps.System.SetServerOrigins = func(o []string) error { given = append(given, o); return nil }
	box := a.Settings.origins
	typeText(box, "localhost:3000")
	if err := uiRead(box.Validate); err == nil || len(given) != 0 || len(a.deps.Settings.Get().ServerOrigins) != 0 {
		t.Fatalf("a bad origin: validate %v, given %q, saved %q", err, given, a.deps.Settings.Get().ServerOrigins)
	}
	asUI(func() { box.SetText("") })
	typeText(box, "http://localhost:3000/, http://127.0.0.1:5173")
	want := "http://localhost:3000 http://127.0.0.1:5173"
	if err := uiRead(box.Validate); err != nil || len(given) == 0 || strings.Join(given[len(given)-1], " ") != want {
		t.Fatalf("good origins: validate %v, given %q", err, given)
	}
	if got := strings.Join(a.deps.Settings.Get().ServerOrigins, " "); got != want {
		t.Errorf("saved %q", got)
	}
	if got := strings.Join(a.serverOptions().Origins, " "); got != want {
		t.Errorf("the server's next start would allow %q", got)
	}
}
