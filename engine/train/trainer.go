package train

import (
	stdctx "context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"time"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/config"
)

// Options configure a training run. Zero values get the defaults of
// DefaultOptions where noted. The JSON form is the run's recipe.
type Options struct {
	Steps         int     `json:"steps"`
	Batch         int     `json:"batch"`
	PrefixBuckets []int   `json:"prefix_buckets"` // static prefix lengths (left-padded)
	LR            float64 `json:"lr"`             // peak learning rate
	MinLR         float64 `json:"min_lr"`         // end of the cosine
	Warmup        int     `json:"warmup_steps"`
	WeightDecay   float64 `json:"weight_decay"`
	Beta1         float64 `json:"beta1"`
	Beta2         float64 `json:"beta2"`
	AdamEps       float64 `json:"adam_eps"`
	ClipNorm      float64 `json:"clip_norm"`   // global gradient-norm clip
	NoiseEps      float64 `json:"noise_eps"`   // t ~ U(eps, 1)
	SelfCondP     float64 `json:"self_cond_p"` // share of each batch with self-conditioning
	Seed          uint64  `json:"seed"`
	InitSeed      uint64  `json:"init_seed"`
	// InitFrom is a model directory (Hugging Face layout, e.g. assets/mini) whose
	// weights start the run instead of a random initialization; the run's config
	// must match it. The optimizer starts fresh.
	InitFrom string `json:"init_from,omitempty"`

	EvalEvery       int     `json:"eval_every"`   // steps between held-out evals (0 = only at the end)
	EvalBatches     int     `json:"eval_batches"` // held-out batches per eval
	CheckpointEvery int     `json:"checkpoint_every"`
	CheckpointMins  float64 `json:"checkpoint_minutes"`
	Keep            int     `json:"keep_checkpoints"`
	LogEvery        int     `json:"log_every"`

	// TitleWeight (> 1) multiplies the loss of the answer tokens that repeat the
	// prompt's title (Example.Copied), in both the diffusion and the AR term: the
	// copy is a few tokens of each answer, too weak a signal for a small model to
	// learn from at weight 1. 0 or 1: off. Both engines; held-out evals stay
	// unweighted.
	TitleWeight float64 `json:"title_weight,omitempty"`

	// Engine is EngineHost, EngineGraph or EngineAuto (host on the pure-Go backend).
	// It changes speed, not the objective: checkpoints move between engines.
	Engine string `json:"engine,omitempty"`
}

// DefaultOptions are the official recipes' optimizer settings (Google's JAX SFT, NeMo)
// with a learning rate suited to training a small model from scratch.
func DefaultOptions() Options {
	return Options{Steps: 1000, Batch: 8, PrefixBuckets: []int{64}, LR: 2e-3, MinLR: 2e-4, Warmup: 50,
		WeightDecay: 1e-4, Beta1: 0.95, Beta2: 0.99, AdamEps: 1e-8, ClipNorm: 1.0, NoiseEps: 1e-3,
		SelfCondP: 0.5, Seed: 42, InitSeed: 1, EvalEvery: 100, EvalBatches: 4, CheckpointEvery: 50,
		CheckpointMins: 5, Keep: 2, LogEvery: 1}
}

// Data is what a run trains on.
type Data struct {
	Train, Heldout []Example
	EOS, Pad       int
}

// Metric is one line of the run's metrics.jsonl.
type Metric struct {
	Step      int     `json:"step"`
	Loss      float64 `json:"loss,omitempty"`
	Diffusion float64 `json:"diffusion,omitempty"`
	AR        float64 `json:"ar,omitempty"`
	GradNorm  float64 `json:"grad_norm,omitempty"`
	LR        float64 `json:"lr,omitempty"`
	TokensPS  float64 `json:"tokens_per_s,omitempty"`
	Elapsed   float64 `json:"elapsed_s"`
	// Held-out evaluation (set on eval lines).
	EvalLoss      float64 `json:"eval_loss,omitempty"`
	EvalDiffusion float64 `json:"eval_diffusion,omitempty"`
	EvalAR        float64 `json:"eval_ar,omitempty"`
}

// Trainer runs the training loop of one run directory.
type Trainer struct {
	opts    Options
	cfg     *config.Model
	data    Data
	runDir  string
	backend backends.Backend
	ctx     *context.Context
	plan    *Batches
	evalSet []*Batch
	step    *context.Exec
	eval    *context.Exec
	state   State
	log     io.Writer
	newNet  func(ctx *context.Context, cfg *config.Model) Net
	host    *hostState // EngineHost: parameters and optimizer on the host
}

// NewTrainer prepares a run in runDir: it writes the recipe (options + model
// config), creates freshly initialized parameters, or, with resume, restores the
// newest checkpoint of runDir (parameters, optimizer state, step; data order and
// noise follow from the step). Progress lines go to log.
func NewTrainer(backend backends.Backend, cfg *config.Model, data Data, opts Options, runDir string, resume bool, log io.Writer) (tr *Trainer, err error) {
	defer recoverErr(&err, "train")
	if err := validateOptions(&opts, cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	tr = &Trainer{opts: opts, cfg: cfg, data: data, runDir: runDir, backend: backend, log: log, newNet: newModelNet}
	tr.plan, err = NewBatches(data.Train, opts.PrefixBuckets, cfg.CanvasLength, opts.Batch, opts.Seed)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	tr.ctx = context.New()
	if err := initParams(tr.ctx, cfg, opts.InitSeed); err != nil {
		return nil, err
	}
	if opts.InitFrom != "" && !resume {
		if err := initFrom(tr.ctx, cfg, opts.InitFrom); err != nil {
			return nil, err
		}
	}
	initOptimizer(tr.ctx, trainableVars(tr.ctx))
	tr.state = State{Seed: opts.Seed}
	if resume {
		if p := LatestCheckpoint(filepath.Join(runDir, "checkpoints")); p != "" {
			st, err := LoadCheckpoint(p, tr.ctx)
			if err != nil {
				return nil, fmt.Errorf("train: resume: %w", err)
			}
			if st.Seed != opts.Seed {
				return nil, fmt.Errorf("train: resume: checkpoint %s has seed %d, options say %d", p, st.Seed, opts.Seed)
			}
			tr.state = st
			fmt.Fprintf(log, "resumed from %s at step %d\n", p, st.Step)
			if err := truncateMetrics(filepath.Join(runDir, "metrics.jsonl"), st.Step); err != nil {
				return nil, err
			}
		} else {
			fmt.Fprintf(log, "no checkpoint in %s: starting fresh\n", runDir)
		}
	}
	if !resume || tr.state.Step == 0 {
		_ = os.Remove(filepath.Join(runDir, "metrics.jsonl"))
	}
	if err := writeJSON(filepath.Join(runDir, "options.json"), opts); err != nil {
		return nil, err
	}
	if err := cfg.Save(filepath.Join(runDir, "model")); err != nil {
		return nil, err
	}
	engine, err := resolveEngine(opts.Engine, backend)
	if err != nil {
		return nil, err
	}
	tr.evalSet = tr.heldoutBatches()
	if engine == EngineHost {
		if tr.host, err = newHostState(tr.ctx, cfg); err != nil {
			return nil, err
		}
		return tr, nil
	}
	tr.step, err = context.NewExec(backend, tr.ctx, tr.trainStepGraph)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	tr.eval, err = context.NewExec(backend, tr.ctx, tr.evalGraph)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return tr, nil
}

func validateOptions(o *Options, cfg *config.Model) error {
	switch {
	case cfg.CanvasLength <= 0:
		return fmt.Errorf("train: canvas_length must be positive")
	case o.Steps <= 0 || o.Batch <= 0:
		return fmt.Errorf("train: steps and batch must be positive")
	case len(o.PrefixBuckets) == 0:
		return fmt.Errorf("train: at least one prefix bucket is needed")
	case o.LR <= 0:
		return fmt.Errorf("train: lr must be positive")
	case o.TitleWeight < 0:
		return fmt.Errorf("train: title_weight must not be negative")
	}
	if o.Keep <= 0 {
		o.Keep = 2
	}
	if o.LogEvery <= 0 {
		o.LogEvery = 1
	}
	return nil
}

// State returns the current training state (steps done, tokens, time).
func (tr *Trainer) State() State { return tr.state }

// Context returns the training context (parameters in scope "dg"), up to date.
func (tr *Trainer) Context() *context.Context {
	if tr.host != nil {
		if err := tr.host.sync(tr.ctx); err != nil {
			panic(err) // cannot happen: the host state was built from this context
		}
	}
	return tr.ctx
}

// Engine returns the run's training engine (EngineHost or EngineGraph).
func (tr *Trainer) Engine() string {
	if tr.host != nil {
		return EngineHost
	}
	return EngineGraph
}

func trainableVars(ctx *context.Context) []*context.Variable {
	var vs []*context.Variable
	for v := range ctx.IterVariables() {
		if v.Trainable {
			vs = append(vs, v)
		}
	}
	return vs
}

// trainStepGraph: inputs = the 9 batch tensors + learning rate; outputs = total,
// diffusion and AR losses and the gradient norm before clipping.
func (tr *Trainer) trainStepGraph(ctx *context.Context, in []*Node) []*Node {
	g := in[0].Graph()
	net := tr.newNet(ctx, tr.cfg)
	l := Objective(net, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8], SelfCondRows(tr.opts.SelfCondP, in[0].Shape().Dimensions[0]))
	var vars []*context.Variable
	var values []*Node
	for v := range ctx.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			vars = append(vars, v)
			values = append(values, v.ValueGraph(g))
		}
	}
	grads := Gradient(l.Total, values...)
	grads, norm := clipByGlobalNorm(grads, tr.opts.ClipNorm)
	adamW{Beta1: tr.opts.Beta1, Beta2: tr.opts.Beta2, Eps: tr.opts.AdamEps, WeightDecay: tr.opts.WeightDecay}.
		update(ctx, vars, grads, in[9])
	if os.Getenv("DARKROOM_TRAIN_NODES") != "" {
		dumpLargestNodes(g)
	}
	return []*Node{l.Total, l.Diffusion, l.AR, norm}
}

// evalGraph: the same objective without the update.
func (tr *Trainer) evalGraph(ctx *context.Context, in []*Node) []*Node {
	net := tr.newNet(ctx, tr.cfg)
	l := Objective(net, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8], SelfCondRows(tr.opts.SelfCondP, in[0].Shape().Dimensions[0]))
	return []*Node{l.Total, l.Diffusion, l.AR}
}

func (b *Batch) inputs() []any {
	bt, t, c := b.B, b.P+b.C, b.C
	return []any{
		tensors.FromFlatDataAndDimensions(b.Tokens, bt, t),
		tensors.FromFlatDataAndDimensions(b.Positions, bt, t),
		tensors.FromFlatDataAndDimensions(b.Valid, bt, t),
		tensors.FromFlatDataAndDimensions(b.PrefixValid, bt, t),
		tensors.FromFlatDataAndDimensions(b.Noisy, bt, c),
		tensors.FromFlatDataAndDimensions(b.DecPos, bt, c),
		tensors.FromFlatDataAndDimensions(orOnes(b.Weight, bt*t), bt, t),
		tensors.FromFlatDataAndDimensions(orOnes(b.DiffusionRows, bt), bt),
		tensors.FromFlatDataAndDimensions(orOnes(b.ARRows, bt), bt),
	}
}

// orOnes is one of a batch's optional inputs (Weight, DiffusionRows, ARRows),
// or n ones when it is nil (the graph takes the input either way, so one
// compiled step serves batches with and without it).
func orOnes(v []float32, n int) []float32 {
	if v != nil {
		return v
	}
	return ones(n)
}

// ones returns n float32 ones.
func ones(n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

func (tr *Trainer) noiseConfig() NoiseConfig {
	return NoiseConfig{Vocab: tr.cfg.Text.VocabSize, Eps: tr.opts.NoiseEps, SelfCondP: tr.opts.SelfCondP}
}

// BatchAt returns the batch of global step step (data order and noise are pure
// functions of the seed and the step).
func (tr *Trainer) BatchAt(step int) *Batch {
	pb, _ := tr.plan.At(step)
	return buildBatch(tr.data.Train, pb, tr.cfg.CanvasLength, tr.data.EOS, tr.data.Pad, tr.noiseConfig(), tr.opts.Seed, step, tr.opts.TitleWeight)
}

// heldoutBatches is the fixed held-out evaluation set (fixed seed, so every
// eval scores exactly the same examples, canvases and noise).
func (tr *Trainer) heldoutBatches() []*Batch {
	if len(tr.data.Heldout) == 0 || tr.opts.EvalBatches <= 0 {
		return nil
	}
	plan, err := NewBatches(tr.data.Heldout, tr.opts.PrefixBuckets, tr.cfg.CanvasLength, tr.opts.Batch, 7)
	if err != nil {
		return nil
	}
	var out []*Batch
	for i := 0; i < tr.opts.EvalBatches; i++ {
		pb, _ := plan.At(i)
		out = append(out, buildBatch(tr.data.Heldout, pb, tr.cfg.CanvasLength, tr.data.EOS, tr.data.Pad, tr.noiseConfig(), 7, i, 1))
	}
	return out
}

// StepResult is what one training step reports.
type StepResult struct {
	Loss, Diffusion, AR, GradNorm, LR float64
}

// Step runs one training step (the one numbered State().Step) and advances the state.
func (tr *Trainer) Step() (res StepResult, err error) {
	defer recoverErr(&err, "train step")
	b := tr.BatchAt(tr.state.Step)
	lr := LearningRate(tr.state.Step, tr.opts.Warmup, tr.opts.Steps, tr.opts.LR, tr.opts.MinLR)
	if tr.host != nil {
		l, norm, err := tr.host.step(b, lr, tr.opts)
		if err != nil {
			return res, fmt.Errorf("train step %d: %w", tr.state.Step, err)
		}
		res = StepResult{Loss: l.Total, Diffusion: l.Diffusion, AR: l.AR, GradNorm: norm, LR: lr}
	} else {
		in := append(b.inputs(), tensors.FromScalar(float32(lr)))
		out, err := tr.step.Exec(in...)
		if err != nil {
			return res, fmt.Errorf("train step %d: %w", tr.state.Step, err)
		}
		res = StepResult{Loss: scalar(out[0]), Diffusion: scalar(out[1]), AR: scalar(out[2]), GradNorm: scalar(out[3]), LR: lr}
	}
	if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
		return res, fmt.Errorf("train step %d: loss is %v", tr.state.Step, res.Loss)
	}
	tr.state.Step++
	tr.state.Tokens += int64(b.B * (b.P + 2*b.C))
	return res, nil
}

// Eval scores the fixed held-out set: mean total, diffusion and AR losses.
func (tr *Trainer) Eval() (total, diff, ar float64, err error) {
	defer recoverErr(&err, "eval")
	if len(tr.evalSet) == 0 {
		return 0, 0, 0, fmt.Errorf("eval: no held-out examples")
	}
	for _, b := range tr.evalSet {
		if tr.host != nil {
			l, err := tr.host.eval(b)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("eval: %w", err)
			}
			total, diff, ar = total+l.Total, diff+l.Diffusion, ar+l.AR
			continue
		}
		out, err := tr.eval.Exec(b.inputs()...)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("eval: %w", err)
		}
		total += scalar(out[0])
		diff += scalar(out[1])
		ar += scalar(out[2])
	}
	n := float64(len(tr.evalSet))
	return total / n, diff / n, ar / n, nil
}

// Checkpoint saves the current state atomically under runDir/checkpoints.
func (tr *Trainer) Checkpoint() (string, error) {
	if tr.host != nil {
		if err := tr.host.sync(tr.ctx); err != nil {
			return "", err
		}
	}
	return SaveCheckpoint(filepath.Join(tr.runDir, "checkpoints"), tr.ctx, tr.state, tr.opts.Keep)
}

// Run trains until Options.Steps or until ctx is cancelled (then it saves a
// checkpoint and returns ctx's error). It prints a progress line per LogEvery
// steps with losses, tokens/s and ETA, appends metrics.jsonl, evaluates on the
// held-out set every EvalEvery steps, and checkpoints every CheckpointEvery
// steps or CheckpointMins minutes.
func (tr *Trainer) Run(ctx stdctx.Context) error {
	metrics, err := os.OpenFile(filepath.Join(tr.runDir, "metrics.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	defer metrics.Close()
	emit := func(m Metric) {
		b, _ := json.Marshal(m)
		metrics.Write(append(b, '\n'))
	}
	lastCkpt := time.Now()
	start := time.Now()
	baseElapsed := tr.state.Elapsed
	var rateTokens int64
	var rateTime float64
	firstStep := tr.state.Step
	for tr.state.Step < tr.opts.Steps {
		if ctx.Err() != nil {
			if _, err := tr.Checkpoint(); err != nil {
				return err
			}
			fmt.Fprintf(tr.log, "stopped at step %d (checkpoint saved)\n", tr.state.Step)
			return ctx.Err()
		}
		t0 := time.Now()
		tok0 := tr.state.Tokens
		res, err := tr.Step()
		if err != nil {
			return err
		}
		dt := time.Since(t0).Seconds()
		tr.state.Elapsed = baseElapsed + time.Since(start).Seconds()
		if tr.state.Step > firstStep+1 { // the first step includes compilation
			rateTokens += tr.state.Tokens - tok0
			rateTime += dt
		}
		tps := 0.0
		if rateTime > 0 {
			tps = float64(rateTokens) / rateTime
		}
		emit(Metric{Step: tr.state.Step, Loss: res.Loss, Diffusion: res.Diffusion, AR: res.AR, GradNorm: res.GradNorm,
			LR: res.LR, TokensPS: tps, Elapsed: tr.state.Elapsed})
		if tr.state.Step%tr.opts.LogEvery == 0 || tr.state.Step == tr.opts.Steps {
			eta := "?"
			if tps > 0 {
				perStep := float64(tr.state.Tokens-tok0) / tps
				eta = (time.Duration(perStep*float64(tr.opts.Steps-tr.state.Step)) * time.Second).Round(time.Second).String()
			}
			fmt.Fprintf(tr.log, "step %d/%d  loss %.4f (diffusion %.4f, ar %.4f)  |g| %.3f  lr %.2e  %.0f tok/s  %.2fs/step  ETA %s\n",
				tr.state.Step, tr.opts.Steps, res.Loss, res.Diffusion, res.AR, res.GradNorm, res.LR, tps, dt, eta)
		}
		if (tr.opts.EvalEvery > 0 && tr.state.Step%tr.opts.EvalEvery == 0) || tr.state.Step == tr.opts.Steps {
			if len(tr.evalSet) > 0 {
				tot, d, a, err := tr.Eval()
				if err != nil {
					return err
				}
				emit(Metric{Step: tr.state.Step, Elapsed: tr.state.Elapsed, EvalLoss: tot, EvalDiffusion: d, EvalAR: a})
				fmt.Fprintf(tr.log, "eval @%d  held-out loss %.4f (diffusion %.4f, ar %.4f)\n", tr.state.Step, tot, d, a)
			}
		}
		if (tr.opts.CheckpointEvery > 0 && tr.state.Step%tr.opts.CheckpointEvery == 0) ||
			(tr.opts.CheckpointMins > 0 && time.Since(lastCkpt).Minutes() >= tr.opts.CheckpointMins) ||
			tr.state.Step == tr.opts.Steps {
			if _, err := tr.Checkpoint(); err != nil {
				return err
			}
			lastCkpt = time.Now()
		}
	}
	return nil
}

// truncateMetrics drops metric lines past step (a resumed run rewrites them).
func truncateMetrics(path string, step int) error {
	ms, err := ReadMetrics(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	var out []byte
	for _, m := range ms {
		if m.Step <= step {
			b, _ := json.Marshal(m)
			out = append(append(out, b...), '\n')
		}
	}
	return atomicfile.WriteFile(path, out, 0o600)
}

// ReadMetrics reads a run's metrics.jsonl (a torn last line is ignored).
func ReadMetrics(path string) ([]Metric, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ms []Metric
	for _, line := range splitLines(b) {
		var m Metric
		if json.Unmarshal(line, &m) == nil {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			if i > start {
				out = append(out, b[start:i])
			}
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, b[start:])
	}
	return out
}

func scalar(t *tensors.Tensor) float64 {
	switch v := t.Value().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	}
	return math.NaN()
}

// recoverErr turns a GoMLX panic into an error at this package's boundary.
func recoverErr(err *error, what string) {
	if r := recover(); r != nil {
		if os.Getenv("DARKROOM_TRAIN_DEBUG") != "" {
			debug.PrintStack()
		}
		*err = fmt.Errorf("%s: %v", what, r)
	}
}

// dumpLargestNodes prints a graph's largest intermediate tensors, by op type and
// one by one (DARKROOM_TRAIN_NODES=1): how the slow generic DotGeneral gradient
// of GoMLX was found (see vjp.go).
func dumpLargestNodes(g *Graph) {
	nodes := append([]*Node(nil), g.Nodes()...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Shape().Size() > nodes[j].Shape().Size() })
	byType := map[string]int{}
	for _, n := range nodes {
		byType[n.Type().String()] += n.Shape().Size()
	}
	fmt.Printf("graph: %d nodes\n", len(nodes))
	for t, s := range byType {
		if s > 1_000_000 {
			fmt.Printf("  type %-20s total %d elements\n", t, s)
		}
	}
	for _, n := range nodes[:min(40, len(nodes))] {
		str := n.String()
		if len(str) > 160 {
			str = str[:160]
		}
		fmt.Printf("  %10d %s\n", n.Shape().Size(), str)
	}
}
