package develop

import (
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
)

// TestDoneStatus: counts of one are singular, and a result with no steps and no
// forward passes (a remote server that is not a Darkroom) does not claim zero of
// them.
func TestDoneStatus(t *testing.T) {
	local := &engine.Result{Tokens: make([]int, 1), ForwardPasses: 1, Elapsed: time.Second, TokensPerS: 1,
		Canvases: []engine.CanvasStats{{Steps: 1}}}
	if got, want := DoneStatus(local, false), "Done · 1 token in 1 step (1 canvas) · 1 forward pass · 1.00 s · 1.0 tokens/s"; got != want {
		t.Errorf("local: %q, want %q", got, want)
	}
	local.Tokens, local.ForwardPasses, local.Canvases = make([]int, 40), 12, []engine.CanvasStats{{Steps: 5}, {Steps: 6}}
	if got, want := DoneStatus(local, false), "Done · 40 tokens in 11 steps (2 canvases) · 12 forward passes · 1.00 s · 1.0 tokens/s"; got != want {
		t.Errorf("local: %q, want %q", got, want)
	}
	remote := &engine.Result{Tokens: make([]int, 30), Elapsed: 2 * time.Second, TokensPerS: 15,
		Canvases: []engine.CanvasStats{{}, {}}}
	got := DoneStatus(remote, false)
	if want := "Done · 30 tokens (2 canvases) · 2.00 s · 15.0 tokens/s"; got != want {
		t.Errorf("remote: %q, want %q", got, want)
	}
}

// TestDoneStatusWithoutCanvases: a printer's (AR) answer, and a page stopped
// before its first canvas was committed, have no canvases: their line gives the
// tokens and forward passes, not '44 tokens in 0 steps (0 canvases)' (the Chat
// in Printer mode) or '0 tokens in 0 steps (0 canvases) · 10 forward passes'
// (the Desktop stopped while its first screen developed).
func TestDoneStatusWithoutCanvases(t *testing.T) {
	ar := &engine.Result{Tokens: make([]int, 44), ForwardPasses: 45, Elapsed: 100 * time.Millisecond, TokensPerS: 440, StopReason: engine.StopEOS}
	if got, want := DoneStatus(ar, false), "Done · 44 tokens · 45 forward passes · 0.10 s · 440.0 tokens/s"; got != want {
		t.Errorf("AR: %q, want %q", got, want)
	}
	// An answer that is all the entry's held sentence says so, with no rate: its
	// rate of 0 read as a fault ("78 tokens · 1 forward pass · 0.0 tokens/s").
	lead := &engine.Result{Tokens: make([]int, 78), ForwardPasses: 1, Elapsed: 30 * time.Millisecond, LeadHeld: true, HeldTokens: 78, StopReason: engine.StopEOS}
	if got, want := DoneStatus(lead, true), "Done · 78 tokens (78 held) · 1 forward pass · 0.03 s · "+LeadNote; got != want {
		t.Errorf("lead: %q, want %q", got, want)
	}
	// The set reply, held once begun, says so too.
	reply := &engine.Result{Tokens: make([]int, 68), ForwardPasses: 1, Elapsed: 20 * time.Millisecond, Replied: true, HeldTokens: 68, StopReason: engine.StopEOS}
	if got, want := DoneStatus(reply, true), "Done · 68 tokens (68 held) · 1 forward pass · 0.02 s · "+ReplyNote; got != want {
		t.Errorf("reply: %q, want %q", got, want)
	}
	// An entry held whole and ending the answer (engine.Request.LeadEnds): no
	// forward pass, no canvas, said so; not "135 tokens (135 held) (0 canvases)".
	entry := &engine.Result{Tokens: make([]int, 135), Elapsed: time.Millisecond, LeadHeld: true, HeldTokens: 135, StopReason: engine.StopEOS}
	if got, want := DoneStatus(entry, true), "Done · 135 tokens (135 held) · 0.00 s · "+LeadNote; got != want {
		t.Errorf("entry: %q, want %q", got, want)
	}
	// The model's own page, by a model whose folder holds entries, says it is
	// not one of them; by another model, nothing.
	if got, want := DoneStatus(ar, true), "Done · 44 tokens · 45 forward passes · 0.10 s · 440.0 tokens/s · "+OwnNote; got != want {
		t.Errorf("the model's own, with entries: %q, want %q", got, want)
	}
	stopped := &engine.Result{ForwardPasses: 10, Elapsed: 1380 * time.Millisecond, StopReason: engine.StopCancelled}
	if got, want := DoneStatus(stopped, false), "Stopped · 0 tokens · 10 forward passes · 1.38 s · 0.0 tokens/s"; got != want {
		t.Errorf("stopped in the first canvas: %q, want %q", got, want)
	}
}

// TestStatus: the developing line counts the committed tokens and the accepted
// positions of the current canvas, says "1 step", "1 token" in the singular, and
// leaves out forward passes nobody reported.
func TestStatus(t *testing.T) {
	d := New(runeVocab{}, nil)
	canvas := ids("<p>Hi</p>")
	acc := make([]bool, len(canvas))
	acc[0], acc[1] = true, true
	ev := engine.Event{Kind: engine.EventStep, Step: 1, Draft: canvas, Accepted: acc, Argmax: canvas, ForwardPasses: 2,
		Committed: ids("ab"), Elapsed: time.Second}
	d.Text(ev)
	if got, want := d.Status(ev), "Developing · canvas 1, step 1 (1 step so far) · 2 forward passes · 1.0 s · 4.0 tokens/s"; got != want {
		t.Errorf("step: %q, want %q", got, want)
	}
	ev = engine.Event{Kind: engine.EventToken, Committed: ids("a"), Text: "a", ForwardPasses: 1, Elapsed: time.Second}
	d.Text(ev)
	if got, want := d.Status(ev), "Printing · 1 token · 1 forward pass · 1.0 s · 1.0 tokens/s"; got != want {
		t.Errorf("token: %q, want %q", got, want)
	}
	ev = engine.Event{Kind: engine.EventCommit, Canvas: 1, Committed: ids("abc"), Text: "abc", ForwardPasses: 9, Elapsed: 2 * time.Second}
	d.Text(ev)
	if got, want := d.Status(ev), "Developing · canvas 2 committed · 9 forward passes · 2.0 s · 1.5 tokens/s"; got != want {
		t.Errorf("commit: %q, want %q", got, want)
	}
	// The graph path building its graphs (a GPU's first run): said as such, the
	// page's text unchanged.
	ev = engine.Event{Kind: engine.EventPrepare, Committed: ids("abc"), Text: "abc", ForwardPasses: 9, Elapsed: 3 * time.Second}
	if got := d.Text(ev); got != "abc" {
		t.Errorf("prepare: text %q, want the committed %q", got, "abc")
	}
	if got, want := d.Status(ev), "Preparing the model for this device (once, on its first run) · 3.0 s"; got != want {
		t.Errorf("prepare: %q, want %q", got, want)
	}
	// A long prompt being read, a piece at a time: how far, the page's text unchanged.
	ev = engine.Event{Kind: engine.EventPrompt, Committed: ids("abc"), Text: "abc", PromptRead: 2048, PromptTokens: 5120, Elapsed: 12 * time.Second}
	if got := d.Text(ev); got != "abc" {
		t.Errorf("prompt: text %q, want the committed %q", got, "abc")
	}
	if got, want := d.Status(ev), "Reading the prompt · 40% of 5,120 tokens · 12.0 s"; got != want {
		t.Errorf("prompt: %q, want %q", got, want)
	}
	// A server that is not Darkroom reports no forward passes: not "0 forward passes".
	ev = engine.Event{Kind: engine.EventCommit, Committed: ids("abcd"), Text: "abcd", Elapsed: 2 * time.Second}
	d.Text(ev)
	if got, want := d.Status(ev), "Developing · canvas 1 committed · 2.0 s · 2.0 tokens/s"; got != want {
		t.Errorf("remote commit: %q, want %q", got, want)
	}
}

// TestStatusWithGuidance: a canvas's guidance rounds (the causal head revising
// its words after the denoising steps; the Mini's default) are said as rounds,
// and the steps so far count denoising steps only, as the finished line does —
// the line read 'canvas 1, step 17 (17 steps so far)' during the rounds of a
// canvas of 12 steps, then 'Done · 33 tokens in 12 steps (1 canvas)' (seen in
// browser mode), and a second canvas counted the first's rounds as steps.
func TestStatusWithGuidance(t *testing.T) {
	d := New(runeVocab{}, nil)
	canvas := ids("<p>Hi</p>")
	acc := make([]bool, len(canvas))
	acc[0] = true
	// Canvas 1: 12 steps, then its 5th guidance round (1 prompt pass + 12 + 5).
	ev := engine.Event{Kind: engine.EventStep, Step: 17, Guidance: true, Round: 5, Steps: 12, Draft: canvas, Accepted: acc,
		Argmax: canvas, ForwardPasses: 18, Elapsed: time.Second}
	d.Text(ev)
	if got, want := d.Status(ev), "Developing · canvas 1, guidance round 5 after 12 steps · 18 forward passes · 1.0 s · 1.0 tokens/s"; got != want {
		t.Errorf("guidance: %q, want %q", got, want)
	}
	// Canvas 2, step 3: 15 denoising steps in all, though 1 + 12 + 6 rounds + 3 = 22 passes.
	ev = engine.Event{Kind: engine.EventStep, Canvas: 1, Step: 3, Steps: 15, Draft: canvas, Accepted: acc, Argmax: canvas,
		ForwardPasses: 22, Committed: ids("abc"), Elapsed: time.Second}
	d.Text(ev)
	if got, want := d.Status(ev), "Developing · canvas 2, step 3 (15 steps so far) · 22 forward passes · 1.0 s · 4.0 tokens/s"; got != want {
		t.Errorf("second canvas: %q, want %q", got, want)
	}
}

// TestTokenCount: the CLI's summary lines say the held tokens as the status line
// does ("78 tokens in 0.04 s (0.0 tokens/s)" had read as a fault).
func TestTokenCount(t *testing.T) {
	for _, tc := range []struct {
		res  engine.Result
		want string
	}{
		{engine.Result{Tokens: make([]int, 78), LeadHeld: true, HeldTokens: 78}, "78 tokens (78 held)"},
		{engine.Result{Tokens: make([]int, 1)}, "1 token"},
		{engine.Result{Tokens: make([]int, 5), HeldTokens: 3}, "5 tokens"}, // an opening, not the entry's sentence
	} {
		if got := TokenCount(&tc.res); got != tc.want {
			t.Errorf("TokenCount(%d tokens, lead %v, %d held) = %q, want %q", len(tc.res.Tokens), tc.res.LeadHeld, tc.res.HeldTokens, got, tc.want)
		}
	}
}

// TestPageDoneStatus: a page that is its entry whole says so right
// after its state, with no mode (none wrote it: "Printer (AR)" there read as
// if the printer had, and at 800 pixels the line's end, the entry's note, was
// cut off); a page the model wrote names its mode there, as before.
func TestPageDoneStatus(t *testing.T) {
	entry := &engine.Result{Tokens: []int{1, 2, 3}, LeadHeld: true, HeldTokens: 3, StopReason: engine.StopEOS}
	if got, want := PageDoneStatus(entry, "Printer (AR)", true), "Done · "+LeadNote+" · 3 tokens (3 held) · 0.00 s"; got != want {
		t.Errorf("an entry held whole: %q, want %q", got, want)
	}
	own := &engine.Result{Tokens: []int{1, 2, 3}, ForwardPasses: 3, StopReason: engine.StopEOS, Elapsed: time.Second, TokensPerS: 3}
	if got, want := PageDoneStatus(own, "Printer (AR)", true), "Done · Printer (AR) · 3 tokens · 3 forward passes · 1.00 s · 3.0 tokens/s · "+OwnNote; got != want {
		t.Errorf("the model's own page: %q, want %q", got, want)
	}
}
