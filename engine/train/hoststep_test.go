package train

import (
	"bytes"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/train/hostgrad"
)

// longPromptData has prompts longer than config.Tiny's sliding window (8), so the
// encoder's windowed causal mask and the decoder's "last W−1 prefix keys" rule matter.
func longPromptData(n int, cfg *config.Model) []Example {
	rng := rand.New(rand.NewPCG(9, 9))
	v := cfg.Text.VocabSize
	var ex []Example
	for range n {
		prompt := []int{2}
		for range 9 + rng.IntN(6) {
			prompt = append(prompt, 10+rng.IntN(v-10))
		}
		var answer []int
		for range 3 + rng.IntN(20) { // some answers span two canvases
			answer = append(answer, 10+rng.IntN(v-10))
		}
		ex = append(ex, Example{Title: "t", Prompt: prompt, Answer: append(answer, 1)})
	}
	return ex
}

// TestHostGradientMatchesGraph checks the host objective (package hostgrad) against
// GoMLX's autodiff of the graph objective (Objective over engine/model's graph) on two
// batches, the second with title weights, a third whose examples train one loss or
// both (Example.Loss): the three losses and the gradient of every
// trainable parameter.
func TestHostGradientMatchesGraph(t *testing.T) {
	cfg := config.Tiny()
	ctx := context.New()
	if err := initParams(ctx, cfg, 5); err != nil {
		t.Fatal(err)
	}
	// Non-trivial norm weights and per-expert scales (they start at 1).
	rng := rand.New(rand.NewPCG(1, 2))
	for v := range ctx.IterVariables() {
		if v.Trainable && (v.Shape().Rank() == 1) {
			data := tensors.MustCopyFlatData[float32](v.MustValue())
			for i := range data {
				data[i] = 0.5 + rng.Float32()
			}
			v.MustSetValue(tensors.FromFlatDataAndDimensions(data, v.Shape().Dimensions...))
		}
	}
	initOptimizer(ctx, trainableVars(ctx))
	examples := longPromptData(16, cfg)
	for i := range examples { // step 1 weighs these (Options.TitleWeight)
		examples[i].Copied = []int{0, 2}
	}
	plan, err := NewBatches(examples, []int{16, 24}, cfg.CanvasLength, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	nc := NoiseConfig{Vocab: cfg.Text.VocabSize, Eps: 1e-3, SelfCondP: 0.5}
	backend := goBackend(t)
	for step := range 3 {
		if step == 2 {
			for i := range examples {
				examples[i].Loss = []string{"", LossDiffusion, LossAR}[i%3]
			}
		}
		pb, _ := plan.At(step)
		b := buildBatch(examples, pb, cfg.CanvasLength, 1, 0, nc, 11, step, float64(1+2*step))

		var names []string
		exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, in []*Node) []*Node {
			g := in[0].Graph()
			l := Objective(newModelNet(ctx, cfg), in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8], b.SelfCondRows)
			var values []*Node
			names = names[:0]
			for v := range ctx.IterVariables() {
				if v.Trainable && v.InUseByGraph(g) {
					names = append(names, v.Name())
					values = append(values, v.ValueGraph(g))
				}
			}
			return append([]*Node{l.Total, l.Diffusion, l.AR}, Gradient(l.Total, values...)...)
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Exec(b.inputs()...)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := newHostState(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, g, err := hostgrad.Loss(hs.params, b.examples(), true)
		if err != nil {
			t.Fatal(err)
		}
		for i, pair := range [][2]float64{{l.Total, scalar(out[0])}, {l.Diffusion, scalar(out[1])}, {l.AR, scalar(out[2])}} {
			if math.Abs(pair[0]-pair[1]) > 1e-4*math.Abs(pair[1]) {
				t.Errorf("step %d loss %d: host %.6f, graph %.6f", step, i, pair[0], pair[1])
			}
		}
		if len(names) != len(hs.names) {
			t.Errorf("graph differentiates %d parameters, host %d", len(names), len(hs.names))
		}
		worst, worstName := 0.0, ""
		for i, name := range names {
			want := tensors.MustCopyFlatData[float32](out[3+i])
			got := g[name]
			if len(got) != len(want) {
				t.Fatalf("%s: host gradient has %d values, graph %d", name, len(got), len(want))
			}
			var diff, ref float64
			for j := range want {
				d := float64(got[j]) - float64(want[j])
				diff += d * d
				ref += float64(want[j]) * float64(want[j])
			}
			rel := math.Sqrt(diff / math.Max(ref, 1e-30))
			if ref < 1e-20 && diff < 1e-20 {
				rel = 0
			}
			if rel > worst {
				worst, worstName = rel, name
			}
			if rel > 2e-3 {
				t.Errorf("step %d: gradient of %s: relative error %.2e (|graph| %.3e)", step, name, rel, math.Sqrt(ref))
			}
		}
		t.Logf("step %d: losses host %.6f / graph %.6f; %d gradients, worst relative error %.2e (%s)",
			step, l.Total, scalar(out[0]), len(names), worst, worstName)
	}
}

// TestGraphEngineStillTrains keeps the graph engine (the path for XLA) covered: a few
// steps lower the loss there too.
func TestGraphEngineStillTrains(t *testing.T) {
	if testing.Short() {
		t.Skip("graph training is slow on the go backend")
	}
	cfg := config.Tiny()
	opts := tinyOptions()
	opts.Engine = EngineGraph
	var log bytes.Buffer
	tr, err := NewTrainer(goBackend(t), cfg, synthData(64, cfg), opts, t.TempDir(), false, &log)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Engine() != EngineGraph {
		t.Fatalf("engine %s", tr.Engine())
	}
	before, _, _, err := tr.Eval()
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	after, _, _, err := tr.Eval()
	if err != nil {
		t.Fatal(err)
	}
	if !(after < before-0.3) {
		t.Fatalf("graph engine: loss did not fall: %.4f → %.4f", before, after)
	}
}

// TestHostLossRepeatable: the host objective keeps its buffers between calls
// (hostgrad's arenas), so a batch run again after another batch — on buffers that
// batch left dirty — gives the same losses and gradients bit for bit.
func TestHostLossRepeatable(t *testing.T) {
	cfg := config.Tiny()
	hs := freshHostState(t, cfg, 3)
	examples := longPromptData(16, cfg)
	plan, err := NewBatches(examples, []int{16, 24}, cfg.CanvasLength, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	nc := NoiseConfig{Vocab: cfg.Text.VocabSize, Eps: 1e-3, SelfCondP: 0.5}
	batch := func(step int) []hostgrad.Example {
		pb, _ := plan.At(step)
		return buildBatch(examples, pb, cfg.CanvasLength, 1, 0, nc, 11, step, 1).examples()
	}
	l0, g0, err := hostgrad.Loss(hs.params, batch(0), true)
	if err != nil {
		t.Fatal(err)
	}
	g0 = maps.Clone(g0)
	for name, v := range g0 {
		g0[name] = slices.Clone(v)
	}
	if _, _, err := hostgrad.Loss(hs.params, batch(1), true); err != nil {
		t.Fatal(err)
	}
	l, g, err := hostgrad.Loss(hs.params, batch(0), true)
	if err != nil {
		t.Fatal(err)
	}
	if l != l0 {
		t.Errorf("losses %+v, the first time %+v", l, l0)
	}
	for name, want := range g0 {
		for i, w := range want {
			if math.Float32bits(g[name][i]) != math.Float32bits(w) {
				t.Fatalf("gradient of %s[%d] = %v, the first time %v", name, i, g[name][i], w)
			}
		}
	}
}

// mini2Size is Darkroom Mini 2's shape (train-runs/mini2's recipe): hidden 192, six
// layers (five sliding, one full), 6 heads over 2 KV heads of 32 (64 on the full
// layer), MLP 384, eight experts of 192, top-2.
var mini2Size = MiniSize{Hidden: 192, Layers: 6, Heads: 6, HeadDim: 32, GlobalHeadDim: 64,
	KVHeads: 2, GlobalKVHeads: 2, Intermediate: 384, MoEIntermediate: 192, Experts: 8, TopK: 2, Window: 128}

// BenchmarkHostStep is one host training step (loss, gradient, AdamW) on ~100-token
// prompts (the 128 bucket) and vocabulary 4096: of the shipped Mini on a batch of 4,
// and of Mini 2 on its run's batch of 8. Besides wall time it reports the process's
// CPU time per step (cpu-s/op, Linux), steadier on a loaded machine.
func BenchmarkHostStep(b *testing.B) {
	for _, bc := range []struct {
		name  string
		size  MiniSize
		batch int
	}{{"mini", DefaultMiniSize, 4}, {"mini2", mini2Size, 8}} {
		b.Run(bc.name, func(b *testing.B) { benchHostStep(b, bc.size, bc.batch) })
	}
}

func benchHostStep(b *testing.B, size MiniSize, batchSize int) {
	cfg, err := MiniConfig(size, 4096, []int{1, 6}, 0, 1, 2)
	if err != nil {
		b.Fatal(err)
	}
	hs := freshHostState(b, cfg, 1)
	batch := benchBatch(b, cfg, batchSize)
	o := DefaultOptions()
	b.ResetTimer()
	f0, cpu0 := hostgrad.Flops(), processCPU()
	for range b.N {
		if _, _, err := hs.step(batch, 1e-3, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(b.N*batch.B*(100+256))/b.Elapsed().Seconds(), "positions/s")
	b.ReportMetric(float64(hostgrad.Flops()-f0)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// benchBatch is a batch of n examples with 100-token prompts and 150-token answers
// (one canvas each, in the 128 prefix bucket), half of them self-conditioned.
func benchBatch(tb testing.TB, cfg *config.Model, n int) *Batch {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 1))
	var ex []Example
	for range 2 * n {
		e := Example{Title: "t"}
		for range 100 {
			e.Prompt = append(e.Prompt, 10+rng.IntN(4000))
		}
		for range 150 {
			e.Answer = append(e.Answer, 10+rng.IntN(4000))
		}
		ex = append(ex, e)
	}
	plan, err := NewBatches(ex, []int{128}, cfg.CanvasLength, n, 1)
	if err != nil {
		tb.Fatal(err)
	}
	pb, _ := plan.At(0)
	return buildBatch(ex, pb, cfg.CanvasLength, 1, 0, NoiseConfig{Vocab: 4096, Eps: 1e-3, SelfCondP: 0.5}, 1, 0, 1)
}

// TestInitFrom starts a run from an exported model: its parameters are the
// model's, bit for bit, and a mismatched config is refused.
func TestInitFrom(t *testing.T) {
	cfg := config.Tiny()
	data := synthData(32, cfg)
	var log bytes.Buffer
	a, err := NewTrainer(goBackend(t), cfg, data, tinyOptions(), t.TempDir(), false, &log)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.Step(); err != nil {
			t.Fatal(err)
		}
	}
	dir, tokDir := t.TempDir(), t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} { // copied, not read
		if err := os.WriteFile(filepath.Join(tokDir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Export(a.Context(), cfg, dir, ExportOptions{DType: "f32", TokenizerDir: tokDir}); err != nil {
		t.Fatal(err)
	}
	want := paramsSnapshot(t, a)
	opts := tinyOptions()
	opts.InitFrom = dir
	b, err := NewTrainer(goBackend(t), cfg, data, opts, t.TempDir(), false, &log)
	if err != nil {
		t.Fatal(err)
	}
	got := paramsSnapshot(t, b)
	for name, w := range want {
		for i := range w {
			if math.Float32bits(got[name][i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s[%d] = %v, want the exported %v", name, i, got[name][i], w[i])
			}
		}
	}
	other := config.Tiny()
	other.Text.VocabSize = 256
	if _, err := NewTrainer(goBackend(t), other, synthData(8, other), opts, t.TempDir(), false, &log); err == nil {
		t.Errorf("a config that does not match the init model was accepted")
	}
}

// TestTitleWeight checks where Options.TitleWeight lands: the batch weighs exactly
// the Copied answer tokens — in the scored canvas and, for a later canvas, in the
// prefix that holds the earlier one — the weights scale the host loss as written,
// and held-out batches stay unweighted. (TestHostGradientMatchesGraph checks the
// graph objective's weights against the host's.)
func TestTitleWeight(t *testing.T) {
	cfg := config.Tiny()
	c := cfg.CanvasLength
	prompt := []int{2, 5, 6, 7, 8}
	var answer []int
	for j := range c + 6 {
		answer = append(answer, 20+j%50)
	}
	ex := []Example{{Title: "t", Prompt: prompt, Answer: answer, Copied: []int{1, 2, c + 2}}}
	pb := plannedBatch{Bucket: len(prompt) + c, Items: []item{{Example: 0, Canvas: 0}, {Example: 0, Canvas: 1}}}
	nc := NoiseConfig{Vocab: cfg.Text.VocabSize, Eps: 0.3}

	if b := buildBatch(ex, pb, c, 1, 0, nc, 1, 0, 1); b.Weight != nil {
		t.Fatalf("title weight 1 filled Weight")
	}
	b := buildBatch(ex, pb, c, 1, 0, nc, 1, 0, 5)
	hex := b.examples()
	want := map[int][]int{ // token indexes of [prefix; canvas] weighted 5, per row
		0: {len(prompt) + 1, len(prompt) + 2},
		1: {len(prompt) + 1, len(prompt) + 2, len(prompt) + c + 2},
	}
	for r, e := range hex {
		if len(e.Weight) != len(e.Prefix)+len(e.Canvas) {
			t.Fatalf("row %d: %d weights for %d tokens", r, len(e.Weight), len(e.Prefix)+len(e.Canvas))
		}
		var got []int
		for i, w := range e.Weight {
			switch w {
			case 5:
				got = append(got, i)
			case 1:
			default:
				t.Fatalf("row %d: weight %v at %d", r, w, i)
			}
		}
		if !slices.Equal(got, want[r]) {
			t.Errorf("row %d: weighted tokens %v, want %v", r, got, want[r])
		}
		for _, i := range got {
			if tok := append(append([]int32{}, e.Prefix...), e.Canvas...)[i]; int(tok) != answer[i-len(prompt)] {
				t.Errorf("row %d: weighted token %d is %d, not the answer's %d", r, i, tok, answer[i-len(prompt)])
			}
		}
	}

	// Explicit weights of 1 are the plain objective, bit for bit; weights of 2 double it.
	hs := freshHostState(t, cfg, 3)
	plain, _, err := hostgrad.Loss(hs.params, stripWeights(hex, 0), false)
	if err != nil {
		t.Fatal(err)
	}
	ones, _, _ := hostgrad.Loss(hs.params, stripWeights(hex, 1), false)
	twos, _, _ := hostgrad.Loss(hs.params, stripWeights(hex, 2), false)
	if ones != plain {
		t.Errorf("weights of 1 give %+v, the plain objective %+v", ones, plain)
	}
	if twos.Total != 2*plain.Total {
		t.Errorf("weights of 2 give %v, want twice %v", twos.Total, plain.Total)
	}
	weighted, _, _ := hostgrad.Loss(hs.params, hex, false)
	if weighted.Total <= plain.Total {
		t.Errorf("title weight 5 gives %v, not above the plain %v", weighted.Total, plain.Total)
	}

	opts := tinyOptions()
	opts.TitleWeight = 5
	var log bytes.Buffer
	data := synthData(16, cfg)
	data.Train[0].Copied = []int{0, 1}
	tr, err := NewTrainer(goBackend(t), cfg, data, opts, t.TempDir(), false, &log)
	if err != nil {
		t.Fatal(err)
	}
	for _, hb := range tr.evalSet {
		if hb.Weight != nil {
			t.Errorf("a held-out batch is weighted")
		}
	}
}

// stripWeights returns copies of ex with every token weight set to w (0: nil).
func stripWeights(ex []hostgrad.Example, w float32) []hostgrad.Example {
	out := slices.Clone(ex)
	for i := range out {
		out[i].Weight = nil
		if w != 0 {
			out[i].Weight = make([]float32, len(out[i].Prefix)+len(out[i].Canvas))
			for j := range out[i].Weight {
				out[i].Weight[j] = w
			}
		}
	}
	return out
}

// freshHostState is the host engine's state for freshly initialized parameters
// (seed) and a zero optimizer.
func freshHostState(tb testing.TB, cfg *config.Model, seed uint64) *hostState {
	tb.Helper()
	ctx := context.New()
	if err := initParams(ctx, cfg, seed); err != nil {
		tb.Fatal(err)
	}
	initOptimizer(ctx, trainableVars(ctx))
	hs, err := newHostState(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return hs
}

// TestHostLossNamesBadParameter: a parameter the recipe needs that is missing, or a
// Linear weight without its [out, in] shape, makes Loss return an error naming it,
// not panic.
func TestHostLossNamesBadParameter(t *testing.T) {
	cfg := config.Tiny()
	c := cfg.CanvasLength
	var answer []int
	for j := range c {
		answer = append(answer, 20+j)
	}
	ex := []Example{{Title: "t", Prompt: []int{2, 5, 6}, Answer: answer}}
	pb := plannedBatch{Bucket: 3 + c, Items: []item{{Example: 0, Canvas: 0}}}
	b := buildBatch(ex, pb, c, 1, 0, NoiseConfig{Vocab: cfg.Text.VocabSize, Eps: 0.3}, 1, 0, 1)
	for _, tc := range []struct {
		name  string
		spoil func(p *hostgrad.Params, name string)
	}{
		{"layers.1.mlp.up_proj.weight", func(p *hostgrad.Params, n string) { delete(p.Values, n) }},
		{"layers.0.self_attn.q_proj.weight", func(p *hostgrad.Params, n string) { delete(p.Dims, n) }},
	} {
		hs := freshHostState(t, cfg, 3)
		if _, _, err := hostgrad.Loss(hs.params, b.examples(), true); err != nil {
			t.Fatal(err)
		}
		tc.spoil(hs.params, tc.name)
		_, _, err := hostgrad.Loss(hs.params, b.examples(), true)
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s broken: error %v, want one naming it", tc.name, err)
		}
	}
}
