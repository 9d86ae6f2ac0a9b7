package train

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Net is the part of the model graph the objective needs, over batched inputs.
// The real one wraps engine/model (see modelNet); the functions must be
// differentiable with respect to the context variables they read.
type Net interface {
	// Encode runs the shared stack causally. tokens, positions: [B, T] int32;
	// valid: [B, T] bool (false on left padding). Returns hidden [B, T, D] and
	// the per-layer keys/values (opaque to the trainer).
	Encode(tokens, positions, valid *Node) (hidden *Node, kv any)
	// Decode runs the stack bidirectionally over the canvas [B, C] int32 at
	// positions [B, C], reading kv where prefixValid [B, T] is true. soft is the
	// self-conditioning soft embedding [B, C, D] (nil = zero signal).
	Decode(canvas, positions, soft *Node, kv any, prefixValid *Node) (hidden *Node)
	// Logits maps hidden [B, N, D] to soft-capped f32 logits [B, N, V].
	Logits(hidden *Node) *Node
	// SoftEmbedding maps logits [B, C, V] to softmax(logits)·embed·√D: [B, C, D].
	SoftEmbedding(logits *Node) *Node
	// HeadKV returns the keys/values of the first n examples of kv.
	HeadKV(kv any, n int) any
}

// Losses are the objective's scalar outputs.
type Losses struct {
	Total, Diffusion, AR *Node
}

// Objective builds the training loss of the official recipes for one batch:
//
//	encoder (causal, with grad) over [clean prefix ; clean canvas]
//	  → AR loss: next-token CE over every pair of valid positions
//	decoder pass 1 (zero self-conditioning), no gradient, on the first
//	  selfCondRows examples only (the batch is in random order, so these are a
//	  random subset; the others get the zero signal, so their pass 1 is not needed)
//	  → soft embedding of its logits
//	decoder pass 2 (with grad) over the noisy canvas, reading the prefix K/V
//	  → diffusion loss: CE against the clean canvas on EVERY position, weight 1
//	total = diffusion + AR
//
// Inputs (B examples, prefix bucket P, canvas C, T = P + C):
// tokens, positions [B, T] int32; valid, prefixValid [B, T] bool; noisy, decPos
// [B, C] int32; weight [B, T] float32, the loss weight of predicting each token
// (Options.TitleWeight; nil: all 1 — the means still divide by the plain counts,
// as in hostgrad); diffRows, arRows [B] float32, 1 for the rows whose
// diffusion (AR) loss counts and 0 for the others (Example.Loss; nil: all 1),
// each mean over its counted rows. Rows [0, selfCondRows) get self-conditioning.
func Objective(net Net, tokens, positions, valid, prefixValid, noisy, decPos, weight, diffRows, arRows *Node, selfCondRows int) Losses {
	t := tokens.Shape().Dimensions[1]
	c := noisy.Shape().Dimensions[1]
	p := t - c

	hidden, kv := net.Encode(tokens, positions, valid)
	encLogits := net.Logits(Slice(hidden, AxisRange(), AxisRange(0, t-1))) // predicts tokens[:, 1:]
	next := Slice(tokens, AxisRange(), AxisRange(1, t))
	pairs := LogicalAnd(Slice(valid, AxisRange(), AxisRange(0, t-1)), Slice(valid, AxisRange(), AxisRange(1, t)))
	weighted := func(ce *Node, from int) *Node { // ce · weight of the predicted tokens
		if weight == nil {
			return ce
		}
		return Mul(ce, Slice(weight, AxisRange(), AxisRange(from, t)))
	}
	m := ConvertDType(pairs, dtypes.Float32)
	if arRows != nil {
		m = Mul(m, ExpandAxes(arRows, -1))
	}
	one := ScalarOne(m.Graph(), dtypes.Float32)
	arLoss := Div(ReduceAllSum(Mul(weighted(tokenCE(encLogits, next), 1), m)),
		Max(ReduceAllSum(m), one))

	soft := selfConditioning(net, noisy, decPos, kv, prefixValid, selfCondRows)
	logits2 := net.Logits(net.Decode(noisy, decPos, soft, kv, prefixValid))
	target := Slice(tokens, AxisRange(), AxisRange(p, t))
	diffCE := weighted(tokenCE(logits2, target), p) // [B, C]
	var diffLoss *Node
	if diffRows == nil {
		diffLoss = ReduceAllMean(diffCE)
	} else {
		diffLoss = Div(ReduceAllSum(Mul(diffCE, ExpandAxes(diffRows, -1))),
			Max(MulScalar(ReduceAllSum(diffRows), float64(c)), one))
	}
	return Losses{Total: Add(diffLoss, arLoss), Diffusion: diffLoss, AR: arLoss}
}

// tokenCE is the cross-entropy of f32 logits [B, N, V] against int targets [B, N] → [B, N].
func tokenCE(logits, target *Node) *Node {
	v := logits.Shape().Dimensions[logits.Rank()-1]
	logp := LogSoftmax(logits, -1)
	oneHot := OneHot(target, v, logp.DType())
	return Neg(ReduceSum(Mul(logp, oneHot), -1))
}

// selfConditioning is decoder pass 1 and its soft embedding: run on the first
// selfCondRows examples only, without gradient (StopGradient on the soft
// embedding, hence on pass 1 and the embedding it reads), zero for the rest.
// Returns nil when no example is self-conditioned.
//
// noisy, decPos: [B, C] → [B, C, D] or nil
func selfConditioning(net Net, noisy, decPos *Node, kv any, prefixValid *Node, selfCondRows int) *Node {
	h := min(selfCondRows, noisy.Shape().Dimensions[0])
	if h <= 0 {
		return nil
	}
	head := func(x *Node) *Node { return Slice(x, AxisRange(0, h)) }
	logits1 := net.Logits(net.Decode(head(noisy), head(decPos), nil, net.HeadKV(kv, h), head(prefixValid)))
	soft := StopGradient(net.SoftEmbedding(logits1)) // [h, C, D]
	if b := noisy.Shape().Dimensions[0]; h < b {
		d := soft.Shape().Dimensions
		soft = Concatenate([]*Node{soft, Zeros(soft.Graph(), shapes.Make(soft.DType(), b-h, d[1], d[2]))}, 0)
	}
	return soft
}
