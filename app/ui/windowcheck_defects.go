package ui

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/models/catalog"
)

// The window check's checks of the defects a new user met (issue 17), run in
// the real window: Enter sends in Chat, a download's error stays on its card,
// and the Race panes wrap by words.

// checkEnterSends types msg into the Chat's message box and presses Enter, as
// the window's canvas delivers keys to the focused widget, and checks that the
// message was sent (the box emptied, no newline typed) and a reply bubble
// appeared. The Chat must show an empty thread.
func (a *App) checkEnterSends(msg string) error {
	c, cv := a.Chat, a.win.Canvas()
	fyne.DoAndWait(func() { cv.Focus(c.input) })
	for _, r := range msg {
		fyne.DoAndWait(func() {
			if f := cv.Focused(); f != nil {
				f.TypedRune(r)
			}
		})
	}
	var typed string
	fyne.DoAndWait(func() { typed = c.input.Text })
	if typed != msg {
		return fmt.Errorf("typed %q, the message box holds %q", msg, typed)
	}
	fyne.DoAndWait(func() {
		if f := cv.Focused(); f != nil {
			f.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
		}
	})
	c.run.Wait()
	var left string
	var roles []string
	var bubbles int
	fyne.DoAndWait(func() {
		left, bubbles = c.input.Text, len(c.messages.Objects)
		if c.cur != nil {
			for _, m := range c.cur.Messages {
				roles = append(roles, m.Role)
			}
		}
	})
	if left != "" {
		return fmt.Errorf("Enter did not send: the message box holds %q", left)
	}
	if len(roles) != 2 || roles[1] != "model" || bubbles != 2 {
		return fmt.Errorf("after Enter the thread holds %v and %d bubbles, not the question and a reply", roles, bubbles)
	}
	return nil
}

// checkDownloadErrorStays starts a download on the Library with the model hub
// unreachable and checks that its card shows the failure in plain words,
// still after several refreshes of the list, until Dismiss; shoot is called
// while the error shows. HF_ENDPOINT must name a closed local port
// (packaging/window-check.sh sets one), so nothing is downloaded.
func (a *App) checkDownloadErrorStays(shoot func()) error {
	if u, err := url.Parse(os.Getenv("HF_ENDPOINT")); err != nil || u.Hostname() != "127.0.0.1" {
		return fmt.Errorf("not checked: set HF_ENDPOINT to a closed port on 127.0.0.1, so that Download fails without downloading")
	}
	const name, offline = catalog.NVFP4ID, "Cannot reach the model hub"
	l := a.Library
	var card *libraryCard
	problem := func() (string, bool) {
		var text string
		var shown bool
		fyne.DoAndWait(func() {
			if card = l.byName[name]; card != nil {
				text, shown = card.problem.Text, card.probBox.Visible() && card.problem.Visible()
			}
		})
		return text, shown
	}
	var download *widget.Button
	fyne.DoAndWait(func() {
		if c := l.byName[name]; c != nil {
			download = buttonLabelled(c.buttons, "Download")
		}
	})
	if download == nil {
		return fmt.Errorf("the %s card has no Download button", name)
	}
	fyne.DoAndWait(download.OnTapped)
	// On a PC the model won't fit, Download asks first: go on.
	fyne.DoAndWait(func() { a.tapDialogButton("Download anyway") })
	if !waitUntil(30*time.Second, func() bool { t, shown := problem(); return shown && strings.Contains(t, offline) }) {
		t, _ := problem()
		return fmt.Errorf("offline, Download did not say %q on the card (it says %q)", offline, t)
	}
	for i := range 3 { // a refresh rebuilds the cards: the error stays
		before := card
		fyne.DoAndWait(l.Refresh)
		if !waitUntil(10*time.Second, func() bool { problem(); return card != before }) {
			return fmt.Errorf("the list was not rebuilt after a refresh")
		}
		time.Sleep(time.Second)
		if t, shown := problem(); !shown || !strings.Contains(t, offline) {
			return fmt.Errorf("after %d refreshes the error is gone (the card says %q)", i+1, t)
		}
	}
	scroll, _ := l.content.(*container.Scroll)
	if scroll != nil { // bring the card into view for the screenshot
		fyne.DoAndWait(func() { scroll.Offset = fyne.NewPos(0, card.card.Position().Y); scroll.Refresh() })
	}
	shoot()
	if scroll != nil {
		fyne.DoAndWait(scroll.ScrollToTop)
	}
	var dismiss *widget.Button
	fyne.DoAndWait(func() {
		if box, ok := card.probBox.Objects[len(card.probBox.Objects)-1].(*fyne.Container); ok {
			dismiss = buttonLabelled(box, "Dismiss")
		}
	})
	if dismiss == nil {
		return fmt.Errorf("the error on the card has no Dismiss button")
	}
	fyne.DoAndWait(dismiss.OnTapped)
	if _, shown := problem(); shown {
		return fmt.Errorf("Dismiss left the error on the card")
	}
	return nil
}

// checkChatSearch types word into the chat search box and returns how many
// chats the list shows and the first row's snippet, or why the search failed:
// no chat found, or a row without the words around the match.
func (a *App) checkChatSearch(word string) (rows int, snippet string, err error) {
	c := a.Chat
	fyne.DoAndWait(func() {
		c.FocusSearch()
		c.search.SetText(word)
		rows = len(c.Shown())
		if rows > 0 {
			snippet = c.snippets[0]
		}
	})
	switch {
	case rows == 0:
		return 0, "", fmt.Errorf("searching %q found no chat (the answer holds it)", word)
	case !strings.Contains(strings.ToLower(snippet), strings.ToLower(word)):
		return rows, snippet, fmt.Errorf("the row found for %q shows %q, not the words around it", word, snippet)
	}
	return rows, snippet, nil
}

// tapDialogButton taps the button labelled text in the dialog over the window,
// and reports whether there was one.
func (a *App) tapDialogButton(text string) bool {
	p, ok := a.win.Canvas().Overlays().Top().(*widget.PopUp)
	if !ok {
		return false
	}
	var b *widget.Button
	walkShown([]fyne.CanvasObject{p.Content}, func(o fyne.CanvasObject) {
		if x, ok := o.(*widget.Button); ok && x.Text == text {
			b = x
		}
	})
	if b == nil {
		return false
	}
	b.OnTapped()
	return true
}

// buttonLabelled is the button labelled text directly in box, or nil.
func buttonLabelled(box *fyne.Container, text string) *widget.Button {
	for _, o := range box.Objects {
		if b, ok := o.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	return nil
}

// waitUntil polls ok until it holds or the timeout passes.
func waitUntil(timeout time.Duration, ok func() bool) bool {
	for end := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if ok() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// checkWrapping checks the Race panes' text as laid out now: no row runs past
// its pane's edge, and no column of one-letter rows (the polaroid pane once
// wrapped "u t i l i t y" a letter per row). notes say what each pane holds.
// Call on the UI goroutine.
func (r *Race) checkWrapping() (notes []string, err error) {
	for _, p := range r.panes {
		pane, _, _ := strings.Cut(p.title, " —")
		var texts []*widget.RichText
		walkShown(p.view.CreateRenderer().Objects(), func(o fyne.CanvasObject) {
			if rt, ok := o.(*widget.RichText); ok {
				texts = append(texts, rt)
			}
		})
		note, err := checkRows(pane, texts)
		if err != nil {
			return nil, err
		}
		notes = append(notes, note)
	}
	return notes, nil
}

// checkRows checks the rows of a pane's texts as laid out now; note says what
// they hold.
func checkRows(pane string, texts []*widget.RichText) (note string, err error) {
	rows, single, longest := 0, 0, 0
	var overflow error
	for _, rt := range texts {
		width := rt.Size().Width
		for _, row := range laidOutRows(rt) {
			rows++
			if t := []rune(strings.TrimSpace(row.text)); len(t) == 1 && unicode.IsLetter(t[0]) {
				single++
			}
			if row.end > width+1 && overflow == nil {
				overflow = fmt.Errorf("the %s pane's row %q ends at x=%.0f, past its %.0f px width", pane, row.text, row.end, width)
			}
			for _, w := range strings.Fields(row.text) {
				longest = max(longest, len([]rune(w)))
			}
		}
	}
	if rows == 0 {
		return "", fmt.Errorf("the %s pane shows no text", pane)
	}
	// A word-wrapped page has a one-letter row only where a word of one letter
	// meets a long word; three of them is a column.
	if single >= 3 {
		return "", fmt.Errorf("the %s pane wraps by letters: %d of its %d rows hold one letter", pane, single, rows)
	}
	if overflow != nil {
		return "", overflow
	}
	return fmt.Sprintf("%s: %d rows, %d of one letter, longest word %d letters", pane, rows, single, longest), nil
}

// walkShown calls fn on each visible object under objs, through containers and cards.
func walkShown(objs []fyne.CanvasObject, fn func(fyne.CanvasObject)) {
	for _, o := range objs {
		if o == nil || !o.Visible() {
			continue
		}
		fn(o)
		switch x := o.(type) {
		case *fyne.Container:
			walkShown(x.Objects, fn)
		case *widget.Card:
			walkShown([]fyne.CanvasObject{x.Content}, fn)
		}
	}
}

// laidOutRow is one row of a RichText as drawn: its text and where it ends.
type laidOutRow struct {
	text string
	end  float32
}

// laidOutRows are rt's rows at its current size. Fyne keeps a widget's drawn
// objects to itself, so a twin of rt (copies of its segments, as they are now)
// is laid out at the same size: the same rows.
func laidOutRows(rt *widget.RichText) []laidOutRow {
	size := rt.Size()
	twin := widget.NewRichText(cloneSegments(rt.Segments)...)
	twin.Wrapping, twin.Truncation = rt.Wrapping, rt.Truncation
	twin.Resize(size)
	rr := twin.CreateRenderer()
	rr.Layout(size)
	return rowsOf(rr.Objects())
}

// rowsOf groups a RichText renderer's laid-out objects into rows.
func rowsOf(objs []fyne.CanvasObject) []laidOutRow {
	var rows []laidOutRow
	var top, first, prevEnd float32
	for _, o := range objs {
		var text string
		pos, sz := o.Position(), o.Size()
		switch x := o.(type) {
		case *canvas.Text:
			text = x.Text
		case *fyne.Container: // a link: its Hyperlink in a container
			if len(x.Objects) > 0 {
				if l, ok := x.Objects[0].(*widget.Hyperlink); ok {
					text = l.Text
					// Where its text ends: Fyne 2.7 sizes a link that ends a
					// row to the whole width, wherever it starts.
					sz.Width = fyne.MeasureText(text, theme.TextSize(), fyne.TextStyle{}).Width
				}
			}
		}
		if text == "" {
			continue
		}
		// Items of a row run left to right, a little up or down to share a
		// baseline; a row starts back at the left, a line lower.
		if len(rows) == 0 || pos.X+0.5 < prevEnd || pos.Y > top+first/2 {
			rows = append(rows, laidOutRow{})
			top, first = pos.Y, sz.Height
		}
		row := &rows[len(rows)-1]
		row.text += text
		prevEnd = pos.X + sz.Width
		row.end = max(row.end, prevEnd)
	}
	return rows
}

// cloneSegments copies segs, so a twin RichText can lay them out without
// taking them from the one that shows them.
func cloneSegments(segs []widget.RichTextSegment) []widget.RichTextSegment {
	out := make([]widget.RichTextSegment, len(segs))
	for i, s := range segs {
		switch x := s.(type) {
		case *widget.TextSegment:
			c := *x
			out[i] = &c
		case *widget.HyperlinkSegment:
			c := *x
			out[i] = &c
		case *widget.ListSegment:
			c := *x
			c.Items = cloneSegments(x.Items)
			out[i] = &c
		case *widget.ParagraphSegment:
			c := *x
			c.Texts = cloneSegments(x.Texts)
			out[i] = &c
		default:
			out[i] = s
		}
	}
	return out
}
