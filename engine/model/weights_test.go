package model

import (
	"fmt"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
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
// the embedding row-gathered first) or once for the host model, and BF16 weights
// (converted in the graph or widened for the host model), give the same logits as the
// same values loaded as Float32 and run in the graph.
func TestQuantizedWeights(t *testing.T) {
	defer kernels.SetIntProducts(kernels.SetIntProducts(false)) // the float32 products the reference graph computes (the integer ones: engine/kernels' TestMulNTInt and TestMulRowsInt)
	cfg := tinyConfig()
	mcfg := &config.Model{Text: *cfg}
	set := weights.Random(mcfg, 3)
	backend := newBackend(t)
	prompt := randTokens(rand.New(rand.NewPCG(1, 2)), 9, cfg.VocabSize)
	canvas := randTokens(rand.New(rand.NewPCG(3, 4)), 8, cfg.VocabSize)
	run := func(s *weights.Set, host bool) ([]float32, []float32) {
		t.Helper()
		ctx := context.New()
		if err := LoadSet(ctx, s); err != nil {
			t.Fatal(err)
		}
		r, err := NewRunner(backend, cfg, ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.HostDecoder, r.HostHead = host, host
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
	// compare runs stored in the graph and on the host against ref in the graph.
	compare := func(t *testing.T, stored, ref *weights.Set) {
		t.Helper()
		fLast, fLogits := run(ref, false)
		for _, host := range []bool{false, true} {
			sLast, sLogits := run(stored, host)
			if e := relErr(sLast, toF64(fLast)); e > 1e-5 {
				t.Errorf("host model %v: encoder logits differ from the reference graph by %.3e", host, e)
			}
			if e := relErr(sLogits, toF64(fLogits)); e > 1e-5 {
				t.Errorf("host model %v: decoder logits differ from the reference graph by %.3e", host, e)
			}
		}
	}
	t.Run("bf16", func(t *testing.T) { // the reference: BF16 converted in the graph (same √D rounding)
		bf, err := set.Convert(dtypes.BFloat16)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, bf, bf)
	})
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
			t.Logf("%d quantized tensors (bits %v)", len(q.Quant), bits)
			compare(t, q, deq)
		})
	}
}
