package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// printerModel is a fake whose default mode here is the printer, as the 26B's is on
// a slow CPU (models/speed).
type printerModel struct{ *fakeModel }

func (p printerModel) Info() ModelInfo {
	i := p.fakeModel.Info()
	i.Mode = speed.Choice{Mode: engine.AR, Reason: "the printer (AR): faster on this machine, about 2.1 tokens/s against 0.3 for the polaroid"}
	return i
}

// TestChatRunsTheDefaultMode: chat writes in the model's default mode and says
// which in its status line; a model without one (the Mini) keeps diffusion.
func TestChatRunsTheDefaultMode(t *testing.T) {
	n := 0
	m := &fakeModel{answers: chatAnswers(&n)}
	a := newTestApp(t, m, "")
	c := a.Chat
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	if got := m.Calls()[0].req.Mode; got != engine.Diffusion {
		t.Errorf("Mini: chat ran %s", got)
	}

	a.models = newModelHost(LoaderFunc(func(context.Context) (Model, error) { return printerModel{m}, nil }))
	typeText(c.input, "More?")
	tap(c.send)
	c.run.Wait()
	calls := m.Calls()
	if got := calls[len(calls)-1].req.Mode; got != engine.AR {
		t.Errorf("26B-like model: chat ran %s", got)
	}
	if st := c.status.Text; !strings.Contains(st, "the printer (AR): faster on this machine") || !strings.HasPrefix(st, "Done") {
		t.Errorf("status %q", st)
	}
	// The user can always pick.
	asUI(func() { c.mode.SetSelected(modeLabel(engine.Diffusion)) })
	typeText(c.input, "And?")
	tap(c.send)
	c.run.Wait()
	calls = m.Calls()
	if got := calls[len(calls)-1].req.Mode; got != engine.Diffusion || !strings.Contains(c.status.Text, "as chosen") {
		t.Errorf("picked diffusion: ran %s, status %q", got, c.status.Text)
	}
}

// TestRaceSummarySaysWhy: the summary explains the winner with this PC's numbers,
// and says so when the estimate expected the other mode.
func TestRaceSummarySaysWhy(t *testing.T) {
	r := slowCPU()
	dg, _ := catalog.Find(catalog.DiffusionGemmaID)
	est, err := speed.ForEntry(dg, catalog.DiffusionGemma26B(), quant.Int4Profile, "cpu", r, 0)
	if err != nil {
		t.Fatal(err)
	}
	res := func(tokens int, elapsed time.Duration) *engine.Result {
		return &engine.Result{Tokens: make([]int, tokens), ForwardPasses: tokens, Elapsed: elapsed,
			TokensPerS: float64(tokens) / elapsed.Seconds()}
	}
	s := raceSummary(res(256, 100*time.Second), res(256, 300*time.Second), est)
	for _, want := range []string{"AR was 3.0× faster here.", "The printer wins here: this CPU does 150 GFLOP/s, so a 256-token canvas costs",
		"while one token reads", "GB of weights in", "memory reads 20.0 GB/s here"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q: %s", want, s)
		}
	}
	s = raceSummary(res(256, 300*time.Second), res(256, 100*time.Second), est)
	if !strings.Contains(s, "Diffusion was 3.0× faster here.") || !strings.Contains(s, "This PC's estimate expected the printer") {
		t.Errorf("against the estimate: %s", s)
	}
	if s := raceSummary(res(10, time.Second), res(10, time.Second), nil); strings.Contains(s, "wins here") {
		t.Errorf("no estimate: %s", s)
	}
}

// slowCPU is this PC's kind of rates: 150 GFLOP/s, 20 GB/s.
func slowCPU() *speed.Rates { return speed.Uniform(150e9, 40e9, 20e9) }

// TestLibrarySpeed: a card's fit line says each mode's tokens/s here, from this
// machine's cached calibration; on a GPU it says the speed is unknown.
func TestLibrarySpeed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if err := speed.Prime(slowCPU()); err != nil {
		t.Fatal(err)
	}
	dg, _ := catalog.Find(catalog.DiffusionGemmaID)
	pf := profileFit(models.Entry{Entry: dg}, quant.Int4Profile, hw.Info{Device: "cpu", RAMTotal: 64 << 30})
	text := fitText(pf) + speedText(pf)
	if !(pf.Printer > pf.Polaroid && pf.Polaroid > 0) || !strings.Contains(text, "tokens/s here as the printer (AR)") {
		t.Errorf("CPU: %+v: %s", pf, text)
	}
	pf = profileFit(models.Entry{Entry: dg}, quant.Int4Profile, hw.Info{Device: "gpu", RAMTotal: 64 << 30,
		GPUs: []hw.GPU{{Name: "RTX 4090", VRAMTotal: 24 << 30}}})
	if pf.Printer != 0 || !strings.Contains(speedText(pf), "Speed here: unknown on the GPU") {
		t.Errorf("GPU: %+v: %s", pf, speedText(pf))
	}
}
