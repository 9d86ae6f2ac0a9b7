package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// withScratchBudget sets the dequantization scratch budget for one test.
func withScratchBudget(t testing.TB, b int64) {
	t.Helper()
	old := scratchBudget
	scratchBudget = b
	t.Cleanup(func() { scratchBudget = old })
}

// quantizeWeights replaces the embedding (int8) and the experts (int4 where the group
// divides the rows, else int8) by their quantized variables.
func quantizeWeights(t *testing.T, w map[string]*tensors.Tensor) {
	t.Helper()
	for name, tt := range w {
		target := name == "embed_tokens.weight" || strings.HasSuffix(name, "experts.gate_up_proj") ||
			strings.HasSuffix(name, "experts.down_proj")
		spec, ok := quant.Int4Profile.SpecFor(name, tt.Shape().Dimensions, target)
		if !ok {
			continue
		}
		qw, qs, err := quant.Quantize(tt, spec)
		if err != nil {
			t.Fatalf("quantize %s: %v", name, err)
		}
		delete(w, name)
		w[name+QWeightSuffix], w[name+QScaleSuffix] = qw, qs
	}
}

func maxAbsDiff(a, b []float32) (diff, scale float64) {
	for i := range a {
		diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
		scale = math.Max(scale, math.Abs(float64(b[i])))
	}
	return diff, scale
}

// TestChunkedHead: the LM head and the soft embedding over vocabulary chunks (even,
// uneven, one row) equal the one-chunk graph — the logits bit for bit, the soft
// embedding within float32 rounding of its chunked sum — for float32, BF16 and
// int8-quantized embeddings.
func TestChunkedHead(t *testing.T) {
	cfg := tinyConfig()
	v, d := cfg.VocabSize, cfg.HiddenSize
	rng := rand.New(rand.NewPCG(5, 6))
	hidden, _ := randMatrix(rng, 2*5, d)
	logitsIn, _ := randMatrix(rng, 2*5, v)
	for i := range logitsIn {
		logitsIn[i] *= 4
	}
	for _, storage := range []string{"float32", "bfloat16", "int8"} {
		t.Run(storage, func(t *testing.T) {
			dt := dtypes.Float32
			if storage == "bfloat16" {
				dt = dtypes.BFloat16
			}
			w, _ := randomModel(t, cfg, 3, dt)
			if storage == "int8" {
				quantizeWeights(t, w)
				if _, ok := w["embed_tokens.weight"+QWeightSuffix]; !ok {
					t.Fatal("embedding not quantized")
				}
			}
			ctx := newContext(t, w)
			rowsList := []int{v, 24, 40, 7, 1} // whole, 4 even chunks, uneven (40+40+16), 14 chunks, one row each
			exec, err := context.NewExec(newBackend(t), ctx, func(ctx *context.Context, h, l, temp *Node) []*Node {
				p := NewParams(ctx, h.Graph(), cfg)
				var out []*Node
				for _, rows := range rowsList {
					out = append(out, logitsChunked(p, h, rows), p.softEmbeddingChunked(l, temp, rows))
				}
				return out
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Exec(tensors.FromFlatDataAndDimensions(hidden, 2, 5, d),
				tensors.FromFlatDataAndDimensions(logitsIn, 2, 5, v), float32(0.7))
			if err != nil {
				t.Fatal(err)
			}
			wantLogits, wantSoft := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
			if len(wantLogits) != 2*5*v || len(wantSoft) != 2*5*d {
				t.Fatalf("shapes %v, %v", out[0].Shape(), out[1].Shape())
			}
			for i, rows := range rowsList[1:] {
				gotLogits, gotSoft := tensors.MustCopyFlatData[float32](out[2+2*i]), tensors.MustCopyFlatData[float32](out[3+2*i])
				ld, _ := maxAbsDiff(gotLogits, wantLogits)
				sd, ss := maxAbsDiff(gotSoft, wantSoft)
				t.Logf("rows %d: logits max |Δ| %.1e, soft max |Δ| %.1e (of %.2f)", rows, ld, sd, ss)
				if ld != 0 {
					t.Errorf("rows %d: chunked logits differ from the whole head by %.3e", rows, ld)
				}
				if sd > 1e-6*ss {
					t.Errorf("rows %d: chunked soft embedding differs by %.3e (relative %.2e > 1e-6)", rows, sd, sd/ss)
				}
			}
		})
	}
}

// TestHeadChunkRows: chunks follow the budget, cover the vocabulary and shrink the
// 26B head's float32 block 16-fold; a small table is one chunk.
func TestHeadChunkRows(t *testing.T) {
	if r := HeadChunkRows(262144, 2816); r != 16384 || int64(r)*2816*4 > DequantScratchBudget {
		t.Errorf("26B head chunk %d rows", r)
	}
	if r := HeadChunkRows(4096, 128); r != 4096 {
		t.Errorf("small head split into %d-row chunks", r)
	}
	if g := MoEGroupBlocks(704, 2816); g != 8 {
		t.Errorf("26B MoE group of %d blocks, want 8 (8 × 3 × 704 × 2816 × 4 B ≤ %d)", g, DequantScratchBudget)
	}
	if g := MoEGroupBlocks(1<<20, 1<<10); g != 1 {
		t.Errorf("a block over the budget: group %d, want 1", g)
	}
}

// TestMoEGroupedMatchesWhole: the grouped GEMM run in groups of 1 and 3 row blocks
// (budget forced down) gives the same output and row count as all blocks at once, and
// both match the per-token loop (TestMoEVsPerTokenLoop's check).
func TestMoEGroupedMatchesWhole(t *testing.T) {
	cfg := tinyConfig()
	for _, storage := range []string{"float32", "quantized"} {
		t.Run(storage, func(t *testing.T) {
			w, nm := randomModel(t, cfg, 21, dtypes.Float32)
			if storage == "quantized" {
				quantizeWeights(t, w)
				if _, ok := w["layers.0.experts.gate_up_proj"+QWeightSuffix]; !ok {
					t.Fatal("experts not quantized")
				}
			}
			ctx := newContext(t, w)
			rng := rand.New(rand.NewPCG(8, 8))
			const tt = 40
			xf, xm := randMatrix(rng, tt, cfg.HiddenSize)
			rf, rm := randMatrix(rng, tt, cfg.HiddenSize)
			whole, usedWhole := runMoE(t, ctx, 4, tt, xf, rf)
			perBlock := int64(3 * cfg.MoEIntermediateSize * cfg.HiddenSize * 4)
			for _, group := range []int64{1, 3} {
				t.Run(fmt.Sprintf("group=%d", group), func(t *testing.T) {
					withScratchBudget(t, group*perBlock)
					if g := MoEGroupBlocks(cfg.MoEIntermediateSize, cfg.HiddenSize); int64(g) != group {
						t.Fatalf("MoEGroupBlocks %d, want %d", g, group)
					}
					got, used := runMoE(t, ctx, 4, tt, xf, rf)
					if used != usedWhole {
						t.Errorf("rows used %d, whole %d", used, usedWhole)
					}
					diff, scale := maxAbsDiff(got, whole)
					if diff > 1e-6*scale {
						t.Errorf("grouped output differs from the whole GEMM by %.3e (of %.2f)", diff, scale)
					}
					if storage == "float32" {
						var want []float64
						for i := range tt {
							want = append(want, nm.MoE(0, xm[i], rm[i])...)
						}
						if e := relErr(got, want); e > 1e-5 {
							t.Errorf("max relative error %.3e vs the per-token loop", e)
						}
					}
				})
			}
		})
	}
}

// TestRunnerVsNaiveChunked is TestRunnerVsNaive's graph mode (prompt in pieces, decoder
// steps with self-conditioning, commits, a growing cache) with the budget forced down
// so the tiny model's head runs in 4 vocabulary chunks and its MoE one row block at a
// time, against the float64 reference.
func TestRunnerVsNaiveChunked(t *testing.T) {
	cfg := tinyConfig()
	withScratchBudget(t, int64(cfg.VocabSize*cfg.HiddenSize*4/4))
	if r := HeadChunkRows(cfg.VocabSize, cfg.HiddenSize); r != cfg.VocabSize/4 {
		t.Fatalf("head chunk %d rows, want %d", r, cfg.VocabSize/4)
	}
	if g := MoEGroupBlocks(cfg.MoEIntermediateSize, cfg.HiddenSize); g != 1 {
		t.Fatalf("MoE group %d blocks, want 1", g)
	}
	testRunnerVsNaive(t, "graph")
}

// graphVariables creates cfg's weights as shape-only variables, stored as profile p
// stores them (no values: graphs are built, not run).
func graphVariables(cfg *config.Model, p quant.Profile) *context.Context {
	ctx := context.New()
	scope := ctx.In(Scope).Checked(false)
	for _, s := range weights.Specs(cfg) {
		spec, q := p.SpecFor(s.Name, s.Shape, s.Quantizable)
		if !q {
			scope.VariableWithShape(s.Name, shapes.Make(dtypes.BFloat16, s.Shape...))
			continue
		}
		wShape, sShape := spec.Shapes(s.Shape)
		scope.VariableWithShape(s.Name+QWeightSuffix, shapes.Make(spec.DType(), wShape...))
		scope.VariableWithShape(s.Name+QScaleSuffix, shapes.Make(dtypes.Float32, sShape...))
	}
	return ctx
}

// nodeStats is the largest intermediate node of a graph (parameters, constants and
// reshaped views of them excluded), overall and among the nodes that are not shaped like the logits (last
// axis the vocabulary: the step's output and its softmax).
type nodeStats struct {
	largest, largestNonLogits, largestExpert int64
	what, whatNonLogits, whatExpert          string
}

// graphNodeStats measures g's nodes; expert-shaped nodes are those with an axis of
// the experts' intermediate size moeF (the gathered expert weights).
func graphNodeStats(g *Graph, vocab, moeF int) nodeStats {
	var s nodeStats
	stored := map[*Node]bool{} // parameters, constants and reshaped views of them (no copy)
	for _, n := range g.Nodes() {
		switch {
		case n.Type() == NodeTypeParameter || n.Type() == NodeTypeConstant:
			stored[n] = true
		case n.Type() == NodeTypeReshape && stored[n.Inputs()[0]]:
			stored[n] = true
		}
		if stored[n] {
			continue
		}
		sh := n.Shape()
		b := int64(sh.Memory())
		desc := fmt.Sprintf("%s %s", n.Type(), sh)
		if b > s.largest {
			s.largest, s.what = b, desc
		}
		if b > s.largestExpert && slices.Contains(sh.Dimensions, moeF) {
			s.largestExpert, s.whatExpert = b, desc
		}
		if sh.Rank() > 0 && sh.Dimensions[sh.Rank()-1] == vocab {
			continue
		}
		if b > s.largestNonLogits {
			s.largestNonLogits, s.whatNonLogits = b, desc
		}
	}
	return s
}

// config26B is the 26B-A4B text config (as models/catalog has it) with
// its first `layers` layers, the last one full attention.
func config26B(layers int) *config.Text {
	t := &config.Text{
		VocabSize: 262144, HiddenSize: 2816, IntermediateSize: 2112, MoEIntermediateSize: 704,
		NumExperts: 128, TopKExperts: 8, NumHiddenLayers: layers,
		NumAttentionHeads: 16, NumKeyValueHeads: 8, NumGlobalKVHeads: 2, HeadDim: 256, GlobalHeadDim: 512,
		SlidingWindow: 1024, MaxPositionEmbeddings: 262144, RMSNormEps: 1e-6, HiddenActivation: "gelu_pytorch_tanh",
		FinalLogitSoftcapping: 30, EOSTokenID: 1, BOSTokenID: 2, DType: "bfloat16",
	}
	for i := range layers {
		lt := config.SlidingAttention
		if i%6 == 5 || i == layers-1 {
			lt = config.FullAttention
		}
		t.LayerTypes = append(t.LayerTypes, lt)
	}
	t.RopeParameters.Sliding = config.Rope{Type: "default", Theta: 1e4}
	t.RopeParameters.Full = config.Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}
	return t
}

// TestDecoderStepScratch measures the decoder-step graph itself (Runner.decodeGraph:
// decoder, LM head, soft embedding) on the 26B model's own dimensions with two layers
// (one sliding, one full), int4-profile storage, canvas 256 after a 4096-slot cache:
// graph building only, nothing runs. No intermediate node other than the logits-shaped
// ones may exceed the dequantization budget — the whole float32 embedding (2.95 GB) or
// the MoE's gathered experts (2.03 GB per projection) did — and the logits-shaped ones
// stay at canvas × vocab.
func TestDecoderStepScratch(t *testing.T) {
	m := &config.Model{DType: "bfloat16", CanvasLength: 256, Text: *config26B(2)}
	cfg := &m.Text
	if err := CheckConfig(cfg); err != nil {
		t.Fatal(err)
	}
	ctx := graphVariables(m, quant.Int4Profile)
	s, logitsBytes := decoderStepStats(t, ctx, cfg)
	t.Logf("chunked: largest %s (%.1f MB); largest not logits-shaped %s (%.1f MB); largest expert-shaped %s (%.1f MB); logits %.1f MB; budget %.1f MB",
		s.what, float64(s.largest)/1e6, s.whatNonLogits, float64(s.largestNonLogits)/1e6,
		s.whatExpert, float64(s.largestExpert)/1e6, float64(logitsBytes)/1e6, float64(DequantScratchBudget)/1e6)
	if s.largestNonLogits > DequantScratchBudget {
		t.Errorf("largest intermediate %s is %.1f MB, over the %.1f MB dequantization budget",
			s.whatNonLogits, float64(s.largestNonLogits)/1e6, float64(DequantScratchBudget)/1e6)
	}
	if s.largest > logitsBytes {
		t.Errorf("largest intermediate %s is %.1f MB, over the logits' %.1f MB", s.what, float64(s.largest)/1e6,
			float64(logitsBytes)/1e6)
	}
	if hc := HeadChunkScratchBytes(cfg.VocabSize, cfg.HiddenSize); hc > DequantScratchBudget || hc < DequantScratchBudget/4 {
		t.Errorf("head chunk %d bytes: not a budget-sized block", hc)
	}

	// The same measure on the unchunked graph (the budget lifted: one chunk, one
	// group — the graph as built before chunking) must fail, or it measures nothing.
	withScratchBudget(t, 1<<62)
	old, _ := decoderStepStats(t, ctx, cfg)
	t.Logf("unchunked: largest %s (%.1f MB); largest not logits-shaped %s (%.1f MB); largest expert-shaped %s (%.1f MB)",
		old.what, float64(old.largest)/1e6, old.whatNonLogits, float64(old.largestNonLogits)/1e6,
		old.whatExpert, float64(old.largestExpert)/1e6)
	if old.largestNonLogits <= DequantScratchBudget || old.largestExpert <= DequantScratchBudget {
		t.Errorf("unchunked graph's largest intermediates (%.1f MB, experts %.1f MB) are within the budget: the measure cannot fail",
			float64(old.largestNonLogits)/1e6, float64(old.largestExpert)/1e6)
	}
}

// decoderStepStats builds Runner.decodeGraph (canvas 256 after a 4096-slot cache) for
// cfg's shape-only weights in ctx and measures its nodes; it also returns the logits'
// bytes.
func decoderStepStats(t *testing.T, ctx *context.Context, cfg *config.Text) (nodeStats, int64) {
	t.Helper()
	const canvas, capacity = 256, 4096
	g := NewGraph(newBackend(t), "decoder-step")
	in := []*Node{
		Parameter(g, "canvas", shapes.Make(dtypes.Int32, 1, canvas)),
		Parameter(g, "soft", shapes.Make(dtypes.Float32, 1, canvas, cfg.HiddenSize)),
		Parameter(g, "temperature", shapes.Make(dtypes.Float32)),
		Parameter(g, "length", shapes.Make(dtypes.Int32)),
	}
	for j, s := range CacheShapes(cfg, capacity, dtypes.Float32) { // the runner's cache layout
		in = append(in, Parameter(g, fmt.Sprintf("cache%d", j), s))
	}
	r := &Runner{cfg: cfg}
	var out []*Node
	if err := try("build decoder step", func() { out = r.decodeGraph(ctx, in) }); err != nil {
		t.Fatal(err)
	}
	defer g.Finalize()
	return graphNodeStats(g, cfg.VocabSize, cfg.MoEIntermediateSize), int64(out[0].Shape().Memory())
}

// BenchmarkDecoderStepChunked: BenchmarkDecoderStep's graph mode with the budget
// forced down to 1/16 of benchConfig's embedding, so the graph takes the 26B's chunk
// counts (16 vocabulary chunks, 32 MoE groups of one block) — the cost of chunking on
// the go backend (compare with BenchmarkDecoderStep/graph, which is one chunk).
func BenchmarkDecoderStepChunked(b *testing.B) {
	cfg := benchConfig()
	withScratchBudget(b, int64(cfg.VocabSize*cfg.HiddenSize*4/16))
	if r := HeadChunkRows(cfg.VocabSize, cfg.HiddenSize); r != cfg.VocabSize/16 {
		b.Fatalf("head chunk %d rows", r)
	}
	benchDecoderStep(b, "graph")
}
