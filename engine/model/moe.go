package model

import (
	"fmt"
	"math/bits"

	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// The mixture of experts is exact (no token is ever dropped) and sparse (the work is
// proportional to the routed tokens, not to the number of experts), with static shapes:
//
//  1. The router picks k experts per token: N = T·k assignments (token, expert, weight).
//  2. Each assignment gets its rank among the assignments of the same expert (an
//     order-preserving counting sort, computed with one-hot counts; see expertRanks).
//  3. Each expert's group is padded to a multiple of the row block Bk, and the groups
//     are laid out one after another in a buffer of capacity NB·Bk rows, with
//     NB = ceil(N/Bk) + min(E, N) (MoECapacityBlocks): Σ_e ceil(n_e/Bk) never exceeds it.
//  4. Token rows are scattered into the buffer; every row block belongs to one expert,
//     so ONE expert's weights are gathered per block and the blocks run as one batched
//     matmul (a grouped GEMM): [NB, Bk, D] × [NB, 2F, D] → [NB, Bk, 2F] → … → [NB, Bk, D].
//     When the blocks' float32 weights would exceed DequantScratchBudget (the 26B model:
//     256 blocks × 3 × 704 × 2816 × 4 B = 6.1 GB at canvas 256, top-8), the blocks run
//     in groups of MoEGroupBlocks, one group's weights converted at a time (chunk.go).
//  5. Results are gathered back per assignment, weighted, and summed over the k picks.
//
// Everything is built from Gather/Scatter/DotGeneral, which have gradients, so the
// trainer back-propagates through it (into the routing weights and the experts; the
// discrete choices carry no gradient, as in every top-k router).

// MoEBlockSize is the default expert row block for N routed assignments over E experts:
// the power of two nearest above the mean group size N/E, clamped to [1, 64]. Small
// blocks waste little padding; large blocks gather fewer weight blocks.
func MoEBlockSize(assignments, experts int) int {
	if assignments <= 0 || experts <= 0 {
		return 1
	}
	mean := (assignments + experts - 1) / experts
	b := 1
	if mean > 1 {
		b = 1 << bits.Len(uint(mean-1))
	}
	return min(b, 64)
}

// MoECapacityBlocks is the number of row blocks the grouped GEMM computes for N routed
// assignments over E experts with block size Bk: ceil(N/Bk) + min(E, N). The rows
// processed are this times Bk: about 2N with the default block size, whatever E is.
func MoECapacityBlocks(assignments, experts, block int) int {
	return (assignments+block-1)/block + min(experts, assignments)
}

// routeLogits is the router of layer i after its projection (arch.MoE computes the
// logits from the raw residual r: RMSNorm_noscale(r)·scale·D^-½·projᵀ):
//
//	p = softmax(logits) over ALL experts (float32)
//	top-k of p (ties go to the lower expert index), renormalised to sum 1,
//	then multiplied by per_expert_scale[idx].
//
// logits: [N, E] → idx: [N, k] Int32, weights: [N, k] Float32
func (p *Params) routeLogits(layer int, logits *Node) (idx, weights *Node) {
	cfg := p.Cfg
	pre := layerPrefix(layer) + "router."
	g := logits.Graph()
	e, k := cfg.NumExperts, cfg.TopKExperts
	probs := Softmax(logits, -1) // [N, E]

	// Iterated ArgMax top-k on a gradient-free copy; the weights are read from probs
	// through a one-hot so they stay differentiable.
	sel := StopGradient(probs)
	idxs := make([]*Node, k)
	ws := make([]*Node, k)
	for j := range k {
		ij := ArgMax(sel, -1, dtypes.Int32) // [N]
		hot := OneHot(ij, e, probs.DType())
		ws[j] = ReduceSum(Mul(probs, StopGradient(hot)), -1)
		idxs[j] = ij
		sel = Where(ConvertDType(hot, dtypes.Bool), Scalar(g, probs.DType(), -1), sel)
	}
	idx = Stack(idxs, -1)   // [N, k]
	weights = Stack(ws, -1) // [N, k]
	weights = Div(weights, ReduceAndKeep(weights, ReduceSum, -1))
	n := idx.Shape().Dimensions[0]
	scale := Gather(Reshape(p.Get(pre+"per_expert_scale"), e, 1), Reshape(idx, n, k, 1)) // [N, k, 1]
	return idx, Mul(weights, Reshape(scale, n, k))
}

// MoE is the layer's expert block, arch.MoE over graphOps: route on the residual r,
// run the experts on x (the pre_feedforward_layernorm_2 output), combine. It also
// records the rows the grouped GEMM actually used in p.MoERows.
//
// x, r: [..., D] → [..., D]
func (p *Params) MoE(layer int, x, r *Node) *Node {
	return arch.MoE(&graphOps{p: p}, p.Cfg, layer, x, r)
}

// Experts runs the routed experts exactly and sparsely (see the file comment). Expert e
// computes down_e(gelu_tanh(gate) · up) with [gate | up] = x · gate_up_proj[e]ᵀ (gate
// is the first F rows).
//
// x: [T, D], idx: [T, k] Int32, weights: [T, k] → out: [T, D], rowsUsed: scalar Int32
// (the padded rows holding real assignments; the graph computes NB·Bk rows in all).
func (p *Params) Experts(layer int, x, idx, weights *Node) (out, rowsUsed *Node) {
	cfg := p.Cfg
	g := x.Graph()
	pre := layerPrefix(layer) + "experts."
	t, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	k, e := idx.Shape().Dimensions[1], cfg.NumExperts
	n := t * k
	bk := p.MoEBlock
	if bk <= 0 {
		bk = MoEBlockSize(n, e)
	}
	nb := MoECapacityBlocks(n, e, bk)
	rows := nb * bk

	ex := StopGradient(Reshape(idx, n)) // expert of each assignment, token-major
	layout := expertLayout(ex, e, bk, nb)

	tok := Reshape(Iota(g, shapes.Make(dtypes.Int32, t, k), 0), n, 1)
	xa := Gather(x, tok)                                                          // [N, D]
	buf := Scatter(layout.dest, xa, shapes.Make(x.DType(), rows, d), false, true) // [R, D]
	xb := Reshape(buf, nb, bk, d)

	yb := p.expertBlocks(pre, xb, layout.blockExpert, MoEGroupBlocks(cfg.MoEIntermediateSize, d)) // [NB, Bk, D]

	ya := Gather(Reshape(yb, rows, d), layout.dest) // [N, D]
	ya = Mul(ya, Reshape(weights, n, 1))            // routing weights
	out = ReduceSum(Reshape(ya, t, k, d), 1)        // [T, D]
	return out, layout.rowsUsed
}

// expertBlocks is the grouped GEMM itself: row block b of xb goes through expert
// blockExpert[b]. The blocks run in groups of group blocks (all at once when they fit):
// per group, the experts' weights are gathered and converted to float32 for the group's
// blocks only, after the previous group's output exists (see after in chunk.go), and
// the groups' outputs are concatenated.
//
// xb: [NB, Bk, D], blockExpert: [NB, 1] Int32 → [NB, Bk, D]
func (p *Params) expertBlocks(pre string, xb, blockExpert *Node, group int) *Node {
	nb := xb.Shape().Dimensions[0]
	if group >= nb {
		return p.expertGroup(pre, xb, blockExpert)
	}
	g := xb.Graph()
	var parts []*Node
	prev := xb // group 0's weights are converted only once the rows exist
	for start := 0; start < nb; start += group {
		n := min(group, nb-start)
		sel := rowRange(g, start, n)
		// Gather (not Slice, whose gradient needs Pad) the group's rows and owners.
		xg := Gather(xb, sel)                                      // [G, Bk, D]
		eg := Reshape(after(Gather(blockExpert, sel), prev), n, 1) // [G, 1]
		prev = p.expertGroup(pre, xg, eg)                          // [G, Bk, D]
		parts = append(parts, prev)
	}
	return Concatenate(parts, 0)
}

// expertGroup runs row blocks through their experts: expert e computes
// down_e(gelu_tanh(gate) · up) with [gate | up] = x · gate_up_proj[e]ᵀ.
//
// xb: [G, Bk, D], blockExpert: [G, 1] Int32 → [G, Bk, D]
func (p *Params) expertGroup(pre string, xb, blockExpert *Node) *Node {
	// gate_up_proj [E, 2F, D] viewed as [2E, F, D]: row 2e is expert e's gate, 2e+1 its
	// up projection, so each is a plain row gather (no Slice, whose gradient needs Pad).
	gateIdx := MulScalar(blockExpert, 2)
	wg := p.MatrixRows(pre+"gate_up_proj", 2, gateIdx)                // [G, F, D]
	wu := p.MatrixRows(pre+"gate_up_proj", 2, AddScalar(gateIdx, 1))  // [G, F, D]
	gate := WeightDot(xb, []int{2}, []int{0}, wg, []int{2}, []int{0}) // [G, Bk, F]
	up := WeightDot(xb, []int{2}, []int{0}, wu, []int{2}, []int{0})   // [G, Bk, F]
	hm := Mul(GeluTanh(gate), up)                                     // [G, Bk, F]
	wd := p.MatrixRows(pre+"down_proj", 1, blockExpert)               // [G, D, F]
	return WeightDot(hm, []int{2}, []int{0}, wd, []int{2}, []int{0})  // [G, Bk, D]
}

// groupLayout places N assignments into the expert-grouped row buffer.
type groupLayout struct {
	dest        *Node // [N, 1] Int32: buffer row of each assignment (unique)
	blockExpert *Node // [NB, 1] Int32: expert owning each row block (unused blocks: E−1)
	rowsUsed    *Node // scalar Int32: Σ_e ceil(n_e/Bk)·Bk
}

// expertLayout computes the grouped layout of assignments ex: [N] Int32 (values in
// [0, E)): group e starts at off_e = Σ_{e'<e} ceil(n_e'/Bk)·Bk and assignment a goes
// to off_{ex[a]} + rank_a, rank_a being its order among its expert's assignments.
func expertLayout(ex *Node, e, bk, nb int) groupLayout {
	g := ex.Graph()
	n := ex.Shape().Dimensions[0]
	i32 := dtypes.Int32
	counts := ReduceSum(OneHot(ex, e, i32), 0)                                          // [E]
	padded := Mul(Div(AddScalar(counts, bk-1), Scalar(g, i32, bk)), Scalar(g, i32, bk)) // [E]
	// Inclusive prefix sum over the (few) experts: ends[e] = Σ_{e' ≤ e} padded[e'].
	le := LessOrEqual(Iota(g, shapes.Make(i32, e, e), 1), Iota(g, shapes.Make(i32, e, e), 0)) // [e, e'] e' ≤ e
	ends := ReduceSum(Where(le, BroadcastToDims(Reshape(padded, 1, e), e, e), ScalarZero(g, i32)), 1)
	offs := Sub(ends, padded)
	rank := expertRanks(ex, e)
	dest := Add(Reshape(Gather(Reshape(offs, e, 1), Reshape(ex, n, 1)), n), rank) // [N]
	// Block b (rows [b·Bk, (b+1)·Bk)) belongs to the expert e with off_e ≤ b·Bk < end_e,
	// i.e. the number of groups ending at or before b·Bk.
	starts := MulScalar(Iota(g, shapes.Make(i32, nb, 1), 0), bk)
	owner := ReduceSum(ConvertDType(LessOrEqual(Reshape(ends, 1, e), starts), i32), 1) // [NB]
	owner = MinScalar(owner, e-1)
	return groupLayout{
		dest:        Reshape(dest, n, 1),
		blockExpert: Reshape(owner, nb, 1),
		rowsUsed:    Reshape(Slice(ends, AxisElem(e-1))),
	}
}

// rankChunk bounds the pairwise comparisons expertRanks makes.
const rankChunk = 128

// expertRanks returns, for each assignment, how many earlier assignments chose the
// same expert: a stable counting sort without a Sort op. Assignments are processed in
// chunks of c: within a chunk by pairwise comparison (N·c work), across chunks by
// per-expert counts (N·E work), so the cost is linear in N.
//
// ex: [N] Int32 → [N] Int32
func expertRanks(ex *Node, e int) *Node {
	g := ex.Graph()
	i32 := dtypes.Int32
	n := ex.Shape().Dimensions[0]
	c := min(n, rankChunk)
	nc := (n + c - 1) / c
	np := nc * c
	if np > n { // pad with an id that matches no expert and is never counted
		ex = Concatenate([]*Node{ex, BroadcastToDims(Scalar(g, i32, e), np-n)}, 0)
	}
	exc := Reshape(ex, nc, c)
	same := Equal(Reshape(exc, nc, c, 1), Reshape(exc, nc, 1, c))
	earlier := LessThan(Iota(g, shapes.Make(i32, nc, c, c), 2), Iota(g, shapes.Make(i32, nc, c, c), 1))
	within := ReduceSum(ConvertDType(LogicalAnd(same, earlier), i32), 2) // [nc, c]
	rank := within
	if nc > 1 {
		hot := Reshape(OneHot(ex, e, i32), nc, c, e)
		chunkCounts := ReduceSum(hot, 1) // [nc, E]
		// Exclusive prefix over chunks: before[m] = Σ_{m' < m} chunkCounts[m'].
		lt := LessThan(Iota(g, shapes.Make(i32, nc, nc), 1), Iota(g, shapes.Make(i32, nc, nc), 0))
		before := ReduceSum(Where(lt, BroadcastToDims(Reshape(chunkCounts, 1, nc, e), nc, nc, e),
			ScalarZero(g, i32)), 1) // [nc, E]
		base := ReduceSum(Mul(hot, Reshape(before, nc, 1, e)), 2) // [nc, c]
		rank = Add(within, base)
	}
	rank = Reshape(rank, np)
	if np > n {
		rank = Slice(rank, AxisRange(0, n))
	}
	return rank
}

// checkMoE reports MoE config problems as errors (used by CheckConfig).
func checkMoE(experts, topK, f int) error {
	if experts <= 0 || topK <= 0 || topK > experts || f <= 0 {
		return fmt.Errorf("moe: num_experts %d, top_k_experts %d, moe_intermediate_size %d are inconsistent",
			experts, topK, f)
	}
	return nil
}
