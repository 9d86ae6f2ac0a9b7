package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/ui/htmlview"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/speed"
)

var wikiPages = map[string]string{
	"Unix":      `<h1>Unix</h1><p>An <em>operating system</em> from <a href="/wiki/Bell_Labs">Bell Labs</a>, written in <code>C</code>.</p><ul><li>multi-user</li><li>portable</li></ul>`,
	"Bell Labs": `<h1>Bell Labs</h1><p>The research lab where <a href="/wiki/Unix">Unix</a> began.</p>`,
}

func wikiAnswers(req engine.Request) string {
	for title, html := range wikiPages {
		if req.Prompt == assets.EncyclopediaPrompt(title) {
			return html
		}
	}
	return "<h1>Unknown</h1><p>No such entry.</p>"
}

func TestEncyclopediaTypeTopicAndEnter(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia

	var mu sync.Mutex
	var frames []*htmlsafe.Doc
	a.frameHook = func(v pageView, ev engine.Event) {
		mu.Lock()
		frames = append(frames, v.Doc())
		mu.Unlock()
	}
	m.gate = make(chan struct{})
	typeText(e.address, "Unix")
	e.address.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	// Let it develop step by step so each step is drawn.
	for i := 0; i < 2; i++ {
		feed(t, m.gate, 1)
		waitFor(t, "a frame", func() bool { mu.Lock(); defer mu.Unlock(); return len(frames) > i })
	}
	close(m.gate)
	e.run.Wait()

	calls := m.Calls()
	if len(calls) != 1 || calls[0].req.Prompt != assets.EncyclopediaPrompt("Unix") || calls[0].req.Mode != engine.Diffusion ||
		calls[0].req.Opening != assets.EncyclopediaOpening("Unix") {
		t.Fatalf("generate calls %+v", calls)
	}
	if calls[0].req.Seed != 42 {
		t.Errorf("seed from settings not used: %d", calls[0].req.Seed)
	}
	if d := e.view.Doc(); d == nil || d.Title != "Unix" {
		t.Fatalf("page shown: %+v", d)
	}
	if !strings.HasPrefix(e.status.Text, "Done") || !strings.Contains(e.status.Text, "tokens/s") {
		t.Errorf("status %q", e.status.Text)
	}
	// The page developed in place: some frame showed noise and decided text together.
	mu.Lock()
	developing := false
	for _, d := range frames {
		noise, text := countRuns(d)
		if noise > 0 && text > 0 {
			developing = true
		}
	}
	mu.Unlock()
	if !developing {
		t.Errorf("no developing frame with noise and text among %d frames", len(frames))
	}
	// The finished page, drawn alone at a fixed size (the master does not depend
	// on the rest of the screen's layout).
	v := htmlview.New(nil)
	w := test.NewTempWindow(t, v)
	asUI(func() { w.Resize(fyne.NewSize(640, 300)) })
	v.SetDoc(e.view.Doc())
	test.AssertObjectRendersToMarkup(t, "encyclopedia_unix.xml", v)
}

// countRuns counts a page's runs of noise and of decided text.
func countRuns(d *htmlsafe.Doc) (noise, text int) {
	for r := range d.Inlines() {
		if r.Style&htmlsafe.Noise != 0 {
			noise++
		} else if strings.TrimSpace(r.Text) != "" {
			text++
		}
	}
	return
}

func TestEncyclopediaLinkBackForwardReload(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()

	// Tapping a link in the rendered page navigates and regenerates.
	tapLink(t, a.win.Content(), "Bell Labs")
	e.run.Wait()
	if n := len(m.Calls()); n != 2 || m.Calls()[1].req.Prompt != assets.EncyclopediaPrompt("Bell Labs") {
		t.Fatalf("after link tap: %d calls", n)
	}
	if e.view.Doc().Title != "Bell Labs" || e.address.Text != "Bell Labs" {
		t.Fatalf("page %q, address %q", e.view.Doc().Title, e.address.Text)
	}

	// Back and forward restore the cached pages without generating.
	tap(e.back)
	if e.view.Doc().Title != "Unix" || e.address.Text != "Unix" || !strings.HasPrefix(e.status.Text, "From history") {
		t.Errorf("back: page %q status %q", e.view.Doc().Title, e.status.Text)
	}
	tap(e.forward)
	if e.view.Doc().Title != "Bell Labs" {
		t.Errorf("forward: page %q", e.view.Doc().Title)
	}
	if n := len(m.Calls()); n != 2 {
		t.Errorf("back/forward generated: %d calls", n)
	}
	if !e.forward.Disabled() || e.back.Disabled() {
		t.Error("history buttons in the wrong state")
	}

	// Reload regenerates the current page.
	tap(e.reload)
	e.run.Wait()
	if n := len(m.Calls()); n != 3 || m.Calls()[2].req.Prompt != assets.EncyclopediaPrompt("Bell Labs") {
		t.Errorf("reload: %d calls", n)
	}
	// A new address after going back drops the forward history.
	tap(e.back)
	asUI(func() { e.Navigate("Lisp") })
	e.run.Wait()
	if !e.forward.Disabled() || len(e.history) != 2 {
		t.Errorf("history %v", e.history)
	}
}

// TestEncyclopediaBackToTheStartPage: Back from the first page opened returns to
// the start page and its suggested topics, as a browser goes back to where it
// started (Back was disabled there, and the start page unreachable without a
// restart); Forward returns to the page without writing it again, and a page still
// developing when Back is tapped does not draw over the start page.
func TestEncyclopediaBackToTheStartPage(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	start := e.view.Doc().Title
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()
	if e.back.Disabled() {
		t.Fatal("Back is disabled on the first page: the start page cannot be reached again")
	}
	tap(e.back)
	if got := e.view.Doc().Title; got != start || e.address.Text != "" || e.status.Text != "Ready" {
		t.Errorf("back from the first page: page %q, address %q, status %q; want the start page %q", got, e.address.Text, e.status.Text, start)
	}
	if !e.back.Disabled() || e.forward.Disabled() || !e.reload.Disabled() {
		t.Errorf("on the start page: back disabled %v, forward disabled %v, reload disabled %v; want true, false, true",
			e.back.Disabled(), e.forward.Disabled(), e.reload.Disabled())
	}
	tapLink(t, a.win.Content(), "Lisp") // the start page's links still work
	e.run.Wait()
	if e.address.Text != "Lisp" || len(e.history) != 1 || e.history[0] != "Lisp" {
		t.Errorf("a topic from the start page: address %q, history %v; want [Lisp] (the old forward page dropped)", e.address.Text, e.history)
	}
	tap(e.back)
	tap(e.forward)
	if e.address.Text != "Lisp" || !strings.HasPrefix(e.status.Text, "From history") || len(m.Calls()) != 2 {
		t.Errorf("forward from the start page: address %q, status %q, %d generations; want Lisp from history, 2",
			e.address.Text, e.status.Text, len(m.Calls()))
	}

	// Back while the first page is still developing: the start page stays.
	tap(e.back)
	m.gate = make(chan struct{})
	asUI(func() { e.Navigate("Bell Labs") })
	feed(t, m.gate, 1)
	tap(e.back)
	close(m.gate)
	e.run.Wait()
	if got := e.view.Doc().Title; got != start || e.address.Text != "" {
		t.Errorf("back while developing: page %q, address %q; want the start page", got, e.address.Text)
	}
}

func TestSecondClickCancelsFirstWithinOneStep(t *testing.T) {
	// The first canvas of "Start" holds a whole link; the rest is long.
	start := `<p><a href="/wiki/Unix">Unix</a></p>` + "<p>" + strings.Repeat("more text ", 30) + "</p>"
	m := &fakeModel{gate: make(chan struct{}), answers: func(req engine.Request) string {
		if req.Prompt == assets.EncyclopediaPrompt("Start") {
			return start
		}
		return wikiAnswers(req)
	}}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Start") })
	feed(t, m.gate, stepsPerCanvas+2) // first canvas committed, two steps into the second
	first := m.Calls()[0]
	waitFor(t, "the link to develop", func() bool {
		return m.Steps(first) == stepsPerCanvas+2 && hasLink(a.win.Content(), "Unix")
	})

	// A click on the developing page: the running generation stops within one step.
	tapLink(t, a.win.Content(), "Unix")
	close(m.gate)
	e.run.Wait()
	if first.result == nil || first.result.StopReason != "cancelled" {
		t.Fatalf("first generation not cancelled: %+v", first.result)
	}
	if s := m.Steps(first); s > stepsPerCanvas+3 {
		t.Errorf("first generation ran %d steps, %d when clicked; want at most one more", s, stepsPerCanvas+2)
	}
	calls := m.Calls()
	if len(calls) != 2 || calls[1].result == nil || calls[1].result.StopReason != "eos" {
		t.Fatalf("second generation did not finish: %d calls", len(calls))
	}
	if e.view.Doc().Title != "Unix" || !strings.HasPrefix(e.status.Text, "Done") {
		t.Errorf("shown %q, status %q", e.view.Doc().Title, e.status.Text)
	}
	if _, cached := e.cache["Start"]; cached {
		t.Error("a cancelled page was cached")
	}
}

func TestStopKeepsCommittedText(t *testing.T) {
	long := "<h1>Long</h1><p>" + strings.Repeat("word ", 40) + "</p>"
	m := &fakeModel{answers: func(engine.Request) string { return long }, gate: make(chan struct{})}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Long") })
	feed(t, m.gate, stepsPerCanvas+1) // one canvas committed, one step into the next
	waitFor(t, "second canvas", func() bool { return m.Steps(m.Calls()[0]) == stepsPerCanvas+1 })
	tap(e.stop)
	e.run.Wait()
	if !strings.HasPrefix(e.status.Text, "Stopped") {
		t.Errorf("status %q", e.status.Text)
	}
	if d := e.view.Doc(); d == nil || d.Title != "Long" {
		t.Errorf("committed canvas not shown: %+v", d)
	}
	if !e.stop.Disabled() {
		t.Error("stop still enabled")
	}
}

// TestStopMidCanvasKeepsThePartialPage: stopped before its first canvas is
// committed, the page stays as it had developed, marked as stopped (it used to
// be wiped, with "The model wrote nothing for this topic").
func TestStopMidCanvasKeepsThePartialPage(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers, gate: make(chan struct{})}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	var mu sync.Mutex
	var last *htmlsafe.Doc
	a.frameHook = func(v pageView, ev engine.Event) {
		mu.Lock()
		last = v.Doc()
		mu.Unlock()
	}
	asUI(func() { e.Navigate("Unix") })
	feed(t, m.gate, 2) // half of the first canvas accepted, nothing committed
	waitFor(t, "the second step drawn", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, text := countRuns(last)
		return m.Steps(m.Calls()[0]) == 2 && text > 0
	})
	tap(e.stop)
	e.run.Wait()
	if res := m.Calls()[0].result; res == nil || res.StopReason != "cancelled" || len(res.Tokens) != 0 {
		t.Fatalf("want a run stopped before any commit, got %+v", res)
	}
	if _, text := countRuns(e.view.Doc()); text == 0 {
		t.Error("the partial page was wiped")
	}
	got := shownText(e.content)
	if !strings.Contains(got, "Stopped: this page is partial") || strings.Contains(got, "wrote nothing") {
		t.Errorf("screen says:\n%s", got)
	}
	if !strings.HasPrefix(e.status.Text, "Stopped") {
		t.Errorf("status %q", e.status.Text)
	}
	if _, cached := e.cache["Unix"]; cached {
		t.Error("a stopped page was cached")
	}
	// The next page clears the mark.
	close(m.gate)
	asUI(func() { e.Navigate("Bell Labs") })
	e.run.Wait()
	if got := shownText(e.content); strings.Contains(got, "Stopped: this page is partial") {
		t.Errorf("the mark outlived its page:\n%s", got)
	}
}

func TestModelErrorShownInPlainWords(t *testing.T) {
	fa := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	fa.models = newModelHost(nil) // no loader at all
	asUI(func() { fa.Encyclopedia.Navigate("Unix") })
	fa.Encyclopedia.run.Wait()
	if fa.Encyclopedia.errLabel.Hidden || !strings.Contains(fa.Encyclopedia.errLabel.Text, "Could not write the page for Unix") {
		t.Errorf("error label %q (hidden %v)", fa.Encyclopedia.errLabel.Text, fa.Encyclopedia.errLabel.Hidden)
	}
}

// fallbackModel is a model whose backend fell back to the CPU.
type fallbackModel struct {
	*fakeModel
	why string
}

func (f fallbackModel) Info() ModelInfo {
	i := f.fakeModel.Info()
	i.Fallback = f.why
	return i
}

// TestBackendFallbackIsSaid: where the backend asked for did not start (Settings
// → Backend xla with no XLA plugin, or a GPU whose CUDA plugin fails) and the
// CPU runs instead, every screen says so once the model is loaded, in the
// engine's sentence; the app said nothing (darkroom generate says it on stderr),
// and the pages were just slower.
func TestBackendFallbackIsSaid(t *testing.T) {
	const why = "XLA backend unavailable (no PJRT plugin found); using the pure-Go backend"
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	m := fallbackModel{&fakeModel{answers: wikiAnswers}, why}
	a := newApp(test.NewTempApp(t), test.NewTempWindow(t, nil), Deps{Settings: st,
		Loader: LoaderFunc(func(context.Context) (Model, error) { return m, nil })})
	defer a.shutdown()
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()
	want := why + " (Settings → Advanced → Backend)."
	waitFor(t, "the fallback said", func() bool {
		return strings.HasSuffix(uiRead(func() string { return a.notices[0].Text }), want)
	})
	for i, n := range a.notices {
		if got := uiRead(func() string { return n.Text }); !strings.HasSuffix(got, want) {
			t.Errorf("notice %d: %q, want it to end %q", i, got, want)
		}
	}
}

// TestLongErrorDoesNotCoverThePage: an error of two lines or more pushes the
// page down, whole, instead of being drawn over its heading (seen in the real
// window: a remote server that had gone away, 'Could not write the page for
// Emacs: load the model: … cannot reach the server at 127.0.0.1:8797 (…)', over
// 'Darkroom Encyclopedia').
func TestLongErrorDoesNotCoverThePage(t *testing.T) {
	fa := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	e := fa.Encyclopedia
	asUI(func() { fa.win.Resize(fyne.NewSize(1000, 700)) })
	test.LaidOutObjects(fa.win.Content())
	long := "Could not write the page for Emacs: load the model: open darkroom-mini at 127.0.0.1:8797: cannot reach the server at " +
		"127.0.0.1:8797 (connection refused: nothing listens there): check that it is running and that the address is right"
	asUI(func() {
		e.showError(long)
		// One layout pass, as the window's next frame makes: the screen laid out
		// with the sizes its parts ask for now.
		c := e.content.(*fyne.Container)
		c.Layout.Layout(c.Objects, c.Size())
	})
	var errBottom, pageTop float32
	asUI(func() {
		errBottom = fyne.CurrentApp().Driver().AbsolutePositionForObject(e.errLabel).Y + e.errLabel.Size().Height
		pageTop = fyne.CurrentApp().Driver().AbsolutePositionForObject(e.scroll).Y
		if need := e.errLabel.MinSize().Height; e.errLabel.Size().Height < need {
			t.Errorf("the error is %.0f high; its text needs %.0f", e.errLabel.Size().Height, need)
		}
	})
	if errBottom > pageTop+0.5 {
		t.Errorf("the error ends at y=%.0f, below the page's top at y=%.0f: it is drawn over the page", errBottom, pageTop)
	}
}

// TestEncyclopediaUnreadableTitleNotSent: an address that is not readable text —
// pasted with a control character, or only an invisible one — is refused on the
// screen in words and never reaches the model, as browser mode and a model's
// own links to such titles are (assets.ReadableTitle).
func TestEncyclopediaUnreadableTitleNotSent(t *testing.T) {
	m := &fakeModel{answers: wikiAnswers}
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	for _, typed := range []string{"Unix\x1b[2J", "\u200b"} {
		asUI(func() { e.address.SetText(typed) }) // as pasted
		e.address.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
		if !e.errLabel.Visible() || !strings.Contains(e.errLabel.Text, "There is no page for") {
			t.Errorf("typed %q: error line %q (shown %v)", typed, e.errLabel.Text, e.errLabel.Visible())
		}
	}
	e.onLink(htmlsafe.Inline{Href: "/wiki/%00"})
	e.run.Wait()
	if calls := m.Calls(); len(calls) != 0 {
		t.Errorf("the model was asked for %d pages, the first %q", len(calls), calls[0].req.Prompt)
	}
}

// TestPagesOpenWithTheEntrysLead: where the model's folder holds a title's
// entry (ModelInfo.Leads), the Encyclopedia holds it whole after the heading,
// and both of the Race's pages its first sentence, leaving them a page to
// write; a title it does not hold gets the heading alone. The pages had always
// opened with the heading alone.
func TestPagesOpenWithTheEntrysLead(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system from Bell Labs. It runs.</p>", nil)
	m := &fakeModel{answers: wikiAnswers, leads: &leads}
	a := newTestApp(t, m, "")
	asUI(func() { a.Encyclopedia.Navigate("Unix") })
	a.Encyclopedia.run.Wait()
	if st := uiRead(func() string { return a.Encyclopedia.status.Text }); !strings.Contains(st, " · "+develop.LeadNote) {
		t.Errorf("Unix's status %q does not say its text is the entry's", st)
	}
	asUI(func() { a.Encyclopedia.Navigate("Bell Labs") })
	a.Encyclopedia.run.Wait()
	if st := uiRead(func() string { return a.Encyclopedia.status.Text }); strings.Contains(st, develop.LeadNote) || !strings.Contains(st, develop.OwnNote) {
		t.Errorf("Bell Labs's status %q says it holds the entry's text, or not that the model wrote it alone", st)
	}
	tap(a.Race.startB) // Unix
	a.Race.run.Wait()
	calls := m.Calls()
	const unix, sentence = "<p>An operating system from Bell Labs. It runs.</p>", "<p>An operating system from Bell Labs."
	heading := assets.EncyclopediaOpening
	if len(calls) != 4 || calls[0].req.Opening != heading("Unix") || calls[0].req.Lead != unix ||
		calls[1].req.Opening != heading("Bell Labs") || calls[1].req.Lead != "" ||
		calls[2].req.Opening != heading("Unix") || calls[2].req.Lead != sentence || calls[3].req.Opening != heading("Unix") || calls[3].req.Lead != sentence ||
		!calls[0].req.LeadEnds || calls[2].req.LeadEnds || calls[3].req.LeadEnds {
		for _, c := range calls {
			t.Errorf("opening %q, lead %q (ends the page: %v)", c.req.Opening, c.req.Lead, c.req.LeadEnds)
		}
		t.Fatalf("%d calls; want Unix with its entry ending the page, Bell Labs with its heading, and the Race's two with the entry's first sentence to continue", len(calls))
	}
	if sm := serverModel(m, engine.Sampling{}); sm.Leads != &leads {
		t.Error("the local server is not given the model's leads")
	}
}

// TestLetTheModelWriteIt: a known title's page is its entry, shown at once, so
// a user never saw the model write one; the page offers "Let the model write
// it", which writes the page again without the entry (the model's own, said so
// in the status line) and then offers the entry back; back and forward show
// each as it was; a title navigated to anew opens its entry; a title with no
// entry offers nothing.
func TestLetTheModelWriteIt(t *testing.T) {
	a, m := entriesApp(t, "Unix")
	e := a.Encyclopedia
	button := func() string {
		return uiRead(func() string {
			if !e.entryBar.Visible() {
				return "(hidden)"
			}
			return e.ownBtn.Text
		})
	}
	status := func() string { return uiRead(func() string { return e.status.Text }) }
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()
	if b, msg := button(), uiRead(func() string { return e.entryMsg.Text }); b != develop.LetModelWrite || msg != entryNote {
		t.Fatalf("on Unix's entry the bar says %q, its button %q; want %q, %q", msg, b, entryNote, develop.LetModelWrite)
	}
	tap(e.ownBtn)
	e.run.Wait()
	if b, st := button(), status(); b != develop.ShowEntry || !strings.Contains(st, develop.OwnNote) {
		t.Errorf("after %q: button %q, status %q; want %q and the model's own writing said", develop.LetModelWrite, b, st, develop.ShowEntry)
	}
	if msg := uiRead(func() string { return e.entryMsg.Text }); msg != ownNote {
		t.Errorf("over the model's own page: %q, want %q", msg, ownNote)
	}
	asUI(func() { e.Navigate("Bell Labs") })
	e.run.Wait()
	if b := button(); b != "(hidden)" {
		t.Errorf("on Bell Labs, which has no entry, the button is %q", b)
	}
	asUI(e.Back)
	if b, st := button(), status(); b != develop.ShowEntry || !strings.Contains(st, develop.OwnNote) {
		t.Errorf("back on Unix: button %q, status %q; want the model's own page, from history", b, st)
	}
	tap(e.ownBtn)
	e.run.Wait()
	if b, st := button(), status(); b != develop.LetModelWrite || !strings.Contains(st, develop.LeadNote) {
		t.Errorf("after %q: button %q, status %q; want the entry again", develop.ShowEntry, b, st)
	}
	tap(e.ownBtn) // the model's own again, then Unix navigated to anew: its entry
	e.run.Wait()
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()
	if b := button(); b != develop.LetModelWrite {
		t.Errorf("Unix navigated to anew: button %q, want its entry's %q", b, develop.LetModelWrite)
	}
	var leadsSent []string
	for _, c := range m.Calls() {
		leadsSent = append(leadsSent, fmt.Sprintf("%s:%t", strings.TrimSpace(strings.TrimPrefix(c.req.Opening, "<h1>")), c.req.Lead != ""))
	}
	want := []string{"Unix</h1>:true", "Unix</h1>:false", "Bell Labs</h1>:false", "Unix</h1>:true", "Unix</h1>:false", "Unix</h1>:true"}
	if !slices.Equal(leadsSent, want) {
		t.Errorf("pages asked for (opening:entry held) %q, want %q", leadsSent, want)
	}
	asUI(func() { e.Back() }) // back to the start page and further: nothing to offer
	for uiRead(func() int { return e.pos }) >= 0 {
		asUI(e.Back)
	}
	if b := button(); b != "(hidden)" {
		t.Errorf("on the start page the button is %q", b)
	}
}

// TestTypedTopicOpensItsEntry: a topic typed as a reader types it —
// "compilers", "the kernel" — opens the entry it names, under the entry's
// title in the address and the history (left to the model, it got a page of
// its own invention though the entry was held).
func TestTypedTopicOpensItsEntry(t *testing.T) {
	a, m := entriesApp(t, "compiler")
	e := a.Encyclopedia
	asUI(func() { e.Navigate("compilers") })
	e.run.Wait()
	calls := m.Calls()
	if len(calls) != 1 || calls[0].req.Opening != assets.EncyclopediaOpening("compiler") || calls[0].req.Lead == "" {
		t.Fatalf("%d pages asked for; want compiler's with its entry, got %+v", len(calls), calls)
	}
	if addr, hist := uiRead(func() string { return e.address.Text }), uiRead(func() []string { return slices.Clone(e.history) }); addr != "compiler" || !slices.Equal(hist, []string{"compiler"}) {
		t.Errorf("address %q, history %q; want the entry's title", addr, hist)
	}
	if !uiRead(func() bool { return e.entryBar.Visible() }) {
		t.Error("the entry's page has no entry bar")
	}
}

// TestMisspeltTopicOffersEntries: a title the model holds no entry for but is
// a typo away from one ("compilr") gets the model's own page, and over it the
// entries it may have meant, as links that open them.
func TestMisspeltTopicOffersEntries(t *testing.T) {
	a, m := entriesApp(t, "compiler")
	e := a.Encyclopedia
	asUI(func() { e.Navigate("compilr") })
	e.run.Wait()
	links, msg := rowLinks(e.similar), uiRead(func() string { return e.entryMsg.Text })
	if !uiRead(func() bool { return e.entryBar.Visible() && !e.ownBtn.Visible() }) || msg != develop.SimilarNote || !slices.Equal(links, []string{"compiler"}) {
		t.Fatalf("over compilr's page: %q with links %q; want %q and a link to compiler", msg, links, develop.SimilarNote)
	}
	tapRowLink(e.similar, "compiler")
	e.run.Wait()
	calls := m.Calls()
	if last := calls[len(calls)-1].req; last.Opening != assets.EncyclopediaOpening("compiler") || last.Lead == "" {
		t.Errorf("the link opened %q with lead %q; want compiler's entry", last.Opening, last.Lead)
	}
	if b := uiRead(func() string { return e.ownBtn.Text }); b != develop.LetModelWrite {
		t.Errorf("over compiler's entry the button says %q", b)
	}
}

// TestAddressSuggestsEntries: typing a topic offers, under the address, the
// entries whose titles begin with it, as links that open them; none once the
// page is opened, or for what no title begins with.
func TestAddressSuggestsEntries(t *testing.T) {
	a, m := entriesApp(t, "compiler", "Compile", "Unix")
	e := a.Encyclopedia
	suggested := func() []string { return rowLinks(e.suggest) }
	asUI(func() { e.Navigate("Bell Labs") }) // the model loaded: its entries are these three
	e.run.Wait()
	asUI(func() { e.address.SetText("") })
	test.Type(e.address, "comp")
	if got, want := suggested(), []string{"Compile", "compiler"}; !slices.Equal(got, want) {
		t.Fatalf("typing comp: suggested %q, want %q", got, want)
	}
	tapRowLink(e.suggest, "compiler")
	e.run.Wait()
	calls := m.Calls()
	if last := calls[len(calls)-1].req; last.Opening != assets.EncyclopediaOpening("compiler") || last.Lead == "" {
		t.Errorf("the suggestion opened %q with lead %q; want compiler's entry", last.Opening, last.Lead)
	}
	if got := suggested(); got != nil {
		t.Errorf("compiler opened, the address still suggests %q", got)
	}
	test.Type(e.address, "zz")
	if got := suggested(); got != nil {
		t.Errorf("typing compilerzz: suggested %q", got)
	}
}

// TestAddressSuggestionsFitTheWindow: the suggestions are one line no wider
// than the screen at the smallest window, so they never widen it.
func TestAddressSuggestionsFitTheWindow(t *testing.T) {
	var titles []string
	for i := range 6 {
		titles = append(titles, fmt.Sprintf("compiler of the %d%s very long title", i, strings.Repeat("x", 20+i)))
	}
	a, _ := entriesApp(t, titles...)
	e := a.Encyclopedia
	asUI(func() { a.win.Resize(smallestWindowSize) })
	test.LaidOutObjects(a.win.Content())
	asUI(func() { e.Navigate("Bell Labs") })
	e.run.Wait()
	asUI(func() { e.address.SetText("") })
	test.Type(e.address, "comp")
	row, room, links := uiRead(func() float32 { return e.suggest.MinSize().Width }), uiRead(func() float32 { return e.content.Size().Width }), uiRead(func() int { return len(e.suggest.Objects) - 1 })
	if links == 0 || links == len(titles) || row > room {
		t.Errorf("%d of %d suggestions in a row %.0f wide, the screen %.0f; want some, not all, within it", links, len(titles), row, room)
	}
}

// TestRaceOpensTheTypedTopicsEntry: the Race, too, races the entry a topic
// names ("compilers": compiler, its first sentence held on both sides), and
// says which tokens of a side's count were held.
func TestRaceOpensTheTypedTopicsEntry(t *testing.T) {
	a, m := entriesApp(t, "compiler")
	r := a.Race
	asUI(func() { r.topic.SetText("compilers") })
	tap(r.startB)
	r.run.Wait()
	calls := m.Calls()
	if len(calls) != 2 || calls[0].req.Opening != assets.EncyclopediaOpening("compiler") || calls[1].req.Opening != calls[0].req.Opening || calls[0].req.Lead == "" {
		t.Fatalf("%d pages raced; want compiler's twice, its first sentence held: %+v", len(calls), calls)
	}
	if topic := uiRead(func() string { return r.topic.Text }); topic != "compiler" {
		t.Errorf("the topic reads %q, want compiler", topic)
	}
	for _, p := range r.panes {
		if st := uiRead(func() string { return p.stats.Text }); !strings.Contains(st, " held)") {
			t.Errorf("%s pane: %q does not say which tokens were held", p.mode, st)
		}
	}
}

// TestServerKnowsTheModelWithoutLoadingIt: the local server's start page and
// page shells learn the app's model and its entries without waiting for a load
// (server.Options.Known): before the built-in Mini loads, its embedded entries
// by its id; once a model is loaded, that model's; for another model not yet
// loaded, nothing (the start page waits for it, the shells go without).
func TestServerKnowsTheModelWithoutLoadingIt(t *testing.T) {
	a, m := entriesApp(t, "Unix")
	opts := a.serverOptions()
	builtin, err := builtinLeads()
	if err != nil {
		t.Fatal(err)
	}
	if id, leads, ok := opts.Known(); !ok || id != catalog.MiniID || leads != builtin {
		t.Errorf("before the built-in model loads: %q, %d entries, %v; want %s and its %d embedded entries", id, leads.Len(), ok, catalog.MiniID, builtin.Len())
	}
	asUI(func() { a.Encyclopedia.Navigate("Unix") })
	a.Encyclopedia.run.Wait()
	if id, leads, ok := opts.Known(); !ok || id != catalog.MiniID || leads != m.leads {
		t.Errorf("once loaded: %q, %d entries, %v; want the model's %d", id, leads.Len(), ok, m.leads.Len())
	}

	other, _ := entriesApp(t, "Unix")
	if err := other.deps.Settings.Update(func(v *settings.Values) { // a model on another PC
		v.RemoteServers = []settings.RemoteServer{{URL: "http://127.0.0.1:9"}}
		v.RemoteModel = &settings.RemoteModel{URL: "http://127.0.0.1:9", ID: "tiny"}
	}); err != nil {
		t.Fatal(err)
	}
	if id, leads, ok := other.serverOptions().Known(); ok || leads != nil || id != "" {
		t.Errorf("another model, not loaded: %q, %d entries, %v; want not known", id, leads.Len(), ok)
	}
}

// TestStartPageSaysWhatAPageIs: the start page said every page is written by
// the model as you open it, and offered only titles Darkroom Mini holds entries
// for — pages shown at once, never developing. For a model with entries it
// says which is which and offers topics the model writes alone; redrawn when
// the model loads.
func TestStartPageSaysWhatAPageIs(t *testing.T) {
	a, _ := entriesApp(t, "Unix")
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Bell Labs") })
	e.run.Wait() // the model is loaded now
	asUI(e.Back)
	waitFor(t, "the start page for a model with one entry", func() bool {
		text := docText(e.view)
		return strings.Contains(text, "holds 1 entry ") && strings.Contains(text, "Topics it has no entry for")
	})
	text := docText(e.view)
	for _, topic := range develop.OwnTopics {
		if !strings.Contains(text, topic) {
			t.Errorf("the start page does not offer %q, which the model holds no entry for:\n%s", topic, text)
		}
	}
	if strings.Contains(text, "Every page here is written by the model") || strings.Contains(text, "Lisp") {
		t.Errorf("the start page says every page is the model's, or offers Lisp, which the model holds no entry for:\n%s", text)
	}
}

// TestPageLinksOpenWhatTheySay: a link whose topic the model does not know but
// whose text names an entry it does opens that entry, in the Encyclopedia as in
// the browser (htmlsafe.Relink); the others stay as written.
func TestPageLinksOpenWhatTheySay(t *testing.T) {
	var leads assets.Leads
	leads.Add("virtual memory", "<h1>virtual memory</h1>\n<p>A memory system. It pages.</p>", nil)
	m := &fakeModel{leads: &leads, answers: func(engine.Request) string {
		return `<h1>Paging</h1><p>Uses <a href="/wiki/virtual_program">virtual memory</a> and <a href="/wiki/swap">swapping</a>.</p>`
	}}
	a := newTestApp(t, m, "")
	asUI(func() { a.Encyclopedia.Navigate("Paging") })
	a.Encyclopedia.run.Wait()
	p := uiRead(func() *page { return a.Encyclopedia.cache["Paging"] })
	if p == nil {
		t.Fatal("the page was not written")
	}
	var hrefs []string
	for _, l := range p.doc.Links() {
		hrefs = append(hrefs, l.Href)
	}
	if want := []string{"/wiki/virtual_memory", "/wiki/swap"}; !slices.Equal(hrefs, want) {
		t.Errorf("links %q, want %q", hrefs, want)
	}
}

// TestEncyclopediaPageMode: the Encyclopedia wrote every page with the polaroid,
// whatever the model; Darkroom Mini's printer writes pages that read more like
// English, seven times sooner on a CPU (its card's mode, which Chat already
// follows). Its mode picker starts on the model's choice, says the mode in the
// status line, writes with the one picked, and keeps the pick for the next start.
func TestEncyclopediaPageMode(t *testing.T) {
	dir := t.TempDir()
	m := &fakeModel{answers: wikiAnswers, mode: speed.Choice{Mode: engine.AR, Reason: "the printer (AR): reads better"}}
	a := newTestApp(t, m, dir)
	e := a.Encyclopedia
	if e.mode.Selected != modeAuto {
		t.Fatalf("the mode picker starts on %q, want %q", e.mode.Selected, modeAuto)
	}
	page := func(title string) engine.Mode {
		t.Helper()
		asUI(func() { e.Navigate(title) })
		e.run.Wait()
		calls := m.Calls()
		return calls[len(calls)-1].req.Mode
	}
	browserMode := func() engine.Mode { // the local server's pages (browser mode)
		t.Helper()
		sm, err := a.serverOptions().Model(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return sm.PageMode
	}
	if got := page("Unix"); got != engine.AR || !strings.HasPrefix(e.status.Text, "Done · Printer (AR) · ") || browserMode() != engine.AR {
		t.Errorf("automatic: mode %q (browser mode %q), status %q; want the model's printer, said", got, browserMode(), e.status.Text)
	}
	asUI(func() { e.mode.SetSelected(modeLabel(engine.Diffusion)) })
	if got := page("Lisp"); got != engine.Diffusion || !strings.HasPrefix(e.status.Text, "Done · Polaroid (diffusion) · ") || browserMode() != engine.Diffusion {
		t.Errorf("polaroid picked: mode %q, status %q", got, e.status.Text)
	}
	if v := a.deps.Settings.Get(); v.PageMode != "diffusion" {
		t.Errorf("the pick is not kept: settings page mode %q", v.PageMode)
	}
	again := newTestApp(t, &fakeModel{answers: wikiAnswers}, dir)
	if again.Encyclopedia.mode.Selected != modeLabel(engine.Diffusion) {
		t.Errorf("after a restart the picker shows %q", again.Encyclopedia.mode.Selected)
	}
}

// entriesApp is an app on a fake model whose folder holds an entry for each
// of titles ("<p>An entry about T. It is one.</p>").
func entriesApp(t *testing.T, titles ...string) (*testApp, *fakeModel) {
	t.Helper()
	var leads assets.Leads
	for _, title := range titles {
		leads.Add(title, "<h1>"+title+"</h1>\n<p>An entry about "+title+". It is one.</p>", nil)
	}
	m := &fakeModel{answers: wikiAnswers, leads: &leads}
	return newTestApp(t, m, ""), m
}

// rowLinks are the texts of the links a row of them shows (linkRow), nil
// while the row is hidden; read under uiMu.
func rowLinks(row *fyne.Container) []string {
	return uiRead(func() []string {
		if !row.Visible() {
			return nil
		}
		var titles []string
		for _, o := range row.Objects {
			if l, ok := o.(*widget.Hyperlink); ok {
				titles = append(titles, l.Text)
			}
		}
		return titles
	})
}

// tapRowLink taps the link of a row that reads title, as a tap on its text
// (Fyne's test.Tap lands outside a hyperlink's text).
func tapRowLink(row *fyne.Container, title string) {
	asUI(func() {
		for _, o := range row.Objects {
			if l, ok := o.(*widget.Hyperlink); ok && l.Text == title {
				l.OnTapped()
			}
		}
	})
}

// TestRaceSummaryCountsWrittenTokens: the Race's summary gives the tokens a
// side wrote a forward pass, not counting those held (the heading and the
// entry's first sentence: the printer read 2.53 a pass for 225 tokens, 137
// held, in 89 passes), and says how many were held.
func TestRaceSummaryCountsWrittenTokens(t *testing.T) {
	ar := &engine.Result{Tokens: make([]int, 225), HeldTokens: 137, LeadHeld: true, ForwardPasses: 89, TokensPerS: 300}
	diff := &engine.Result{Tokens: make([]int, 243), HeldTokens: 137, LeadHeld: true, ForwardPasses: 19, TokensPerS: 74}
	got := raceSummary(ar, diff, nil)
	for _, want := range []string{"Printer: 225 tokens (137 held), 89 forward passes, 0.99 tokens per pass", "Polaroid: 243 tokens (137 held), 19 forward passes, 5.58 tokens per pass"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
}

// TestEncyclopediaReloadKeepsThePreviousVersion: Reload wrote a page anew and
// the one it replaced was gone; now "Previous version" by the status line
// brings it back and "Newer version" the new one, until another page is shown.
// A reload that fails (or is stopped) leaves the previous page one tap away.
func TestEncyclopediaReloadKeepsThePreviousVersion(t *testing.T) {
	m, failing := numberedModel("<h1>Paging</h1><p>Version %d of the page.</p>")
	a := newTestApp(t, m, "")
	e := a.Encyclopedia
	shown := func() string { return docText(e.view) }
	offer := func() string {
		return uiRead(func() string {
			if !e.prevBtn.Visible() {
				return ""
			}
			return e.prevBtn.Text
		})
	}
	asUI(func() { e.Navigate("Paging") })
	e.run.Wait()
	if !strings.Contains(shown(), "Version 1") || offer() != "" {
		t.Fatalf("first page %q, offer %q", shown(), offer())
	}
	asUI(e.Reload)
	e.run.Wait()
	if !strings.Contains(shown(), "Version 2") || offer() != "Previous version" {
		t.Fatalf("after Reload: %q, offer %q", shown(), offer())
	}
	if w := uiRead(func() float32 { return a.win.Content().MinSize().Width }); w > smallestWindowSize.Width {
		t.Errorf("with the offer shown the window needs %.0f px, more than the smallest supported %.0f", w, smallestWindowSize.Width)
	}
	asUI(e.SwapVersion)
	if !strings.Contains(shown(), "Version 1") || offer() != "Newer version" {
		t.Errorf("Previous version: %q, offer %q", shown(), offer())
	}
	asUI(e.SwapVersion)
	if !strings.Contains(shown(), "Version 2") || offer() != "Previous version" {
		t.Errorf("Newer version: %q, offer %q", shown(), offer())
	}
	// A reload that fails: the page it would have replaced comes back.
	failing(true)
	asUI(e.Reload)
	e.run.Wait()
	if offer() != "Previous version" {
		t.Fatalf("after a failed reload the offer is %q", offer())
	}
	asUI(e.SwapVersion)
	if !strings.Contains(shown(), "Version 2") || offer() != "" || e.errLabel.Visible() {
		t.Errorf("Previous version after a failed reload: %q, offer %q, error shown %v", shown(), offer(), e.errLabel.Visible())
	}
	failing(false)
	// Back and forward show the version last chosen, with no offer.
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()
	asUI(e.Back)
	if !strings.Contains(shown(), "Version 2") || offer() != "" {
		t.Errorf("back to the page: %q, offer %q", shown(), offer())
	}
}
