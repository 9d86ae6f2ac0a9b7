package model

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/darkroomlabs/darkroom/engine/weights"
)

// Bounded dequantization scratch.
//
// The graph computes in float32 and converts or dequantizes a stored weight right
// before its matmul. For most weights that float32 copy is small; two are not, on the
// 26B model:
//
//   - the tied embedding [262144, 2816], used whole by the LM head (Logits) and by the
//     soft embedding (SoftEmbedding): 2.95 GB in float32;
//   - the experts of the grouped MoE GEMM (Experts), one expert's gate, up and down
//     blocks gathered per row block: 256 blocks × 3 × 704 × 2816 at canvas 256, top-8,
//     6.1 GB in float32.
//
// Both are split so that one float32 block stays within DequantScratchBudget:
//
//   - the vocabulary in chunks of HeadChunkRows rows: the head's logits are the chunks'
//     products concatenated, the soft embedding the sum of the chunks' products;
//   - the MoE row blocks in groups of MoEGroupBlocks blocks, the groups' outputs
//     concatenated.
//
// Each chunk's weight gather is made data-dependent on the previous chunk's result
// (see after), so whatever order the backend's scheduler picks, a chunk's weights are
// converted only after the previous chunk's matmul has consumed its own: in inference
// one chunk's float32 block is live at a time (a backward pass keeps every chunk for
// the gradient, as it would the whole weight). What this cannot bound is a backend
// that rematerialises or duplicates work on its own; XLA's CSE cannot merge the head's
// chunks with the soft embedding's, because their indices depend on different nodes.
//
// A model whose blocks already fit takes one chunk and builds exactly the graph it
// built before (Darkroom Mini, the test models); the arithmetic of a chunked graph is
// the same per output element, with the soft embedding's sum over the vocabulary
// accumulated chunk by chunk (float32 rounding of a different summation order).

// DequantScratchBudget is the float32 bytes one chunk of a dequantized weight may take
// in a graph (see HeadChunkRows and MoEGroupBlocks).
const DequantScratchBudget = 192 << 20

// scratchBudget is DequantScratchBudget, a variable so tests can force chunking on
// small models.
var scratchBudget int64 = DequantScratchBudget

// HeadChunkRows is the number of vocabulary rows the output head and the soft
// embedding convert to float32 at once: the vocabulary split into the fewest
// power-of-two count of chunks whose float32 block [rows, hidden] fits the budget
// (vocab itself when the whole table does). The last chunk may be shorter.
func HeadChunkRows(vocab, hidden int) int {
	if vocab <= 0 || hidden <= 0 {
		return max(vocab, 1)
	}
	whole := int64(vocab) * int64(hidden) * 4
	n := 1
	for whole > int64(n)*scratchBudget && n < vocab {
		n *= 2
	}
	return (vocab + n - 1) / n
}

// MoEGroupBlocks is the number of expert row blocks the grouped MoE GEMM dequantizes
// at once: as many as keep their float32 gate, up and down blocks (3 × F × D each)
// within the budget, at least one.
func MoEGroupBlocks(moeIntermediate, hidden int) int {
	per := 3 * int64(max(moeIntermediate, 1)) * int64(max(hidden, 1)) * 4
	return int(max(scratchBudget/per, 1))
}

// HeadChunkScratchBytes is the float32 bytes of one vocabulary chunk of the tied
// embedding ([HeadChunkRows, hidden]).
func HeadChunkScratchBytes(vocab, hidden int) int64 {
	return int64(HeadChunkRows(vocab, hidden)) * int64(hidden) * 4
}

// rowRange is the Int32 indices start…start+n−1 as [n, 1], for a GatherRows of
// consecutive rows. n, start: static.
func rowRange(g *Graph, start, n int) *Node {
	return AddScalar(Iota(g, shapes.Make(dtypes.Int32, n, 1), 0), start)
}

// after returns the Int32 indices idx with the same values but computed from dep, so a
// gather fed by them cannot run before dep is complete. z = IsNaN(max(dep)) is 0, or 1
// when dep holds a NaN, and min(idx + z, idx) = idx either way; no compiler can fold it
// away without knowing dep's values. It costs one max-reduction over dep (the previous
// chunk's output: about 1/D of that chunk's matmul). dep == nil returns idx.
func after(idx, dep *Node) *Node {
	if dep == nil {
		return idx
	}
	z := ConvertDType(IsNaN(ReduceAllMax(StopGradient(dep))), idx.DType())
	return StopGradient(Min(Add(idx, z), idx))
}

// vocabChunks calls fn for each chunk [start, start+n) of a vocabulary of v rows split
// in chunks of rows.
func vocabChunks(v, rows int, fn func(k, start, n int)) {
	for k, start := 0, 0; start < v; k, start = k+1, start+rows {
		fn(k, start, min(rows, v-start))
	}
}

// headProduct is h · Eᵀ over the tied embedding E [V, D], computed over vocabulary
// chunks of rows rows (rows ≥ V: the whole table at once, as Params.Get reads it):
// each chunk's rows are gathered from the stored weight, converted or dequantized to
// float32, multiplied, and the chunks' logits concatenated.
//
// h: [..., D] → [..., V]
func headProduct(p *Params, h *Node, rows int) *Node {
	const name = weights.EmbeddingName
	v := p.Cfg.VocabSize
	if rows >= v {
		return WeightDot(h, []int{-1}, nil, p.Matrix(name), []int{1}, nil)
	}
	g := h.Graph()
	var parts []*Node
	prev := h // chunk 0 is converted only once its input exists
	vocabChunks(v, rows, func(_, start, n int) {
		e := p.MatrixRows(name, 1, after(rowRange(g, start, n), prev)) // [n, D]
		prev = WeightDot(h, []int{-1}, nil, e, []int{1}, nil)          // [..., n]
		parts = append(parts, prev)
	})
	return Concatenate(parts, -1)
}

// softProduct is probs · E, E the tied embedding [V, D], with probs = softmax(scaled)
// over the last axis computed chunk by chunk from scaled (the tempered logits): the
// maximum and the normaliser over the whole vocabulary first, then per chunk of rows
// rows probs_k = exp(scaled_k − max) / Σ — the same elementwise operations as Softmax,
// so the same values — and soft = Σ_k probs_k · E_k, accumulated in chunk order. Only
// a [..., rows] block of probabilities and a [rows, D] block of E exist at once.
// rows ≥ V is Softmax and one product, as before.
//
// The chunked form slices the logits: Slice's gradient needs Pad, which the go backend
// lacks (XLA has it); the trainer stops the gradient at the soft embedding.
//
// scaled: [..., V] Float32 → [..., D]
func softProduct(p *Params, scaled *Node, rows int) *Node {
	const name = weights.EmbeddingName
	v := p.Cfg.VocabSize
	if rows >= v {
		probs := Softmax(scaled, -1)
		return WeightDot(probs, []int{-1}, nil, p.Matrix(name), []int{0}, nil)
	}
	g := scaled.Graph()
	normMax := StopGradient(ReduceAndKeep(scaled, ReduceMax, -1))
	denom := ReduceAndKeep(Exp(Sub(scaled, normMax)), ReduceSum, -1) // [..., 1]
	var acc *Node
	prev := denom
	vocabChunks(v, rows, func(_, start, n int) {
		probs := Div(Exp(Sub(SliceAxis(scaled, -1, AxisRange(start, start+n)), normMax)), denom) // [..., n]
		e := p.MatrixRows(name, 1, after(rowRange(g, start, n), prev))                           // [n, D]
		part := WeightDot(probs, []int{-1}, nil, e, []int{0}, nil)                               // [..., D]
		if acc == nil {
			acc = part
		} else {
			acc = Add(acc, part)
		}
		prev = acc
	})
	return acc
}
