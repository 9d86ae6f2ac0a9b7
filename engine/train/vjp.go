package train

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// GoMLX v0.26 lacks pieces of reverse-mode autodiff on the pure-Go backend: Rsqrt
// has no gradient, and Slice's gradient uses Pad, which simplego does not
// implement. Both are replaced here (package init), where training needs them,
// without touching the model code: Rsqrt gets its analytic derivative, and
// Slice's adjoint is built by concatenating zero blocks around the incoming
// gradient (strides of 1 only, which is all the model and trainer use).
func init() {
	if _, ok := VJPRegistration[NodeTypeRsqrt]; !ok {
		// y = x^(-1/2) ⇒ dy/dx = -1/2 · x^(-3/2) = -1/2 · y³
		VJPRegistration[NodeTypeRsqrt] = func(node *Node, v []*Node, _ shapes.Shape) []*Node {
			return []*Node{Mul(v[0], MulScalar(Mul(node, Square(node)), -0.5))}
		}
	}
	VJPRegistration[NodeTypeSlice] = sliceVJPNoPad
	VJPRegistration[NodeTypeDotGeneral] = dotGeneralVJPAsDot
}

var dotParams = regexp.MustCompile(`lhsContractingAxes=\[([0-9 ]*)\], lhsBatchAxes=\[([0-9 ]*)\], rhs=\[#[0-9]+\], rhsContractingAxes=\[([0-9 ]*)\], rhsBatchAxes=\[([0-9 ]*)\]`)

// dotGeneralVJPAsDot is the adjoint of DotGeneral written as two DotGenerals.
// GoMLX v0.26's own VJP materializes the broadcast product of the operands
// ([batch, lhs cross, rhs cross, contracted]) and reduces it, which is orders of
// magnitude slower and larger (e.g. the attention's Q·Kᵀ gradient); this one
// costs what the forward product costs.
//
// out = DotGeneral(lhs, rhs): [batch…, lhsCross…, rhsCross…]
// ∂lhs = DotGeneral(v, rhs) contracting rhsCross, batch on batch → [batch…, lhsCross…, rhsContract(asc)…] → lhs layout
// ∂rhs = DotGeneral(lhs, v) contracting lhsCross, batch on batch → [batch…, lhsContract(asc)…, rhsCross…] → rhs layout
func dotGeneralVJPAsDot(node *Node, vs []*Node, _ shapes.Shape) []*Node {
	v := vs[0]
	lhs, rhs := node.Inputs()[0], node.Inputs()[1]
	m := dotParams.FindStringSubmatch(node.String())
	if m == nil {
		panic(fmt.Errorf("dot gradient: cannot read the parameters of %s", node))
	}
	lc, lb, rc, rb := parseInts(m[1]), parseInts(m[2]), parseInts(m[3]), parseInts(m[4])
	lx := crossAxes(lhs.Rank(), lc, lb)
	rx := crossAxes(rhs.Rank(), rc, rb)
	nb, nlx, nrx := len(lb), len(lx), len(rx)
	vBatch := iotaFrom(0, nb)
	vLX := iotaFrom(nb, nlx)
	vRX := iotaFrom(nb+nlx, nrx)

	// ∂lhs.
	gl := DotGeneral(v, vRX, vBatch, rhs, rx, rb)
	// Result axes: batch (lb order), lx, then rhs's remaining axes = rc sorted ascending.
	pos := make([]int, lhs.Rank())
	for i, a := range lb {
		pos[a] = i
	}
	for i, a := range lx {
		pos[a] = nb + i
	}
	for i, a := range sortedPairs(rc, lc) {
		pos[a] = nb + nlx + i
	}
	gl = transposeIfNeeded(gl, pos)

	// ∂rhs.
	gr := DotGeneral(lhs, lx, lb, v, vLX, vBatch)
	// Result axes: batch (lb order ≙ rb), lhs's remaining = lc sorted ascending (→ paired rc), then RX.
	pos = make([]int, rhs.Rank())
	for i, a := range rb {
		pos[a] = i
	}
	for i, a := range sortedPairs(lc, rc) {
		pos[a] = nb + i
	}
	for i, a := range rx {
		pos[a] = nb + len(lc) + i
	}
	gr = transposeIfNeeded(gr, pos)
	return []*Node{gl, gr}
}

// crossAxes are the axes of a rank-r operand that are neither contracted nor batch, ascending.
func crossAxes(r int, contract, batch []int) []int {
	used := map[int]bool{}
	for _, a := range contract {
		used[a] = true
	}
	for _, a := range batch {
		used[a] = true
	}
	var out []int
	for a := 0; a < r; a++ {
		if !used[a] {
			out = append(out, a)
		}
	}
	return out
}

// sortedPairs returns, for the axes of `from` in ascending order, the paired axis in `to`.
func sortedPairs(from, to []int) []int {
	idx := make([]int, len(from))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return from[idx[i]] < from[idx[j]] })
	out := make([]int, len(idx))
	for i, k := range idx {
		out[i] = to[k]
	}
	return out
}

func iotaFrom(start, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = start + i
	}
	return out
}

// transposeIfNeeded puts result axis pos[a] at output axis a.
func transposeIfNeeded(x *Node, pos []int) *Node {
	for i, p := range pos {
		if i != p {
			return TransposeAllAxes(x, pos...)
		}
	}
	return x
}

var sliceParams = regexp.MustCompile(`starts=\[([0-9 ]*)\], limits=\[([0-9 ]*)\], strides=\[([0-9 ]*)\]`)

func parseInts(s string) []int {
	var out []int
	for _, f := range strings.Fields(s) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// sliceVJPNoPad: the adjoint of x[starts:limits] is v placed at starts inside
// zeros of x's shape, built axis by axis with Concatenate.
func sliceVJPNoPad(node *Node, vs []*Node, _ shapes.Shape) []*Node {
	v := vs[0]
	x := node.Inputs()[0]
	m := sliceParams.FindStringSubmatch(node.String())
	if m == nil {
		panic(fmt.Errorf("slice gradient: cannot read the slice parameters of %s", node))
	}
	starts, limits, strides := parseInts(m[1]), parseInts(m[2]), parseInts(m[3])
	dims := x.Shape().Dimensions
	g := node.Graph()
	grad := v
	for axis := range dims {
		if axis < len(strides) && strides[axis] > 1 {
			panic(fmt.Errorf("slice gradient: strided slices are not supported (axis %d stride %d)", axis, strides[axis]))
		}
		before, after := starts[axis], dims[axis]-limits[axis]
		if before == 0 && after == 0 {
			continue
		}
		parts := []*Node{}
		cur := grad.Shape().Dimensions
		if before > 0 {
			d := append([]int(nil), cur...)
			d[axis] = before
			parts = append(parts, Zeros(g, shapes.Make(grad.DType(), d...)))
		}
		parts = append(parts, grad)
		if after > 0 {
			d := append([]int(nil), cur...)
			d[axis] = after
			parts = append(parts, Zeros(g, shapes.Make(grad.DType(), d...)))
		}
		grad = Concatenate(parts, axis)
	}
	return []*Node{grad}
}
