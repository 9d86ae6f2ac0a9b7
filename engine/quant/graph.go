package quant

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX graph code reads best dot-imported.
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// DequantizeGraph rebuilds a Float32 weight inside the graph, right before its matmul.
//
//	q:     int8: Int8 [..., n]; int4, affine int4, nvfp4: Uint8 [..., n/2] (two nibbles per byte)
//	scale: Float32, BFloat16 (spec.BF16Scales) or Uint16 binary16 bits (spec.F16Scales)
//	       [..., n/group] (nvfp4: Uint8 [..., n/group + 4], see nvfp4.go)
//	qmin:  affine int4 only (exactly one): like scale
//	→ Float32 shape (= [..., n])
//
// The kept GGUF block formats (Q2K … IQ4XS) take their parts as blocks.go lays them
// out.
//
// Nibbles are split with float arithmetic (hi = ⌊b/16⌋, lo = b − 16·hi, exact for
// 0…255), because the go backend has no bit shifts; FP4 E2M1 codes are decoded the
// same way (see e2m1Graph). BF16 scales are widened exactly; affine values are
// q·scale then + min (two roundings, as the host's Dequantize and ggml). Like every
// GoMLX graph function it panics on inconsistent shapes; callers recover at their API
// boundary.
func DequantizeGraph(q, scale *Node, spec Spec, shape []int, qmin ...*Node) *Node {
	if err := spec.Check(shape); err != nil {
		panic(fmt.Errorf("quant.DequantizeGraph: %w", err))
	}
	wantW, wantS := spec.Shapes(shape)
	if q.DType() != spec.DType() || !slices.Equal(q.Shape().Dimensions, wantW) {
		panic(fmt.Errorf("quant.DequantizeGraph: qweight is %s, want %s%v for %s of %v", q.Shape(), spec.DType(), wantW, spec, shape))
	}
	if scale.DType() != spec.ScaleDType() || !slices.Equal(scale.Shape().Dimensions, wantS) {
		panic(fmt.Errorf("quant.DequantizeGraph: qscale is %s, want %s%v", scale.Shape(), spec.ScaleDType(), wantS))
	}
	if wantMin := spec.HasMin(); (len(qmin) == 1) != wantMin || len(qmin) > 1 {
		panic(fmt.Errorf("quant.DequantizeGraph: %s with %d min operands", spec, len(qmin)))
	}
	if spec.HasMin() && (qmin[0].DType() != spec.MinDType() || !slices.Equal(qmin[0].Shape().Dimensions, spec.MinShape(shape))) {
		panic(fmt.Errorf("quant.DequantizeGraph: qmin is %s, want %s%v", qmin[0].Shape(), spec.MinDType(), spec.MinShape(shape)))
	}
	if _, ok := blockLayouts[spec.Format]; ok {
		return blockDequantGraph(q, scale, spec, shape, qmin...)
	}
	g := q.Graph()
	x := ConvertDType(q, dtypes.Float32)
	if spec.Bits == 4 {
		hi := Floor(MulScalar(x, 1.0/16))
		lo := Sub(x, MulScalar(hi, 16))
		x = Stack([]*Node{lo, hi}, -1) // [..., n/2, 2]: element 2j low, 2j+1 high
		switch spec.Format {
		case FP4:
			x = e2m1Graph(x)
		case Int:
			x = Sub(x, Scalar(g, dtypes.Float32, 8))
		}
	}
	n := shape[len(shape)-1]
	groups := shape[len(shape)-1] / spec.group(n)
	grouped := append(append([]int{}, shape[:len(shape)-1]...), groups, n/groups)
	x = Reshape(x, grouped...) // [..., groups, group]
	if spec.Format == FP4 {
		x = Mul(x, nvfp4ScalesGraph(scale)) // [..., groups, 1]
	} else {
		x = Mul(x, ExpandAxes(scaleGraph(scale), -1)) // scale: [..., groups, 1]
	}
	if spec.HasMin() {
		x = Add(x, ExpandAxes(scaleGraph(qmin[0]), -1)) // min: [..., groups, 1]
	}
	return Reshape(x, shape...)
}

// DequantizeNode is DequantizeGraph with the spec read from the operands (SpecOf: the
// dtypes and shapes say the format and the group size), for rows of cols values.
// Leading axes are free, so it also dequantizes rows gathered from a larger weight
// (experts, the embedding).
//
//	q, scale, qmin: as SpecOf takes them for a weight [..., cols] → Float32 [..., cols]
func DequantizeNode(q, scale *Node, cols int, qmin ...*Node) *Node {
	shape := append(append([]int{}, q.Shape().Dimensions[:q.Rank()-1]...), cols)
	var minShapes []shapes.Shape
	for _, m := range qmin {
		minShapes = append(minShapes, m.Shape())
	}
	spec, err := SpecOf(shape, q.Shape(), scale.Shape(), minShapes...)
	if err != nil {
		panic(fmt.Errorf("quant.DequantizeNode: %w", err))
	}
	return DequantizeGraph(q, scale, spec, shape, qmin...)
}
