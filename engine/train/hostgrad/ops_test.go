package hostgrad

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/model"
)

// Each op's backward pass against central finite differences of a random linear
// functional of its output (L = Σ r·y), in float32: an independent check of every
// closure, next to engine/train's comparison of the whole objective with GoMLX.

func randT(rng *rand.Rand, n int, scale float64) *T {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return &T{V: v}
}

// checkGrad builds the op with fresh copies of the inputs via build (which returns
// the output and, for loss ops, the loss), runs the backward pass seeded with r (or
// the loss's own seed), and compares every input's gradient with finite differences.
func checkGrad(t *testing.T, name string, inputs []*T, build func(tp *Tape, in []*T) (*T, float64)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	var r []float32
	loss := func(in []*T) float64 {
		out, l := build(nil, in)
		if out == nil {
			return l
		}
		if r == nil {
			r = make([]float32, len(out.V))
			for i := range r {
				r[i] = float32(rng.NormFloat64())
			}
		}
		s := l
		for i, v := range out.V {
			s += float64(r[i]) * float64(v)
		}
		return s
	}
	loss(inputs) // draws r
	tp := &Tape{}
	fresh := make([]*T, len(inputs))
	for i, x := range inputs {
		fresh[i] = &T{V: append([]float32(nil), x.V...)}
	}
	out, _ := build(tp, fresh)
	if out != nil {
		out.G = append([]float32(nil), r...)
	}
	tp.Backward()
	for k, x := range inputs {
		var worst, scale float64
		for i := range x.V {
			old := x.V[i]
			const h = 1e-2
			x.V[i] = old + h
			lp := loss(inputs)
			x.V[i] = old - h
			lm := loss(inputs)
			x.V[i] = old
			fd := (lp - lm) / (2 * h)
			var g float64
			if fresh[k].G != nil {
				g = float64(fresh[k].G[i])
			}
			worst = math.Max(worst, math.Abs(fd-g))
			scale = math.Max(scale, math.Abs(fd))
		}
		if worst > 2e-2*math.Max(scale, 1e-3) {
			t.Errorf("%s: input %d: gradient off by %.3g (largest %.3g)", name, k, worst, scale)
		}
	}
}

func TestOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 5, 4, 6
	checkGrad(t, "MatNT", []*T{randT(rng, m*k, 1), randT(rng, n*k, 1)}, func(tp *Tape, in []*T) (*T, float64) {
		return tp.MatNT(in[0], in[1], m, n, k), 0
	})
	checkGrad(t, "RMS", []*T{randT(rng, 3*8, 1), randT(rng, 8, 1)}, func(tp *Tape, in []*T) (*T, float64) {
		return tp.RMS(in[0], 8, in[1], 1e-6), 0
	})
	checkGrad(t, "GeGLU", []*T{randT(rng, 12, 1.5), randT(rng, 12, 1)}, func(tp *Tape, in []*T) (*T, float64) {
		return tp.GeGLU(in[0], in[1]), 0
	})
	checkGrad(t, "GeGLUSplit", []*T{randT(rng, 3*2*4, 1.5)}, func(tp *Tape, in []*T) (*T, float64) {
		return tp.GeGLUSplit(in[0], 3, 4), 0
	})
	cos, sin := model.RopeTables(3, 4, []float32{1, 0.1, 0})
	checkGrad(t, "RoPE", []*T{randT(rng, 4*2*6, 1)}, func(tp *Tape, in []*T) (*T, float64) {
		return tp.RoPE(in[0], 4, 2, 6, cos, sin), 0
	})
	checkGrad(t, "Concat+Slice", []*T{randT(rng, 6, 1), randT(rng, 4, 1)}, func(tp *Tape, in []*T) (*T, float64) {
		return tp.Slice(tp.Concat(in[0], in[1]), 2, 9), 0
	})
	table := randT(rng, 5*3, 1)
	checkGrad(t, "Embed", []*T{table}, func(tp *Tape, in []*T) (*T, float64) {
		return tp.Embed(in[0], []int32{4, 1, 4}, 3, 1.7), 0
	})
	// Grouped attention: 4 query heads on 2 KV heads, 3 queries, 2 prefix keys + 3
	// own keys; query i sees a window of three keys, i … i+2 (the last its own).
	const c, s, nh, kvh, hd = 3, 5, 4, 2, 4
	causal := func(i int) (lo, hi int) { return i, i + 3 }
	checkGrad(t, "Attention", []*T{randT(rng, c*nh*hd, 0.7), randT(rng, s*kvh*hd, 0.7), randT(rng, s*kvh*hd, 1)},
		func(tp *Tape, in []*T) (*T, float64) {
			return tp.Attention(in[0], in[1], in[2], c, s, nh, kvh, hd, causal), 0
		})
	// Router + experts' combination: weights from logits and per-expert scales, applied
	// to per-expert rows.
	const tok, e, topk, d = 4, 5, 2, 3
	checkGrad(t, "Route+Combine", []*T{randT(rng, tok*e, 1), randT(rng, e, 1), randT(rng, tok*topk*d, 1)},
		func(tp *Tape, in []*T) (*T, float64) {
			idx, w := tp.Route(in[0], in[1], tok, e, topk)
			rows, slots := make([][]int, e), make([][]int, e)
			for t, sel := range idx {
				for s, ex := range sel {
					rows[ex], slots[ex] = append(rows[ex], t), append(slots[ex], s)
				}
			}
			// Each expert's output rows are slices of the third input (one row per routed token).
			ys := make([]*T, e)
			next := 0
			for ex := range e {
				if len(rows[ex]) > 0 {
					ys[ex] = tp.Slice(in[2], next*d, (next+len(rows[ex]))*d)
					next += len(rows[ex])
				}
			}
			return tp.Combine(ys, rows, slots, w, tok, d, topk), 0
		})
	targets := []int32{2, 0, 5}
	checkGrad(t, "CrossEntropy", []*T{randT(rng, 3*4, 1), randT(rng, 7*4, 1)}, func(tp *Tape, in []*T) (*T, float64) {
		return nil, tp.CrossEntropy(in[0], in[1], 3, 4, 7, 3, targets, 0.5, nil)
	})
	checkGrad(t, "CrossEntropy row weights", []*T{randT(rng, 3*4, 1), randT(rng, 7*4, 1)}, func(tp *Tape, in []*T) (*T, float64) {
		return nil, tp.CrossEntropy(in[0], in[1], 3, 4, 7, 3, targets, 0.5, []float32{1, 4, 0.25})
	})
}
