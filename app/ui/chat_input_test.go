package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
)

// TestChatEnterSendsShiftEnterNewline: Enter sends, Shift+Enter starts a new line
// (Fyne's multi-line entry does the reverse).
func TestChatEnterSendsShiftEnterNewline(t *testing.T) {
	n := 0
	a := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, "")
	c := a.Chat
	asUI(func() { a.Show("Chat") }) // laid out: a zero-width entry wraps every letter to a row of its own
	typeText(c.input, "Line one")
	asUI(func() {
		c.input.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
		c.input.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
		c.input.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	})
	typeText(c.input, "line two")
	if got := c.input.Text; got != "Line one\nline two" || len(c.Current().Messages) != 0 {
		t.Fatalf("after Shift+Enter: input %q, %d messages", got, len(c.Current().Messages))
	}
	asUI(func() { c.input.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn}) })
	c.run.Wait()
	if ms := c.Current().Messages; len(ms) != 2 || ms[0].Content != "Line one\nline two" {
		t.Fatalf("after Enter: %+v", ms)
	}
	if c.input.Text != "" {
		t.Errorf("input %q after sending", c.input.Text)
	}
}

// TestChatReplyDevelopsInItsBubble: the canvas still developing is drawn inside
// the reply's bubble (it used to be below it), and a finished reply has a Copy
// button that puts its text on the clipboard.
func TestChatReplyDevelopsInItsBubble(t *testing.T) {
	n := 0
	fm := &fakeModel{answers: chatAnswers(&n), gate: make(chan struct{})}
	a := newTestApp(t, fm, "")
	c := a.Chat
	typeText(c.input, "What is Unix?")
	tap(c.send)
	feed(t, fm.gate, 2)
	waitFor(t, "the developing canvas", func() bool {
		uiMu.Lock()
		defer uiMu.Unlock()
		return c.live.Visible() && c.live.Text != "" && len(c.messages.Objects) == 2
	})
	uiMu.Lock()
	inside := holds(c.messages.Objects[1], c.live)
	uiMu.Unlock()
	if !inside {
		t.Error("the developing canvas is not drawn in the reply's bubble")
	}
	close(fm.gate)
	c.run.Wait()
	reply := c.Current().Messages[1].Content
	var copyB *widget.Button
	uiMu.Lock()
	walkObjects(c.messages.Objects[1], func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Copy" && b.Visible() {
			copyB = b
		}
	})
	uiMu.Unlock()
	if copyB == nil {
		t.Fatal("no Copy button on the reply")
	}
	tap(copyB)
	if got := a.fyneApp.Clipboard().Content(); got != reply {
		t.Errorf("clipboard %q, reply %q", got, reply)
	}
}

// TestChatMarkdownLeavesNoStrayStars: emphasis CommonMark cannot pair
// ("**Note:**this", a bold cut short) shows no "**"; paired bold stays bold.
func TestChatMarkdownLeavesNoStrayStars(t *testing.T) {
	rt := markdownText("**Note:**this is **bold** and __this__ and **cut")
	if got := rt.String(); strings.Contains(got, "**") || strings.Contains(got, "__") || !strings.Contains(got, "cut") {
		t.Errorf("shown as %q", got)
	}
	bold := false
	walkSegments(rt.Segments, func(s *widget.TextSegment) { bold = bold || (s.Text == "bold" && s.Style.TextStyle.Bold) })
	if !bold {
		t.Error("**bold** is not bold")
	}
	code := markdownText("`a**b`")
	if !strings.Contains(code.String(), "a**b") {
		t.Errorf("code changed: %q", code.String())
	}
}

// TestChatAnswerShowsNoMarkupFragments: a model's reply shows no tag debris —
// Darkroom Mini 2's polaroid answered "case the <a dup and a disk disk** … eraer">ergering",
// and Chat showed "<a dup" and `eraer">` as text — while a whole inline tag keeps
// its text, code keeps its markup, and the user's own message is shown as typed.
func TestChatAnswerShowsNoMarkupFragments(t *testing.T) {
	got := answerText("case the <a dup").String() + " " +
		answerText("a disk disk (storage) eraer\">ergering. A <a href=\"/wiki/loop\">loop</a> in `<p>` code.").String()
	for _, bad := range []string{"<a", `">`, "href"} {
		if strings.Contains(strings.ReplaceAll(got, "<p>", ""), bad) {
			t.Errorf("answer shown as %q: has %q", got, bad)
		}
	}
	for _, keep := range []string{"case the", "disk disk", "ergering", "loop", "<p>"} {
		if !strings.Contains(got, keep) {
			t.Errorf("answer shown as %q: lost %q", got, keep)
		}
	}
	if typed := markdownText("what does <a dup mean?").String(); !strings.Contains(typed, "<a dup") {
		t.Errorf("the user's message shown as %q", typed)
	}
}

// TestChatSystemPromptShowsFourLines: the system prompt box is at least four
// lines tall (it showed two and a half).
func TestChatSystemPromptShowsFourLines(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	four := widget.NewMultiLineEntry()
	four.SetMinRowsVisible(4)
	if got, want := a.Chat.system.MinSize().Height, four.MinSize().Height; got < want {
		t.Errorf("system prompt box %.0f high, four lines are %.0f", got, want)
	}
}

// holds reports whether o is in the tree under root.
func holds(root, o fyne.CanvasObject) bool {
	found := false
	walkObjects(root, func(x fyne.CanvasObject) { found = found || x == o })
	return found
}

// walkObjects calls fn on root and every container's and card's content under it.
func walkObjects(root fyne.CanvasObject, fn func(fyne.CanvasObject)) {
	fn(root)
	switch x := root.(type) {
	case *fyne.Container:
		for _, c := range x.Objects {
			walkObjects(c, fn)
		}
	case *widget.Card:
		if x.Content != nil {
			walkObjects(x.Content, fn)
		}
	}
}
