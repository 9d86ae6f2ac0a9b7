package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"

	"github.com/darkroomlabs/darkroom/engine"
)

// TestChatDropAFile: a text file dropped on the window, on any screen, brings
// Chat up with the file's text in the chat box between two lines naming it, the
// status line saying so, and Send sends it with the question typed after it; a
// file that is not text is refused, saying why, and the box keeps what it had;
// a dropped link is left alone.
func TestChatDropAFile(t *testing.T) {
	var asked string
	m := &fakeModel{answers: func(req engine.Request) string {
		asked = req.Messages[len(req.Messages)-1].Content
		return "It lists two errands."
	}}
	a := newTestApp(t, m, t.TempDir())
	c := a.Chat
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("buy milk\r\ncall Ada\r\n"), 0o600)
	photo := filepath.Join(dir, "photo.png")
	os.WriteFile(photo, []byte("\x89PNG\r\n\x1a\n\x00\x00"), 0o600)

	asUI(func() { a.Show("Library") })
	asUI(func() { a.onDropped(fyne.Position{}, []fyne.URI{storage.NewFileURI(notes)}) })
	c.reading.Wait()
	if got := uiRead(func() string { return a.tabs.Selected().Text }); got != "Chat" {
		t.Fatalf("a file dropped on the Library showed %s", got)
	}
	want := "--- notes.txt ---\nbuy milk\ncall Ada\n--- end of notes.txt ---\n\n"
	if got := c.input.Text; got != want {
		t.Fatalf("the chat box holds %q, want %q", got, want)
	}
	if st := c.status.Text; !strings.Contains(st, "Attached notes.txt (2 lines)") {
		t.Errorf("status %q", st)
	}

	asUI(func() { a.onDropped(fyne.Position{}, []fyne.URI{storage.NewFileURI(photo)}) })
	c.reading.Wait()
	if !c.errLabel.Visible() || !strings.Contains(c.errLabel.Text, "photo.png is not a text file") || c.input.Text != want {
		t.Errorf("a PNG dropped: error %v %q, box %q", c.errLabel.Visible(), c.errLabel.Text, c.input.Text)
	}
	link, _ := storage.ParseURI("https://example.com/page")
	asUI(func() { a.onDropped(fyne.Position{}, []fyne.URI{link}) })
	c.reading.Wait()
	if c.input.Text != want {
		t.Errorf("a dropped link changed the box: %q", c.input.Text)
	}

	typeText(c.input, "What do I have to do?")
	tap(c.send)
	c.run.Wait()
	if !strings.HasPrefix(asked, "--- notes.txt ---\nbuy milk") || !strings.HasSuffix(asked, "What do I have to do?") {
		t.Errorf("the model was asked %q", asked)
	}
	if title := c.Current().Title; title != "notes.txt: What do I have to do?" {
		t.Errorf("the chat is titled %q", title)
	}
}
