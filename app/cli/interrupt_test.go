package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
)

// withInterrupt makes the commands run under ctx, as if Ctrl-C cancelled it.
func withInterrupt(t *testing.T, ctx context.Context) {
	t.Helper()
	old := interruptContext
	interruptContext = func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
	t.Cleanup(func() { interruptContext = old })
}

// cancelOnWrite cancels once anything is written: Ctrl-C pressed as the first
// words appear.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel()
	return w.buf.Write(p)
}

// TestCtrlCSaysItStopped: Ctrl-C in the middle of generate exits 1 and says it
// was interrupted and after how many tokens, the text so far kept on stdout; it
// exited 0 as if the answer were whole, with a stats line of '0 canvases
// (steps )'. Ctrl-C while the model loads says that, not 'load …: context
// canceled'.
func TestCtrlCSaysItStopped(t *testing.T) {
	dir := tinyModelDir(t)

	ctx, cancel := context.WithCancel(context.Background())
	withInterrupt(t, ctx)
	out := &cancelOnWrite{cancel: cancel}
	var errb bytes.Buffer
	code := Run([]string{"generate", "--model", dir, "--seed", "1", "--max-new-tokens", "4000", "What is Unix?"}, out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "darkroom generate: interrupted (Ctrl-C) after ") ||
		!strings.Contains(errb.String(), "the text so far is above") {
		t.Errorf("Ctrl-C while writing: exit %d, stderr %q; want 1 and 'interrupted (Ctrl-C) after N tokens'", code, errb.String())
	}
	if out.buf.Len() == 0 {
		t.Error("the text written before Ctrl-C is gone")
	}

	done, stop := context.WithCancel(context.Background())
	stop()
	withInterrupt(t, done)
	for _, args := range [][]string{
		{"generate", "--model", dir, "What is Unix?"},
		{"wiki", "--model", dir, "Unix"},
	} {
		code, _, stderr := runCLI(args...)
		if want := "darkroom " + args[0] + ": interrupted (Ctrl-C) while loading the model\n"; code != 1 || stderr != want {
			t.Errorf("%s, Ctrl-C while loading: exit %d, %q; want 1, %q", args[0], code, stderr, want)
		}
	}
}

func TestCanvasSummaryOfNoCanvas(t *testing.T) {
	if got := canvasSummary(&engine.Result{}, engine.Diffusion); got != "0 canvases" {
		t.Errorf("canvasSummary of no canvas = %q, want %q", got, "0 canvases")
	}
}

func TestInterruptedLine(t *testing.T) {
	res := &engine.Result{Tokens: []int{1, 2, 3}}
	if got, want := interrupted("wiki", res, "the page so far is above").Error(),
		"wiki: interrupted (Ctrl-C) after 3 tokens; the page so far is above"; got != want {
		t.Errorf("interrupted = %q, want %q", got, want)
	}
	if got, want := interrupted("generate", &engine.Result{}, "the text so far is above").Error(),
		"generate: interrupted (Ctrl-C) before any text was written"; got != want {
		t.Errorf("interrupted with no tokens = %q, want %q", got, want)
	}
}
