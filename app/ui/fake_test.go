package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// fakeModel generates fixed answers the way the engine reports them: a canvas of
// canvasLen positions per block, stepsPerCanvas denoising steps accepting an equal
// share of positions each, EOS after the answer. Token ids are runes + tokBase.
// Cancellation is checked before every step, as the engine does.
type fakeModel struct {
	answers func(req engine.Request) string
	// gate, if set, must yield a value before each step (tests use it to hold a
	// generation mid-way); closing it lets generations run freely.
	gate chan struct{}
	// fail, if set, is asked before each generation (numbered from 1) for an
	// error to return instead of an answer.
	fail func(call int) error
	// dropped, if set, says how many messages a request with FitContext has
	// left out (Result.Dropped), as the engine would for a chat past its context.
	dropped func(req engine.Request) int
	// leads, if set, are the model folder's (ModelInfo.Leads).
	leads *assets.Leads
	// mode is ModelInfo.Mode (zero: diffusion, with no reason).
	mode speed.Choice
	// onClose, if set, is called by Close.
	onClose func()
	// backend and fallback are ModelInfo's ("" backend: "fake").
	backend, fallback string
	// answerTokens is ModelInfo.AnswerTokens.
	answerTokens int
	// cutOff makes every answer end at its length limit (StopMaxTokens), as
	// the engine's does when max new tokens run out before the end of turn.
	cutOff bool

	mu    sync.Mutex
	calls []*fakeCall
}

type fakeCall struct {
	req    engine.Request
	steps  int
	result *engine.Result
}

const (
	fakeEOS        = 1
	tokBase        = 16
	canvasLen      = 48
	stepsPerCanvas = 4
)

func (f *fakeModel) TokenText(id int) string {
	if id < tokBase {
		return ""
	}
	return string(rune(id - tokBase))
}
func (f *fakeModel) Decode(ids []int) string { return decodeRunes(ids) }
func (f *fakeModel) IsEnd(id int) bool       { return id == fakeEOS }
func (f *fakeModel) Info() ModelInfo {
	return ModelInfo{Name: miniName, Builtin: true, Backend: cmp.Or(f.backend, "fake"), Defaults: engine.Sampling{MaxSteps: stepsPerCanvas, TMin: 0.4, TMax: 0.8},
		Leads: f.leads, Mode: f.mode, Fallback: f.fallback, AnswerTokens: f.answerTokens}
}
func (f *fakeModel) Close() error {
	if f.onClose != nil {
		f.onClose()
	}
	return nil
}

func (f *fakeModel) Calls() []*fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*fakeCall(nil), f.calls...)
}

func (f *fakeModel) Steps(c *fakeCall) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return c.steps
}

func (f *fakeModel) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	call := &fakeCall{req: req}
	f.mu.Lock()
	f.calls = append(f.calls, call)
	n := len(f.calls)
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(n); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	var ids []int
	for _, r := range f.answers(req) {
		ids = append(ids, int(r)+tokBase)
	}
	ids = append(ids, fakeEOS)
	res := &engine.Result{PromptTokens: 10}
	if f.dropped != nil && req.FitContext {
		res.Dropped = f.dropped(req)
	}
	var committed []int
	passes := 0
	emit := func(ev engine.Event) {
		if req.OnEvent != nil {
			req.OnEvent(ev)
		}
	}
	finish := func(reason string) (*engine.Result, error) {
		if f.cutOff && reason == "eos" {
			reason = engine.StopMaxTokens
		}
		res.Tokens = committed
		res.Text = decodeRunes(committed)
		res.ForwardPasses = passes
		res.StopReason = reason
		// As the engine: the lead is held where it fits (a rune a token here).
		res.LeadHeld = req.Lead != "" && (req.Sampling.MaxNewTokens == 0 || len([]rune(req.Opening+req.Lead)) <= req.Sampling.MaxNewTokens)
		if res.LeadHeld { // the heading and the lead, as the engine counts them
			res.HeldTokens = min(len([]rune(req.Opening+req.Lead)), len(committed))
		}
		// and the reply, where the answer is it (the model began it).
		if res.Replied = req.Reply != "" && res.Text == req.Reply; res.Replied {
			res.HeldTokens = len(committed)
		}
		res.Elapsed = time.Since(start) + time.Second // never zero, for the rates
		res.TokensPerS = float64(len(committed)) / res.Elapsed.Seconds()
		f.mu.Lock()
		call.result = res
		f.mu.Unlock()
		emit(engine.Event{Kind: engine.EventDone, Committed: committed, Text: res.Text, ForwardPasses: passes, Elapsed: res.Elapsed})
		return res, nil
	}
	// As the engine: an entry held whole ends the answer (engine.Request.LeadEnds),
	// with no forward pass.
	if req.LeadEnds && req.Lead != "" && (req.Sampling.MaxNewTokens == 0 || len([]rune(req.Opening+req.Lead)) <= req.Sampling.MaxNewTokens) {
		for _, r := range req.Opening + req.Lead {
			committed = append(committed, int(r)+tokBase)
		}
		return finish("eos")
	}
	if req.Mode == engine.AR {
		for _, id := range ids {
			if ctx.Err() != nil {
				return finish("cancelled")
			}
			if id == fakeEOS {
				break
			}
			passes++
			committed = append(committed, id)
			f.mu.Lock()
			call.steps++
			f.mu.Unlock()
			emit(engine.Event{Kind: engine.EventToken, Committed: committed, Text: decodeRunes(committed), ForwardPasses: passes, Elapsed: time.Since(start)})
		}
		return finish("eos")
	}
	for ci := 0; ci*canvasLen < len(ids); ci++ {
		canvas := make([]int, canvasLen)
		for i := range canvas {
			canvas[i] = fakeEOS
			if k := ci*canvasLen + i; k < len(ids) {
				canvas[i] = ids[k]
			}
		}
		accepted := make([]bool, canvasLen)
		stats := engine.CanvasStats{}
		for step := 1; step <= stepsPerCanvas; step++ {
			if ctx.Err() != nil {
				return finish("cancelled")
			}
			if f.gate != nil {
				select {
				case <-f.gate:
				case <-ctx.Done():
					return finish("cancelled")
				}
			}
			passes++
			f.mu.Lock()
			call.steps++
			f.mu.Unlock()
			now := make([]bool, canvasLen)
			draft := make([]int, canvasLen)
			n := 0
			for i := range canvas {
				if i%stepsPerCanvas == step-1 {
					accepted[i], now[i] = true, true
					n++
				}
				draft[i] = canvas[i]
				if !accepted[i] {
					draft[i] = tokBase + 'a' + (i*7+step)%26 // re-noised
				}
			}
			stats.Accepted = append(stats.Accepted, n)
			emit(engine.Event{Kind: engine.EventStep, Canvas: ci, Step: step, Draft: draft, Accepted: now,
				Argmax: append([]int(nil), canvas...), Committed: committed, ForwardPasses: passes, Elapsed: time.Since(start)})
		}
		stats.Steps = stepsPerCanvas
		res.Canvases = append(res.Canvases, stats)
		for _, id := range canvas {
			if id == fakeEOS {
				return finish("eos")
			}
			committed = append(committed, id)
		}
		emit(engine.Event{Kind: engine.EventCommit, Canvas: ci, Committed: committed, Text: decodeRunes(committed), ForwardPasses: passes, Elapsed: time.Since(start)})
	}
	return finish("max_tokens")
}

func decodeRunes(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= tokBase {
			b.WriteRune(rune(id - tokBase))
		}
	}
	return b.String()
}

// testApp builds the app on a test driver with a fake model and temp folders.
type testApp struct {
	*App
	model *fakeModel
	win   fyne.Window
	dir   string
}

func newTestApp(t *testing.T, m *fakeModel, dir string) *testApp {
	t.Helper()
	fa := test.NewTempApp(t)
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := settings.Open(dir + "/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(func(v *settings.Values) { v.FirstRunDone = true; v.Seed = 42 }); err != nil {
		t.Fatal(err)
	}
	cs, err := chats.Open(dir + "/chats")
	if err != nil {
		t.Fatal(err)
	}
	w := test.NewTempWindow(t, nil)
	deps := Deps{
		Loader:   LoaderFunc(func(context.Context) (Model, error) { return m, nil }),
		Settings: st,
		Chats:    cs,
	}
	a := newApp(fa, w, deps)
	asUI(func() { w.Resize(fyne.NewSize(1000, 700)) })
	t.Cleanup(a.shutdown)
	return &testApp{App: a, model: m, win: w, dir: dir}
}

// findLink returns the rendered hyperlink widget with the given text.
func findLink(t *testing.T, root fyne.CanvasObject, text string) *widget.Hyperlink {
	t.Helper()
	if h := linkOnScreen(root, text); h != nil {
		return h
	}
	t.Fatalf("no link %q on screen", text)
	return nil
}

func hasLink(root fyne.CanvasObject, text string) bool { return linkOnScreen(root, text) != nil }

// linkOnScreen lays the tree out and finds the hyperlink with the given text,
// under uiMu: laying out builds and refreshes renderers, which must not run
// while an onUI callback (inline on a generation's goroutine under the test
// driver) updates the same widgets.
func linkOnScreen(root fyne.CanvasObject, text string) *widget.Hyperlink {
	return onScreen(root, func(h *widget.Hyperlink) bool { return h.Text == text })
}

// onScreen lays the tree out under uiMu (see linkOnScreen) and returns the first
// widget of type W that match accepts, or W's zero value.
func onScreen[W fyne.CanvasObject](root fyne.CanvasObject, match func(W) bool) W {
	uiMu.Lock()
	defer uiMu.Unlock()
	for _, o := range test.LaidOutObjects(root) {
		if w, ok := o.(W); ok && match(w) {
			return w
		}
	}
	var none W
	return none
}

// dialogButton is the button labelled text in the dialog shown over w, nil
// when no dialog is shown or it has no such button.
func dialogButton(w fyne.Window, text string) *widget.Button {
	var top fyne.CanvasObject
	asUI(func() { top = w.Canvas().Overlays().Top() })
	if top == nil {
		return nil
	}
	return onScreen(top, func(b *widget.Button) bool { return b.Text == text })
}

// tapLink taps the middle of the rendered hyperlink with the given text, under
// uiMu like an onUI callback: the tap runs the app's handler on the test
// goroutine (in the app, on the UI goroutine), which updates widgets that a
// running generation's callbacks update too. (Link handlers start generations
// on their own goroutines and never call onUI themselves, so this cannot
// deadlock.)
func tapLink(t *testing.T, root fyne.CanvasObject, text string) {
	t.Helper()
	h := findLink(t, root, text)
	uiMu.Lock()
	defer uiMu.Unlock()
	test.TapAt(h, fyne.NewPos(theme.InnerPadding()+2, h.Size().Height/2)) // on the first letters: the widget may be wider than its text
}

// shownText is the text of the labels, buttons and checks drawn under root, one
// a line: what the user sees (hidden objects and what they hold are skipped).
// Under uiMu, as linkOnScreen: walking builds renderers.
func shownText(root fyne.CanvasObject) string {
	uiMu.Lock()
	defer uiMu.Unlock()
	var lines []string
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		if o == nil || !o.Visible() {
			return
		}
		switch x := o.(type) {
		case *widget.Label:
			lines = append(lines, x.Text)
		case *widget.Button:
			lines = append(lines, x.Text)
		case *widget.Check:
			lines = append(lines, x.Text)
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(x).Objects() {
				walk(c)
			}
		}
	}
	walk(root)
	return strings.Join(lines, "\n")
}

// asUI runs f under uiMu, as the app runs a tap or a keystroke on its UI
// goroutine: the handler updates widgets that a running generation's onUI
// callbacks (inline on its goroutine under the test driver) update too.
// Handlers start their work on goroutines and never call onUI themselves, and
// runner.Stop does not wait, so this cannot deadlock.
func asUI(f func()) {
	uiMu.Lock()
	defer uiMu.Unlock()
	f()
}

// newApp is New under uiMu, as the app builds its window on the UI goroutine:
// New starts work (the Library's listing) whose onUI callbacks, inline on their
// goroutines under the test driver, update widgets New is still laying out.
func newApp(fa fyne.App, w fyne.Window, deps Deps) (a *App) {
	asUI(func() { a = New(fa, w, deps) })
	return a
}

// uiRead returns f's reading of widgets under uiMu (they are written by onUI
// callbacks on other goroutines under the test driver).
func uiRead[T any](f func() T) (v T) {
	asUI(func() { v = f() })
	return v
}

// selectProfile picks a profile on a Library card as the user would (asUI).
func selectProfile(c *libraryCard, profile string) { asUI(func() { c.profile.SetSelected(profile) }) }

// tap taps w as the user would (asUI).
func tap(w fyne.Tappable) { asUI(func() { test.Tap(w) }) }

// typeText types s into e as the user would (asUI).
func typeText(e fyne.Focusable, s string) { asUI(func() { test.Type(e, s) }) }

// feed lets n steps of a held generation run.
func feed(t *testing.T, gate chan struct{}, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case gate <- struct{}{}:
		case <-time.After(20 * time.Second):
			t.Fatalf("generation did not take step %d", i+1)
		}
	}
}

// waitFor polls cond (for state reached by background goroutines). The deadline
// only bounds a failing test: a throttled test download on a 2-core machine busy
// with other work (a training run) took over 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// numberedModel is a fake model whose nth answer is fmt.Sprintf(format, n)
// (a page or screen written anew each time), and which fails every call while
// failing(true) holds.
func numberedModel(format string) (m *fakeModel, failing func(on bool)) {
	var mu sync.Mutex
	n, fail := 0, false
	m = &fakeModel{answers: func(engine.Request) string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf(format, n)
	}, fail: func(int) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("the model stopped")
		}
		return nil
	}}
	return m, func(on bool) { mu.Lock(); fail = on; mu.Unlock() }
}
