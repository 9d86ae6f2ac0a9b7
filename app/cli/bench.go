package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/speed"
)

func init() {
	register(&Command{
		Name:    "bench",
		Summary: "measure diffusion and AR speed on the same weights, against this machine's memory and GEMM bounds",
		Run:     runBench,
	})
}

// benchMode summarizes the timed runs of one mode.
type benchMode struct {
	Mode             engine.Mode `json:"mode"`
	Runs             int         `json:"runs"`
	WarmupMS         float64     `json:"warmup_ms"`                            // the untimed first run (host path: one AR token, or one canvas of one step): first use of the weights; on graphs, compilation
	WarmupTokens     int         `json:"warmup_tokens"`                        // the tokens it wrote
	TokensPerS       float64     `json:"tokens_per_s"`                         // median over runs; real tokens only
	Tokens           float64     `json:"tokens"`                               // mean generated tokens per run
	ForwardPasses    float64     `json:"forward_passes"`                       // mean per run
	TokensPerForward float64     `json:"tokens_per_forward"`                   // total tokens / total forward passes
	StepsPerCanvas   float64     `json:"steps_per_canvas"`                     // mean denoising steps (diffusion)
	GuidanceRounds   float64     `json:"guidance_rounds_per_canvas,omitempty"` // mean AR guidance rounds (diffusion)
	GuidedPerCanvas  float64     `json:"guided_per_canvas,omitempty"`          // mean tokens those rounds revised
	// PromptCached is the mean of the prompt's tokens a run read from the prompt
	// cache, not the encoder (engine.Result.PromptCached: a prompt of the encoder's
	// chunk or more, kept by the run before it); the bounds' workload encodes only
	// the rest.
	PromptCached   float64 `json:"prompt_cached_tokens,omitempty"`
	FirstCanvasMS  float64 `json:"first_canvas_ms"`  // median time to the first canvas (AR: first token)
	MedianCanvasMS float64 `json:"median_canvas_ms"` // median time per canvas (diffusion) or per token (AR)
	ElapsedMS      float64 `json:"elapsed_ms"`       // median per run
	ForwardMS      float64 `json:"forward_ms"`       // median per run, inside forward passes
	SamplingShare  float64 `json:"sampling_share"`   // 1 − forward/elapsed: host-side sampling and bookkeeping
	// StepMS is the median denoising step (diffusion; a canvas's second and later
	// steps, which run nothing else between them).
	StepMS float64 `json:"step_ms,omitempty"`
	// FastestMS is the fastest such step (diffusion) or token after the first (AR):
	// the machine's speed with the least interference from other programs, as its
	// calibration measures its rates.
	FastestMS float64 `json:"fastest_ms,omitempty"`
	// MajorFaults and MinorFaults are the process's page faults per timed run, mean
	// over runs (Linux; absent elsewhere): major ones waited on a disk read (weights
	// the system had dropped from its page cache), minor ones mapped a page already
	// in memory. A run that faults pays for it on top of every estimate.
	MajorFaults float64 `json:"major_faults_per_run,omitempty"`
	MinorFaults float64 `json:"minor_faults_per_run,omitempty"`
	// ProcessorsBusy is the process's processor time over the timed runs divided by
	// their wall time (Unix; absent elsewhere): GOMAXPROCS when every core worked
	// throughout — the pool's workers looking for their next part count as working —
	// less where a core sat idle (a part waiting to be run, another program holding
	// the core). Session 37's 30-layer step read 1.5 of 2 when the CLI's main thread
	// was locked, 1.9 after.
	ProcessorsBusy float64    `json:"processors_busy,omitempty"`
	Bound          *modeBound `json:"bound,omitempty"`
}

// modeBound is what this machine allows a mode, next to what it did (models/speed's
// arithmetic on the model's counted FLOPs and weight bytes, at the measured rates).
type modeBound struct {
	// UnitFLOPs and UnitBytes are one AR token's (or one denoising step's) counted
	// FLOPs (engine/model) and the weight bytes it reads as stored (models/fit).
	UnitFLOPs float64 `json:"unit_flops"`
	UnitBytes float64 `json:"unit_bytes"`
	// MemoryMS is UnitBytes at the measured read rate; ComputeMS is UnitFLOPs at
	// the float32 GEMM's best measured rate (diffusion) — each the least a unit takes.
	MemoryMS  float64 `json:"memory_ms"`
	ComputeMS float64 `json:"compute_ms,omitempty"`
	// EstimateStepMS is darkroom hw's denoising step after a canvas's first
	// (diffusion; models/speed's work of the step at this machine's rates).
	EstimateStepMS float64 `json:"estimate_step_ms,omitempty"`
	// BoundTokensPerS is the AR rate if every token took MemoryMS. OfBound is the
	// bound's share of the measured unit: AR MemoryMS ÷ the median token's time,
	// diffusion max(MemoryMS, ComputeMS) ÷ StepMS (1 would be at the bound).
	BoundTokensPerS float64 `json:"bound_tokens_per_s,omitempty"`
	OfBound         float64 `json:"of_bound"`
	// EstimateTokensPerS and EstimateUnitMS are what darkroom hw says for this run's
	// workload (models/speed: the tokens the runs wrote with their prompt, and one AR
	// token or one canvas), and VsEstimate the measured tokens/s divided by the
	// estimate's.
	EstimateTokensPerS float64 `json:"estimate_tokens_per_s"`
	EstimateUnitMS     float64 `json:"estimate_unit_ms"`
	VsEstimate         float64 `json:"vs_estimate"`
	// StepVsEstimate is the estimated step's time ÷ the measured one (diffusion;
	// like VsEstimate, below 1 when the engine is slower than estimated), and
	// FastestVsEstimate the estimated unit (AR token, diffusion step) ÷ the
	// fastest measured.
	StepVsEstimate    float64 `json:"step_vs_estimate,omitempty"`
	FastestVsEstimate float64 `json:"fastest_vs_estimate,omitempty"`
	// EstimateTerms is what the estimated AR token (but its draw) or denoising step
	// pays for (models/speed.Terms: the kernels, the wake-ups of the pool's workers,
	// the engine's cost per operation, its event's text), and Wake the calibration's
	// wake-up.
	EstimateTerms speed.Terms `json:"estimate_terms"`
	Wake          float64     `json:"wake_s"`
}

// benchReport is `darkroom bench --json`. A mode not run (--mode) is absent.
type benchReport struct {
	Model          string     `json:"model"`
	Backend        string     `json:"backend"`
	Modes          string     `json:"modes"` // --mode: "both", "ar" or "diffusion"
	CanvasLength   int        `json:"canvas_length"`
	MaxNewTokens   int        `json:"max_new_tokens"`
	PromptTokens   int        `json:"prompt_tokens"`
	LoadMS         float64    `json:"load_ms"`
	WarmupMS       float64    `json:"warmup_ms"` // the warm-up runs of every mode
	Diffusion      *benchMode `json:"diffusion,omitempty"`
	AR             *benchMode `json:"ar,omitempty"`
	SpeedupVsAR    float64    `json:"speedup_vs_ar,omitempty"` // diffusion tokens/s ÷ AR tokens/s
	WeightBytes    int64      `json:"weight_bytes"`            // the weights as stored (models/fit)
	PeakHeapBytes  uint64     `json:"peak_heap_bytes"`         // Go heap in use, peak sampled at every step
	PeakGoSysBytes uint64     `json:"peak_go_sys_bytes"`       // memory the Go runtime holds from the OS
	PeakRSSBytes   uint64     `json:"peak_rss_bytes"`          // peak resident set over the load and the timed runs (Linux VmHWM; Windows' peak working set, the process's start included; 0 elsewhere), mapped weights included; the calibration after them not counted
	// RSSOverWeights is PeakRSSBytes − WeightBytes: what the run holds besides its weights.
	RSSOverWeights int64 `json:"rss_over_weights_bytes"`
	NumCPU         int   `json:"num_cpu"`
	GOMAXPROCS     int   `json:"gomaxprocs"`
	// MemReadBytesPerS and Rates are this machine's calibration (models/speed,
	// measured once and cached), the rates the bounds use; RatesProblem says why
	// there are none (not on the CPU's host kernels, or the measurement failed).
	MemReadBytesPerS float64      `json:"mem_read_bytes_per_s,omitempty"`
	Rates            *speed.Rates `json:"rates,omitempty"`
	RatesProblem     string       `json:"rates_problem,omitempty"`
	// MatMul is the raw float32 GEMM at the model's shape, [C, D]×[D, min(V, 8192)]:
	// engine/kernels on the host path, the backend's own matmul on graphs.
	MatMul          backend.MatMulRate `json:"matmul"`
	MatMulGFLOPS    float64            `json:"matmul_gflops"`
	ForwardFLOPs    *forwardFLOPsStats `json:"forward_flops,omitempty"`
	ForwardGFLOPS   float64            `json:"forward_gflops,omitempty"`
	ForwardVsMatMul float64            `json:"forward_vs_matmul,omitempty"` // forward FLOP/s ÷ the raw matmul FLOP/s
	// Path is where forward passes ran: "host" (engine/kernels), "graph" (GoMLX on
	// Backend) or "split" (both: DeviceLayers in graphs, the rest on the host).
	// HostMatMulGFLOPS is kernels's rate on the same shape.
	Path             string             `json:"path"`
	DeviceLayers     int                `json:"device_layers,omitempty"` // path "split": the layers on the device (--gpu-layers), the rest on the host
	GGUF             string             `json:"gguf,omitempty"`          // the weights are a GGUF file's blocks, its mix ("Q4_K_M") or types ("Q3_K, Q4_K, Q6_K"): the bounds price them so
	layout           weights.GGUFLayout // the GGUF file's layout (speed.Workload.GGUF)
	HostMatMulGFLOPS float64            `json:"host_matmul_gflops"`
	ForwardFLOPsNote string             `json:"forward_flops_note,omitempty"`
}

// headColumns bounds the raw matmul's output width: the head's shape with a slice
// of the vocabulary, so the yardstick costs megabytes, not the 26B's 10 GB.
const headColumns = 8192

func runBench(env *Env, args []string) error {
	fs := newFlagSet(env, "bench", "[flags]")
	var g generateFlags
	g.register(fs)
	runs := fs.Int("runs", 3, "timed runs per mode (after one warm-up run each)")
	prompt := fs.String("prompt", "What is Unix?", "prompt text (chat-formatted)")
	modes := fs.String("mode", "both", "modes to run: ar, diffusion or both")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (load, warm-up, timed runs) to this file")
	traceFile := fs.String("trace", "", "write an execution trace of the timed runs to this file (go tool trace): where the cores wait")
	promptCache := fs.Bool("prompt-cache", true, "let each run read what the run before kept of the prompt (a prompt of 256 tokens or more); false: every run reads it all, as a first message does")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench: unexpected argument %q (use --prompt)", fs.Arg(0))
	}
	if err := g.check(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if *runs < 1 {
		return fmt.Errorf("bench: --runs must be at least 1, got %d", *runs)
	}
	var order []engine.Mode
	switch *modes {
	case "both":
		order = []engine.Mode{engine.Diffusion, engine.AR}
	case "ar":
		order = []engine.Mode{engine.AR}
	case "diffusion":
		order = []engine.Mode{engine.Diffusion}
	default:
		return fmt.Errorf("bench: --mode must be ar, diffusion or both, got %q", *modes)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench: CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var traceOut *os.File // created now, so a path it cannot write fails before the load
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		traceOut = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// The peak resident set is this command's: what ran in the process before it
	// (in a test binary, other tests) does not count.
	resetPeakRSS()
	t0 := clock.Now()
	e, err := g.load(ctx, env)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer e.Close()
	cfg := e.Config()
	rep := benchReport{Model: modelLabel(g.model), Backend: e.Backend(), Modes: *modes, CanvasLength: cfg.CanvasLength,
		LoadMS: msSince(t0), NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Path: e.Path(), DeviceLayers: e.DeviceLayers(),
		WeightBytes: fit.WeightBytes(cfg, speed.ProfileOf(cfg))}
	if l := e.GGUFLayout(); l.IsGGUF() { // config.json says bf16 beside a GGUF download: its blocks as held
		rep.GGUF, rep.layout = l.Describe(cfg), l
		rep.WeightBytes = fit.GGUFWeightBytes(cfg, speed.ProfileOf(cfg), l)
	}
	s := g.sampling()
	if s.MaxNewTokens == 0 {
		s.MaxNewTokens = rep.CanvasLength // one full canvas: the speed budget's unit
	}
	rep.MaxNewTokens = s.MaxNewTokens

	mem := &memPeak{}
	progress := func(format string, a ...any) {
		if !*asJSON {
			fmt.Fprintf(env.Stderr, format+"\n", a...)
		}
	}
	// run generates once; units are the times per canvas (AR: per token), steps
	// the times of the denoising steps after each canvas's first.
	run := func(mode engine.Mode, s engine.Sampling, seed uint64) (res *engine.Result, units, steps []float64, err error) {
		var last, lastStep time.Duration
		req := engine.Request{Prompt: *prompt, Mode: mode, Sampling: s, Seed: seed, NoPromptCache: !*promptCache, OnEvent: func(ev engine.Event) {
			switch ev.Kind {
			case engine.EventStep:
				mem.sample()
				if ev.Step > 1 && !ev.Guidance {
					steps = append(steps, float64((ev.Elapsed-lastStep).Microseconds())/1000)
				}
				lastStep = ev.Elapsed
			case engine.EventCommit, engine.EventToken:
				mem.sample()
				units = append(units, float64((ev.Elapsed-last).Microseconds())/1000)
				last = ev.Elapsed
			}
		}}
		res, err = e.Generate(ctx, req)
		if err == nil && res.StopReason == engine.StopCancelled {
			err = errors.New("interrupted")
		}
		return res, units, steps, err
	}

	// Warm-up: one untimed run of each mode. Graphs compile per shape, so there it
	// is a whole run. The host path compiles nothing: its warm-up is the first use
	// of the weights (the mapping's pages, the kernels' buffers), which one AR token
	// or one denoising step does as well as a whole answer.
	warm, warmTokens := map[engine.Mode]float64{}, map[engine.Mode]int{}
	t0 = clock.Now()
	for _, mode := range order {
		progress("warm-up %s …", mode)
		ws := s
		if rep.Path == engine.PathHost {
			if mode == engine.AR {
				ws.MaxNewTokens = 1
			} else { // one step, and no guidance rounds (encoder passes, as the commit's)
				ws.MaxNewTokens, ws.MaxSteps, ws.Guidance = min(s.MaxNewTokens, max(rep.CanvasLength, 1)), 1, -1
			}
		}
		t1 := clock.Now()
		res, _, _, err := run(mode, ws, g.seed)
		if err != nil {
			return fmt.Errorf("bench: warm-up %s: %w", mode, err)
		}
		warm[mode] = msSince(t1)
		warmTokens[mode] = len(res.Tokens)
		rep.PromptTokens = res.PromptTokens
	}
	rep.WarmupMS = msSince(t0)

	// Timed runs, the modes interleaved so both see the same machine load.
	results := map[engine.Mode][]*engine.Result{}
	units, steps := map[engine.Mode][]float64{}, map[engine.Mode][]float64{}
	faults, faultsOK := map[engine.Mode]pageFaults{}, true
	cpu, wall, cpuOK := map[engine.Mode]time.Duration{}, map[engine.Mode]time.Duration{}, true
	if traceOut != nil {
		if err := trace.Start(traceOut); err != nil {
			return fmt.Errorf("bench: trace: %w", err)
		}
	}
	for i := range *runs {
		seed := g.seed + uint64(i) + 1
		for _, mode := range order {
			f0, ok0 := readPageFaults()
			c0, cok0 := processorTime()
			t1 := clock.Now()
			r, u, st, err := run(mode, s, seed)
			wall[mode] += clock.Since(t1)
			c1, cok1 := processorTime()
			f1, ok1 := readPageFaults()
			faultsOK = faultsOK && ok0 && ok1
			faults[mode] = faults[mode].add(f1.sub(f0))
			cpuOK = cpuOK && cok0 && cok1
			cpu[mode] += c1 - c0
			if err != nil {
				return fmt.Errorf("bench: %s run %d: %w", mode, i+1, err)
			}
			results[mode] = append(results[mode], r)
			units[mode], steps[mode] = append(units[mode], u...), append(steps[mode], st...)
			progress("%-9s run %d: %s in %.0f ms (%.1f tokens/s), %s", mode,
				i+1, plural.Count(len(r.Tokens), "token", "tokens"), r.ElapsedMS, r.TokensPerS, plural.Count(r.ForwardPasses, "forward pass", "forward passes"))
		}
	}
	if traceOut != nil {
		trace.Stop()
	}
	for _, mode := range order {
		m := summarize(mode, results[mode], units[mode])
		m.WarmupMS, m.WarmupTokens = warm[mode], warmTokens[mode]
		if faultsOK && m.Runs > 0 {
			f := faults[mode]
			m.MajorFaults, m.MinorFaults = float64(f.major)/float64(m.Runs), float64(f.minor)/float64(m.Runs)
		}
		if cpuOK && wall[mode] > 0 {
			m.ProcessorsBusy = cpu[mode].Seconds() / wall[mode].Seconds()
		}
		if mode == engine.Diffusion {
			m.StepMS = backend.Median(steps[mode])
			if len(steps[mode]) > 0 {
				m.FastestMS = slices.Min(steps[mode])
			}
			rep.Diffusion = &m
		} else {
			if u := units[mode]; len(u) > 1 {
				m.FastestMS = slices.Min(u[1:]) // the first waits on the prompt's pass
			}
			rep.AR = &m
		}
	}
	if rep.AR != nil && rep.Diffusion != nil && rep.AR.TokensPerS > 0 {
		rep.SpeedupVsAR = rep.Diffusion.TokensPerS / rep.AR.TokensPerS
	}

	// The model's memory is read now, after its timed runs: the calibration and the
	// raw matmul below hold buffers of their own (a first calibration ~500 MB),
	// which are this machine's measurement, not the model's.
	mem.sample()
	rep.PeakHeapBytes, rep.PeakGoSysBytes, rep.PeakRSSBytes = mem.heap, mem.sys, peakRSS()
	if rep.PeakRSSBytes > 0 {
		rep.RSSOverWeights = int64(rep.PeakRSSBytes) - rep.WeightBytes
	}

	// This machine's rates and what they allow each mode.
	progress("bounds …")
	rates, err := ratesHere(ctx, speed.Device(rep.Backend))
	switch {
	case err != nil:
		rep.RatesProblem = err.Error()
	case rates == nil:
		rep.RatesProblem = "not measured off the CPU's host kernels"
	default:
		rep.Rates, rep.MemReadBytesPerS = rates, rates.MemRead
		if err := bounds(&rep, cfg, rates); err != nil {
			rep.RatesProblem = err.Error()
		}
	}

	// The raw matmul, shaped like the model's largest GEMM — the output head over
	// a canvas, [C, D] × [D, V] — with the vocabulary cut to headColumns.
	progress("matmul …")
	c, d, v := rep.CanvasLength, cfg.Text.HiddenSize, min(cfg.Text.VocabSize, headColumns)
	rep.HostMatMulGFLOPS = hostMatMulGFLOPS(c, d, v, 5)
	rep.MatMul = backend.MatMulRate{M: c, K: d, N: v, Runs: 5, FLOPs: 2 * float64(c) * float64(d) * float64(v),
		FLOPS: rep.HostMatMulGFLOPS * 1e9}
	if rep.MatMul.FLOPS > 0 {
		rep.MatMul.Seconds = rep.MatMul.FLOPs / rep.MatMul.FLOPS // the median run's
	}
	if rep.Path != engine.PathHost {
		if rep.MatMul, err = e.MeasureMatMul(ctx, c, d, v, 5); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	rep.MatMulGFLOPS = rep.MatMul.FLOPS / 1e9
	// The canvas's forward passes are GEMMs, held to the raw matmul; AR's are
	// memory-bound GEMVs, held to their bound above.
	rep.ForwardFLOPs, rep.ForwardFLOPsNote = forwardFLOPs(results[engine.Diffusion])
	if rep.Diffusion == nil {
		rep.ForwardFLOPsNote = "not measured without diffusion (an AR token is bound by memory: see its bound)"
	}
	if rep.ForwardFLOPs != nil && rep.ForwardFLOPs.Seconds > 0 {
		rep.ForwardGFLOPS = rep.ForwardFLOPs.FLOPs / rep.ForwardFLOPs.Seconds / 1e9
		if rep.MatMulGFLOPS > 0 {
			rep.ForwardVsMatMul = rep.ForwardGFLOPS / rep.MatMulGFLOPS
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printBench(env.Stdout, &rep)
	return nil
}

// bounds fills each measured mode's Bound from models/speed's estimate of the same
// workload as its runs (this run's prompt, the tokens they wrote, their steps and
// guidance rounds) at rates.
func bounds(rep *benchReport, cfg *config.Model, rates *speed.Rates) error {
	estimate := func(m *benchMode) (*speed.Estimate, error) {
		w := speed.Workload{Tokens: max(int(math.Round(m.Tokens)), 1), Prompt: max(rep.PromptTokens-int(math.Round(m.PromptCached)), 1), GGUF: rep.layout}
		if m.Mode == engine.Diffusion {
			w.Steps, w.GuidanceRounds = m.StepsPerCanvas, m.GuidanceRounds
		}
		return speed.Compute(cfg, speed.ProfileOf(cfg), rates, w)
	}
	if a := rep.AR; a != nil {
		est, err := estimate(a)
		if err != nil {
			return err
		}
		b := &modeBound{UnitFLOPs: est.AR.UnitFLOPs, UnitBytes: est.AR.UnitBytes,
			MemoryMS: 1000 * est.AR.UnitBytes / est.MemRead, EstimateTokensPerS: est.AR.TokensPerS,
			EstimateUnitMS: 1000 * est.AR.UnitSeconds, EstimateTerms: est.AR.Terms, Wake: rates.Wake}
		if b.MemoryMS > 0 {
			b.BoundTokensPerS = 1000 / b.MemoryMS
		}
		if a.MedianCanvasMS > 0 {
			b.OfBound = b.MemoryMS / a.MedianCanvasMS
		}
		if b.EstimateTokensPerS > 0 {
			b.VsEstimate = a.TokensPerS / b.EstimateTokensPerS
		}
		if a.FastestMS > 0 {
			b.FastestVsEstimate = b.EstimateUnitMS / a.FastestMS
		}
		a.Bound = b
	}
	if d := rep.Diffusion; d != nil {
		est, err := estimate(d)
		if err != nil {
			return err
		}
		// One step over the canvas after the prompt: its FLOPs at the best GEMM
		// rate (the bound), and darkroom hw's step (the estimate).
		flops := model.FLOPs(&cfg.Text, rep.CanvasLength, rep.PromptTokens)
		b := &modeBound{UnitFLOPs: flops, UnitBytes: est.Diffusion.UnitBytes,
			MemoryMS: 1000 * est.Diffusion.UnitBytes / est.MemRead, ComputeMS: 1000 * flops / rates.PeakFor(speed.ProfileOf(cfg)),
			EstimateTokensPerS: est.Diffusion.TokensPerS, EstimateUnitMS: 1000 * est.Diffusion.UnitSeconds,
			EstimateStepMS: 1000 * est.Diffusion.StepSeconds, EstimateTerms: est.Diffusion.Terms, Wake: rates.Wake}
		if d.StepMS > 0 {
			b.OfBound = max(b.MemoryMS, b.ComputeMS) / d.StepMS
			b.StepVsEstimate = b.EstimateStepMS / d.StepMS
		}
		if d.FastestMS > 0 {
			b.FastestVsEstimate = b.EstimateStepMS / d.FastestMS
		}
		if b.EstimateTokensPerS > 0 {
			b.VsEstimate = d.TokensPerS / b.EstimateTokensPerS
		}
		d.Bound = b
	}
	return nil
}

func summarize(mode engine.Mode, rs []*engine.Result, unitMS []float64) benchMode {
	m := benchMode{Mode: mode, Runs: len(rs)}
	var tps, first, elapsed, fwd []float64
	var tokens, passes, steps, canvases, rounds, guided, cached int
	for _, r := range rs {
		cached += r.PromptCached
		tps = append(tps, r.TokensPerS)
		first = append(first, r.FirstCanvasMS)
		elapsed = append(elapsed, r.ElapsedMS)
		fwd = append(fwd, r.ForwardMS)
		tokens += len(r.Tokens)
		passes += r.ForwardPasses
		for _, c := range r.Canvases {
			steps += c.Steps
			rounds += c.GuidanceRounds
			guided += c.Guided
			canvases++
		}
	}
	n := float64(len(rs))
	m.TokensPerS = backend.Median(tps)
	m.Tokens, m.ForwardPasses, m.PromptCached = float64(tokens)/n, float64(passes)/n, float64(cached)/n
	if passes > 0 {
		m.TokensPerForward = float64(tokens) / float64(passes)
	}
	if canvases > 0 {
		m.StepsPerCanvas = float64(steps) / float64(canvases)
		m.GuidanceRounds, m.GuidedPerCanvas = float64(rounds)/float64(canvases), float64(guided)/float64(canvases)
	}
	m.FirstCanvasMS, m.MedianCanvasMS = backend.Median(first), backend.Median(unitMS)
	m.ElapsedMS, m.ForwardMS = backend.Median(elapsed), backend.Median(fwd)
	if m.ElapsedMS > 0 {
		m.SamplingShare = 1 - m.ForwardMS/m.ElapsedMS
	}
	return m
}

func printBench(w io.Writer, r *benchReport) {
	fmt.Fprintf(w, "model %s on backend %s (%d CPUs, GOMAXPROCS %d); canvas %d, max %d new tokens, prompt %d tokens\n",
		r.Model, r.Backend, r.NumCPU, r.GOMAXPROCS, r.CanvasLength, r.MaxNewTokens, r.PromptTokens)
	fmt.Fprintf(w, "load %.0f ms, warm-up %.0f ms", r.LoadMS, r.WarmupMS)
	var ms []*benchMode
	for _, m := range []*benchMode{r.Diffusion, r.AR} {
		if m != nil {
			ms = append(ms, m)
			fmt.Fprintf(w, "; %s warm-up %.0f ms", m.Mode, m.WarmupMS)
		}
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprintf(w, "%-10s %10s %8s %9s %6s %8s %13s %12s %10s\n",
		"mode", "tokens/s", "tokens", "forwards", "TPF", "steps/c", "first (ms)", "median (ms)", "sampling")
	for _, m := range ms {
		steps := "-"
		if m.Mode == engine.Diffusion {
			steps = strconv.FormatFloat(m.StepsPerCanvas, 'f', 1, 64)
		}
		fmt.Fprintf(w, "%-10s %10.2f %8.1f %9.1f %6.2f %8s %13.1f %12.1f %9.0f%%\n", m.Mode, m.TokensPerS, m.Tokens,
			m.ForwardPasses, m.TokensPerForward, steps, m.FirstCanvasMS, m.MedianCanvasMS, 100*m.SamplingShare)
	}
	fmt.Fprintf(w, "(median over %s; \"median\" is per canvas for diffusion, per token for AR)\n", plural.Count(ms[0].Runs, "run", "runs"))
	for _, m := range ms {
		if m.PromptCached > 0 {
			fmt.Fprintf(w, "%s: %.0f of the prompt's %d tokens a run came from the prompt cache (the run before kept them), not the encoder\n",
				m.Mode, m.PromptCached, r.PromptTokens)
		}
	}
	if d := r.Diffusion; d != nil && d.GuidanceRounds > 0 {
		fmt.Fprintf(w, "AR guidance (in the diffusion times): %.1f rounds per canvas, one encoder pass each; %.1f tokens revised per canvas\n",
			d.GuidanceRounds, d.GuidedPerCanvas)
	}
	fmt.Fprintln(w)
	if r.AR != nil && r.Diffusion != nil {
		fmt.Fprintf(w, "diffusion vs AR: %.2f× the tokens/s on the same weights\n", r.SpeedupVsAR)
	}
	if r.MemReadBytesPerS > 0 {
		fmt.Fprintf(w, "this machine: memory read %.1f GB/s%s (models/speed's calibration)\n", r.MemReadBytesPerS/1e9, spreadText(r.Rates, speed.SpreadMemRead, 1e9))
	} else if r.RatesProblem != "" {
		fmt.Fprintf(w, "bounds: %s\n", r.RatesProblem)
	}
	if a := r.AR; a != nil && a.Bound != nil {
		b := a.Bound
		fmt.Fprintf(w, "AR token: %s measured (median); bound %s (%.2f GB of weights at the read rate: %.2f tokens/s; %.0f%%); darkroom hw estimates %s a token (estimate ÷ fastest token %s: %.2f), %.2f tokens/s with the prompt (measured ÷ estimate %.2f)\n",
			msText(a.MedianCanvasMS), msText(b.MemoryMS), b.UnitBytes/1e9, b.BoundTokensPerS, 100*b.OfBound, msText(b.EstimateUnitMS),
			msText(a.FastestMS), b.FastestVsEstimate, b.EstimateTokensPerS, b.VsEstimate)
		printTerms(w, "AR token", b)
	}
	if d := r.Diffusion; d != nil && d.Bound != nil {
		b := d.Bound
		fmt.Fprintf(w, "diffusion step: %s measured; bound %s (%.1f GFLOP at the best GEMM rate %s, %.2f GB at the read rate %s; %.0f%%); darkroom hw estimates %s a step (estimate ÷ measured %.2f; ÷ fastest step %s: %.2f), %s a canvas, %.2f tokens/s (measured ÷ estimate %.2f)\n",
			msText(d.StepMS), msText(max(b.ComputeMS, b.MemoryMS)), b.UnitFLOPs/1e9, msText(b.ComputeMS), b.UnitBytes/1e9, msText(b.MemoryMS), 100*b.OfBound,
			msText(b.EstimateStepMS), b.StepVsEstimate, msText(d.FastestMS), b.FastestVsEstimate, msText(b.EstimateUnitMS), b.EstimateTokensPerS, b.VsEstimate)
		printTerms(w, "diffusion step", b)
	}
	if x := r.outranCalibration(); x > 0 {
		fmt.Fprintf(w, "the calibration is slower than this machine ran (its fastest unit %.1f× its estimate): measured, perhaps, while something else kept the processors busy; `darkroom hw --recalibrate` measures it again\n", x)
	}
	fmt.Fprintf(w, "raw matmul [%d,%d]×[%d,%d]: %.2f GFLOP/s (%s), %.2f GFLOP/s with the host GEMM\n",
		r.MatMul.M, r.MatMul.K, r.MatMul.K, r.MatMul.N, r.MatMulGFLOPS, r.Path, r.HostMatMulGFLOPS)
	if r.ForwardFLOPs != nil {
		fmt.Fprintf(w, "engine forward passes: %.2f GFLOP/s (%.0f%% of the raw matmul rate)\n", r.ForwardGFLOPS, 100*r.ForwardVsMatMul)
	} else if r.ForwardFLOPsNote != "" {
		fmt.Fprintf(w, "engine forward FLOP/s: %s\n", r.ForwardFLOPsNote)
	}
	beside := ", the rest " + mib(uint64(r.RSSOverWeights))
	if r.RSSOverWeights <= 0 {
		beside = ", not all of them resident at once"
	}
	rss := "RSS " + mib(r.PeakRSSBytes)
	if r.PeakRSSBytes == 0 {
		rss, beside = "RSS not read on this system", "" // neither /proc nor Windows' counters
	}
	fmt.Fprintf(w, "peak memory: %s (weights %s%s), Go heap %s, Go runtime %s\n",
		rss, mib(uint64(r.WeightBytes)), beside, mib(r.PeakHeapBytes), mib(r.PeakGoSysBytes))
	for _, m := range []*benchMode{r.Diffusion, r.AR} {
		if m != nil && m.MajorFaults+m.MinorFaults > 0 {
			fmt.Fprintf(w, "page faults in a timed %s run: %.0f major (read from disk), %.0f minor (mapped from memory)\n",
				m.Mode, m.MajorFaults, m.MinorFaults)
		}
	}
	for _, m := range []*benchMode{r.Diffusion, r.AR} {
		if m != nil && m.ProcessorsBusy > 0 {
			fmt.Fprintf(w, "processors busy in the timed %s runs: %.2f of %d (processor time ÷ wall time; less: a core idle or taken by another program)\n",
				m.Mode, m.ProcessorsBusy, r.GOMAXPROCS)
		}
	}
}

// outranCalibration is how many times faster than its estimate the fastest unit of a
// mode ran (the estimate ÷ the fastest AR token or diffusion step), where that is more
// than calibrationSlack, else 0: the estimates run within 25% of the measured on an
// idle machine, and a calibration measured while the machine was busy reads every
// rate low for as long as it is kept (bench's report, the Library's speeds).
func (r *benchReport) outranCalibration() float64 {
	x := 0.0
	for _, m := range []*benchMode{r.AR, r.Diffusion} {
		if m != nil && m.Bound != nil {
			x = max(x, m.Bound.FastestVsEstimate)
		}
	}
	if x > calibrationSlack {
		return x
	}
	return 0
}

// calibrationSlack bounds outranCalibration's ratio.
const calibrationSlack = 1.5

// printTerms says what darkroom hw's estimate of a unit (what) pays for.
func printTerms(w io.Writer, what string, b *modeBound) {
	t := b.EstimateTerms
	fmt.Fprintf(w, "  the estimated %s: kernels %s, wake-ups %s (%.0f hand-offs to the pool, %s each at most), engine %s (%.0f operations), event %s (%.0f tokens of text decoded)\n",
		what, msText(1000*t.Kernels), msText(1000*t.WakeUps), t.Handoffs, usText(b.Wake), msText(1000*t.Engine), t.Ops,
		msText(1000*t.Events), t.Decoded)
}

// usText is a duration in seconds as microseconds.
func usText(s float64) string { return fmt.Sprintf("%.2g µs", s*1e6) }

func mib(b uint64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// msText is a duration in milliseconds with the precision it deserves.
func msText(ms float64) string {
	if ms >= 10 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.2g ms", ms)
}

func msSince(t clock.Instant) float64 { return float64(clock.Since(t).Microseconds()) / 1000 }

func modelLabel(model string) string {
	if model == "" {
		return "Darkroom Mini (built in)"
	}
	return model
}

// memPeak tracks the Go runtime's peak memory between samples. It reads
// runtime/metrics, not runtime.ReadMemStats: a sample is taken on every token and
// step event, and ReadMemStats stops the world (2–30 µs here), which the timed
// runs of a small model would count as its own time.
type memPeak struct {
	heap, sys uint64
	s         []metrics.Sample
}

// Heap in use is the live objects plus the spans' free slots (ReadMemStats'
// HeapInuse); the runtime's total is everything it mapped (MemStats.Sys).
var memPeakMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/total:bytes"}

func (m *memPeak) sample() {
	if m.s == nil {
		m.s = make([]metrics.Sample, len(memPeakMetrics))
		for i, name := range memPeakMetrics {
			m.s[i].Name = name
		}
	}
	metrics.Read(m.s)
	u := func(i int) uint64 {
		if m.s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return m.s[i].Value.Uint64()
	}
	m.heap = max(m.heap, u(0)+u(1))
	m.sys = max(m.sys, u(2))
}

// pageFaults are the process's page faults so far: major ones read the page from
// disk, minor ones found it in memory (the page cache, or a new zero page).
type pageFaults struct{ minor, major uint64 }

func (a pageFaults) add(b pageFaults) pageFaults {
	return pageFaults{a.minor + b.minor, a.major + b.major}
}
func (a pageFaults) sub(b pageFaults) pageFaults {
	return pageFaults{a.minor - b.minor, a.major - b.major}
}

// readPageFaults reads them from Linux's /proc/self/stat (minflt and majflt, its
// 10th and 12th fields); ok is false where that file is not there or not readable.
func readPageFaults() (f pageFaults, ok bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return f, false
	}
	return parseStatFaults(string(b))
}

// parseStatFaults is readPageFaults' reading of a /proc/[pid]/stat line. The
// command name, the 2nd field, is in parentheses and may hold spaces or
// parentheses itself, so the fields are counted from its last ')'.
func parseStatFaults(stat string) (f pageFaults, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return f, false
	}
	fields := strings.Fields(stat[i+1:]) // from the 3rd field, state
	if len(fields) < 10 {
		return f, false
	}
	minor, err1 := strconv.ParseUint(fields[7], 10, 64) // field 10
	major, err2 := strconv.ParseUint(fields[9], 10, 64) // field 12
	if err1 != nil || err2 != nil {
		return f, false
	}
	return pageFaults{minor: minor, major: major}, true
}

// forwardFLOPsStats is the model arithmetic of the timed diffusion runs.
type forwardFLOPsStats struct {
	FLOPs   float64 `json:"flops"`   // counted FLOPs of every forward pass (encoder and decoder)
	Seconds float64 `json:"seconds"` // time inside those forward passes
}

// forwardFLOPs sums the FLOPs the engine counted over the timed diffusion runs.
func forwardFLOPs(rs []*engine.Result) (*forwardFLOPsStats, string) {
	var st forwardFLOPsStats
	for _, r := range rs {
		st.FLOPs += r.ForwardFLOPs
		st.Seconds += r.ForwardMS / 1000
	}
	if st.FLOPs == 0 || st.Seconds == 0 {
		return nil, "not measured (no forward passes timed)"
	}
	return &st, ""
}

// hostMatMulGFLOPS times engine/kernels's float32 product on [m,k]×[k,n] (the
// host path's raw rate), median of runs after one warm-up.
func hostMatMulGFLOPS(m, k, n, runs int) float64 {
	a, b, out := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) * 0.25
	}
	for i := range b {
		b[i] = float32(i%5) * 0.5
	}
	kernels.MulNT(out, a, b, m, n, k)
	times := make([]float64, 0, runs)
	for range max(runs, 1) {
		t0 := clock.Now()
		kernels.MulNT(out, a, b, m, n, k)
		times = append(times, clock.Since(t0).Seconds())
	}
	slices.Sort(times)
	med := times[len(times)/2]
	if med <= 0 {
		return 0
	}
	return 2 * float64(m) * float64(n) * float64(k) / med / 1e9
}
