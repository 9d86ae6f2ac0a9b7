package ui

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine"
)

// The bridge between generations (running on their own goroutines) and the UI
// goroutine: a runner per screen that cancels the previous generation when a new
// one starts, a throttle that coalesces per-step events into at most ~30 redraws a
// second, and the developer that turns a step's canvas into a draft page with the
// undecided positions drawn as noise. Only fyne.Do crosses to the UI goroutine.

// frameInterval is the minimum time between two redraws of a developing page.
const frameInterval = time.Second / 30

// runner runs one generation at a time for a screen. Start cancels the running
// one first (its context is cancelled before Start returns, so the engine stops
// within one step) and waits for it to end before the new one begins.
type runner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	seq    atomic.Int64
}

// Start cancels the current generation and runs fn on a new goroutine with a fresh
// context; seq identifies this run (see Current).
func (r *runner) Start(fn func(ctx context.Context, seq int64)) {
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
	}
	prev := r.done
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.cancel, r.done = cancel, done
	seq := r.seq.Add(1)
	r.mu.Unlock()
	go func() {
		defer close(done)
		defer cancel()
		if prev != nil {
			<-prev
		}
		if ctx.Err() != nil {
			return // superseded before it began
		}
		fn(ctx, seq)
	}()
}

// Stop cancels the current generation, if any.
func (r *runner) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
	}
}

// Current reports whether seq is the latest run (stale runs must not touch the UI).
func (r *runner) Current(seq int64) bool { return r.seq.Load() == seq }

// Invalidate makes every run so far stale without starting a new one (a screen
// that shows something else must not be drawn over by a run winding down).
func (r *runner) Invalidate() { r.seq.Add(1) }

// Wait blocks until the current generation has ended (tests, shutdown).
func (r *runner) Wait() {
	r.mu.Lock()
	d := r.done
	r.mu.Unlock()
	if d != nil {
		<-d
	}
}

// throttle coalesces events: Push keeps only the latest; a worker goroutine hands
// it to render at most once per interval. render runs off the UI goroutine (it may
// parse and lay out text) and uses fyne.Do for the widget update itself.
type throttle struct {
	interval time.Duration
	render   func(engine.Event)

	mu      sync.Mutex
	latest  *engine.Event
	kick    chan struct{}
	stopped chan struct{}
	closed  bool
}

func newThrottle(interval time.Duration, render func(engine.Event)) *throttle {
	t := &throttle{interval: interval, render: render, kick: make(chan struct{}, 1), stopped: make(chan struct{})}
	go t.loop()
	return t
}

// Push records ev as the latest event. It never blocks the generating goroutine.
// The event's slices are copied: the engine may reuse them.
func (t *throttle) Push(ev engine.Event) {
	ev.Draft = append([]int(nil), ev.Draft...)
	ev.Accepted = append([]bool(nil), ev.Accepted...)
	ev.Argmax = append([]int(nil), ev.Argmax...)
	ev.Committed = append([]int(nil), ev.Committed...)
	ev.Entropy = nil
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.latest = &ev
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

func (t *throttle) loop() {
	defer close(t.stopped)
	var last time.Time
	for range t.kick {
		if wait := t.interval - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		t.mu.Lock()
		ev := t.latest
		t.latest = nil
		t.mu.Unlock()
		if ev != nil {
			t.render(*ev)
			last = time.Now()
		}
	}
}

// Close renders what is still pending and stops the worker; after Close returns
// no more renders happen, so a final update can safely follow.
func (t *throttle) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.mu.Unlock()
	close(t.kick)
	<-t.stopped
}

// plainError turns an error into a sentence for the window.
func plainError(what string, err error) string {
	msg := err.Error()
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	return fmt.Sprintf("Could not %s: %s", what, msg)
}

// showWrapped shows a hidden wrapping label as wide as width and lays screen
// out again: a hidden label has no width, so the size it first asks for is one
// line's, and the window did not make room for it at all — a two-line error was
// drawn over the page below (UI goroutine).
func showWrapped(l *widget.Label, width float32, screen fyne.CanvasObject) {
	if width > 0 {
		l.Resize(fyne.NewSize(width, l.Size().Height))
	}
	l.Show()
	screen.Refresh()
}

// uiMu serializes onUI callbacks. The real driver already runs them one at a
// time on the UI goroutine; the test driver runs fyne.Do inline on the calling
// goroutine, where two generations or downloads would otherwise update widgets
// at the same time. A callback must not call onUI directly (it may from a new
// goroutine).
var uiMu sync.Mutex

// onUI runs f on the UI goroutine (fyne.Do).
func onUI(f func()) {
	fyne.Do(func() {
		uiMu.Lock()
		defer uiMu.Unlock()
		f()
	})
}

// upperFirst is s with its first letter in upper case ("needs …" → "Needs …"),
// to begin a sentence.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// lowerFirst is s with its first letter in lower case ("Starting…" → "starting…"),
// to go on a sentence.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// scrollTo scrolls scroll so that o, somewhere in its content, is margin
// below its top (as far as the content allows). Call on the UI goroutine.
func scrollTo(scroll *container.Scroll, o fyne.CanvasObject, margin float32) {
	d := fyne.CurrentApp().Driver()
	y := scroll.Offset.Y + d.AbsolutePositionForObject(o).Y - d.AbsolutePositionForObject(scroll).Y - margin
	scroll.ScrollToOffset(fyne.NewPos(scroll.Offset.X, y))
}
