package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/kernels"
)

func init() {
	register(&Command{
		Name:    "bench",
		Summary: "measure diffusion vs AR speed on the same weights, and forward vs raw matmul FLOP/s",
		Run:     runBench,
	})
}

// benchMode summarizes the timed runs of one mode.
type benchMode struct {
	Mode             engine.Mode `json:"mode"`
	Runs             int         `json:"runs"`
	TokensPerS       float64     `json:"tokens_per_s"`                         // median over runs; real tokens only
	Tokens           float64     `json:"tokens"`                               // mean generated tokens per run
	ForwardPasses    float64     `json:"forward_passes"`                       // mean per run
	TokensPerForward float64     `json:"tokens_per_forward"`                   // total tokens / total forward passes
	StepsPerCanvas   float64     `json:"steps_per_canvas"`                     // mean denoising steps (diffusion)
	GuidanceRounds   float64     `json:"guidance_rounds_per_canvas,omitempty"` // mean AR guidance rounds (diffusion)
	GuidedPerCanvas  float64     `json:"guided_per_canvas,omitempty"`          // mean tokens those rounds revised
	FirstCanvasMS    float64     `json:"first_canvas_ms"`                      // median time to the first canvas (AR: first token)
	MedianCanvasMS   float64     `json:"median_canvas_ms"`                     // median time per canvas (diffusion) or per token (AR)
	ElapsedMS        float64     `json:"elapsed_ms"`                           // median per run
	ForwardMS        float64     `json:"forward_ms"`                           // median per run, inside forward passes
	SamplingShare    float64     `json:"sampling_share"`                       // 1 − forward/elapsed: host-side sampling and bookkeeping
}

// benchReport is `darkroom bench --json`.
type benchReport struct {
	Model           string             `json:"model"`
	Backend         string             `json:"backend"`
	CanvasLength    int                `json:"canvas_length"`
	MaxNewTokens    int                `json:"max_new_tokens"`
	PromptTokens    int                `json:"prompt_tokens"`
	LoadMS          float64            `json:"load_ms"`
	WarmupMS        float64            `json:"warmup_ms"` // first run of each mode (graph compilation)
	Diffusion       benchMode          `json:"diffusion"`
	AR              benchMode          `json:"ar"`
	SpeedupVsAR     float64            `json:"speedup_vs_ar"` // diffusion tokens/s ÷ AR tokens/s
	MatMul          backend.MatMulRate `json:"matmul"`
	MatMulGFLOPS    float64            `json:"matmul_gflops"`
	PeakHeapBytes   uint64             `json:"peak_heap_bytes"`   // Go heap in use, peak sampled at every step
	PeakGoSysBytes  uint64             `json:"peak_go_sys_bytes"` // memory the Go runtime holds from the OS
	PeakRSSBytes    uint64             `json:"peak_rss_bytes"`    // process peak resident set (Linux VmHWM; 0 elsewhere)
	NumCPU          int                `json:"num_cpu"`
	GOMAXPROCS      int                `json:"gomaxprocs"`
	ForwardFLOPs    *forwardFLOPsStats `json:"forward_flops,omitempty"`
	ForwardGFLOPS   float64            `json:"forward_gflops,omitempty"`
	ForwardVsMatMul float64            `json:"forward_vs_matmul,omitempty"` // forward FLOP/s ÷ the path's raw matmul FLOP/s
	// Path is where forward passes ran: "host" (float32 with engine/kernels) or
	// "graph" (GoMLX on Backend). HostMatMulGFLOPS is kernels's rate on the same shape;
	// with Path "host" it is the yardstick for ForwardVsMatMul.
	Path             string  `json:"path"`
	HostMatMulGFLOPS float64 `json:"host_matmul_gflops"`
	ForwardFLOPsNote string  `json:"forward_flops_note,omitempty"`
}

func runBench(env *Env, args []string) error {
	fs := newFlagSet(env, "bench", "[flags]")
	var g generateFlags
	g.register(fs)
	runs := fs.Int("runs", 3, "timed runs per mode (after one warm-up run each)")
	prompt := fs.String("prompt", "What is Unix?", "prompt text (chat-formatted)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	t0 := time.Now()
	e, err := g.load(ctx, env)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer e.Close()
	rep := benchReport{Model: modelLabel(g.model), Backend: e.Backend(), CanvasLength: e.Config().CanvasLength,
		LoadMS: msSince(t0), NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
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
	run := func(mode engine.Mode, seed uint64) (*engine.Result, []float64, error) {
		var canvasMS []float64
		var last time.Duration
		req := engine.Request{Prompt: *prompt, Mode: mode, Sampling: s, Seed: seed, OnEvent: func(ev engine.Event) {
			switch ev.Kind {
			case engine.EventStep:
				mem.sample()
			case engine.EventCommit, engine.EventToken:
				mem.sample()
				canvasMS = append(canvasMS, float64((ev.Elapsed-last).Microseconds())/1000)
				last = ev.Elapsed
			}
		}}
		res, err := e.Generate(ctx, req)
		if err == nil && res.StopReason == "cancelled" {
			err = errors.New("interrupted")
		}
		return res, canvasMS, err
	}

	// Warm-up: compile every graph both modes use.
	t0 = time.Now()
	for _, mode := range []engine.Mode{engine.Diffusion, engine.AR} {
		progress("warm-up %s …", mode)
		res, _, err := run(mode, g.seed)
		if err != nil {
			return fmt.Errorf("bench: warm-up %s: %w", mode, err)
		}
		rep.PromptTokens = res.PromptTokens
	}
	rep.WarmupMS = msSince(t0)

	// Timed runs, the modes interleaved so both see the same machine load.
	var dres, ares []*engine.Result
	var dcanvas, atoken []float64
	for i := range *runs {
		seed := g.seed + uint64(i) + 1
		r, c, err := run(engine.Diffusion, seed)
		if err != nil {
			return fmt.Errorf("bench: diffusion run %d: %w", i+1, err)
		}
		dres, dcanvas = append(dres, r), append(dcanvas, c...)
		progress("diffusion run %d: %s in %.0f ms (%.1f tokens/s), %s",
			i+1, count(len(r.Tokens), "token", "tokens"), r.ElapsedMS, r.TokensPerS, count(r.ForwardPasses, "forward pass", "forward passes"))
		r, c, err = run(engine.AR, seed)
		if err != nil {
			return fmt.Errorf("bench: AR run %d: %w", i+1, err)
		}
		ares, atoken = append(ares, r), append(atoken, c...)
		progress("AR run %d:        %s in %.0f ms (%.1f tokens/s), %s",
			i+1, count(len(r.Tokens), "token", "tokens"), r.ElapsedMS, r.TokensPerS, count(r.ForwardPasses, "forward pass", "forward passes"))
	}
	rep.Diffusion = summarize(engine.Diffusion, dres, dcanvas)
	rep.AR = summarize(engine.AR, ares, atoken)
	if rep.AR.TokensPerS > 0 {
		rep.SpeedupVsAR = rep.Diffusion.TokensPerS / rep.AR.TokensPerS
	}

	// Raw matmul on the same backend, shaped like the model's largest GEMM: the
	// output head over a canvas, [C, D] × [D, V].
	progress("matmul …")
	d, v := e.Config().Text.HiddenSize, e.Config().Text.VocabSize
	if rep.MatMul, err = e.MeasureMatMul(ctx, rep.CanvasLength, d, v, 5); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	rep.MatMulGFLOPS = rep.MatMul.FLOPS / 1e9
	rep.Path = e.Path()
	rep.HostMatMulGFLOPS = hostMatMulGFLOPS(rep.CanvasLength, d, v, 5)
	yardstick := rep.MatMulGFLOPS
	if rep.Path == engine.PathHost {
		yardstick = rep.HostMatMulGFLOPS
	}
	rep.ForwardFLOPs, rep.ForwardFLOPsNote = forwardFLOPs(dres)
	if rep.ForwardFLOPs != nil && rep.ForwardFLOPs.Seconds > 0 {
		rep.ForwardGFLOPS = rep.ForwardFLOPs.FLOPs / rep.ForwardFLOPs.Seconds / 1e9
		if yardstick > 0 {
			rep.ForwardVsMatMul = rep.ForwardGFLOPS / yardstick
		}
	}
	mem.sample()
	rep.PeakHeapBytes, rep.PeakGoSysBytes, rep.PeakRSSBytes = mem.heap, mem.sys, peakRSS()

	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printBench(env.Stdout, &rep)
	return nil
}

func summarize(mode engine.Mode, rs []*engine.Result, unitMS []float64) benchMode {
	m := benchMode{Mode: mode, Runs: len(rs)}
	var tps, first, elapsed, fwd []float64
	var tokens, passes, steps, canvases, rounds, guided int
	for _, r := range rs {
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
	m.Tokens, m.ForwardPasses = float64(tokens)/n, float64(passes)/n
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
	fmt.Fprintf(w, "load %.0f ms, warm-up (compilation) %.0f ms\n\n", r.LoadMS, r.WarmupMS)
	fmt.Fprintf(w, "%-10s %10s %8s %9s %6s %8s %13s %12s %10s\n",
		"mode", "tokens/s", "tokens", "forwards", "TPF", "steps/c", "first (ms)", "median (ms)", "sampling")
	for _, m := range []benchMode{r.Diffusion, r.AR} {
		steps := "-"
		if m.Mode == engine.Diffusion {
			steps = strconv.FormatFloat(m.StepsPerCanvas, 'f', 1, 64)
		}
		fmt.Fprintf(w, "%-10s %10.1f %8.1f %9.1f %6.2f %8s %13.1f %12.1f %9.0f%%\n", m.Mode, m.TokensPerS, m.Tokens,
			m.ForwardPasses, m.TokensPerForward, steps, m.FirstCanvasMS, m.MedianCanvasMS, 100*m.SamplingShare)
	}
	fmt.Fprintf(w, "(median over %s; \"median\" is per canvas for diffusion, per token for AR)\n", count(r.Diffusion.Runs, "run", "runs"))
	if d := r.Diffusion; d.GuidanceRounds > 0 {
		fmt.Fprintf(w, "AR guidance (in the diffusion times): %.1f rounds per canvas, one encoder pass each; %.1f tokens revised per canvas\n",
			d.GuidanceRounds, d.GuidedPerCanvas)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "diffusion vs AR: %.2f× the tokens/s on the same weights\n", r.SpeedupVsAR)
	fmt.Fprintf(w, "raw matmul [%d,%d]×[%d,%d]: %.2f GFLOP/s on the %s backend, %.2f GFLOP/s with the host GEMM\n",
		r.MatMul.M, r.MatMul.K, r.MatMul.K, r.MatMul.N, r.MatMulGFLOPS, r.Backend, r.HostMatMulGFLOPS)
	if r.ForwardFLOPs != nil {
		where := "GoMLX graphs, vs the backend's matmul"
		if r.Path == engine.PathHost {
			where = "host float32, vs the host GEMM"
		}
		fmt.Fprintf(w, "engine forward passes: %.2f GFLOP/s (%.0f%% of the raw matmul rate; %s)\n",
			r.ForwardGFLOPS, 100*r.ForwardVsMatMul, where)
	} else if r.ForwardFLOPsNote != "" {
		fmt.Fprintf(w, "engine forward FLOP/s: %s\n", r.ForwardFLOPsNote)
	}
	fmt.Fprintf(w, "peak memory: RSS %s, Go heap %s, Go runtime %s\n",
		mib(r.PeakRSSBytes), mib(r.PeakHeapBytes), mib(r.PeakGoSysBytes))
}

func mib(b uint64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func modelLabel(model string) string {
	if model == "" {
		return "Darkroom Mini (built in)"
	}
	return model
}

// memPeak tracks the Go runtime's peak memory between samples.
type memPeak struct{ heap, sys uint64 }

func (m *memPeak) sample() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.heap = max(m.heap, s.HeapInuse)
	m.sys = max(m.sys, s.Sys)
}

// peakRSS is the process's peak resident set size (Linux /proc/self/status
// VmHWM), 0 where unavailable.
func peakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fields := strings.Fields(rest) // "123456 kB"
			if len(fields) == 2 && fields[1] == "kB" {
				if kb, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
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
		t0 := time.Now()
		kernels.MulNT(out, a, b, m, n, k)
		times = append(times, time.Since(t0).Seconds())
	}
	slices.Sort(times)
	med := times[len(times)/2]
	if med <= 0 {
		return 0
	}
	return 2 * float64(m) * float64(n) * float64(k) / med / 1e9
}
