//go:build unix

package ui

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
)

// TestChatDropASlowFile: files dropped on the window are read off the UI
// goroutine, in the order dropped. A file that does not answer — here a named
// pipe no one writes to yet, as a network share or a sleeping disk would be —
// froze the whole window while it was read; now the window works on, and the
// text arrives when the file does, before the next file's.
func TestChatDropASlowFile(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, t.TempDir())
	c := a.Chat
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow.txt")
	if err := syscall.Mkfifo(slow, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	fast := filepath.Join(dir, "fast.txt")
	os.WriteFile(fast, []byte("second file\n"), 0o600)

	dropped := make(chan struct{})
	go func() {
		asUI(func() { a.onDropped(fyne.Position{}, []fyne.URI{storage.NewFileURI(slow), storage.NewFileURI(fast)}) })
		close(dropped)
	}()
	select {
	case <-dropped:
	case <-time.After(5 * time.Second):
		t.Fatal("the window froze while the dropped file was read")
	}
	asUI(func() { a.Show("Library"); a.Show("Chat") }) // the window still answers
	if got := uiRead(func() string { return c.input.Text }); got != "" {
		t.Errorf("before the file answered, the chat box holds %q", got)
	}
	w, err := os.OpenFile(slow, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("first file\n")
	w.Close()
	c.reading.Wait()
	got := uiRead(func() string { return c.input.Text })
	if i, j := strings.Index(got, "first file"), strings.Index(got, "second file"); i < 0 || j < i {
		t.Errorf("the chat box holds %q: want the slow file, then the other", got)
	}
}
