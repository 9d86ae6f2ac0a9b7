package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// TestHostExpertsJob: below expertJobRows tokens the host runs the routed experts as
// one parallel job, whole experts per worker; its output is bit for bit the experts
// run one after another with their products split across the pool.
func TestHostExpertsJob(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 5, dtypes.Float32)
	h := &hostModel{cfg: cfg, w: newHostWeights(ContextSource(newContext(t, w))), embedScale: 1}
	d, e := cfg.HiddenSize, cfg.NumExperts
	rng := rand.New(rand.NewPCG(5, 5))
	defer func(n int) { expertJobRows = n }(expertJobRows)
	for n := 1; n < 4; n++ {
		x, logits := make([]float32, n*d), make([]float32, n*e)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
		}
		run := func(jobRows int) []float32 {
			expertJobRows = jobRows
			var out []float32
			if err := try("experts", func() { out = h.experts(0, slices.Clone(x), slices.Clone(logits)) }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		job, serial := run(n+1), run(0)
		if !slices.Equal(job, serial) {
			t.Errorf("%d tokens: the experts as one job differ from one after another", n)
		}
		if slices.Equal(job, make([]float32, n*d)) {
			t.Errorf("%d tokens: all zeros", n)
		}
	}
}
