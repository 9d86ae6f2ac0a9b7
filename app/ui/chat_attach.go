package ui

import (
	"fmt"
	"io"
	"os"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/plural"
)

// Text files into a message: the paperclip beside the chat box opens one, and a
// file dropped on the window (on any screen: Chat comes up) goes in the same way
// — its text into the chat box, between two lines that name it
// (chats.Attach), for the question typed after it. Asking a model about one's
// own notes, privately, is much of what local chat is for; the text had to be
// pasted by hand.

// AttachFile asks for a text file (the paperclip) and puts it in the chat box.
func (c *Chat) AttachFile() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		switch {
		case err != nil:
			c.showError(plainError("open the file", err))
		case r != nil: // nil: cancelled
			c.readAttachments([]attachment{{r.URI().Name(), func() (io.ReadCloser, error) { return r, nil }}})
		}
	}, c.app.win)
	d.Show()
}

// attachment is a file to put in the chat box: its name and how to open it.
type attachment struct {
	name string
	open func() (io.ReadCloser, error)
}

// attachPaths puts the files at paths in the chat box (files dropped on the
// window).
func (c *Chat) attachPaths(paths []string) {
	var files []attachment
	for _, path := range paths {
		files = append(files, attachment{path[strings.LastIndexAny(path, `/\`)+1:], func() (io.ReadCloser, error) { return os.Open(path) }})
	}
	c.readAttachments(files)
}

// readAttachments reads files off the UI goroutine — a file on a network
// share or a sleeping disk froze the window while it was read — one after
// another, in order, each no further than a message may hold (chats.Attach
// refuses a longer one), and puts each in the chat box as it is read. Call on
// the UI goroutine; c.reading counts the reads under way.
func (c *Chat) readAttachments(files []attachment) {
	c.reading.Add(1)
	go func() {
		defer c.reading.Done()
		for _, f := range files {
			data, err := readAttachment(f)
			onUI(func() {
				if err != nil {
					c.showError(plainError("read "+f.name, err))
					return
				}
				c.attach(f.name, data)
			})
		}
	}()
}

// readAttachment reads f up to one byte past the attach limit.
func readAttachment(f attachment) ([]byte, error) {
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, chats.MaxAttach+1))
}

// attach puts a file's text in the chat box after what is there, the cursor
// after it for the question; a file that cannot be attached says why.
func (c *Chat) attach(name string, data []byte) {
	text, err := chats.Attach(name, data)
	if err != nil {
		c.showError(err.Error())
		return
	}
	c.errLabel.Hide()
	if cur := strings.TrimRight(c.input.Text, "\n"); cur != "" {
		text = cur + "\n\n" + text
	}
	c.input.SetText(text + "\n\n")
	c.input.CursorRow, c.input.CursorColumn = strings.Count(c.input.Text, "\n"), 0 // on the empty line after it
	c.input.Refresh()
	c.app.win.Canvas().Focus(c.input)
	lines := strings.Count(strings.TrimSpace(string(data)), "\n") + 1
	c.status.SetText(fmt.Sprintf("Attached %s (%s) to your message: ask about it after it, then Send.", name, plural.Count(lines, "line", "lines")))
}

// onDropped takes files dropped on the window into the chat box, bringing Chat
// up; what is not a local file (a link) is left alone.
func (a *App) onDropped(_ fyne.Position, uris []fyne.URI) {
	var paths []string
	for _, u := range uris {
		if u.Scheme() == "file" {
			paths = append(paths, u.Path())
		}
	}
	if len(paths) == 0 {
		return
	}
	a.Show("Chat")
	a.Chat.attachPaths(paths)
}
