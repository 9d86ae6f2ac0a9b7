package backend

import (
	"context"
	"fmt"

	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// MatMulRate is a measured raw matrix-multiplication rate.
type MatMulRate struct {
	M, K, N int     // [M, K] × [K, N], float32
	Runs    int     // timed executions (after one untimed warm-up that compiles)
	Seconds float64 // median time of one execution
	FLOPs   float64 // 2·M·K·N
	FLOPS   float64 // FLOPs / Seconds
}

// MeasureMatMul times a float32 [m,k]×[k,n] matmul on b: one warm-up run
// (compilation), then runs executions (at least 1), reporting the median. The
// output is copied to the host each run so asynchronous backends are timed to
// completion. ctx stops it between runs.
func MeasureMatMul(ctx context.Context, b backends.Backend, m, k, n, runs int) (r MatMulRate, err error) {
	if m < 1 || k < 1 || n < 1 {
		return r, fmt.Errorf("matmul: bad shape [%d,%d]×[%d,%d]", m, k, k, n)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("matmul on %s: %v", b.Name(), p)
		}
	}()
	exec, err := NewExec(b, func(x, y *Node) *Node { return MatMul(x, y) })
	if err != nil {
		return r, fmt.Errorf("matmul: %w", err)
	}
	defer exec.Finalize()
	x := tensors.FromFlatDataAndDimensions(fill(m*k, 1), m, k)
	y := tensors.FromFlatDataAndDimensions(fill(k*n, 2), k, n)
	once := func() error {
		out, err := exec.Exec(x, y)
		if err != nil {
			return err
		}
		defer out[0].FinalizeAll()
		return out[0].ConstFlatData(func(any) {})
	}
	if err := once(); err != nil {
		return r, fmt.Errorf("matmul: %w", err)
	}
	runs = max(runs, 1)
	times := make([]float64, 0, runs)
	for range runs {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		start := clock.Now()
		if err := once(); err != nil {
			return r, fmt.Errorf("matmul: %w", err)
		}
		times = append(times, clock.Since(start).Seconds())
	}
	r = MatMulRate{M: m, K: k, N: n, Runs: runs, Seconds: Median(times), FLOPs: 2 * float64(m) * float64(k) * float64(n)}
	if r.Seconds > 0 {
		r.FLOPS = r.FLOPs / r.Seconds
	}
	return r, nil
}

// fill returns n small deterministic values (no denormals, no overflow).
func fill(n int, salt int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((i*7+salt*13)%17-8) / 16
	}
	return v
}

// Median returns the median of xs (0 for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ { // insertion sort: a handful of values
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
