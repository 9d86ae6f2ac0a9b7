package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/model/naive"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

func randMatrix(rng *rand.Rand, rows, cols int) ([]float32, [][]float64) {
	f := make([]float32, rows*cols)
	m := make([][]float64, rows)
	for i := range rows {
		m[i] = make([]float64, cols)
		for j := range cols {
			f[i*cols+j] = float32(rng.NormFloat64())
			m[i][j] = float64(f[i*cols+j])
		}
	}
	return f, m
}

// runMoE runs layer 0's MoE on x (experts input) and r (router input) and returns the
// output [T·D] and the rows the grouped GEMM used.
func runMoE(t *testing.T, ctx *context.Context, cfgBlock int, tt int, x, r []float32) ([]float32, int) {
	t.Helper()
	cfg := tinyConfig()
	cfg.NumExperts = ctx.In(Scope).GetVariable("layers.0.router.per_expert_scale").Shape().Dimensions[0]
	exec, err := context.NewExec(newBackend(t), ctx, func(ctx *context.Context, x, r *Node) []*Node {
		p := NewParams(ctx, x.Graph(), cfg)
		p.MoEBlock = cfgBlock
		out := p.MoE(0, x, r)
		return []*Node{out, p.MoERows[0]}
	})
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.HiddenSize
	out, err := exec.Exec(tensors.FromFlatDataAndDimensions(x, tt, d), tensors.FromFlatDataAndDimensions(r, tt, d))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[0]), int(tensors.ToScalar[int32](out[1]))
}

// TestMoEVsPerTokenLoop: the sparse grouped MoE equals the per-token loop for several
// token counts (one chunk of ranks and several) and block sizes (1: no padding; 64:
// mostly padding; 0: the default).
func TestMoEVsPerTokenLoop(t *testing.T) {
	cfg := tinyConfig()
	w, nm := randomModel(t, cfg, 21, dtypes.Float32)
	ctx := newContext(t, w)
	rng := rand.New(rand.NewPCG(9, 9))
	t.Run("all tokens on two experts", func(t *testing.T) {
		// A zero router gives uniform probabilities: every token picks experts 0 and 1
		// (ties go to the lower index), so two groups span many blocks.
		w2, nm2 := randomModel(t, cfg, 21, dtypes.Float32)
		name := "layers.0.router.proj.weight"
		w2[name] = tensors.FromShape(w2[name].Shape())
		nm2.W[name] = naive.Tensor{Shape: nm2.W[name].Shape, Data: make([]float64, len(nm2.W[name].Data))}
		const tt = 150
		xf, xm := randMatrix(rng, tt, cfg.HiddenSize)
		rf, rm := randMatrix(rng, tt, cfg.HiddenSize)
		got, used := runMoE(t, newContext(t, w2), 4, tt, xf, rf)
		var want []float64
		for i := range tt {
			want = append(want, nm2.MoE(0, xm[i], rm[i])...)
		}
		if e := relErr(got, want); e > 1e-5 {
			t.Errorf("max relative error %.3e vs the per-token loop", e)
		}
		if used != 2*152 { // two groups of 150 rows, each padded to a multiple of 4
			t.Errorf("rows used %d, want %d", used, 2*152)
		}
	})
	for _, tt := range []int{1, 3, 100} {
		for _, block := range []int{0, 1, 4, 64} {
			t.Run(fmt.Sprintf("T=%d/block=%d", tt, block), func(t *testing.T) {
				xf, xm := randMatrix(rng, tt, cfg.HiddenSize)
				rf, rm := randMatrix(rng, tt, cfg.HiddenSize)
				got, used := runMoE(t, ctx, block, tt, xf, rf)
				var want []float64
				for i := range tt {
					want = append(want, nm.MoE(0, xm[i], rm[i])...)
				}
				if e := relErr(got, want); e > 1e-5 {
					t.Errorf("max relative error %.3e vs the per-token loop", e)
				}
				n := tt * cfg.TopKExperts
				bk := block
				if bk == 0 {
					bk = MoEBlockSize(n, cfg.NumExperts)
				}
				if capRows := MoECapacityBlocks(n, cfg.NumExperts, bk) * bk; used < n || used > capRows || used%bk != 0 {
					t.Errorf("rows used %d: want a multiple of %d in [%d, %d]", used, bk, n, capRows)
				}
			})
		}
	}
}

// TestMoERowsProcessed: the rows the grouped GEMM computes grow with the routed tokens
// and not with the number of experts (16 vs 64 experts at the same T·k), unlike a dense
// all-experts MoE (T·E rows).
func TestMoERowsProcessed(t *testing.T) {
	rows := func(tokens, experts int) int {
		n := tokens * 2
		bk := MoEBlockSize(n, experts)
		return MoECapacityBlocks(n, experts, bk) * bk
	}
	for _, tc := range []struct{ tokens, experts int }{{128, 16}, {128, 64}, {256, 16}, {256, 64}, {256, 128}} {
		t.Logf("T=%d k=2 E=%d: %d rows computed (dense: %d)", tc.tokens, tc.experts, rows(tc.tokens, tc.experts), tc.tokens*tc.experts)
	}
	if r16, r64 := rows(128, 16), rows(128, 64); r64 > r16*5/4 {
		t.Errorf("E=64 computes %d rows vs %d at E=16 for the same routed tokens", r64, r16)
	}
	if r1, r2 := rows(128, 64), rows(256, 64); r2 < r1*3/2 || r2 > r1*5/2 {
		t.Errorf("doubling the tokens took rows from %d to %d, want about double", r1, r2)
	}
	if r := rows(256, 64); r > 2*256*2+64 {
		t.Errorf("%d rows for 512 assignments: padding overhead too large", r)
	}

	// The graph's own count of used rows, on a real routing: E=16 vs E=64.
	rng := rand.New(rand.NewPCG(2, 2))
	const tt = 128
	used := map[int]int{}
	for _, e := range []int{16, 64} {
		cfg := tinyConfig()
		cfg.NumExperts = e
		w, _ := randomModel(t, cfg, 5, dtypes.Float32)
		xf, _ := randMatrix(rng, tt, cfg.HiddenSize)
		rf, _ := randMatrix(rng, tt, cfg.HiddenSize)
		_, used[e] = runMoE(t, newContext(t, w), 0, tt, xf, rf)
		t.Logf("E=%d: %d rows used of %d computed for %d assignments", e, used[e], rows(tt, e), tt*2)
		if used[e] < tt*2 || used[e] > rows(tt, e) {
			t.Errorf("E=%d: %d rows used, want within [%d, %d]", e, used[e], tt*2, rows(tt, e))
		}
	}
}
