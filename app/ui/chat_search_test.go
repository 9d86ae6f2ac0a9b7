package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/engine"
)

// TestChatSearch: the box over the chat list (Ctrl+F on Chat) shows only the chats
// holding every word typed, in title or messages, each row with where it matched
// when its title does not show it; picking one opens it; a search that finds none
// says so; Escape in the box empties it (the whole list back) before it stops
// anything; New chat empties it, so that the new chat is in the list.
func TestChatSearch(t *testing.T) {
	m := &fakeModel{answers: func(req engine.Request) string {
		switch q := req.Messages[len(req.Messages)-1].Content; {
		case strings.Contains(q, "Unix"):
			return "Unix is an operating system written at Bell Labs."
		case strings.Contains(q, "Lisp"):
			return "Lisp is a family of programming languages with fully parenthesized prefix notation."
		default:
			return "TCP is a protocol of the Internet."
		}
	}}
	a := newTestApp(t, m, t.TempDir())
	c := a.Chat
	asUI(func() { a.Show("Chat") })
	var unix, lisp, tcp *chats.Thread
	for _, q := range []string{"What is Unix?", "What is Lisp?", "Tell me about TCP"} {
		asUI(c.StartNew)
		typeText(c.input, q)
		tap(c.send)
		c.run.Wait()
		switch th := c.Current(); {
		case strings.Contains(q, "Unix"):
			unix = th
		case strings.Contains(q, "Lisp"):
			lisp = th
		default:
			tcp = th
		}
	}
	rows := func() (titles, snippets []string) {
		asUI(func() {
			for i := range c.shown {
				o := c.list.CreateItem()
				c.list.UpdateItem(i, o)
				row := o.(*fyne.Container)
				titles = append(titles, rowTitle(row).Text)
				if when := rowWhen(row).Text; len(when) != len("15:04") || when[2] != ':' {
					t.Errorf("row %d: a chat written in now says %q, not the time", i, when)
				}
				s := row.Objects[1].(*widget.Label)
				if s.Visible() {
					if title := row.Objects[0]; s.Position().Y < title.Position().Y+title.MinSize().Height {
						t.Errorf("row %d: the snippet over the title (at y %v)", i, s.Position().Y)
					}
					snippets = append(snippets, s.Text)
				} else {
					snippets = append(snippets, "")
				}
			}
		})
		return titles, snippets
	}

	press(a, fyne.KeyF, fyne.KeyModifierShortcutDefault)
	if a.win.Canvas().Focused() != c.search {
		t.Fatal("Ctrl+F on Chat did not put the focus in the search box")
	}
	typeText(c.search, "bell")
	titles, snippets := rows()
	if !slices.Equal(titles, []string{"What is Unix?"}) || snippets[0] != "Unix is an operating system written at Bell Labs." {
		t.Fatalf("search \"bell\": rows %q, snippets %q", titles, snippets)
	}
	// Every word, in title or messages, any case.
	asUI(func() { c.search.SetText("") })
	typeText(c.search, "WHAT language")
	if titles, snippets = rows(); !slices.Equal(titles, []string{"What is Lisp?"}) || !strings.Contains(snippets[0], "programming languages") {
		t.Errorf("search \"WHAT language\": rows %q, snippets %q", titles, snippets)
	}
	// A title match needs no snippet; the chat open (TCP, the newest) is not
	// shown, so none is selected, and picking a row opens it.
	asUI(func() { c.search.SetText("what is") })
	if titles, snippets = rows(); !slices.Equal(titles, []string{"What is Lisp?", "What is Unix?"}) || snippets[0] != "" || snippets[1] != "" {
		t.Errorf("search \"what is\": rows %q, snippets %q", titles, snippets)
	}
	if c.Current() != tcp {
		t.Fatal("searching changed the chat open")
	}
	asUI(func() { c.list.Select(1) })
	if c.Current() != unix {
		t.Errorf("picking the second row opened %q, want What is Unix?", c.Current().Title)
	}
	// None found: the list says so.
	asUI(func() { c.search.SetText("kernel") })
	if len(c.Shown()) != 0 || !c.noMatch.Visible() || c.noMatch.Text != "No chat holds “kernel”." {
		t.Errorf("search with no match: %d rows, note %v %q", len(c.Shown()), c.noMatch.Visible(), c.noMatch.Text)
	}
	// Escape in the box empties it: every chat back, the one open selected.
	asUI(func() { a.win.Canvas().Focus(c.search) })
	pressKey(a, fyne.KeyEscape)
	if c.search.Text != "" || len(c.Shown()) != 3 || c.noMatch.Visible() {
		t.Errorf("Escape left %q, %d rows", c.search.Text, len(c.Shown()))
	}
	if i := slices.Index(c.Shown(), unix); i < 0 {
		t.Error("the chat open is not in the list after Escape")
	}
	// New chat during a search empties the box: the new chat is in the list.
	asUI(func() { c.search.SetText("lisp") })
	if !slices.Equal(c.Shown(), []*chats.Thread{lisp}) {
		t.Fatalf("search \"lisp\": %d rows", len(c.Shown()))
	}
	asUI(c.StartNew)
	if c.search.Text != "" || len(c.Shown()) != 4 || c.Shown()[0] != c.Current() {
		t.Errorf("New chat during a search: box %q, %d rows, the new chat first %v", c.search.Text, len(c.Shown()), c.Shown()[0] == c.Current())
	}
}

// TestChatGoesOnTopWhenContinued: a chat written in goes to the top of the list at
// once, where the next start lists it (newest first). It stayed in its place until
// a restart reordered the list.
func TestChatGoesOnTopWhenContinued(t *testing.T) {
	dir := t.TempDir()
	m := &fakeModel{answers: func(engine.Request) string { return "An answer." }}
	a := newTestApp(t, m, dir)
	c := a.Chat
	var older *chats.Thread
	for _, q := range []string{"What is Unix?", "What is Lisp?"} {
		asUI(c.StartNew)
		typeText(c.input, q)
		tap(c.send)
		c.run.Wait()
		if older == nil {
			older = c.Current()
		}
	}
	if c.Threads()[0] == older {
		t.Fatal("the older chat is first before it was continued")
	}
	asUI(func() { c.list.Select(slices.Index(c.Shown(), older)) })
	typeText(c.input, "And Plan 9?")
	tap(c.send)
	c.run.Wait()
	if c.Threads()[0] != older || c.Shown()[0] != older || c.Current() != older {
		t.Errorf("the chat continued is not first: %q", c.Threads()[0].Title)
	}
	onDisk, _ := a.deps.Chats.List()
	if len(onDisk) != 2 || onDisk[0].ID != older.ID {
		t.Errorf("the next start lists %q first", onDisk[0].Title)
	}
}

// TestWhenText: a chat's row says when it last changed as people say it: the
// time today, Yesterday, the weekday within a week, the date, with the year when
// it is another's.
func TestWhenText(t *testing.T) {
	now := time.Date(2026, 12, 5, 14, 2, 0, 0, time.Local)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, ""},
		{now.Add(-3 * time.Hour), "11:02"},
		{time.Date(2026, 12, 5, 0, 1, 0, 0, time.Local), "00:01"},
		{time.Date(2026, 12, 4, 23, 59, 0, 0, time.Local), "Yesterday"},
		{time.Date(2026, 12, 1, 9, 0, 0, 0, time.Local), "Tuesday"},
		{time.Date(2026, 11, 20, 9, 0, 0, 0, time.Local), "20 Nov"},
		{time.Date(2025, 12, 31, 9, 0, 0, 0, time.Local), "31 Dec 2025"},
	} {
		if got := whenText(c.t, now); got != c.want {
			t.Errorf("whenText(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

// TestListDaysMoveOnAtMidnight: the chat list is redrawn a second past each
// local midnight (tickDays), so that a window left open overnight says
// "Yesterday" for what it said "14:02" for; the rows kept the day before's
// words until the list was refreshed.
func TestListDaysMoveOnAtMidnight(t *testing.T) {
	for _, c := range []struct {
		now  time.Time
		want time.Duration
	}{
		{time.Date(2026, 12, 5, 14, 2, 0, 0, time.Local), 9*time.Hour + 58*time.Minute + time.Second},
		{time.Date(2026, 12, 31, 23, 59, 59, 0, time.Local), 2 * time.Second},
		{time.Date(2026, 12, 5, 0, 0, 0, 0, time.Local), 24*time.Hour + time.Second},
	} {
		if got := untilNextDay(c.now); got != c.want { // (no clock moves in December)
			t.Errorf("untilNextDay(%v) = %v, want %v", c.now, got, c.want)
		}
	}
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	c := a.Chat
	first := uiRead(func() *time.Timer { return c.dayTimer })
	if first == nil {
		t.Fatal("no timer for the next day")
	}
	first.Reset(time.Millisecond) // midnight, now
	waitFor(t, "the list redrawn and the timer set for the next midnight", func() bool {
		return uiRead(func() *time.Timer { return c.dayTimer }) != first
	})
	a.shutdown()
	if uiRead(func() bool { return c.dayTimer != nil }) {
		t.Error("the day timer runs on after shutdown")
	}
}
