package model

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// RMSNorm normalises over the last axis in float32:
// x · (mean(x²) + eps)^-½ · w. This is Gemma 4's norm: a plain multiplicative weight,
// not Gemma 3's (1 + w). w == nil is the scale-free variant (v_norm, the router's norm,
// self-conditioning's post_norm).
//
// x: [..., N], w: [N] or nil → [..., N]
func RMSNorm(x, w *Node, eps float64) *Node {
	x = toF32(x)
	ms := ReduceAndKeep(Square(x), ReduceMean, -1)
	y := Div(x, Sqrt(AddScalar(ms, eps))) // not Rsqrt: GoMLX has no gradient for it
	if w != nil {
		y = Mul(y, ExpandLeftToRank(ConvertDType(w, y.DType()), y.Rank()))
	}
	return y
}

// norm applies the named learned RMSNorm weight.
func (p *Params) norm(x *Node, name string) *Node {
	return RMSNorm(x, p.Get(name), p.Cfg.RMSNormEps)
}
