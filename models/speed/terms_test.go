package speed

import (
	"math"
	"runtime"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// TestWakeUps: each call that hands parts to the pool pays one wake-up, at most the
// call's own time, and nothing else does. small()'s AR token hands nothing off: its
// one K/V head's one position is one block of attention, its one routed expert runs
// on the caller, and no product is large enough to split. With two K/V heads its
// attention is one call split two ways; with two experts a token, their job is one
// too, shorter than a wake-up (its products at 1e12 weights/s), so it costs its own
// time. A denoising step over 8 positions has two: its experts' job (products too
// small for the pool to split) and the fused head's pass (its products inside the
// head's blocks). Dropping the term, or charging a call that runs on the caller,
// fails here.
func TestWakeUps(t *testing.T) {
	if kernels.Workers() < 2 {
		t.Skip("one worker: nothing is handed off")
	}
	const wake = 2e-6
	w := Workload{Tokens: 8, Prompt: 4, Steps: 10}
	r := flat(1e10, 1e12, 1e12, 1e9)
	r.Vec = map[string]Curve{VecSoftmax: {{N: 1, Seconds: 1e-5}}} // 10 µs an element: longer than a wake-up
	with := *r
	with.Wake = wake
	// job is the time of pass's first job named what.
	job := func(pass []work, what string) float64 {
		for _, x := range pass {
			if x.job != nil && x.what == what {
				s, _ := r.kernelSeconds(x, true)
				return s
			}
		}
		t.Fatalf("no %s job", what)
		return 0
	}
	for _, c := range []struct {
		name           string
		kv, topK       int
		arHandoffs     float64
		arWake         func(*passes) float64
		stepHandoffs   float64
		stepWakeBeside float64 // beside the experts' job's own time
	}{
		{"small", 1, 1, 0, func(*passes) float64 { return 0 }, 2, wake},
		{"two K/V heads", 2, 1, 1, func(*passes) float64 { return wake }, 3, 2 * wake},
		{"two experts a token", 1, 2, 1, func(ps *passes) float64 { return job(ps.encoderPass(1, 8, 1), "experts") }, 2, wake},
	} {
		cfg := small()
		cfg.Text.NumKeyValueHeads, cfg.Text.TopKExperts = c.kv, c.topK
		base, err := Compute(cfg, quant.BF16Profile, r, w)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Compute(cfg, quant.BF16Profile, &with, w)
		if err != nil {
			t.Fatal(err)
		}
		ps := newPasses(cfg, quant.BF16Profile)
		arWake := c.arWake(ps)
		if c.topK == 2 && !(arWake > 0 && arWake < wake) {
			t.Fatalf("%s: the experts' job takes %g s, want (0, %g)", c.name, arWake, wake)
		}
		stepJob := job(ps.decoderStep(8, 4, true), "experts")
		if e.AR.Terms.Handoffs != c.arHandoffs || e.Diffusion.Terms.Handoffs != c.stepHandoffs || base.AR.Terms.Handoffs != c.arHandoffs {
			t.Errorf("%s: hand-offs: AR token %g, step %g; want %g and %g", c.name, e.AR.Terms.Handoffs, e.Diffusion.Terms.Handoffs, c.arHandoffs, c.stepHandoffs)
		}
		near(t, c.name+": AR token's wake-ups", e.AR.Terms.WakeUps, arWake)
		near(t, c.name+": AR token", e.AR.UnitSeconds-base.AR.UnitSeconds, arWake)
		near(t, c.name+": step's wake-ups", e.Diffusion.Terms.WakeUps, c.stepWakeBeside+min(wake, stepJob))
		near(t, c.name+": step", e.Diffusion.StepSeconds-base.Diffusion.StepSeconds, c.stepWakeBeside+min(wake, stepJob))
		if base.AR.Terms.WakeUps != 0 || base.Diffusion.Terms.WakeUps != 0 {
			t.Errorf("%s: without a wake-up time: %+v, %+v", c.name, base.AR.Terms, base.Diffusion.Terms)
		}
	}
}

// TestHandoffs: a product hands off exactly when the kernels split it, a row pass
// when it has two rows or more, and whatever runs inside a job never (nor anything
// with one worker: there is no pool).
func TestHandoffs(t *testing.T) {
	if kernels.Workers() < 2 {
		if n := (work{vec: VecSoftmax, split: 16, count: 2}).handoffs(); n != 0 {
			t.Errorf("one worker: %g hand-offs", n)
		}
		t.Skip("one worker: nothing is handed off")
	}
	big, small := work{m: 256, k: 64, n: 4096, count: 3}, work{m: 256, k: 64, n: 64, count: 3}
	want := 0.0
	if kernels.Parts(256, 4096, 64) >= 2 {
		want = 3
	}
	if got := big.handoffs(); got != want {
		t.Errorf("split product: %g hand-offs, want %g", got, want)
	}
	if got := small.handoffs(); got != 0 {
		t.Errorf("unsplit product: %g hand-offs", got)
	}
	big.inJob = true
	if got := big.handoffs(); got != 0 {
		t.Errorf("a product inside a job: %g hand-offs", got)
	}
	for _, c := range []struct {
		w    work
		want float64
	}{
		{work{vec: VecSoftmax, split: 16, count: 2}, 2},
		{work{vec: VecSoftmax, split: 1, count: 2}, 0},
		{work{vec: VecRMSNorm, count: 5}, 0},
		{work{logits: 1000, count: 1}, 1},
		{work{job: []work{big}, count: 1, split: 8}, 1},
		{work{job: []work{big}, count: 1, split: 1}, 0}, // one expert: on the caller
	} {
		if got := c.w.handoffs(); got != c.want {
			t.Errorf("%+v: %g hand-offs, want %g", c.w, got, c.want)
		}
	}
}

// TestTerms: an estimate's terms add up to its unit's pass, and each is its
// count times its rate.
func TestTerms(t *testing.T) {
	cfg := small()
	r := flat(1e10, 1e12, 1e12, 1e9)
	r.OpOverhead, r.StepOpOverhead, r.Wake = 1e-6, 3e-6, 1e-7
	e, err := Compute(cfg, quant.BF16Profile, r, Workload{Tokens: 8, Prompt: 4, Steps: 10})
	if err != nil {
		t.Fatal(err)
	}
	ar, st := e.AR.Terms, e.Diffusion.Terms
	near(t, "AR token", e.AR.UnitSeconds, ar.Seconds()+1000/1e9) // and the draw
	near(t, "step", e.Diffusion.StepSeconds, st.Seconds())
	near(t, "AR engine", ar.Engine, ar.Ops*1e-6)
	near(t, "step engine", st.Engine, st.Ops*3e-6)
	if ar.Ops != 44 || !(ar.Kernels > 0) || math.Abs(ar.Seconds()-ar.Kernels-ar.WakeUps-ar.Engine) > 0 {
		t.Errorf("AR terms %+v", ar)
	}
}

// TestTypical: the typical run is the median of those no other program
// interrupted, however slow or fast the interrupted ones were; a machine that
// interrupted nearly every run gets its fastest.
func TestTypical(t *testing.T) {
	runs := []probeRun{{3, false}, {1, false}, {2, false}, {50, true}, {0.5, true}, {40, true}}
	if got := typical(runs); got != 2 {
		t.Errorf("typical %g, want 2 (the median of 1, 2, 3)", got)
	}
	runs = append(runs, probeRun{4, false})
	if got := typical(runs); got != 2.5 {
		t.Errorf("typical %g, want 2.5", got)
	}
	if got := typical([]probeRun{{3, false}, {9, true}, {0.5, true}, {2, false}}); got != 0.5 {
		t.Errorf("busy machine: %g, want the fastest, 0.5", got)
	}
	if got := typical(nil); got != 0 {
		t.Errorf("no runs: %g", got)
	}
}

// TestEvents: each AR token's event decodes the answer so far — (N+1)/2 tokens on
// average — and each denoising step's and guidance round's the committed text and
// the canvas's; dropping the term fails here.
func TestEvents(t *testing.T) {
	cfg := small()
	w := Workload{Tokens: 8, Prompt: 4, Steps: 10, GuidanceRounds: 2}
	r := flat(1e10, 1e12, 1e12, 1e9)
	base, err := Compute(cfg, quant.BF16Profile, r, w)
	if err != nil {
		t.Fatal(err)
	}
	const decode = 1e-6
	with := *r
	with.DecodeToken = decode
	e, err := Compute(cfg, quant.BF16Profile, &with, w)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "AR token's event", e.AR.Terms.Events, 4.5*decode)
	near(t, "AR token", e.AR.UnitSeconds-base.AR.UnitSeconds, 4.5*decode)
	// One canvas of 8: nothing committed before it, its 8 tokens of text.
	if e.Diffusion.Terms.Decoded != 8 {
		t.Errorf("a step's event decodes %g tokens, want 8", e.Diffusion.Terms.Decoded)
	}
	near(t, "step", e.Diffusion.StepSeconds-base.Diffusion.StepSeconds, 8*decode)
	near(t, "canvas: 10 steps and 2 rounds", e.Diffusion.UnitSeconds-base.Diffusion.UnitSeconds, (10+2)*8*decode)
	// Three canvases: the middle one's step carries the first's 8 committed tokens.
	w.Tokens = 24
	if e, err = Compute(cfg, quant.BF16Profile, &with, w); err != nil {
		t.Fatal(err)
	}
	if e.Diffusion.Terms.Decoded != 16 || e.AR.Terms.Decoded != 12.5 {
		t.Errorf("three canvases: a step decodes %g tokens (want 16), an AR token %g (want 12.5)", e.Diffusion.Terms.Decoded, e.AR.Terms.Decoded)
	}
}

// TestInterrupted: a run is left out of the typical when more threads wanted a
// CPU than the machine has as it started, or when the process was preempted while
// it ran — and not otherwise.
func TestInterrupted(t *testing.T) {
	saved := machine
	defer func() { machine = saved }()
	var waiting int
	var preempted int64
	machine.runnable = func() (int, bool) { return waiting, true }
	machine.preemptions = func() (int64, bool) { return preempted, true }
	for _, c := range []struct {
		name        string
		waiting     int
		preemptions int64
		want        bool
	}{
		{"alone", 1, 0, false},
		{"every CPU taken, by this process or others", runtime.NumCPU(), 0, false},
		{"one thread more than the CPUs", runtime.NumCPU() + 1, 0, true},
		{"preempted while it ran", 1, 1, true},
	} {
		waiting, preempted = c.waiting, 0
		run := begin()
		preempted = c.preemptions
		if got := run.end(1).interrupted; got != c.want {
			t.Errorf("%s: interrupted %v, want %v", c.name, got, c.want)
		}
	}
}
