package convert

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// tinyModel writes a random-weight config.Tiny checkpoint (bf16) with a small tokenizer.
func tinyModel(t *testing.T) string {
	return enginetest.WriteTinyModel(t, enginetest.Options{MaxSteps: 4, Seed: 5,
		Save: weights.SaveOptions{DType: "bf16"}})
}

// TestCompare: a model compared with itself has KL 0 and full agreement; int8 is
// closer to the reference than int4, and both are smaller.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	ref := tinyModel(t)
	prompts := [][]int{{2, 10, 11, 12, 13}, {2, 40, 41, 42}}
	self, err := Compare(context.Background(), engine.Dir(ref), engine.Dir(ref), prompts, CompareOptions{Steps: 2, Backend: "go", MaxNewTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if self.MeanKL > 1e-9 || self.ArgmaxAgree != 1 || self.SizeRatio != 1 || self.Positions != 2*2*16 || self.RefTokensPS <= 0 {
		t.Errorf("self comparison %+v", self)
	}
	var kl []float64
	for _, p := range []quant.Profile{quant.Int8Profile, quant.Int4Profile} {
		out := filepath.Join(t.TempDir(), string(p))
		if _, err := Quantize(context.Background(), Source{Dir: ref}, out, Options{Profile: p}); err != nil {
			t.Fatal(err)
		}
		c, err := Compare(context.Background(), engine.Dir(ref), engine.Dir(out), prompts, CompareOptions{Steps: 2, Backend: "go", MaxNewTokens: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", p, c)
		if c.Profile != string(p) || c.SizeRatio >= 1 || c.MeanKL <= 0 || c.ArgmaxAgree <= 0 || c.ArgmaxAgree > 1 {
			t.Errorf("%s: %+v", p, c)
		}
		kl = append(kl, c.MeanKL)
	}
	if kl[0] >= kl[1] {
		t.Errorf("int8 KL %g ≥ int4 KL %g", kl[0], kl[1])
	}
}
