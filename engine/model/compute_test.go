package model

import (
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/model/naive"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestBF16Compute runs the graph path with bf16 weight products (ComputeDType): on
// bf16-stored weights the encoder's and decoder's logits stay within bf16 rounding
// of the float64 reference while differing from the float32-compute graphs (so the
// products really are bf16), and on int4/int8-quantized weights (dequantized to bf16
// per block) they stay within bf16 rounding of float32 compute over the same codes.
// (Within bf16 rounding: the model is random, so the rounding is amplified through
// the layers to a few 1e-2; 1e-1 bounds it, where a wrong block would be O(1).)
func TestBF16Compute(t *testing.T) {
	// Every expert routed: a top-k choice flipped by rounding would move a row's
	// output by O(1), which is not what this test measures.
	cfg := tinyConfig()
	cfg.NumExperts, cfg.TopKExperts = 4, 4
	prompt := randTokens(rand.New(rand.NewPCG(7, 7)), 11, cfg.VocabSize)
	canvas := randTokens(rand.New(rand.NewPCG(8, 8)), 8, cfg.VocabSize)
	run := func(w map[string]*tensors.Tensor, compute dtypes.DType) (enc, dec []float32) {
		r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
		if err != nil {
			t.Fatal(err)
		}
		r.HostDecoder, r.HostHead, r.MinCapacity, r.ComputeDType = false, false, 16, compute
		if enc, err = r.Encode(prompt); err != nil {
			t.Fatal(err)
		}
		if dec, _, err = r.Decode(canvas, nil, 0.7); err != nil {
			t.Fatal(err)
		}
		return enc, dec
	}
	w, nm := randomModel(t, cfg, 31, dtypes.BFloat16)
	cache := &naive.Cache{}
	wantEnc := nm.Encode(cache, prompt)
	wantDec := flat(nm.Decode(cache, canvas, nil))
	enc16, dec16 := run(w, dtypes.BFloat16)
	enc32, dec32 := run(w, dtypes.Float32)
	for _, c := range []struct {
		what     string
		got      []float32
		want     []float64
		min, max float64
	}{
		{"bf16 compute, encoder", enc16, wantEnc[len(wantEnc)-1], 0, 1e-1},
		{"bf16 compute, decoder", dec16, wantDec, 0, 1e-1},
		{"bf16 vs f32 compute, encoder", enc16, toF64(enc32), 1e-4, 1e-1},
		{"bf16 vs f32 compute, decoder", dec16, toF64(dec32), 1e-4, 1e-1},
		{"f32 compute, decoder", dec32, wantDec, 0, 1e-4},
	} {
		if e := relErr(c.got, c.want); e < c.min || e > c.max {
			t.Errorf("%s: max relative error %.2e, want in [%.0e, %.0e]", c.what, e, c.min, c.max)
		}
	}

	wq, _ := randomModel(t, cfg, 32, dtypes.Float32)
	quantizeWeights(t, wq)
	enc16, dec16 = run(wq, dtypes.BFloat16)
	enc32, dec32 = run(wq, dtypes.Float32)
	if e := relErr(enc16, toF64(enc32)); e < 1e-4 || e > 1e-1 {
		t.Errorf("quantized, encoder: bf16 vs f32 compute %.2e, want bf16 rounding", e)
	}
	if e := relErr(dec16, toF64(dec32)); e < 1e-4 || e > 1e-1 {
		t.Errorf("quantized, decoder: bf16 vs f32 compute %.2e, want bf16 rounding", e)
	}
}
