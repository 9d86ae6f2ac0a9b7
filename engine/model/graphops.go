package model

import (
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// graphOps are arch.Ops on GoMLX graph nodes [B, T, …], batched and differentiable:
// the weights through Params (converted or dequantized next to their products, in the
// compute dtype), the rows at positions [B, T], and the keys the queries see from src
// (the encoder's own, the Runner's cache, or the decoder's cached prefix; see
// keySource). Graph values are immutable, so consumed operands are simply not used
// again.
type graphOps struct {
	p         *Params
	positions *Node
	src       keySource
}

var _ arch.Ops[*Node] = (*graphOps)(nil)

func (o *graphOps) StartLayer(int) {}

// Linear: x [..., in] → [..., out] (Params.Linear).
func (o *graphOps) Linear(x *Node, weight string) *Node { return o.p.Linear(x, weight) }

// LinearF32 is x·Wᵀ with the weight in float32 (Params.Get).
func (o *graphOps) LinearF32(x *Node, weight string) *Node { return Linear(x, o.p.Get(weight)) }

// Norm normalises x [..., n·width] in groups of width (n heads: reshaped to
// [..., n, width] and back).
func (o *graphOps) Norm(x *Node, width int, weight string) *Node {
	var w *Node
	if weight != "" {
		w = o.p.Get(weight)
	}
	dims := x.Shape().Dimensions
	last := dims[len(dims)-1]
	if last == width {
		return RMSNorm(x, w, o.p.Cfg.RMSNormEps)
	}
	grouped := append(append([]int{}, dims[:len(dims)-1]...), last/width, width)
	return Reshape(RMSNorm(Reshape(x, grouped...), w, o.p.Cfg.RMSNormEps), dims...)
}

func (o *graphOps) NormInPlace(x *Node, width int, weight string) *Node {
	return o.Norm(x, width, weight)
}

func (o *graphOps) Add(a, b *Node) *Node { return Add(a, b) }

func (o *graphOps) Scale(x *Node, s float64) *Node { return MulScalar(x, s) }

func (o *graphOps) ScaleBy(x *Node, weight string) *Node {
	return Mul(x, ExpandLeftToRank(Reshape(o.p.Get(weight)), x.Rank()))
}

func (o *graphOps) GeGLU(gate, up *Node) *Node { return Mul(GeluTanh(gate), up) }

// RoPE: x [B, T, heads·Hd] → [B, T, heads·Hd] (ApplyRoPE per head).
func (o *graphOps) RoPE(layer int, x *Node, heads int) *Node {
	dims := x.Shape().Dimensions
	b, t := dims[0], dims[1]
	hd := o.p.Cfg.LayerHeadDim(layer)
	r := ApplyRoPE(Reshape(x, b, t, heads, hd), o.positions, o.p.layerInvFreq(layer))
	return Reshape(r, b, t, heads*hd)
}

// Attend: q [B, T, H·Hd], k, v [B, T, Kv·Hd] → [B, T, H·Hd], the keys and their
// visibility from src.
func (o *graphOps) Attend(layer int, q, k, v *Node) *Node {
	cfg := o.p.Cfg
	dims := q.Shape().Dimensions
	b, t := dims[0], dims[1]
	h, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(layer), cfg.LayerHeadDim(layer)
	K, V, visible := o.src.keys(layer, Reshape(k, b, t, kvh, hd), Reshape(v, b, t, kvh, hd))
	return attend(Reshape(q, b, t, h, hd), K, V, visible)
}

// Experts flattens the rows, routes them (routeLogits) and runs the grouped GEMM
// (Params.Experts), recording its rows in Params.MoERows.
func (o *graphOps) Experts(layer int, x, logits *Node) *Node {
	dims := x.Shape().Dimensions
	d, e := dims[len(dims)-1], o.p.Cfg.NumExperts
	idx, w := o.p.routeLogits(layer, Reshape(logits, -1, e))
	out, used := o.p.Experts(layer, Reshape(x, -1, d), idx, w)
	o.p.MoERows = append(o.p.MoERows, used)
	return Reshape(out, dims...)
}
