package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// press delivers a key combination as the window does (glfw's
// triggersShortcut): to the focused widget when it takes shortcuts — a text
// box does — else to the window's shortcuts.
func press(a *testApp, key fyne.KeyName, mod fyne.KeyModifier) {
	asUI(func() {
		s := &desktop.CustomShortcut{KeyName: key, Modifier: mod}
		c := a.win.Canvas()
		if f, ok := c.Focused().(fyne.Shortcutable); ok {
			f.TypedShortcut(s)
			return
		}
		c.(fyne.Shortcutable).TypedShortcut(s)
	})
}

// pressKey delivers a key without modifiers as the window does: to the focused
// widget, else to the window's key handler.
func pressKey(a *testApp, key fyne.KeyName) {
	asUI(func() {
		c := a.win.Canvas()
		if f := c.Focused(); f != nil {
			f.TypedKey(&fyne.KeyEvent{Name: key})
			return
		}
		c.OnTypedKey()(&fyne.KeyEvent{Name: key})
	})
}

// TestKeysWorkWhileTyping: the app's keys — Alt+Left/Right (back/forward),
// Ctrl+R (reload), Ctrl+L (address bar) and Escape (stop) — work while a text
// box has the focus, as in a browser's address bar. The address bar keeps the
// focus after Enter and the chat box after a message is sent, and every one of
// those keys went to the box, which ignored it: Alt+Left after typing a topic
// did nothing, and Escape did not stop a reply.
func TestKeysWorkWhileTyping(t *testing.T) {
	long := "A long answer: " + strings.Repeat("word ", 60)
	m := &fakeModel{answers: func(req engine.Request) string {
		if len(req.Messages) > 0 { // Chat
			return long
		}
		return wikiAnswers(req)
	}}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	for _, topic := range []string{"Unix", "Bell Labs"} {
		asUI(func() { a.win.Canvas().Focus(e.address); e.address.SetText("") })
		typeText(e.address, topic)
		pressKey(a, fyne.KeyReturn)
		e.run.Wait()
	}
	if uiRead(func() string { return e.view.Doc().Title }) != "Bell Labs" {
		t.Fatalf("page %q", e.view.Doc().Title)
	}
	if a.win.Canvas().Focused() != e.address {
		t.Fatal("the address bar lost the focus on Enter")
	}
	press(a, fyne.KeyLeft, fyne.KeyModifierAlt)
	if got := uiRead(func() string { return e.view.Doc().Title }); got != "Unix" {
		t.Errorf("Alt+Left in the address bar: page %q, want Unix", got)
	}
	press(a, fyne.KeyRight, fyne.KeyModifierAlt)
	if got := uiRead(func() string { return e.view.Doc().Title }); got != "Bell Labs" {
		t.Errorf("Alt+Right in the address bar: page %q, want Bell Labs", got)
	}
	press(a, fyne.KeyR, fyne.KeyModifierShortcutDefault)
	e.run.Wait()
	if n := len(m.Calls()); n != 3 {
		t.Errorf("Ctrl+R in the address bar: %d generations, want 3", n)
	}
	// The box's own keys stay its own: Ctrl+A still selects its text.
	asUI(func() { e.address.TypedShortcut(&fyne.ShortcutSelectAll{}) })
	if got := uiRead(func() string { return e.address.SelectedText() }); got != "Bell Labs" {
		t.Errorf("Ctrl+A in the address bar selected %q", got)
	}

	// Escape in the chat box stops the reply being written.
	c := a.Chat
	asUI(func() { a.Show("Chat") })
	m.gate = make(chan struct{})
	asUI(func() { a.win.Canvas().Focus(c.input) })
	typeText(c.input, "Long story please")
	pressKey(a, fyne.KeyReturn)
	feed(t, m.gate, stepsPerCanvas+1)
	if a.win.Canvas().Focused() != c.input {
		t.Fatal("the chat box lost the focus on Enter")
	}
	pressKey(a, fyne.KeyEscape)
	stopped := false
	for i := 0; i < 500 && !stopped; i++ { // a stopped reply takes no more steps
		asUI(func() { stopped = !c.answering })
		time.Sleep(2 * time.Millisecond)
	}
	close(m.gate)
	c.run.Wait()
	if !stopped {
		t.Error("Escape in the chat box did not stop the reply")
	}

	// Ctrl+L from the chat box goes to the address bar.
	press(a, fyne.KeyL, fyne.KeyModifierShortcutDefault)
	if a.win.Canvas().Focused() != e.address {
		t.Errorf("Ctrl+L in the chat box: focus on %T, want the address bar", a.win.Canvas().Focused())
	}
}

// TestTypingGoesWhereTheScreenAsks: the screens that ask for typing have the
// focus in their box — the Encyclopedia's address bar ('Type a topic and press
// Enter') after Open the Encyclopedia and at start, the chat box on the Chat tab
// and after New chat, the Race's topic on the Race tab; on a screen without one
// the keys go to no box of another screen. Nothing had the focus:
// a new user typed 'Unix' after Open the Encyclopedia and the keys went nowhere.
func TestTypingGoesWhereTheScreenAsks(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	fa := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	asUI(func() { w.Resize(fyne.NewSize(1000, 800)) })
	m := &fakeModel{answers: wikiAnswers}
	a := newApp(fa, w, Deps{Settings: st, Loader: LoaderFunc(func(context.Context) (Model, error) { return m, nil }),
		System: System{MiniReady: func() error { return nil }}})
	defer a.shutdown()
	open := onScreen(w.Content(), func(b *widget.Button) bool { return b.Text == "Open the Encyclopedia" })
	if open == nil {
		t.Fatal("no first-run screen")
	}
	focused := func() fyne.Focusable {
		var f fyne.Focusable
		asUI(func() { f = w.Canvas().Focused() })
		return f
	}
	chat := onScreen(w.Content(), func(b *widget.Button) bool { return b.Text == "Start a chat" })
	tap(open)
	if f := focused(); f != a.Encyclopedia.address {
		t.Errorf("after Open the Encyclopedia the focus is on %T, want the address bar", f)
	}
	if chat == nil {
		t.Error("the first-run screen offers no Start a chat")
	} else if tap(chat); focused() != a.Chat.input || a.tabs.Selected().Text != "Chat" {
		t.Errorf("after Start a chat: the %s tab, the focus on %T; want Chat's box", a.tabs.Selected().Text, focused())
	}
	for _, c := range []struct {
		tab  string
		want fyne.Focusable
	}{{"Chat", a.Chat.input}, {"Race", a.Race.topic}, {"Library", nil}, {"Encyclopedia", a.Encyclopedia.address}, {"Settings", nil}} {
		asUI(func() { a.Show(c.tab) })
		if f := focused(); f != c.want {
			t.Errorf("on the %s tab the focus is on %T, want %T", c.tab, f, c.want)
		}
	}
	asUI(func() { a.Show("Chat") })
	asUI(func() { w.Canvas().Unfocus() })
	tap(onScreen(w.Content(), func(b *widget.Button) bool { return b.Text == "New chat" }))
	if f := focused(); f != a.Chat.input {
		t.Errorf("after New chat the focus is on %T, want the chat box", f)
	}
	// Ctrl+N from another screen, typing in the address bar: the Chat screen, an
	// empty chat, the chat box focused.
	asUI(func() { a.Show("Encyclopedia") })
	press(&testApp{App: a, win: w}, fyne.KeyN, fyne.KeyModifierShortcutDefault)
	if sel := a.tabs.Selected().Text; sel != "Chat" || len(a.Chat.Current().Messages) != 0 || focused() != a.Chat.input {
		t.Errorf("after Ctrl+N: the %s tab, %d messages, focus on %T; want Chat, an empty chat, the chat box",
			sel, len(a.Chat.Current().Messages), focused())
	}
	a.shutdown()

	// The next start opens on the Encyclopedia, ready to type.
	w2 := test.NewTempWindow(t, nil)
	b := newApp(fa, w2, Deps{Settings: st, Loader: LoaderFunc(func(context.Context) (Model, error) { return m, nil })})
	defer b.shutdown()
	if f := w2.Canvas().Focused(); f != b.Encyclopedia.address {
		t.Errorf("at start the focus is on %T, want the address bar", f)
	}
}

// TestKeysActOnTheScreenShown: Alt+Left, Alt+Right and Ctrl+R act on the
// screen shown — the Desktop's Back, Chat's Regenerate — and move nothing
// unseen: they had always driven the Encyclopedia, so Ctrl+R in Chat wrote a
// page no one was looking at and Alt+Left there changed it.
func TestKeysActOnTheScreenShown(t *testing.T) {
	screens, answers := 0, 0
	m := &fakeModel{answers: func(req engine.Request) string {
		if len(req.Messages) > 0 && req.Messages[0].Content == assets.DesktopSystem() {
			screens++
			return fmt.Sprintf(`<h1>Screen %d</h1><p><a href="/ui/next">next</a></p>`, screens)
		}
		if len(req.Messages) > 0 {
			return chatAnswers(&answers)(req)
		}
		return wikiAnswers(req)
	}}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	for _, topic := range []string{"Unix", "Bell Labs"} {
		asUI(func() { e.Navigate(topic) })
		e.run.Wait()
	}
	pages := func() int {
		k := 0
		for _, c := range m.Calls() {
			if len(c.req.Messages) == 0 {
				k++
			}
		}
		return k
	}

	asUI(func() { a.Show("Chat") })
	c := a.Chat
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	calls := len(m.Calls())
	press(a, fyne.KeyR, fyne.KeyModifierShortcutDefault)
	c.run.Wait()
	e.run.Wait()
	if pages() != 2 || len(m.Calls()) != calls+1 || len(c.Current().Messages) != 2 {
		t.Errorf("Ctrl+R in Chat: %d pages written (want 2), %d calls (want %d: the answer again)", pages(), len(m.Calls()), calls+1)
	}
	press(a, fyne.KeyLeft, fyne.KeyModifierAlt)
	if got := uiRead(func() string { return e.view.Doc().Title }); got != "Bell Labs" {
		t.Errorf("Alt+Left in Chat moved the Encyclopedia to %q", got)
	}

	asUI(func() { a.Show("Desktop") })
	d := a.Desktop
	tap(d.power)
	d.run.Wait()
	asUI(func() { d.Click(assets.Click{ElementID: "next", Text: "next", App: d.app0}) })
	d.run.Wait()
	press(a, fyne.KeyLeft, fyne.KeyModifierAlt)
	if got := docText(d.view); !strings.Contains(got, "Screen 1") {
		t.Errorf("Alt+Left on the Desktop shows %q; want the screen before", got)
	}
	if got := uiRead(func() string { return e.view.Doc().Title }); got != "Bell Labs" {
		t.Errorf("Alt+Left on the Desktop moved the Encyclopedia to %q", got)
	}
}

// TestTextSize: Ctrl+= and Ctrl+− step the text size through
// settings.TextScales on any screen, the chat box focused or not (Ctrl+Shift+=
// and the keypad's + too), Ctrl+0 puts it back; every size in the window
// follows — text, icons, padding — it is kept across starts, and Settings'
// Text size shows it and sets it. There was no way to make the text larger but
// the desktop's own scale.
func TestTextSize(t *testing.T) {
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	text, icon := theme.DefaultTheme().Size(theme.SizeNameText), theme.DefaultTheme().Size(theme.SizeNameInlineIcon)
	sizes := func() (float32, float32, string) {
		var txt, ic float32
		var shown string
		asUI(func() {
			txt, ic = theme.Size(theme.SizeNameText), theme.Size(theme.SizeNameInlineIcon)
			shown = a.Settings.textScale.Selected
		})
		return txt, ic, shown
	}
	want := func(step string, percent int) {
		t.Helper()
		f := float32(percent) / 100
		if txt, ic, shown := sizes(); txt != text*f || ic != icon*f || shown != strconv.Itoa(percent)+"%" {
			t.Errorf("%s: text %.1f, icon %.1f, Text size %q; want %.1f, %.1f, %d%%", step, txt, ic, shown, text*f, icon*f, percent)
		}
		if got := a.deps.Settings.Get().Scale(); got != f {
			t.Errorf("%s: saved scale %.2f, want %.2f", step, got, f)
		}
	}
	want("at the start", 100)
	press(a, fyne.KeyEqual, fyne.KeyModifierShortcutDefault)
	want("Ctrl+=", 110)
	a.Show("Chat")
	asUI(func() { a.win.Canvas().Focus(a.Chat.input) })
	press(a, fyne.KeyEqual, fyne.KeyModifierShortcutDefault|fyne.KeyModifierShift)
	want("Ctrl+Shift+= in the chat box", 125)
	press(a, fyne.KeyPlus, fyne.KeyModifierShortcutDefault)
	want("Ctrl+keypad +", 150)
	press(a, fyne.KeyPlus, fyne.KeyModifierShortcutDefault)
	want("Ctrl++ at the largest", 150)
	press(a, fyne.Key0, fyne.KeyModifierShortcutDefault)
	want("Ctrl+0", 100)
	for range 3 {
		press(a, fyne.KeyMinus, fyne.KeyModifierShortcutDefault)
	}
	want("Ctrl+− three times", 80)
	asUI(func() { a.Settings.textScale.SetSelected("125%") })
	want("Text size 125%", 125)

	// A new start of the app on the same settings opens at that size.
	a.shutdown()
	b := newTestApp(t, &fakeModel{answers: wikiAnswers}, a.dir)
	if txt := uiRead(func() float32 { return theme.Size(theme.SizeNameText) }); txt != text*1.25 {
		t.Errorf("after a restart: text %.1f, want %.1f", txt, text*1.25)
	}
	if got := uiRead(func() string { return b.Settings.textScale.Selected }); got != "125%" {
		t.Errorf("after a restart: Text size %q", got)
	}
	if !strings.Contains(b.keysHelp(), keyHint("=")+" larger text") || !strings.Contains(b.keysHelp(), keyHint("−")+" smaller text") {
		t.Errorf("About's keys: %s", b.keysHelp())
	}
}
