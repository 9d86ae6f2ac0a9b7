package model

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/layers/activations"
)

// Linear applies an HF Linear weight without bias.
//
// x: [..., in], w: [out, in] → [..., out]
func Linear(x, w *Node) *Node {
	return DotGeneral(x, []int{-1}, nil, w, []int{1}, nil)
}

// GeluTanh is gelu_pytorch_tanh: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func GeluTanh(x *Node) *Node { return activations.GeluApproximate(x) }

// Linear applies the named HF Linear weight without bias, in the compute dtype
// (Params.Compute: Matrix and WeightDot).
//
// x: [..., in] → [..., out]
func (p *Params) Linear(x *Node, name string) *Node {
	return WeightDot(x, []int{-1}, nil, p.Matrix(name), []int{1}, nil)
}
