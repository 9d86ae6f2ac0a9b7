package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// TestHostExpertsJob: below expertJobRows tokens, or below expertJobMACs in the
// busiest expert's product (a small model's canvas), the host runs the routed experts
// as one parallel job, whole experts per worker; its output is bit for bit the
// experts run one after another with their products split across the pool.
func TestHostExpertsJob(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 5, dtypes.Float32)
	h := &hostModel{cfg: cfg, w: newHostWeights(ContextSource(newContext(t, w))), embedScale: 1}
	d, e := cfg.HiddenSize, cfg.NumExperts
	rng := rand.New(rand.NewPCG(5, 5))
	defer func(n, macs int) { expertJobRows, expertJobMACs = n, macs }(expertJobRows, expertJobMACs)
	for _, n := range []int{1, 2, 3, 64, 256} {
		x, logits := make([]float32, n*d), make([]float32, n*e)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
		}
		run := func(jobRows, jobMACs int) []float32 {
			expertJobRows, expertJobMACs = jobRows, jobMACs
			var out []float32
			if err := try("experts", func() { out = h.experts(0, slices.Clone(x), slices.Clone(logits), 0) }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		job, serial := run(n+1, 0), run(0, 0)
		if small := run(0, 1<<40); !slices.Equal(small, job) {
			t.Errorf("%d tokens: the experts as one job for their small products differ from the job below expertJobRows", n)
		}
		if !slices.Equal(job, serial) {
			t.Errorf("%d tokens: the experts as one job differ from one after another", n)
		}
		if slices.Equal(job, make([]float32, n*d)) {
			t.Errorf("%d tokens: all zeros", n)
		}
	}
}
