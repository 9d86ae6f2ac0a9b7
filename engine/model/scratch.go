package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Dequantization scratch, read off the graph.
//
// Between calls the graph path holds only the buffers DeviceMemory counts; during a
// call each product whose weight is not used as stored reads a block the graph made
// for it: codes dequantized, a bf16 weight widened to float32 (or a quantized one
// rounded to bf16 under bf16 compute), rows gathered for a vocabulary chunk or an
// expert group (chunk.go). StepWeightOperands lists those blocks as the step's graph
// builds them, so models/fit can hold its estimate to them.

// ComputeDTypeFor is the dtype of the weight products (Runner.ComputeDType) the
// engine's graphs use for a model stored as dtype (config.json's dtype): on an
// accelerator BFloat16 for a bf16 model (float32 accumulation, as upstream runs it),
// else Float32; the go backend computes in Float32.
func ComputeDTypeFor(dtype string, accelerator bool) dtypes.DType {
	if accelerator && strings.EqualFold(dtype, "bfloat16") {
		return dtypes.BFloat16
	}
	return dtypes.Float32
}

// WeightOperand is one block a graph builds from stored weights for a product: the
// tensors it is made from and its shape and dtype (its bytes: Shape.Memory()).
type WeightOperand struct {
	Weights []string // the stored tensors read (names in Scope, codes and scales alike), sorted
	Shape   shapes.Shape
}

// StepWeightOperands builds the denoising step's graph (DecodeStep's: the decoder over
// a canvas of c positions after the cache at its current capacity, the head, the soft
// embedding and the sampler's step) without compiling it, and returns the operand of
// each product that is made from weights alone and is not a stored weight itself. The
// graph path only (StepsOnDevice).
func (r *Runner) StepWeightOperands(c int) (ops []WeightOperand, err error) {
	if !r.StepsOnDevice() {
		return nil, errors.New("step weight operands: the model runs on the host (HostDecoder or HostHead)")
	}
	if c <= 0 {
		return nil, fmt.Errorf("step weight operands: canvas of %d positions", c)
	}
	capacity := max(r.capacity, r.MinCapacity)
	cacheDType := r.CacheDType
	if cacheDType == dtypes.InvalidDType {
		cacheDType = dtypes.Float32
	}
	err = try("step weight operands", func() {
		g := NewGraph(r.backend, "step-weight-operands")
		defer g.Finalize()
		in := []*Node{
			Parameter(g, "canvas", shapes.Make(dtypes.Int32, 1, c)),
			Parameter(g, "soft", shapes.Make(dtypes.Float32, 1, c, r.cfg.HiddenSize)),
			Parameter(g, "temperature", shapes.Make(dtypes.Float64)),
			Parameter(g, "length", shapes.Make(dtypes.Int32)),
			Parameter(g, "keys", shapes.Make(dtypes.Uint32, 4)),
			Parameter(g, "held", shapes.Make(dtypes.Int32, c)),
			Parameter(g, "bound", shapes.Make(dtypes.Float64)),
		}
		for j, s := range CacheShapes(r.cfg, capacity, cacheDType) {
			in = append(in, Parameter(g, fmt.Sprintf("cache%d", j), s))
		}
		r.stepGraph(r.ctx, in)
		weights := map[*Node]string{} // the variables' nodes in g
		for v := range r.ctx.In(Scope).IterVariablesInScope() {
			weights[v.ValueGraph(g)] = v.Name()
		}
		ops = weightOperands(g, weights)
	})
	return ops, err
}

// weightOperands returns the operands of g's products (DotGeneral) that are built
// from the nodes in weights alone — following a Gather's operand, not its indices,
// which may depend on activations (chunk.go's after) — and are not one of them.
func weightOperands(g *Graph, weights map[*Node]string) []WeightOperand {
	// sources[n]: the weights n's data is made from; nil when an activation (a
	// parameter other than a weight) feeds it.
	sources := map[*Node][]string{}
	var from func(n *Node) ([]string, bool)
	from = func(n *Node) ([]string, bool) {
		if s, ok := sources[n]; ok {
			return s, s != nil
		}
		var s []string
		ok := true
		if name, isWeight := weights[n]; isWeight {
			s = []string{name}
		} else if n.Type() == NodeTypeParameter {
			ok = false
		} else {
			inputs := n.Inputs()
			if n.Type() == NodeTypeGather {
				inputs = inputs[:1]
			}
			s = []string{}
			for _, x := range inputs {
				xs, xok := from(x)
				if !xok {
					ok = false
					break
				}
				s = append(s, xs...)
			}
			slices.Sort(s)
			s = slices.Compact(s)
		}
		if !ok {
			s = nil
		}
		sources[n] = s
		return s, ok
	}
	var ops []WeightOperand
	for _, n := range g.Nodes() {
		if n.Type() != NodeTypeDotGeneral {
			continue
		}
		for _, x := range n.Inputs() {
			if _, stored := weights[x]; stored {
				continue
			}
			if s, ok := from(x); ok && len(s) > 0 {
				ops = append(ops, WeightOperand{Weights: s, Shape: x.Shape()})
			}
		}
	}
	return ops
}

// String is the operand as "shape ← weights".
func (o WeightOperand) String() string {
	return fmt.Sprintf("%s ← %s", o.Shape, strings.Join(o.Weights, ", "))
}
