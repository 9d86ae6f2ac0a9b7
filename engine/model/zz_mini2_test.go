package model

import (
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

func BenchmarkMini2Step(b *testing.B) {
	cfg := benchConfig()
	cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.NumGlobalKVHeads = 192, 12, 6, 2, 2
	cfg.IntermediateSize, cfg.MoEIntermediateSize, cfg.NumExperts = 384, 192, 8
	s, f := config.SlidingAttention, config.FullAttention
	cfg.LayerTypes = []config.LayerType{s, s, s, s, s, f, s, s, s, s, s, f}
	r, cfg := randomRunner(b, cfg)
	rng := rand.New(rand.NewPCG(3, 3))
	prompt, canvas := randTokens(rng, 24, cfg.VocabSize), randTokens(rng, 256, cfg.VocabSize)
	if _, err := r.Encode(prompt); err != nil {
		b.Fatal(err)
	}
	p := sampler.Params{MaxSteps: 48, TMin: 0.4, TMax: 0.9, EntropyBound: 30, ConfidenceThreshold: 0.01, StabilityThreshold: 1}
	smp, _ := sampler.New(p, cfg.VocabSize, 1)
	smp.Canvas(nil, 0, len(canvas))
	b.ResetTimer()
	for range b.N {
		_, _, l, err := r.DecodeStep(canvas, nil, smp.Plan(1))
		if err != nil {
			b.Fatal(err)
		}
		l.Free()
	}
}
