package chats

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Attaching a text file to a message: its text goes into the message, between
// two lines that name it, so the model reads it as part of what was said and
// the thread keeps it as it was sent (a chat is its text). Only text can be
// attached — the models here read text alone — and only as much as a message
// may hold.

// MaxAttach is the largest file Attach takes: far more than a model's context
// holds (the chat then says the message is too long and what to do), small
// enough that the chat box stays responsive.
const MaxAttach = 512 << 10

// Attach is the text a file called name with content data adds to a message:
//
//	--- notes.txt ---
//	(the file's text)
//	--- end of notes.txt ---
//
// or, in plain words, why it cannot: not text (not UTF-8, or holding NUL
// bytes, as binaries and documents such as .docx and .pdf do), empty, or
// larger than MaxAttach. A UTF-8 byte-order mark is dropped and Windows line
// ends become new lines.
func Attach(name string, data []byte) (string, error) {
	switch {
	case len(data) > MaxAttach:
		return "", fmt.Errorf("%s is %d KB: a message holds at most %d KB of a file; attach a shorter part of it", name, (len(data)+1023)/1024, MaxAttach>>10)
	case bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data):
		return "", fmt.Errorf("%s is not a text file: only text (.txt, .md, .csv, source code, …) can be attached; save a document as plain text first", name)
	}
	text := strings.ReplaceAll(strings.TrimPrefix(string(data), "\uFEFF"), "\r\n", "\n")
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("%s is empty", name)
	}
	return "--- " + name + " ---\n" + strings.TrimRight(text, "\n") + "\n--- end of " + name + " ---", nil
}

// Unattach is text without the files Attach put in it, and the files' names:
// what the message says around them (a chat's title is made from it).
func Unattach(text string) (rest string, names []string) {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if name, ok := strings.CutPrefix(l, "--- "); ok && strings.HasSuffix(name, " ---") && !strings.HasPrefix(name, "end of ") {
			name = strings.TrimSuffix(name, " ---")
			end := -1
			for j := i + 1; j < len(lines); j++ {
				if lines[j] == "--- end of "+name+" ---" {
					end = j
					break
				}
			}
			if end > 0 {
				names = append(names, name)
				i = end
				continue
			}
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n")), names
}
