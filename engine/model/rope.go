package model

import (
	"fmt"
	"math"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// InvFreq returns the rotary inverse frequencies of one layer, [headDim/2], for the
// rotate-half (NeoX) layout where pair j is (x[j], x[j+headDim/2]).
//
//   - "default": inv_freq[j] = θ^(−2j/headDim) for every pair.
//   - "proportional" (full-attention layers): only the first
//     int(partial_rotary_factor·headDim/2) pairs rotate, with the exponent still over
//     the FULL head dim, θ^(−2j/headDim); the other pairs get frequency 0 (cos 1,
//     sin 0: passed through unchanged). For the 26B: 64 of 256 pairs, θ = 1e6.
func InvFreq(r config.Rope, headDim int) ([]float64, error) {
	if headDim <= 0 || headDim%2 != 0 {
		return nil, fmt.Errorf("rope: head dim %d must be even and positive", headDim)
	}
	if r.Theta <= 0 {
		return nil, fmt.Errorf("rope: rope_theta %g must be positive", r.Theta)
	}
	half := headDim / 2
	rotated := half
	factor := r.PartialRotaryFactor
	if factor == 0 {
		factor = 1
	}
	switch r.Type {
	case "default", "":
		if factor != 1 {
			return nil, fmt.Errorf("rope: rope_type %q with partial_rotary_factor %g is not supported", r.Type, factor)
		}
	case "proportional":
		if factor < 0 || factor > 1 {
			return nil, fmt.Errorf("rope: partial_rotary_factor %g out of [0,1]", factor)
		}
		rotated = int(math.Floor(factor * float64(headDim) / 2))
	default:
		return nil, fmt.Errorf("rope: unknown rope_type %q", r.Type)
	}
	inv := make([]float64, half)
	for j := 0; j < rotated; j++ {
		inv[j] = 1 / math.Pow(r.Theta, float64(2*j)/float64(headDim))
	}
	return inv, nil
}

// InvFreq32 is InvFreq rounded to float32, the frequencies of the host paths'
// RoPE tables (RopeTables).
func InvFreq32(r config.Rope, headDim int) ([]float32, error) {
	inv, err := InvFreq(r, headDim)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(inv))
	for j, f := range inv {
		out[j] = float32(f)
	}
	return out, nil
}

// ApplyRoPE rotates x by its positions in float32 (rotate-half layout):
// out = x·cos + rotate_half(x)·sin with cos/sin of positions·inv_freq repeated over
// both halves.
//
// x: [B, T, N, Hd], positions: [B, T] int, invFreq: [Hd/2] → [B, T, N, Hd]
func ApplyRoPE(x, positions *Node, invFreq []float64) *Node {
	g := x.Graph()
	dims := x.Shape().Dimensions
	b, t, n, hd := dims[0], dims[1], dims[2], dims[3]
	half := hd / 2
	f := make([]float32, len(invFreq))
	for i, v := range invFreq {
		f[i] = float32(v)
	}
	freq := Reshape(Const(g, f), 1, 1, 1, 1, half)
	pos := Reshape(ConvertDType(positions, dtypes.Float32), b, t, 1, 1, 1)
	angles := Mul(pos, freq) // [B, T, 1, 1, Hd/2]
	cos, sin := ConvertDType(Cos(angles), x.DType()), ConvertDType(Sin(angles), x.DType())
	// View the head as its two halves [.., 2, Hd/2]; rotate_half(x) = (−x₂, x₁) is a 2×2
	// matrix over that axis. (No Slice here: its gradient needs Pad, which the go
	// backend lacks, and the trainer differentiates through this.)
	x5 := Reshape(x, b, t, n, 2, half)
	rot := ConvertDType(Const(g, [][]float32{{0, -1}, {1, 0}}), x.DType())
	rh := DotGeneral(rot, []int{1}, nil, x5, []int{3}, nil) // [2, B, T, N, Hd/2]
	rh = TransposeAllAxes(rh, 1, 2, 3, 0, 4)                // [B, T, N, 2, Hd/2]
	return Reshape(Add(Mul(x5, cos), Mul(rh, sin)), b, t, n, hd)
}

// layerInvFreq is InvFreq for layer i, panicking (recovered at the API boundary) on a
// bad config; CheckConfig reports the same problems as errors up front.
func (p *Params) layerInvFreq(i int) []float64 {
	inv, err := InvFreq(p.Cfg.LayerRope(i), p.Cfg.LayerHeadDim(i))
	if err != nil {
		panic(fmt.Errorf("layer %d: %w", i, err))
	}
	return inv
}
