package chats

import (
	"strings"
	"testing"
)

// TestAttach: a text file comes in between two lines naming it, its byte-order
// mark and Windows line ends gone; a binary, a document, a file not in UTF-8,
// an empty one and one over MaxAttach are refused, saying why in words.
func TestAttach(t *testing.T) {
	got, err := Attach("notes.txt", []byte("\uFEFFfirst line\r\nsecond line\r\n\r\n"))
	if want := "--- notes.txt ---\nfirst line\nsecond line\n--- end of notes.txt ---"; err != nil || got != want {
		t.Errorf("Attach = %q, %v; want %q", got, err, want)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"photo.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "not a text file"},
		{"report.docx", []byte("PK\x03\x04\x14\x00\x06\x00"), "not a text file"},
		{"latin1.txt", []byte("caf\xe9"), "not a text file"},
		{"empty.txt", []byte(" \n\n"), "empty"},
		{"huge.log", []byte(strings.Repeat("x", MaxAttach+1)), "at most 512 KB"},
	} {
		if _, err := Attach(c.name, c.data); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("Attach(%s) = %v; want an error naming it and saying %q", c.name, err, c.want)
		}
	}
}

// TestUnattach: a message's own words without the files attached to it, and
// their names; a line that only looks like a file's first is kept.
func TestUnattach(t *testing.T) {
	a, _ := Attach("notes.txt", []byte("buy milk\n--- not the end ---\n"))
	b, _ := Attach("plan.md", []byte("# Plan"))
	rest, names := Unattach(a + "\n\nWhat do I have to do?\n\n" + b + "\n--- dangling ---")
	if rest != "What do I have to do?\n\n--- dangling ---" || strings.Join(names, ",") != "notes.txt,plan.md" {
		t.Errorf("Unattach = %q, %q", rest, names)
	}
	if rest, names := Unattach("plain words"); rest != "plain words" || names != nil {
		t.Errorf("no file: %q, %q", rest, names)
	}
}
