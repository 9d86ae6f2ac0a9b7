package speed

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// The engine's cost per operation outside the kernels — looking a weight up,
// allocating and clearing each operation's output, the collector, the calls
// between the layers' steps, beyond the wake-ups counted apart (Rates.Wake) — is
// measured on the engine itself: a probe model (engine/config's Tiny, random
// float32 weights, no catalog model) runs AR tokens and denoising steps over a full
// canvas (DecodeStep, as the engine does) on the host path, and what they take
// beyond the kernels' and the wake-ups' time for the same work (at the rates just
// measured) is spread over the work's operations. Every
// pass of every model is then charged that much per operation.
//
// The kernels' rates are each kernel's fastest run: its arithmetic. These costs are
// the typical run's — the median — because what an answer pays is the typical
// hand-off and collection, not the luckiest; only runs that no other program
// interrupted count (typical), so a busy machine does not make them its own.

// probeCanvas is the probe's canvas in its denoising steps: a real canvas's rows,
// so that its products split across the pool as a model's do.
const probeCanvas = 256

// probeSource hands the host runner float32 weights held in memory.
type probeSource struct {
	vals   map[string][]float32
	shapes map[string][]int
}

func (s probeSource) Lookup(name string) (weights.Stored, any, bool, error) {
	v, ok := s.vals[name]
	if !ok || len(v) == 0 {
		return weights.Stored{}, nil, false, nil
	}
	return weights.Stored{Name: name, Shape: s.shapes[name], DType: dtypes.Float32,
		Data: unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))}, "probe", true, nil
}

// measureOverhead sets r.OpOverhead and r.StepOpOverhead from the probe's AR
// tokens and denoising steps (r's other rates already measured).
func measureOverhead(r *Rates) error {
	cfg := config.Tiny()
	cfg.DType, cfg.Text.DType = "float32", "float32"
	set := weights.Random(cfg, 1)
	src := probeSource{vals: map[string][]float32{}, shapes: map[string][]int{}}
	for name, t := range set.Tensors {
		src.vals[name] = tensors.MustCopyFlatData[float32](t)
		src.shapes[name] = t.Shape().Dimensions
	}
	run, err := model.NewHostRunner(&cfg.Text, src)
	if err != nil {
		return fmt.Errorf("probe model: %w", err)
	}
	const prompt = 16
	tokens := make([]int, prompt)
	for i := range tokens {
		tokens[i] = 3 + i
	}
	canvas := make([]int, probeCanvas)
	for i := range canvas {
		canvas[i] = 5 + i
	}
	var perr error
	check := func(err error) {
		if err != nil && perr == nil {
			perr = err
		}
	}
	// One AR token after the prompt (the cache reset and the prompt encoded again
	// before each, untimed, so every token sees the same prefix).
	arSec := typicalOf(func() {
		run.Reset()
		_, err := run.Encode(tokens)
		check(err)
	}, func() {
		_, err := run.Encode([]int{7})
		check(err)
	}, 0.05)
	// A canvas's first two denoising steps after the prompt, as the engine runs
	// them (DecodeStep: the fused head and the sampler's step).
	plan := sampler.Plan{Temperature: 1, Keys: [4]uint32{1, 2, 3, 4}, EntropyBound: 1}
	stepSec := typicalOf(func() {
		run.Reset()
		_, err := run.Encode(tokens)
		check(err)
	}, func() {
		_, soft, logits, err := run.DecodeStep(canvas, nil, plan)
		check(err)
		if err == nil {
			logits.Free()
			_, _, logits, err = run.DecodeStep(canvas, soft, plan)
			check(err)
			if err == nil {
				logits.Free()
			}
		}
	}, 0.2) // long enough for a few steps without a collection
	if perr != nil {
		return fmt.Errorf("probe model: %w", perr)
	}
	ps := newPasses(cfg, quant.BF16Profile)
	ar := ps.encoderPass(1, prompt, 1)
	kern, _ := r.seconds(ar, true)
	r.OpOverhead = max(0, arSec-kern) / calls(ar)
	steps := append(ps.decoderStep(probeCanvas, prompt, false), ps.decoderStep(probeCanvas, prompt, true)...)
	kern, _ = r.seconds(steps, true)
	r.StepOpOverhead = max(0, stepSec-kern) / calls(steps)
	return nil
}

// measureWake is Rates.Wake: a call over two rows (kernels.ParallelRows, as the
// attention makes) whose first part, on whichever goroutine claims it, waits for
// the second to start, after about 100 µs of serial work (a layer's norms and sums
// at real width; the pool's workers are whatever state 100 µs without a job leaves
// them in); the second part's start is the wake-up. A worker that has not started within a millisecond
// is not waited for: the caller then runs the part itself, at that cost.
func measureWake() float64 {
	if kernels.Workers() < 2 {
		return 0 // no pool: every part runs on the caller
	}
	x := fill(1 << 12)
	var runs []probeRun
	start := clock.Now()
	for n := 0; n < probeRuns || clock.Since(start).Seconds() < 0.05*passBudget; n++ {
		busy(x, 100*time.Microsecond)
		run := begin()
		t0 := clock.Now()
		var second atomic.Int64
		kernels.ParallelRows(2, func(lo, _ int) {
			if lo == 1 {
				second.Store(int64(clock.Since(t0)) + 1) // never 0: started
				return
			}
			for second.Load() == 0 && clock.Since(t0) < time.Millisecond {
			}
		})
		wait := clock.Since(t0).Seconds() // the caller ran the second part: never started
		if v := second.Load(); v > 0 {
			wait = float64(v-1) / 1e9
		}
		runs = append(runs, run.end(wait))
		if n >= 2000 {
			break
		}
	}
	return typical(runs)
}

// measureDecode is Rates.DecodeToken: Darkroom Mini's tokenizer (every model's
// text decodes at about the same rate per token: a table lookup and the byte-level
// pieces joined) decoding a canvas of 256 tokens of an encyclopedia page's HTML.
func measureDecode() (float64, error) {
	fsys, err := assets.Mini()
	if err != nil {
		return 0, fmt.Errorf("decoding probe: %w", err)
	}
	tok, err := tokenizer.LoadFS(fsys, "tokenizer.json")
	if err != nil {
		return 0, fmt.Errorf("decoding probe: %w", err)
	}
	ids := tok.Encode(`<h1>Unix</h1><p><b>Unix</b> is a family of multitasking, multi-user <a href="operating system">operating systems</a> that derive from the original AT&amp;T Unix, developed in 1969 at <a href="Bell Labs">Bell Labs</a> by Ken Thompson and Dennis Ritchie.</p>`)
	if len(ids) == 0 {
		return 0, errors.New("decoding probe: the text encoded to no tokens")
	}
	for len(ids) < 256 {
		ids = append(ids, ids...)
	}
	ids = ids[:256]
	return best(func() { _ = tok.Decode(ids) }, 0.01) / float64(len(ids)), nil
}

// busy runs a serial loop over x for about d.
func busy(x []float32, d time.Duration) {
	t0 := clock.Now()
	for clock.Since(t0) < d {
		var s float32
		for _, v := range x {
			s += v
		}
		x[0] += s * 1e-30
	}
}

// typicalOf runs setup then timed, once to warm up and then for about budget
// seconds (times passBudget, as best's; at least probeRuns times), and returns
// timed's typical run (typical).
func typicalOf(setup, timed func(), budget float64) float64 {
	budget *= passBudget
	setup()
	timed()
	var runs []probeRun
	start := clock.Now()
	for n := 0; n < probeRuns || clock.Since(start).Seconds() < budget; n++ {
		setup()
		run := begin()
		t0 := clock.Now()
		timed()
		runs = append(runs, run.end(clock.Since(t0).Seconds()))
		if n >= 2000 {
			break
		}
	}
	return max(typical(runs), 1e-9)
}

// probeRuns is the fewest runs typicalOf times in a pass: ten, thirty over the
// calibration's three passes, as the two passes before them made.
const probeRuns = 10

// probeRun is one timed run of the probe, and whether another program may have
// slowed it (begin).
type probeRun struct {
	seconds     float64
	interrupted bool
}

// starting is a run being timed: whether it started with another program wanting a
// CPU, and the process's preemptions then.
type starting struct {
	crowded     bool
	preemptions int64
}

// begin is called just before a timed run. The run is interrupted (end) when, as it
// started, more threads wanted a CPU than the machine has (runnable, counting this
// process's: a worker woken then would wait for another program's), or when the
// kernel took a CPU from the process while it ran (preemptions).
func begin() starting {
	var s starting
	if n, ok := machine.runnable(); ok {
		s.crowded = n > runtime.NumCPU()
	}
	s.preemptions, _ = machine.preemptions()
	return s
}

// end is the run that took seconds since begin.
func (s starting) end(seconds float64) probeRun {
	p, _ := machine.preemptions()
	return probeRun{seconds: seconds, interrupted: s.crowded || p > s.preemptions}
}

// machine is where begin and end read the machine's state (a test's stand-ins).
var machine = struct {
	runnable    func() (int, bool)
	preemptions func() (int64, bool)
}{runnable, preemptions}

// typical is the median of the runs no other program interrupted; with fewer than
// three of those (a machine busy throughout) it is the fastest of all, the least
// disturbed run there is.
func typical(runs []probeRun) float64 {
	var clean []float64
	fastest := math.Inf(1)
	for _, r := range runs {
		fastest = min(fastest, r.seconds)
		if !r.interrupted {
			clean = append(clean, r.seconds)
		}
	}
	if len(clean) < 3 {
		if len(runs) == 0 {
			return 0
		}
		return fastest
	}
	slices.Sort(clean)
	if n := len(clean); n%2 == 0 {
		return (clean[n/2-1] + clean[n/2]) / 2
	}
	return clean[len(clean)/2]
}
