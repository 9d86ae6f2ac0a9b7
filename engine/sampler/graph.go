package sampler

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph code reads best dot-imported.
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// StepGraph is Sampler.Step's arithmetic inside a GoMLX graph, so that a denoising
// step's logits never leave the device: the tempered softmax's entropy, the
// categorical draw, the argmax, the held positions, the entropy-bound acceptance and
// the re-noising, from the same Plan (temperature, keys, held tokens, bound) and with
// the same counter-based draws (rng.go) as the host. What comes back is kilobytes:
// ids, the acceptance mask and the entropies; Finish then does the rest on the host.
//
// The numerics follow Tempered: float32 exponentials exp((x−max)·(1/T)) with values
// below 1e-37 taken as zero, the normaliser, the entropy and the sampling CDF in
// float64. The CDF is searched in two levels — the blocks' sums first, then within
// the chosen block — so that no cumulative sum runs over the whole vocabulary; it
// sums in another order than the host's running sum, so a draw within rounding
// (~1e-16 relative) of a boundary may differ. Ties break as on the host: argmax by the
// lowest id, the acceptance order by the lowest position.
//
//	logits: [C, V] Float32; temperature, bound: Float64 scalars; keys: [4] Uint32
//	(Plan.Keys); held: [C] Int32, the held token or −1 →
//	draft, argmax: [C] Int32; accepted: [C] Bool; entropy: [C] Float32
func StepGraph(logits, temperature, keys, held, bound *Node) (draft, accepted, entropy, argmax *Node) {
	g := logits.Graph()
	c, v := logits.Shape().Dimensions[0], logits.Shape().Dimensions[1]
	pos := Iota(g, shapes.Make(dtypes.Uint32, c), 0)
	sampled, argmax, entropy := temperedGraph(logits, temperature, drawGraph(pos, keys))

	isHeld := GreaterOrEqual(held, ZerosLike(held))
	sampled = Where(isHeld, held, sampled)
	argmax = Where(isHeld, held, argmax)
	entropy = Where(isHeld, ZerosLike(entropy), entropy)

	accepted = acceptGraph(entropy, bound)
	noise := intNGraph(hashGraph(pos, keyElem(keys, 2), keyElem(keys, 3)), v)
	draft = Where(accepted, sampled, noise)
	return draft, accepted, entropy, argmax
}

// TokenGraph is Sampler.PickToken inside a GoMLX graph, so that AR decoding brings
// back one id per token instead of a row of logits: the repetition penalty
// (Penalize: seen ids' logits divided by θ where ≥ 0, multiplied where < 0, in
// float32), the frequency penalty's bias added, the banned ids' logits set to
// Banish (NoStutters), then the argmax when temperature ≤ 0 (greedy), else the draw from
// softmax(logits/T) that TokenPlan's key gives position 0, with StepGraph's numerics
// (so the same rounding caveat at a CDF boundary). The seen ids come as a [V] mask,
// so one executable serves every length of the sequence; θ = 1 (or no id seen)
// leaves the logits bit-identical.
//
//	logits: [V] Float32; temperature: Float64 scalar (TokenPlan.Temperature); key: [2]
//	Uint32 (TokenPlan.Key's K1, K2); penalty: Float64 scalar (TokenPlan.Penalty); seen:
//	[V] Bool (TokenPlan.Seen, all false when nil); bias: [V] Float32 (TokenPlan.Bias,
//	all zero when nil); banned: [V] Bool (TokenPlan.Banned, all false when nil: their
//	logits become Banish) → id: Int32 scalar
func TokenGraph(logits, temperature, key, penalty, seen, bias, banned *Node) *Node {
	g := logits.Graph()
	p := ConvertDType(penalty, dtypes.Float32)
	penalized := Where(LessThan(logits, ZerosLike(logits)), Mul(logits, p), Div(logits, p))
	logits = Where(seen, penalized, logits)
	logits = Add(logits, bias)
	logits = Where(banned, BroadcastToDims(Scalar(g, dtypes.Float32, Banish), logits.Shape().Dimensions...), logits)
	greedy := LessOrEqual(temperature, ZerosLike(temperature))
	// A greedy pick still runs the draw's arithmetic (one graph for both); T = 1
	// keeps it finite.
	t := Where(greedy, OnesLike(temperature), temperature)
	row := ExpandAxes(logits, 0) // [1, V]
	sampled, argmax, _ := temperedGraph(row, t, drawGraph(Iota(g, shapes.Make(dtypes.Uint32, 1), 0), key))
	return Reshape(Where(BroadcastToDims(greedy, 1), argmax, sampled)) // a condition of the picks' shape, as every backend takes it
}

// temperedGraph is Tempered over logits [C, V] with the draws u [C] Float64 in
// [0, 1): per row the inverse-CDF sample and the argmax [C] Int32, and the entropy
// [C] Float32 of softmax(logits/temperature) (temperature a Float64 scalar).
func temperedGraph(logits, temperature, u *Node) (sampled, argmax, entropy *Node) {
	g := logits.Graph()
	argmax = ArgMax(logits, -1, dtypes.Int32)
	mx := ReduceAndKeep(logits, ReduceMax, -1) // [C, 1]: the row's value at argmax
	inv := Div(Scalar(g, dtypes.Float64, 1), temperature)
	e := Exp(Mul(Sub(logits, mx), ConvertDType(inv, dtypes.Float32)))
	e = Where(LessThan(e, Scalar(g, dtypes.Float32, expUnderflow)), ZerosLike(e), e)
	e64 := ConvertDType(e, dtypes.Float64)
	z := Mul(Sub(ConvertDType(logits, dtypes.Float64), ConvertDType(mx, dtypes.Float64)), inv)
	s := ReduceSum(e64, -1)          // [C]
	ez := ReduceSum(Mul(e64, z), -1) // [C]
	h := Max(Sub(Log(s), Div(ez, s)), ZerosLike(s))
	entropy = ConvertDType(h, dtypes.Float32)
	sampled = inverseCDF(e, Mul(u, s))
	return sampled, argmax, entropy
}

// drawGraph is Key.Float64 at the Uint32 positions pos, the key's halves in keys[0],
// keys[1]: Float64 draws in [0, 1).
func drawGraph(pos, keys *Node) *Node {
	return MulScalar(ConvertDType(hashGraph(pos, keyElem(keys, 0), keyElem(keys, 1)), dtypes.Float64), 1.0/(1<<32))
}

// keyElem is keys[i] as a scalar.
func keyElem(keys *Node, i int) *Node { return Reshape(Slice(keys, AxisElem(i))) }

// hashGraph is Key.Uint32 over the Uint32 positions pos with the key halves k1, k2.
func hashGraph(pos, k1, k2 *Node) *Node {
	return mix32Graph(Add(mix32Graph(BitwiseXor(pos, k1)), k2))
}

// mix32Graph is mix32 on Uint32 nodes, a right shift by k written as the integer
// division by 2^k it is.
func mix32Graph(x *Node) *Node {
	g := x.Graph()
	shr := func(x *Node, k uint) *Node { return Div(x, Const(g, uint32(1)<<k)) }
	x = BitwiseXor(x, shr(x, 16))
	x = Mul(x, Const(g, uint32(0x7feb352d)))
	x = BitwiseXor(x, shr(x, 15))
	x = Mul(x, Const(g, uint32(0x846ca68b)))
	return BitwiseXor(x, shr(x, 16))
}

// intNGraph is Key.IntN: ⌊h·n / 2³²⌋ in Uint64, as Int32.
func intNGraph(h *Node, n int) *Node {
	g := h.Graph()
	x := Mul(ConvertDType(h, dtypes.Uint64), Const(g, uint64(n)))
	return ConvertDType(Div(x, Const(g, uint64(1)<<32)), dtypes.Int32)
}

// cdfBlock is the block length of inverseCDF's two-level search over v ids: the
// smallest power of two whose square reaches v.
func cdfBlock(v int) int {
	b := 1
	for b*b < v {
		b *= 2
	}
	return min(b, v)
}

// inverseCDF returns, per row, the first id whose cumulative mass exceeds target (as
// tempered's loop), or the last id with mass when rounding put target past the total.
// The masses are summed in float64; they are read as float32 (widening is exact) so
// that no float64 copy of the [C, V] block needs to exist.
//
// e: [C, V] Float32 (non-negative), target: [C] Float64 → [C] Int32
func inverseCDF(e, target *Node) *Node {
	g := e.Graph()
	c, v := e.Shape().Dimensions[0], e.Shape().Dimensions[1]
	b := cdfBlock(v)
	nb := (v + b - 1) / b
	padded := e
	if nb*b > v {
		padded = Concatenate([]*Node{e, Zeros(g, shapes.Make(e.DType(), c, nb*b-v))}, -1)
	}
	blocks := Reshape(padded, c, nb, b)
	cum := CumSum(ReduceSum(ConvertDType(blocks, dtypes.Float64), -1), -1) // [C, nb]: mass up to each block's end
	t := ExpandAxes(target, -1)                                            // [C, 1]
	countInt := func(x *Node) *Node { return ReduceSum(ConvertDType(x, dtypes.Int32), -1) }
	blk := countInt(LessOrEqual(cum, t)) // first block whose end exceeds target
	blkIdx := Iota(g, shapes.Make(dtypes.Int32, c, nb), 1)
	start := ReduceSum(Where(Equal(blkIdx, ExpandAxes(SubScalar(blk, 1), -1)), cum, ZerosLike(cum)), -1)
	inBlk := Min(blk, Scalar(g, dtypes.Int32, nb-1))
	rowIdx := Add(MulScalar(Iota(g, shapes.Make(dtypes.Int32, c), 0), nb), inBlk)
	rows := ConvertDType(Gather(Reshape(blocks, c*nb, b), Reshape(rowIdx, c, 1)), dtypes.Float64) // [C, b]
	j := countInt(LessOrEqual(Add(CumSum(rows, -1), ExpandAxes(start, -1)), t))
	ids := Add(MulScalar(inBlk, b), j)

	idx := Iota(g, shapes.Make(dtypes.Int32, c, v), 1)
	lastMass := ReduceMax(Where(GreaterThan(e, ZerosLike(e)), idx, Scalar(g, dtypes.Int32, -1)), -1)
	past := LogicalOr(GreaterOrEqual(blk, Scalar(g, dtypes.Int32, nb)), GreaterOrEqual(j, Scalar(g, dtypes.Int32, b)))
	return Where(past, lastMass, ids)
}

// acceptGraph is Accept: position i is accepted when it comes first in the order by
// (entropy, position) or the entropies before it sum (float64) to at most bound.
//
// entropy: [C] Float32, bound: Float64 scalar → [C] Bool
func acceptGraph(entropy, bound *Node) *Node {
	g := entropy.Graph()
	c := entropy.Shape().Dimensions[0]
	hi, hj := ExpandAxes(entropy, -1), ExpandAxes(entropy, 0) // [C, 1], [1, C]
	i := Iota(g, shapes.Make(dtypes.Int32, c, c), 0)
	j := Iota(g, shapes.Make(dtypes.Int32, c, c), 1)
	hiB, hjB := BroadcastToDims(hi, c, c), BroadcastToDims(hj, c, c)
	before := LogicalOr(LessThan(hjB, hiB), LogicalAnd(Equal(hjB, hiB), LessThan(j, i))) // [i, j]: j sorts before i
	h64 := ConvertDType(hjB, dtypes.Float64)
	sum := ReduceSum(Where(before, h64, ZerosLike(h64)), -1)
	first := LogicalNot(ReduceLogicalOr(before, -1))
	return LogicalOr(first, LessOrEqual(sum, bound))
}
