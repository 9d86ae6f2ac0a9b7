package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// TestSpecsMatchWeights: the names and shapes this package's tests build by hand are
// exactly engine/weights' table (the contract both sides implement).
func TestSpecsMatchWeights(t *testing.T) {
	cfg := tinyConfig()
	want := map[string]string{}
	for _, s := range weights.Specs(&config.Model{Text: *cfg}) {
		want[s.Name] = fmt.Sprint(s.Shape)
	}
	got := map[string]string{}
	for _, s := range testSpecs(cfg) {
		got[s.name] = fmt.Sprint(s.shape)
	}
	for n, s := range want {
		if got[n] != s {
			t.Errorf("%s: weights table says %s, model tests use %q", n, s, got[n])
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: used by the model tests, absent from the weights table", n)
		}
	}
}

// TestQuantizedWeights: int8 and int4 weights, dequantized in the graph (experts and
// the embedding row-gathered first), give the same logits as the same values
// dequantized on the host and loaded as Float32.
func TestQuantizedWeights(t *testing.T) {
	cfg := tinyConfig()
	mcfg := &config.Model{Text: *cfg}
	set := weights.Random(mcfg, 3)
	backend := newBackend(t)
	prompt := randTokens(rand.New(rand.NewPCG(1, 2)), 9, cfg.VocabSize)
	canvas := randTokens(rand.New(rand.NewPCG(3, 4)), 8, cfg.VocabSize)
	run := func(s *weights.Set) ([]float32, []float32) {
		t.Helper()
		ctx := context.New()
		if err := LoadSet(ctx, s); err != nil {
			t.Fatal(err)
		}
		r, err := NewRunner(backend, cfg, ctx)
		if err != nil {
			t.Fatal(err)
		}
		last, err := r.Encode(prompt)
		if err != nil {
			t.Fatal(err)
		}
		logits, _, err := r.Decode(canvas, nil, 0.7)
		if err != nil {
			t.Fatal(err)
		}
		return last, logits
	}
	for _, profile := range []quant.Profile{quant.Int8Profile, quant.Int4Profile} {
		t.Run(string(profile), func(t *testing.T) {
			q, err := set.Quantize(mcfg, profile)
			if err != nil {
				t.Fatal(err)
			}
			if len(q.Quant) == 0 {
				t.Fatal("nothing was quantized")
			}
			var bits []int
			for _, s := range q.Quant {
				if !slices.Contains(bits, s.Bits) {
					bits = append(bits, s.Bits)
				}
			}
			deq := weights.NewSet()
			for _, s := range weights.Specs(mcfg) {
				if deq.Tensors[s.Name], err = q.Float32(s.Name); err != nil {
					t.Fatal(err)
				}
			}
			qLast, qLogits := run(q)
			fLast, fLogits := run(deq)
			t.Logf("%d quantized tensors (bits %v)", len(q.Quant), bits)
			if e := relErr(qLast, toF64(fLast)); e > 1e-5 {
				t.Errorf("encoder logits: in-graph vs host dequantization differ by %.3e", e)
			}
			if e := relErr(qLogits, toF64(fLogits)); e > 1e-5 {
				t.Errorf("decoder logits: in-graph vs host dequantization differ by %.3e", e)
			}
		})
	}
}
