package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/speed"
)

func chatAnswers(n *int) func(engine.Request) string {
	return func(req engine.Request) string {
		*n++
		last := req.Messages[len(req.Messages)-1].Content
		if strings.HasPrefix(last, "Long") {
			return strings.Repeat("A long answer keeps going. ", 20)
		}
		if *n%2 == 1 {
			return "**Unix** is an operating system."
		}
		return "Unix is a family of operating systems."
	}
}

func TestChatSendStopRegenerateAndRestart(t *testing.T) {
	dir := t.TempDir()
	n := 0
	m := &fakeModel{answers: chatAnswers(&n)}
	a := newTestApp(t, m, dir)
	c := a.Chat

	// Send.
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	th := c.Current()
	if len(th.Messages) != 2 || th.Messages[0].Content != "What is Unix?" || th.Messages[1].Content != "**Unix** is an operating system." {
		t.Fatalf("messages %+v", th.Messages)
	}
	req := m.Calls()[0].req
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != assets.ChatSystem() || req.Messages[1].Role != "user" {
		t.Errorf("request messages %+v", req.Messages)
	}
	if th.Title != "What is Unix?" {
		t.Errorf("title %q", th.Title)
	}
	if c.input.Text != "" || !c.send.Disabled() || !c.stop.Disabled() {
		t.Error("input/buttons not reset after the answer (Send waits for something to send)")
	}
	typeText(c.input, "  ")
	if !c.send.Disabled() {
		t.Error("Send is on with only spaces to send")
	}
	asUI(func() { c.input.SetText("") })

	// Regenerate replaces the last answer.
	tap(c.regen)
	c.run.Wait()
	if len(th.Messages) != 2 || th.Messages[1].Content != "Unix is a family of operating systems." {
		t.Fatalf("after regenerate %+v", th.Messages)
	}
	if got := m.Calls()[1].req.Messages; len(got) != 2 {
		t.Errorf("regenerate sent %d messages", len(got))
	}

	// Stop keeps what was committed.
	m.gate = make(chan struct{})
	typeText(c.input, "Long story please")
	tap(c.send)
	feed(t, m.gate, stepsPerCanvas+1)
	waitFor(t, "second canvas", func() bool { return m.Steps(m.Calls()[2]) == stepsPerCanvas+1 })
	if c.stop.Disabled() || !c.send.Disabled() {
		t.Error("stop/send not in generating state")
	}
	tap(c.stop)
	c.run.Wait()
	last := th.Messages[len(th.Messages)-1]
	if last.Role != "model" || !strings.HasPrefix(last.Content, "A long answer") || !strings.HasSuffix(last.Content, "*(stopped)*") {
		t.Fatalf("stopped answer %q", last.Content)
	}
	close(m.gate)

	// Restart: the thread comes back from disk, whole.
	files, _ := filepath.Glob(filepath.Join(dir, "chats", "*.json"))
	if len(files) != 1 {
		t.Fatalf("thread files %v", files)
	}
	a.shutdown()
	b := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, dir)
	got := b.Chat.Current()
	if got.ID != th.ID || len(got.Messages) != 4 || got.Messages[1].Content != "Unix is a family of operating systems." {
		t.Fatalf("after restart %+v", got)
	}
}

// TestChatDeleteCanBeUndone: the trash icon deletes the open chat at once —
// from the list and from disk — and the bar under the list says which went and
// offers Undo, which brings it back as it was (on disk, in its place, open);
// the bar goes once the user goes on. An empty chat goes with no bar. (Until
// session 28 a dialog asked first; before that, the icon deleted with no way
// back.)
func TestChatDeleteCanBeUndone(t *testing.T) {
	dir := t.TempDir()
	n := 0
	m := &fakeModel{answers: chatAnswers(&n)}
	a := newTestApp(t, m, dir)
	c := a.Chat
	ask := func(q string) *chats.Thread {
		asUI(c.StartNew)
		typeText(c.input, q)
		tap(c.send)
		c.run.Wait()
		return c.Current()
	}
	older := ask("What is Unix?")
	th := ask("What is Lisp?")
	onDisk := func(id string) bool {
		ts, _ := a.deps.Chats.List()
		for _, x := range ts {
			if x.ID == id {
				return true
			}
		}
		return false
	}
	barShown := func() (bool, string) {
		return uiRead(func() bool { return c.undoBar.Visible() }), uiRead(func() string { return c.undoNote.Text })
	}

	tap(c.del)
	if c.Current() == th || onDisk(th.ID) || slices.Contains(c.Threads(), th) {
		t.Fatal("the trash icon left the chat in place")
	}
	if a.win.Canvas().Overlays().Top() != nil {
		t.Error("the trash icon opened a dialog")
	}
	if shown, note := barShown(); !shown || note != "Deleted “What is Lisp?” (2 messages)." {
		t.Errorf("undo bar shown %v, %q", shown, note)
	}
	asUI(c.UndoDelete)
	if c.Current() != th || !onDisk(th.ID) || len(c.Threads()) < 2 || c.Threads()[0] != th || len(th.Messages) != 2 {
		t.Errorf("Undo did not bring the chat back as it was: current %q, on disk %v, threads %d", c.Current().Title, onDisk(th.ID), len(c.Threads()))
	}
	if shown, _ := barShown(); shown {
		t.Error("the undo bar stayed after Undo")
	}

	// The older chat, deleted and brought back, goes back under the newer one.
	asUI(func() { c.list.Select(slices.Index(c.Threads(), older)) })
	tap(c.del)
	asUI(c.UndoDelete)
	if i := slices.Index(c.Threads(), older); i != 1 || c.Current() != older {
		t.Errorf("the older chat came back at %d (current %q); want 1, open", i, c.Current().Title)
	}

	// Going on hides the bar, and Undo then brings nothing back.
	tap(c.del)
	asUI(c.StartNew)
	if shown, _ := barShown(); shown {
		t.Error("the undo bar stayed after New chat")
	}
	asUI(c.UndoDelete)
	if onDisk(older.ID) {
		t.Error("Undo after going on brought the chat back")
	}

	// An empty chat has nothing to bring back: it goes with no bar.
	empty := c.Current()
	tap(c.del)
	if c.Current() == empty && len(c.Threads()) > 1 {
		t.Error("an empty chat stayed")
	}
	if shown, _ := barShown(); shown {
		t.Error("deleting an empty chat offered Undo")
	}
}

// TestChatRegenerateCanBeUndone: Regenerate replaced the answer for good;
// now "Previous answer" beside it brings the replaced one back (saved so),
// "Newer answer" the regenerated one, until a message is sent or the thread
// left. Where the new answer fails, the previous one comes back as the answer.
func TestChatRegenerateCanBeUndone(t *testing.T) {
	n := 0
	fail := false
	m := &fakeModel{answers: chatAnswers(&n), fail: func(int) error {
		if fail {
			return errors.New("the model stopped")
		}
		return nil
	}}
	a := newTestApp(t, m, "")
	c := a.Chat
	last := func() string { th := c.Current(); return th.Messages[len(th.Messages)-1].Content }
	saved := func() string {
		th, err := a.deps.Chats.Load(c.Current().ID)
		if err != nil {
			t.Fatal(err)
		}
		return th.Messages[len(th.Messages)-1].Content
	}
	swap := func() (bool, string) {
		if b := uiRead(func() *widget.Button { return c.swap }); b != nil {
			return true, uiRead(func() string { return b.Text })
		}
		return false, ""
	}
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	first := last()
	if shown, _ := swap(); shown {
		t.Error("a first answer offers a previous one")
	}
	tap(c.regen)
	c.run.Wait()
	second := last()
	if second == first {
		t.Fatalf("the fake model answered the same twice: %q", first)
	}
	if shown, label := swap(); !shown || label != "Previous answer" {
		t.Fatalf("after Regenerate: swap shown %v, %q", shown, label)
	}
	if w := uiRead(func() float32 { return a.win.Content().MinSize().Width }); w > smallestWindowSize.Width {
		t.Errorf("with the swap shown the window needs %.0f px, more than the smallest supported %.0f", w, smallestWindowSize.Width)
	}
	tap(c.swap)
	if last() != first || saved() != first || len(c.Current().Messages) != 2 {
		t.Errorf("Previous answer: %q (saved %q), %d messages; want %q", last(), saved(), len(c.Current().Messages), first)
	}
	if _, label := swap(); label != "Newer answer" {
		t.Errorf("after the swap the button says %q", label)
	}
	tap(c.swap)
	if last() != second || saved() != second {
		t.Errorf("Newer answer: %q (saved %q); want %q", last(), saved(), second)
	}

	// A regenerated answer that fails: the one it replaced stays, saved so.
	fail = true
	tap(c.regen)
	c.run.Wait()
	if last() != second || saved() != second || len(c.Current().Messages) != 2 || !uiRead(func() bool { return c.errLabel.Visible() }) {
		t.Errorf("after a failed regenerate: %q (saved %q), %d messages, error shown %v", last(), saved(), len(c.Current().Messages), c.errLabel.Visible())
	}
	if shown, _ := swap(); shown {
		t.Error("the swap stays offered with no other answer")
	}

	// Sending goes on: the offer goes.
	fail = false
	tap(c.regen)
	c.run.Wait()
	typeText(c.input, "What is Lisp?")
	tap(c.send)
	c.run.Wait()
	if shown, _ := swap(); shown {
		t.Error("a new question's answer offers the one before's previous answer")
	}
}

// TestChatEditAMessage: Edit on one of the user's messages puts it in the chat
// box and says so; Send replaces it and drops the answers after it, answering
// the edited question (saved so; a chat named by its first message is renamed
// by the edit); Cancel leaves the thread as it was.
func TestChatEditAMessage(t *testing.T) {
	n := 0
	m := &fakeModel{answers: chatAnswers(&n)}
	a := newTestApp(t, m, "")
	c := a.Chat
	for _, q := range []string{"What is Unix?", "What is Lisp?"} {
		typeText(c.input, q)
		tap(c.send)
		c.run.Wait()
	}
	th := c.Current()
	if len(th.Messages) != 4 || th.Title != "What is Unix?" {
		t.Fatalf("before: %d messages, title %q", len(th.Messages), th.Title)
	}
	editShown := func() bool { return uiRead(func() bool { return c.editBar.Visible() }) }
	editButtons := func() int {
		n := 0
		onScreen(c.messages, func(b *widget.Button) bool {
			if b.Text == "Edit" {
				n++
			}
			return false
		})
		return n
	}
	if got := editButtons(); got != 2 {
		t.Errorf("%d Edit buttons; want one per message of the user's (2)", got)
	}

	asUI(func() { c.EditMessage(2) })
	if c.input.Text != "What is Lisp?" || !editShown() {
		t.Fatalf("Edit: chat box %q, bar shown %v", c.input.Text, editShown())
	}
	asUI(c.CancelEdit)
	if c.input.Text != "" || editShown() || len(th.Messages) != 4 {
		t.Errorf("Cancel: chat box %q, bar shown %v, %d messages", c.input.Text, editShown(), len(th.Messages))
	}
	asUI(func() { c.EditMessage(2) })
	asUI(func() { c.input.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape}) })
	if c.input.Text != "" || editShown() {
		t.Errorf("Escape in the chat box: %q, bar shown %v; want the edit left", c.input.Text, editShown())
	}

	asUI(func() { c.EditMessage(0) })
	asUI(func() { c.input.SetText("What is Linux?") })
	tap(c.send)
	c.run.Wait()
	if len(th.Messages) != 2 || th.Messages[0].Content != "What is Linux?" || th.Messages[1].Role != "model" || editShown() {
		t.Fatalf("after the edit was sent: %+v (bar shown %v)", th.Messages, editShown())
	}
	if th.Title != "What is Linux?" {
		t.Errorf("the chat named by its first message is still %q", th.Title)
	}
	saved, err := a.deps.Chats.Load(th.ID)
	if err != nil || len(saved.Messages) != 2 || saved.Messages[0].Content != "What is Linux?" {
		t.Errorf("saved: %+v, %v", saved, err)
	}
}

// TestChatExport: the save icon over the list asks where to save the open chat
// (a file dialog, named after it), and the file holds the conversation as
// Markdown; the status line says where it went, and a write that fails says so
// and stays on screen. An empty chat has nothing to export.
func TestChatExport(t *testing.T) {
	n := 0
	a := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, "")
	c := a.Chat
	if !c.export.Disabled() {
		t.Error("an empty chat can be exported")
	}
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	if c.export.Disabled() {
		t.Fatal("a chat with messages cannot be exported")
	}
	tap(c.export)
	if a.win.Canvas().Overlays().Top() == nil {
		t.Error("the save icon opened no dialog")
	}

	path := filepath.Join(t.TempDir(), "unix.md")
	w, err := storage.Writer(storage.NewFileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	asUI(func() { c.writeExport(c.Current(), w, nil) })
	got, err := os.ReadFile(path)
	if err != nil || string(got) != c.Current().Markdown() || !strings.Contains(string(got), "## You\n\nWhat is Unix?") {
		t.Errorf("the file holds %q (%v)", got, err)
	}
	if st := uiRead(func() string { return c.status.Text }); st != "Chat saved to "+path {
		t.Errorf("status %q", st)
	}
	asUI(func() { c.writeExport(c.Current(), nil, errors.New("permission denied")) })
	if !uiRead(func() bool { return c.errLabel.Visible() }) || !strings.Contains(c.errLabel.Text, "Could not save the chat: permission denied") {
		t.Errorf("a failed save shows %q", c.errLabel.Text)
	}
}

// TestChatTooLongSaysWhatToDo: a chat grown past the model's context failed
// every answer with "Could not answer: prompt (8100 tokens) plus 256 new tokens
// needs 8356 positions; the model has 8192", and then said to start a new
// chat: it goes on now, the model reading the latest turns that fit
// (engine.Request.FitContext), a line over the first message read saying the
// ones above are no longer read, kept with the chat; a message too long alone
// says to send a shorter one.
func TestChatTooLongSaysWhatToDo(t *testing.T) {
	n := 0
	m := &fakeModel{answers: chatAnswers(&n), fail: func(call int) error {
		if call == 1 {
			return &engine.ContextError{Prompt: 8100, MaxNew: 256, Need: 8356, Limit: 8192}
		}
		return nil
	}, dropped: func(req engine.Request) int {
		if len(req.Messages) >= 5 { // from the third question on, as the engine would
			return 2
		}
		return 0
	}}
	dir := t.TempDir()
	a := newTestApp(t, m, dir)
	c := a.Chat
	typeText(c.input, "A very long paste")
	tap(c.send)
	c.run.Wait()
	if got := uiRead(func() string { return c.errLabel.Text }); !strings.Contains(got, "This message is too long") || !strings.Contains(got, "send a shorter one") ||
		strings.Contains(got, "positions") {
		t.Errorf("a message past the context: %q", got)
	}
	asUI(c.NewThread)
	for _, q := range []string{"What is Unix?", "And Lisp?", "And C?"} {
		typeText(c.input, q)
		tap(c.send)
		c.run.Wait()
		if got := uiRead(func() string { return c.errLabel.Text }); uiRead(c.errLabel.Visible) {
			t.Fatalf("%s: %s", q, got)
		}
	}
	calls := m.Calls()
	if last := calls[len(calls)-1].req; !last.FitContext {
		t.Error("Chat did not ask the engine to fit a long chat")
	}
	notes := func() []int {
		var at []int
		uiMu.Lock()
		defer uiMu.Unlock()
		for i, o := range c.messages.Objects {
			walkObjects(o, func(o fyne.CanvasObject) {
				if l, ok := o.(*widget.Label); ok && l.Text == leftOutText {
					at = append(at, i)
				}
			})
		}
		return at
	}
	if got := notes(); len(got) != 1 || got[0] != 2 {
		t.Errorf("the left-out note is over messages %v, want over the third (the second question)", got)
	}
	if st := uiRead(func() string { return c.status.Text }); !strings.Contains(st, "2 earlier messages left out") {
		t.Errorf("status %q", st)
	}
	// Kept with the chat: it is there after a restart.
	a.shutdown()
	b := newTestApp(t, m, dir)
	c = b.Chat
	if got := notes(); len(got) != 1 || got[0] != 2 {
		t.Errorf("after a restart the left-out note is over messages %v", got)
	}
	if got := chatTooLong(&engine.ContextError{MaxNew: 10000, Limit: 8192}); !strings.Contains(got, "Max new tokens in Settings → Advanced (10000)") {
		t.Errorf("max new tokens past the context: %q", got)
	}
}

// TestChatModeShowsWholeChoice: the mode picker is wide enough for each of its
// choices; it showed "Automatic ..." and "Polaroid (di..." (Fyne sizes a Select
// by its placeholder, "(Select one)", not by its options).
func TestChatModeShowsWholeChoice(t *testing.T) {
	a := newTestApp(t, &fakeModel{}, "")
	c := a.Chat
	asUI(func() { c.content.Resize(fyne.NewSize(1000, 700)) })
	test.LaidOutObjects(c.content)
	text := func(s string) float32 { return fyne.MeasureText(s, theme.TextSize(), fyne.TextStyle{}).Width }
	chrome := c.mode.MinSize().Width - text(c.mode.PlaceHolder) // what Fyne adds around the text: padding, the arrow
	for _, o := range c.mode.Options {
		if need := chrome + text(o); c.mode.Size().Width < need {
			t.Errorf("the mode picker is %.0f wide; %q needs %.0f", c.mode.Size().Width, o, need)
		}
	}
}

// TestChatModeSticksToTheChat: the mode picked for a chat is the chat's, as its
// system prompt and Thinking are: kept on disk, back after a restart, and back
// when the chat is opened again after another; it came back as 'Automatic mode'
// on every start, and a new chat took the last one's.
func TestChatModeSticksToTheChat(t *testing.T) {
	dir := t.TempDir()
	n := 0
	a := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, dir)
	c := a.Chat
	printer := modeLabel(engine.AR)
	asUI(func() { c.mode.SetSelected(printer) })
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	if got := a.model.Calls()[0].req.Mode; got != engine.AR {
		t.Fatalf("asked for the printer, ran %q", got)
	}
	th := c.Current()
	asUI(c.NewThread)
	if c.mode.Selected != modeAuto {
		t.Errorf("a new chat's mode: %q, want %q", c.mode.Selected, modeAuto)
	}
	asUI(func() { c.open(th) })
	if c.mode.Selected != printer {
		t.Errorf("the chat opened again: mode %q, want %q", c.mode.Selected, printer)
	}
	a.shutdown()
	b := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, dir)
	asUI(func() { b.Chat.open(b.Chat.Threads()[0]) })
	if got := b.Chat.mode.Selected; got != printer {
		t.Errorf("after a restart: mode %q, want %q", got, printer)
	}
}

func TestChatCorruptThreadReported(t *testing.T) {
	dir := t.TempDir()
	n := 0
	a := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, dir)
	typeText(a.Chat.input, "What is Unix?")
	tap(a.Chat.send)
	a.Chat.run.Wait()
	a.shutdown()
	os.WriteFile(filepath.Join(dir, "chats", "bad-1.json"), []byte("{not json"), 0o600)

	b := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, dir)
	if len(b.Chat.Threads()) != 1 || b.Chat.loadErrs.Hidden || !strings.Contains(b.Chat.loadErrs.Text, "bad-1.json") {
		t.Errorf("threads %d, error %q", len(b.Chat.Threads()), b.Chat.loadErrs.Text)
	}
}

// TestDesktopLongClickTextKeepsWidth: the "Clicked …" line quotes the model's own
// element text and window title, which can be a paragraph; it must not widen the
// screen (a Fyne window grows to its content and never shrinks back).
func TestDesktopLongClickTextKeepsWidth(t *testing.T) {
	long := strings.Repeat("Soennster Onable heweightxtended ", 20)
	m := &fakeModel{answers: func(engine.Request) string { return "<h1>" + long + "</h1><p>" + long + "</p>" }}
	a := newTestApp(t, m, "")
	d := a.Desktop
	asUI(func() { a.Show("Desktop") })
	d.Click(assets.Click{ElementID: "app-x", Text: long, App: long})
	d.run.Wait()
	if w := d.content.MinSize().Width; w > 800 {
		t.Errorf("a long clicked element makes the Desktop screen at least %.0f wide", w)
	}
}

func TestDesktopClickWarmStarts(t *testing.T) {
	screens := []string{
		`<nav><a href="/ui/menu-apps">Applications</a></nav><h1>Desktop</h1><section><h2>Files</h2><ul><li><a href="/ui/app-gimp">gimp</a></li></ul></section>`,
		`<nav><a href="/ui/menu-apps">Applications</a></nav><h1>gimp</h1><section><h2>gimp</h2><p>The GNU Image Manipulation Program.</p></section>`,
	}
	i := 0
	m := &fakeModel{answers: func(req engine.Request) string { s := screens[min(i, 1)]; i++; return s }}
	a := newTestApp(t, m, "")
	d := a.Desktop
	asUI(func() { a.Show("Desktop") })
	d.Click(assets.Click{ElementID: "power", Text: "Power on", App: "desktop"})
	d.run.Wait()
	tapLink(t, a.win.Content(), "gimp")
	d.run.Wait()
	calls := m.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	req := calls[1].req
	if req.Messages[0].Content != assets.DesktopSystem() ||
		req.Messages[1].Content != assets.DesktopPrompt(assets.Click{ElementID: "app-gimp", Text: "gimp", App: "Desktop"}) {
		t.Errorf("click request %+v", req.Messages)
	}
	if req.Opening != assets.DesktopOpening() {
		t.Errorf("click request opening %q, want the menu bar", req.Opening)
	}
	if len(req.CanvasIDs) == 0 || len(req.CanvasIDs) != min(len(calls[0].result.Tokens), maxWarmTokens) || req.CanvasIDs[0] != calls[0].result.Tokens[0] {
		t.Errorf("warm start %d ids, previous screen %d tokens", len(req.CanvasIDs), len(calls[0].result.Tokens))
	}
	if d.view.Doc().Title != "gimp" {
		t.Errorf("screen %q", d.view.Doc().Title)
	}
}

// TestRaceWithoutATopicSaysSo: Race pressed with the topic cleared says what it
// needs and writes nothing; it did nothing at all, as if the button were broken.
func TestRaceWithoutATopicSaysSo(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers}
	a := newTestApp(t, m, "")
	r := a.Race
	asUI(func() { r.topic.SetText("  ") })
	tap(r.startB)
	r.run.Wait()
	if n := len(m.Calls()); n != 0 || r.summary.Text != raceNeedsTopic || r.startB.Disabled() {
		t.Errorf("no topic: %d generations, summary %q, Race disabled %v; want none, %q, enabled", n, r.summary.Text, r.startB.Disabled(), raceNeedsTopic)
	}
}

// TestRaceLinkRacesThatTopic: a link on either side's page races the topic it
// names, as a link in the Encyclopedia opens its page; tapping one did nothing
// (the links are drawn as links, underlined under the pointer).
func TestRaceLinkRacesThatTopic(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers}
	a := newTestApp(t, m, "")
	r := a.Race
	asUI(func() { r.content.Resize(fyne.NewSize(1000, 700)) })
	tap(r.startB)
	r.run.Wait()
	tapLink(t, r.content, "Bell Labs")
	r.run.Wait()
	calls := m.Calls()
	if len(calls) != 4 || calls[2].req.Prompt != assets.EncyclopediaPrompt("Bell Labs") || calls[3].req.Prompt != calls[2].req.Prompt {
		t.Fatalf("after tapping Bell Labs: %d generations; want 4, the last two for Bell Labs", len(calls))
	}
	if r.topic.Text != "Bell Labs" {
		t.Errorf("topic %q, want Bell Labs", r.topic.Text)
	}
	for _, p := range r.panes {
		if p.view.Doc() == nil || p.view.Doc().Title != "Bell Labs" {
			t.Errorf("%s pane shows %v", p.mode, p.view.Doc())
		}
	}
}

func TestRaceRunsBothModes(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers}
	a := newTestApp(t, m, "")
	r := a.Race
	tap(r.startB)
	r.run.Wait()
	calls := m.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	modes := map[engine.Mode]bool{calls[0].req.Mode: true, calls[1].req.Mode: true}
	if !modes[engine.AR] || !modes[engine.Diffusion] || calls[0].req.Seed != calls[1].req.Seed ||
		calls[0].req.Opening != assets.EncyclopediaOpening("Unix") || calls[1].req.Opening != calls[0].req.Opening {
		t.Errorf("modes %v seeds %d %d", modes, calls[0].req.Seed, calls[1].req.Seed)
	}
	if !strings.Contains(r.summary.Text, "Printer:") || !strings.Contains(r.summary.Text, "Polaroid:") || !strings.Contains(r.summary.Text, "faster") {
		t.Errorf("summary %q", r.summary.Text)
	}
	for _, p := range r.panes {
		if p.view.Doc() == nil || p.view.Doc().Title != "Unix" || !strings.HasPrefix(p.stats.Text, "Finished") {
			t.Errorf("%s pane: %q", p.mode, p.stats.Text)
		}
	}
}

// TestChatRename: a chat can be renamed — the pencil beside the trash icon asks
// for the new name, prefilled and focused, and Enter (or Rename) keeps it, in
// the list and on disk after a restart; an empty name keeps the old one, and a
// chat renamed before its first message keeps its name. Chats were named only
// after their first message ('What is Unix?'), with no way to change it.
func TestChatRename(t *testing.T) {
	dir := t.TempDir()
	n := 0
	m := &fakeModel{answers: chatAnswers(&n)}
	a := newTestApp(t, m, dir)
	c := a.Chat
	asUI(func() { a.Show("Chat") })
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	th := c.Current()

	rename := func(name string, submit func()) {
		t.Helper()
		tap(c.rename)
		var box *widget.Entry
		asUI(func() {
			if top := a.win.Canvas().Overlays().Top(); top != nil {
				box, _ = a.win.Canvas().Focused().(*widget.Entry)
			}
		})
		if box == nil {
			t.Fatal("the pencil showed no name box with the focus")
		}
		if box.Text != c.Current().Title {
			t.Errorf("name box holds %q, want %q", box.Text, c.Current().Title)
		}
		asUI(func() { box.SetText("") })
		typeText(box, name)
		if submit == nil {
			asUI(func() { box.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn}) })
		} else {
			submit()
		}
	}
	rename("  My Unix notes ", nil)
	if th.Title != "My Unix notes" {
		t.Fatalf("title %q after Enter", th.Title)
	}
	if !strings.Contains(shownText(a.win.Content()), "My Unix notes") {
		t.Errorf("the list does not show the new name:\n%s", shownText(a.win.Content()))
	}
	rename("   ", func() { tap(dialogButton(a.win, "Rename")) })
	if th.Title != "My Unix notes" {
		t.Errorf("an empty name gave the title %q", th.Title)
	}
	if a.win.Canvas().Overlays().Top() != nil {
		asUI(func() { a.win.Canvas().Overlays().Top().Hide() })
	}

	// A new chat renamed before its first message keeps its name.
	asUI(c.NewThread)
	rename("Kernels", func() { tap(dialogButton(a.win, "Rename")) })
	typeText(c.input, "What is a kernel?")
	tap(c.send)
	c.run.Wait()
	if got := c.Current().Title; got != "Kernels" {
		t.Errorf("the first message renamed the chat to %q", got)
	}

	a.shutdown()
	b := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, dir)
	titles := map[string]bool{}
	for _, x := range b.Chat.Threads() {
		titles[x.Title] = true
	}
	if !titles["My Unix notes"] || !titles["Kernels"] {
		t.Errorf("after a restart the chats are %v", titles)
	}
}

// TestNewChatReusesTheEmptyOne: each click of New chat added another empty "New
// chat" to the list; now a click with an untouched empty chat in the list opens
// that one, at the top, and a chat with messages, or one given a name or its
// own system prompt, is never taken for it.
func TestNewChatReusesTheEmptyOne(t *testing.T) {
	n := 0
	a := newTestApp(t, &fakeModel{answers: chatAnswers(&n)}, t.TempDir())
	c := a.Chat
	asUI(func() { a.Show("Chat") })
	newBtn := onScreen(a.win.Content(), func(b *widget.Button) bool { return b.Text == "New chat" })
	count := func() int { return len(c.Threads()) }
	start := count()
	tap(newBtn)
	tap(newBtn)
	tap(newBtn)
	if got := count(); got != max(start, 1) || len(c.Current().Messages) != 0 {
		t.Fatalf("three clicks of New chat: %d chats (from %d)", got, start)
	}
	empty := c.Current()

	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	asked := c.Current()
	if asked != empty {
		t.Fatal("the message went to another chat")
	}
	tap(newBtn)
	if count() != start+1 || c.Current() == asked || len(c.Current().Messages) != 0 {
		t.Fatalf("New chat after a message: %d chats, current has %d messages", count(), len(c.Current().Messages))
	}
	// An empty chat with its own system prompt is the user's work: a new one comes.
	asUI(func() { c.system.SetText("Answer in French.") })
	own := c.Current()
	tap(newBtn)
	if count() != start+2 || c.Current() == own || own.System != "Answer in French." {
		t.Fatalf("New chat beside an empty chat with its own system prompt: %d chats", count())
	}
	// The untouched one below the others comes back to the top.
	asUI(func() { c.open(asked) })
	fresh := c.Threads()[0]
	tap(newBtn)
	if count() != start+2 || c.Current() != fresh || c.Threads()[0] != fresh {
		t.Errorf("New chat with an untouched chat in the list: %d chats, not that one on top", count())
	}
}

// TestChatAnswerOpensWithTheEntrysLead: a question about an entry the model's
// folder holds (ModelInfo.Leads) opens its answer with the entry's first
// sentence in the chat answers' form, and the status line says so; a question
// about another term is headed with it, the status saying nothing of an entry;
// any other message is answered by the model alone. Chat had never used the
// leads, and had let the model name another term. The heading of a term not
// held is tentative, and where no entry is held the Library answer is sent as
// the reply held once begun: a greeting the model turns away says so.
func TestChatAnswerOpensWithTheEntrysLead(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p><em>operating system</em></p>\n<p>An operating system from <a href=\"/wiki/Bell_Labs\">Bell Labs</a>. It runs.</p>", nil)
	m := &fakeModel{answers: func(req engine.Request) string {
		if req.Opening == "" && req.Reply != "" { // the model begins the Library answer
			return req.Reply
		}
		return req.Opening + req.Lead + " It is old."
	}, leads: &leads}
	a := newTestApp(t, m, t.TempDir())
	c := a.Chat
	const lead = "** (operating system): An operating system from Bell Labs. It runs."
	for _, tc := range []struct {
		ask, opening, lead string
		tentative, reply   bool
	}{
		{"what is unix?", "**Unix", lead, false, false},
		{"Hello there", "", "", false, true},
		{"Tell me about Unix.", "**Unix", lead, false, false},
		{"What is a server room?", "**server room", "", true, true},
	} {
		typeText(c.input, tc.ask)
		tap(c.send)
		c.run.Wait()
		calls := m.Calls()
		if got := calls[len(calls)-1].req; got.Lead != tc.lead || got.Opening != tc.opening || got.OpeningTentative != tc.tentative || got.LeadEnds != (tc.lead != "") ||
			(got.Reply == assets.ChatElsewhere()) != tc.reply {
			t.Errorf("%q: opening %q (tentative %v), lead %q, reply %q; want %q (%v), %q, reply %v", tc.ask, got.Opening, got.OpeningTentative,
				got.Lead, got.Reply, tc.opening, tc.tentative, tc.lead, tc.reply)
		}
		th := c.Current()
		want := strings.TrimSpace(tc.opening + tc.lead + " It is old.")
		if tc.lead != "" { // the entry ends the answer
			want = tc.opening + tc.lead
		}
		if tc.reply && tc.opening == "" {
			want = assets.ChatElsewhere()
		}
		if got := th.Messages[len(th.Messages)-1].Content; !strings.HasPrefix(got, want) {
			t.Errorf("%q: answer %q", tc.ask, got)
		}
		st := uiRead(func() string { return c.status.Text })
		if said := strings.Contains(st, develop.LeadNote); said != (tc.lead != "") {
			t.Errorf("%q: status %q (says the text is the entry's: %v)", tc.ask, st, said)
		}
		if said := strings.Contains(st, develop.OwnNote); said != (tc.lead == "" && tc.opening != "") {
			t.Errorf("%q: status %q (says the model wrote it alone: %v)", tc.ask, st, said)
		}
		if said := strings.Contains(st, develop.ReplyNote); said != (tc.reply && tc.opening == "") {
			t.Errorf("%q: status %q (says the answer is the set one: %v)", tc.ask, st, said)
		}
	}
}

// TestChatOffersEntriesForATypo: a question about a topic a typo away from an
// entry ("What is a compilr?") is answered by the model alone, and under the
// answer Chat offers to ask about the entries it may have meant; one tap asks
// "What is compiler?", answered with the entry, and the offer goes.
func TestChatOffersEntriesForATypo(t *testing.T) {
	var leads assets.Leads
	leads.Add("compiler", "<h1>compiler</h1>\n<p>A program that translates programs. It runs.</p>", nil)
	const why = "the printer (AR): reads better"
	m := &fakeModel{answers: func(req engine.Request) string {
		if req.Opening == "" && req.Reply != "" {
			return req.Reply // the Mini turns a message with no heading away
		}
		return req.Opening + req.Lead + " It is old."
	}, leads: &leads, mode: speed.Choice{Mode: engine.AR, Reason: why}}
	a := newTestApp(t, m, t.TempDir())
	c := a.Chat
	offered := func() []string { return rowLinks(c.after) }
	typeText(c.input, "What is a compilr?")
	tap(c.send)
	c.run.Wait()
	if got := offered(); !slices.Equal(got, []string{"compiler"}) {
		t.Fatalf("under the answer to a typo: %q, want compiler", got)
	}
	if st := uiRead(func() string { return c.status.Text }); !strings.HasSuffix(st, why) {
		t.Errorf("the model's answer: status %q, want it to end with the mode's reason", st)
	}
	tapRowLink(c.after, "compiler")
	c.run.Wait()
	th := c.Current()
	if n := len(th.Messages); n != 4 || th.Messages[2].Content != "What is compiler?" || !strings.HasPrefix(th.Messages[3].Content, "**compiler**") {
		t.Errorf("after the tap, %d messages: %+v", n, th.Messages)
	}
	if got := offered(); got != nil {
		t.Errorf("the entry's answer still offers %q", got)
	}
	// The entry, held whole, was written in no mode: the line names none.
	if st := uiRead(func() string { return c.status.Text }); strings.Contains(st, why) || !strings.HasSuffix(st, develop.LeadNote) {
		t.Errorf("the entry's answer: status %q, want it to end with %q and name no mode", st, develop.LeadNote)
	}
	// The typo asked alone gets the Library answer, and the same offer under it.
	typeText(c.input, "compilr?")
	tap(c.send)
	c.run.Wait()
	if th := c.Current(); th.Messages[len(th.Messages)-1].Content != assets.ChatElsewhere() {
		t.Errorf("\"compilr?\" answered %q, want the Library answer", th.Messages[len(th.Messages)-1].Content)
	}
	if got := offered(); !slices.Equal(got, []string{"compiler"}) {
		t.Errorf("under the Library answer to \"compilr?\": %q, want compiler", got)
	}
}

// TestChatLetTheModelAnswer: under an entry's answer, "Let the model answer"
// asks again without the entry (the model's own answer, said so), and "Show
// the entry" brings the entry back, as the Encyclopedia's entry bar does; the
// thread keeps one answer each time.
func TestChatLetTheModelAnswer(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system. It runs.</p>", nil)
	m := &fakeModel{answers: func(req engine.Request) string { return req.Opening + req.Lead + "Made up." }, leads: &leads}
	a := newTestApp(t, m, t.TempDir())
	c := a.Chat
	row := func() (note, button string) {
		uiMu.Lock()
		defer uiMu.Unlock()
		if !c.after.Visible() {
			return "", ""
		}
		for _, o := range c.after.Objects {
			switch w := o.(type) {
			case *widget.Label:
				note = w.Text
			case *widget.Button:
				button = w.Text
			}
		}
		return note, button
	}
	tapButton := func() {
		asUI(func() {
			for _, o := range c.after.Objects {
				if b, ok := o.(*widget.Button); ok {
					b.OnTapped()
				}
			}
		})
		c.run.Wait()
	}
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	if note, b := row(); note != chatEntryNote || b != letModelAnswer {
		t.Fatalf("under the entry's answer: %q [%s]; want %q [%s]", note, b, chatEntryNote, letModelAnswer)
	}
	tapButton()
	th := c.Current()
	last := m.Calls()[len(m.Calls())-1].req
	if note, b := row(); note != chatOwnNote || b != develop.ShowEntry || last.Lead != "" || last.Opening != "" || len(th.Messages) != 2 || th.Messages[1].Content != "Made up." {
		t.Errorf("after %q: %q [%s], lead %q, %d messages (last %q); want the model's own answer, said so", letModelAnswer, note, b, last.Lead, len(th.Messages), th.Messages[len(th.Messages)-1].Content)
	}
	if st := uiRead(func() string { return c.status.Text }); !strings.Contains(st, develop.OwnNote) {
		t.Errorf("the model's own answer: status %q", st)
	}
	tapButton()
	if note, b := row(); note != chatEntryNote || b != letModelAnswer || !strings.HasPrefix(c.Current().Messages[1].Content, "**Unix**") {
		t.Errorf("after %q: %q [%s], answer %q; want the entry back", develop.ShowEntry, note, b, c.Current().Messages[1].Content)
	}
	typeText(c.input, "Hello!") // another question: no row (the Library answer is neither)
	tap(c.send)
	c.run.Wait()
	if note, b := row(); note != "" || b != "" {
		t.Errorf("under a greeting's answer: %q [%s]", note, b)
	}
}

// TestRaceOnUnequalTerms: where the race's second copy of the model (the
// printer's) ran on another backend than the first — on the CPU, the GPU being
// full with the first copy — the summary says so, with why, so that its speeds
// are not read as the two modes' on one device; copies on one backend say
// nothing of it.
func TestRaceOnUnequalTerms(t *testing.T) {
	gpu := &fakeModel{answers: wikiAnswers, backend: "xla:cuda"}
	a := newTestApp(t, gpu, "")
	r := a.Race
	cpu := &fakeModel{answers: wikiAnswers, backend: "go", fallback: "Only 1.2 GB of the RTX 4090's 25.8 GB of memory are free now."}
	r.second = newModelHost(LoaderFunc(func(context.Context) (Model, error) { return cpu, nil }))
	tap(r.startB)
	r.run.Wait()
	if want := "Not on equal terms: the printer's copy of the model ran on go, the polaroid's on xla:cuda (only 1.2 GB of the RTX 4090's 25.8 GB of memory are free now)."; !strings.HasSuffix(r.summary.Text, want) {
		t.Errorf("summary %q; want it to end %q", r.summary.Text, want)
	}
	if got := unequalTerms(gpu, gpu); got != "" {
		t.Errorf("one backend: %q", got)
	}
}

// TestChatAnswerLength: with no Max new tokens in Settings, a chat answer may
// run to the model's answer length (ModelInfo.AnswerTokens: DiffusionGemma's
// 2048, where its generation config says 256 — one canvas, which cut most of a
// general assistant's answers); Settings' value, where set, is kept; the
// Encyclopedia's pages keep the model's own.
func TestChatAnswerLength(t *testing.T) {
	m := &fakeModel{answers: func(engine.Request) string { return "An answer." }, answerTokens: 2048}
	a := newTestApp(t, m, "")
	c := a.Chat
	last := func() engine.Request { calls := m.Calls(); return calls[len(calls)-1].req }
	for _, c2 := range []struct {
		set, want int
	}{{0, 2048}, {300, 300}} { // Max new tokens in Settings (0: none), what an answer gets
		a.deps.Settings.Update(func(v *settings.Values) { v.Sampling.MaxNewTokens = c2.set })
		typeText(c.input, "Explain TCP.")
		tap(c.send)
		c.run.Wait()
		if got := last().Sampling.MaxNewTokens; got != c2.want {
			t.Errorf("a chat answer with Max new tokens %d in Settings: %d, want %d", c2.set, got, c2.want)
		}
	}
	a.deps.Settings.Update(func(v *settings.Values) { v.Sampling.MaxNewTokens = 0 })
	asUI(func() { a.Show("Encyclopedia"); a.Encyclopedia.Navigate("Unix") })
	a.Encyclopedia.run.Wait()
	if got := last().Sampling.MaxNewTokens; got != 0 {
		t.Errorf("an Encyclopedia page: max new tokens %d, want the model's own (0)", got)
	}
	// Settings' greyed default says both.
	asUI(func() { a.Show("Settings") })
	if hint := uiRead(func() string { return a.Settings.fields["max_new_tokens"].PlaceHolder }); !strings.Contains(hint, "2048 (a chat answer)") {
		t.Errorf("Max new tokens' hint: %q", hint)
	}
}

// TestChatAnswerCutOffSaysWhereTheLimitIs: an answer that ran out of new
// tokens before its end says so under it and offers Allow longer answers,
// which opens Settings on Max new tokens (under Advanced), the cursor in it;
// the status line's "length limit" said what, not where.
func TestChatAnswerCutOffSaysWhereTheLimitIs(t *testing.T) {
	m := &fakeModel{answers: func(engine.Request) string { return "A long answer, cut" }, cutOff: true}
	a := newTestApp(t, m, "")
	c := a.Chat
	typeText(c.input, "Explain TCP in detail.")
	tap(c.send)
	c.run.Wait()
	var allow *widget.Button
	var note string
	asUI(func() {
		for _, o := range c.after.Objects {
			switch x := o.(type) {
			case *widget.Label:
				note = x.Text
			case *widget.Button:
				if x.Text == "Allow longer answers" {
					allow = x
				}
			}
		}
	})
	if !uiRead(c.after.Visible) || note != lengthLimitNote || allow == nil {
		t.Fatalf("under a cut-off answer: shown %v, %q, button %v", uiRead(c.after.Visible), note, allow != nil)
	}
	tap(allow)
	if got := uiRead(func() string { return a.tabs.Selected().Text }); got != "Settings" {
		t.Fatalf("Allow longer answers showed %s", got)
	}
	if !uiRead(func() bool { return a.Settings.advanced.Items[0].Open }) || uiRead(func() fyne.Focusable { return a.win.Canvas().Focused() }) != a.Settings.fields["max_new_tokens"] {
		t.Error("Settings did not open on Max new tokens")
	}
	// An answer that ended by itself offers nothing of the kind.
	m.cutOff = false
	asUI(func() { a.Show("Chat") })
	typeText(c.input, "And UDP?")
	tap(c.send)
	c.run.Wait()
	if uiRead(c.after.Visible) {
		t.Error("the length-limit row under an answer that ended by itself")
	}
}

// TestChatContinue: Continue under an answer cut at its length limit has the
// model go on from where it stopped — the answer so far held as the opening,
// max new tokens more after it (OpeningExtra), the question the last message it
// reads — and the whole replaces it; where that fails, the answer stays as it
// was. A cut answer had to be asked for again, from the start.
func TestChatContinue(t *testing.T) {
	calls := 0
	m := &fakeModel{cutOff: true, answers: func(req engine.Request) string {
		if req.OpeningExtra {
			return req.Opening + " and the rest of it."
		}
		return "The first part"
	}, fail: func(call int) error {
		calls = call
		if call == 2 {
			return errors.New("the GPU ran out of memory")
		}
		return nil
	}}
	a := newTestApp(t, m, "")
	c := a.Chat
	typeText(c.input, "Explain TCP in detail.")
	tap(c.send)
	c.run.Wait()
	cont := func() {
		t.Helper()
		var b *widget.Button
		asUI(func() {
			for _, o := range c.after.Objects {
				if x, ok := o.(*widget.Button); ok && x.Text == "Continue" {
					b = x
				}
			}
		})
		if b == nil || !uiRead(c.after.Visible) {
			t.Fatal("no Continue under a cut-off answer")
		}
		tap(b)
		c.run.Wait()
	}
	cont() // fails: the answer stays
	if got := c.Current().Messages; len(got) != 2 || got[1].Content != "The first part" || !uiRead(c.errLabel.Visible) {
		t.Fatalf("after a failed Continue: %+v, error shown %v", got, uiRead(c.errLabel.Visible))
	}
	m.cutOff = false
	cont()
	got := c.Current().Messages
	if len(got) != 2 || got[1].Content != "The first part and the rest of it." {
		t.Errorf("after Continue: %+v", got)
	}
	last := m.Calls()[len(m.Calls())-1].req
	if !last.OpeningExtra || last.Opening != "The first part" || last.Messages[len(last.Messages)-1].Content != "Explain TCP in detail." {
		t.Errorf("Continue asked %+v", last)
	}
	if calls != 3 {
		t.Errorf("%d generations, want 3", calls)
	}
}

// TestChatLeavingAContinueKeepsTheAnswer: leaving a chat while Continue (or
// Regenerate) writes — another chat opened — stops that answer and leaves the
// chat as it was, its cut answer back in place; the next answer, in any chat,
// is a new one. The answer was lost from the chat, and the next question, in
// another chat, went on from its text.
func TestChatLeavingAContinueKeepsTheAnswer(t *testing.T) {
	m := &fakeModel{cutOff: true, answers: func(req engine.Request) string {
		if req.OpeningExtra {
			return req.Opening + " and the rest of it."
		}
		return "The first part"
	}}
	a := newTestApp(t, m, "")
	c := a.Chat
	typeText(c.input, "Explain TCP in detail.")
	tap(c.send)
	c.run.Wait()
	first := c.Current()
	for _, label := range []string{"Continue", "Regenerate"} {
		m.mu.Lock()
		m.gate = make(chan struct{})
		m.mu.Unlock()
		if label == "Continue" {
			asUI(c.ContinueAnswer)
		} else {
			asUI(c.Regenerate)
		}
		feed(t, m.gate, 1)
		asUI(c.NewThread) // another chat, while the answer is being written
		close(m.gate)
		c.run.Wait()
		if got := first.Messages; len(got) != 2 || got[1].Content != "The first part" {
			t.Errorf("%s, then another chat opened: the first chat holds %+v", label, got)
		}
		asUI(func() { c.open(first) })
	}
	m.mu.Lock()
	m.gate = nil
	m.mu.Unlock()
	asUI(c.NewThread)
	typeText(c.input, "What is UDP?")
	tap(c.send)
	c.run.Wait()
	if last := m.Calls()[len(m.Calls())-1].req; last.OpeningExtra || last.Opening != "" {
		t.Errorf("a new question in another chat went on from %q", last.Opening)
	}
}
