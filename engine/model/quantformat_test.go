package model

import (
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/quant"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// TestQuantFormatsParams: for int4 with Float32 scales (older checkpoints), BFloat16
// scales (the int4 profile) and affine int4 with Float32 or BFloat16 scales and
// minimums (NAME.qmin), Params.Get, GatherRows and GatherRowsSplit in the graph and the
// host decoder's hostWeights all equal quant.Dequantize exactly.
func TestQuantFormatsParams(t *testing.T) {
	const e, f, d = 4, 6, 64
	rng := rand.New(rand.NewPCG(8, 9))
	vals := make([]float32, e*f*d)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64()*0.05) + 0.01
	}
	wt := tensors.FromFlatDataAndDimensions(vals, e, f, d)
	for _, spec := range []quant.Spec{quant.Int4F32, quant.Int4, quant.Int4Affine,
		{Bits: 4, GroupSize: 32, Format: quant.Affine, BF16Scales: true}} {
		t.Run(spec.String(), func(t *testing.T) {
			w := map[string]*tensors.Tensor{}
			var mins []*tensors.Tensor
			if spec.HasMin() {
				qw, qs, qm, err := quant.QuantizeAffine(wt, spec)
				if err != nil {
					t.Fatal(err)
				}
				w["x"+QWeightSuffix], w["x"+QScaleSuffix], w["x"+QMinSuffix] = qw, qs, qm
				mins = append(mins, qm)
			} else {
				qw, qs, err := quant.Quantize(wt, spec)
				if err != nil {
					t.Fatal(err)
				}
				w["x"+QWeightSuffix], w["x"+QScaleSuffix] = qw, qs
			}
			ref, err := quant.Dequantize(w["x"+QWeightSuffix], w["x"+QScaleSuffix], spec, []int{e, f, d}, mins...)
			if err != nil {
				t.Fatal(err)
			}
			want := tensors.MustCopyFlatData[float32](ref)
			ctx := newContext(t, w)
			exec, err := context.NewExec(newBackend(t), ctx, func(ctx *context.Context, idx *Node) []*Node {
				p := NewParams(ctx, idx.Graph(), tinyConfig())
				return []*Node{p.Get("x"), p.GatherRows("x", idx), p.GatherRowsSplit("x", 2, idx)}
			})
			if err != nil {
				t.Fatal(err)
			}
			rows := []int32{3, 1}
			out, err := exec.Exec(tensors.FromFlatDataAndDimensions(rows, 2, 1))
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got []float32, at func(i int) int) {
				t.Helper()
				for i, v := range got {
					if v != want[at(i)] {
						t.Fatalf("%s element %d: %v, want %v", what, i, v, want[at(i)])
					}
				}
			}
			check("Get", tensors.MustCopyFlatData[float32](out[0]), func(i int) int { return i })
			check("GatherRows", tensors.MustCopyFlatData[float32](out[1]), func(i int) int {
				return int(rows[i/(f*d)])*f*d + i%(f*d)
			})
			// Split 2: row r of the [2E, F/2, D] view is half r%2 of expert r/2.
			half := f / 2 * d
			check("GatherRowsSplit", tensors.MustCopyFlatData[float32](out[2]), func(i int) int {
				return int(rows[i/half])*half + i%half
			})
			hw := newHostWeights(ContextSource(ctx))
			check("hostWeights", hostDense(t, hw, "x"), func(i int) int { return i })
		})
	}
}
