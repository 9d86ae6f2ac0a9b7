package train

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestReplacementGradients checks the registered DotGeneral, Slice and Rsqrt
// adjoints against central finite differences of the same graph.
func TestReplacementGradients(t *testing.T) {
	type tc struct {
		name   string
		shapes [][]int
		fn     func(a, b *Node) *Node
	}
	cases := []tc{
		{"matmul", [][]int{{3, 4}, {5, 4}}, func(a, b *Node) *Node { return DotGeneral(a, []int{1}, nil, b, []int{1}, nil) }},
		{"batched attention", [][]int{{2, 3, 4}, {2, 5, 4}}, func(a, b *Node) *Node {
			return DotGeneral(a, []int{2}, []int{0}, b, []int{2}, []int{0})
		}},
		{"batch not leading, 2 contractions", [][]int{{3, 2, 4, 5}, {4, 6, 2, 5}}, func(a, b *Node) *Node {
			return DotGeneral(a, []int{3, 2}, []int{1}, b, []int{3, 0}, []int{2})
		}},
		{"slice", [][]int{{4, 6}, {1}}, func(a, b *Node) *Node {
			return Mul(Slice(a, AxisRange(1, 3), AxisRange(2, 5)), Reshape(b, 1, 1))
		}},
		{"rsqrt", [][]int{{3, 4}, {1}}, func(a, b *Node) *Node { return Mul(Rsqrt(AddScalar(Square(a), 0.5)), Reshape(b, 1, 1)) }},
	}
	backend := goBackend(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in []*tensors.Tensor
			var flat [][]float64
			for k, s := range c.shapes {
				n := shapes.Make(dtypes.Float64, s...).Size()
				data := make([]float64, n)
				for i := range data {
					data[i] = math.Sin(float64(i*7+k*3+1)) * 1.3
				}
				flat = append(flat, data)
				in = append(in, tensors.FromFlatDataAndDimensions(data, s...))
			}
			// Loss = Σ w ⊙ f(a, b) with fixed weights, so every output element matters.
			loss := func(a, b *Node) *Node {
				y := c.fn(a, b)
				w := Sin(ConvertDType(Iota(a.Graph(), shapes.Make(dtypes.Int32, y.Shape().Dimensions...), -1), dtypes.Float64))
				w = Add(w, MulScalar(Cos(ConvertDType(Iota(a.Graph(), shapes.Make(dtypes.Int32, y.Shape().Dimensions...), 0), dtypes.Float64)), 0.7))
				return ReduceAllSum(Mul(y, w))
			}
			ge, err := NewExec(backend, func(a, b *Node) []*Node {
				l := loss(a, b)
				return append([]*Node{l}, Gradient(l, a, b)...)
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := ge.Exec(in[0], in[1])
			if err != nil {
				t.Fatal(err)
			}
			le, _ := NewExec(backend, loss)
			const h = 1e-6
			for k := 0; k < 2; k++ {
				grad := tensors.MustCopyFlatData[float64](out[1+k])
				for i := range flat[k] {
					eval := func(delta float64) float64 {
						d := append([]float64(nil), flat[k]...)
						d[i] += delta
						args := []any{in[0], in[1]}
						args[k] = tensors.FromFlatDataAndDimensions(d, c.shapes[k]...)
						r, err := le.Exec(args...)
						if err != nil {
							t.Fatal(err)
						}
						return r[0].Value().(float64)
					}
					num := (eval(h) - eval(-h)) / (2 * h)
					if math.Abs(num-grad[i]) > 1e-5*(1+math.Abs(num)) {
						t.Fatalf("operand %d element %d: gradient %.8f, finite difference %.8f", k, i, grad[i], num)
					}
				}
			}
		})
	}
}
