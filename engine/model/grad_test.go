package model

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// TestGradients differentiates a training-like loss (an encoder term plus a decoder term
// with self-conditioning from a first pass) with respect to every weight: all gradients
// must be finite and non-zero, and, with the graph in float64 and a smooth routing
// (k = E), directional derivatives must match central finite differences.
func TestGradients(t *testing.T) {
	t.Run("top2of16", func(t *testing.T) { checkGradients(t, 16, 2, false) })
	// With k = E the routing has no discrete switch, so the loss is smooth and finite
	// differences are meaningful.
	t.Run("top4of4/finite-differences", func(t *testing.T) { checkGradients(t, 4, 4, true) })
}

func checkGradients(t *testing.T, experts, topK int, finiteDiff bool) {
	cfg := tinyConfig()
	cfg.NumExperts, cfg.TopKExperts = experts, topK
	storage := dtypes.Float32
	if finiteDiff {
		storage = dtypes.Float64 // the whole graph then runs in float64: exact differences
	}
	w, _ := randomModel(t, cfg, 31, storage)
	ctx := newContext(t, w)
	backend := newBackend(t)
	var names []string
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	const B, T, C = 2, 6, 4
	rng := rand.New(rand.NewPCG(8, 8))
	tok := make([]int32, B*T)
	pos := make([]int32, B*T)
	valid := make([]bool, B*T)
	cv := make([]int32, B*C)
	cpos := make([]int32, B*C)
	for b := range B {
		for j := range T {
			tok[b*T+j], pos[b*T+j], valid[b*T+j] = int32(rng.IntN(cfg.VocabSize)), int32(j), j < T-b
		}
		for j := range C {
			cv[b*C+j], cpos[b*C+j] = int32(rng.IntN(cfg.VocabSize)), int32(T-b+j)
		}
	}
	lossFn := func(ctx *context.Context, tok, pos, valid, cv, cpos *Node) *Node {
		p := NewParams(ctx, tok.Graph(), cfg)
		h, kv := Encoder(p, tok, pos, valid)
		encLogits := Logits(p, h)
		// The trainer's no-grad first pass; finite differences need the true function.
		first := Logits(p, Decoder(p, cv, cpos, nil, kv, valid))
		soft := SoftEmbedding(p, first, Scalar(tok.Graph(), dtypes.Float32, 1))
		if !finiteDiff {
			soft = StopGradient(soft)
		}
		dec := Logits(p, Decoder(p, cv, cpos, soft, kv, valid))
		return Add(ReduceAllMean(LogSoftmax(encLogits, -1)), ReduceAllMean(LogSoftmax(dec, -1)))
	}
	args := []any{tensors.FromFlatDataAndDimensions(tok, B, T), tensors.FromFlatDataAndDimensions(pos, B, T),
		tensors.FromFlatDataAndDimensions(valid, B, T), tensors.FromFlatDataAndDimensions(cv, B, C),
		tensors.FromFlatDataAndDimensions(cpos, B, C)}
	gradExec, err := context.NewExec(backend, ctx, func(ctx *context.Context, tok, pos, valid, cv, cpos *Node) []*Node {
		loss := lossFn(ctx, tok, pos, valid, cv, cpos)
		vars := make([]*Node, len(names))
		for i, n := range names {
			vars[i] = ctx.In(Scope).GetVariable(n).ValueGraph(tok.Graph())
		}
		return append([]*Node{loss}, Gradient(loss, vars...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := gradExec.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	grads := map[string][]float64{}
	for i, n := range names {
		var g []float64
		if storage == dtypes.Float64 {
			g = tensors.MustCopyFlatData[float64](out[1+i])
		} else {
			g = toF64(tensors.MustCopyFlatData[float32](out[1+i]))
		}
		grads[n] = g
		norm := 0.0
		for _, v := range g {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("gradient of %s is not finite", n)
			}
			norm += float64(v) * float64(v)
		}
		if norm == 0 {
			t.Errorf("gradient of %s is zero", n)
		}
	}

	if !finiteDiff {
		return
	}
	// Central finite differences along random directions.
	lossExec, err := context.NewExec(backend, ctx, lossFn)
	if err != nil {
		t.Fatal(err)
	}
	lossNow := func() float64 {
		out, err := lossExec.Exec(args...)
		if err != nil {
			t.Fatal(err)
		}
		return tensors.ToScalar[float64](out[0])
	}
	for _, name := range []string{"layers.2.experts.down_proj", "layers.1.experts.gate_up_proj",
		"layers.0.router.proj.weight", "layers.2.router.per_expert_scale", "self_conditioning.up_proj.weight",
		"encoder.layers.1.layer_scalar", "layers.0.self_attn.k_proj.weight", "layers.1.self_attn.k_proj.weight",
		"embed_tokens.weight"} {
		v := ctx.In(Scope).GetVariable(name)
		base := tensors.MustCopyFlatData[float64](v.MustValue())
		dir := make([]float64, len(base))
		dot := 0.0
		for i := range dir {
			dir[i] = rng.NormFloat64()
			dot += float64(dir[i]) * float64(grads[name][i])
		}
		lossAt := func(h float64) float64 {
			moved := make([]float64, len(base))
			for i := range moved {
				moved[i] = base[i] + h*dir[i]
			}
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(moved, v.Shape().Dimensions...)); err != nil {
				t.Fatal(err)
			}
			return lossNow()
		}
		const h = 1e-5
		fd := (lossAt(h) - lossAt(-h)) / (2 * h)
		lossAt(0)
		t.Logf("%s: directional derivative autodiff %.6g, finite difference %.6g", name, dot, fd)
		if math.Abs(fd-dot) > 1e-5*math.Max(math.Abs(dot), 1) {
			t.Errorf("%s: autodiff %.6g vs finite difference %.6g", name, dot, fd)
		}
	}
}
