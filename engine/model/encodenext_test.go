package model

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// TestEncodeNextIsEncodeThenPick decodes with two graph-path runners over the same
// weights, one picking each token in the encode executable (EncodeNext), the other
// reading Encode's logits and picking on the host (Sampler.PickToken): the same ids,
// greedy and drawn, over a prompt longer than a chunk (EncodeNext encodes the
// chunks before the last plainly); both caches then hold the same tokens, so the
// logits after them agree. The host path refuses EncodeNext.
func TestEncodeNextIsEncodeThenPick(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 13, dtypes.Float32)
	runner := func() *Runner {
		r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
		if err != nil {
			t.Fatal(err)
		}
		r.HostHead, r.HostDecoder = false, false
		r.MinCapacity, r.MaxChunk = 16, 8
		return r
	}
	dev, ref := runner(), runner()
	smpDev, err := sampler.New(sampler.Params{MaxSteps: 1, TMin: 1, TMax: 1}, cfg.VocabSize, 3)
	if err != nil {
		t.Fatal(err)
	}
	smpRef, _ := sampler.New(sampler.Params{MaxSteps: 1, TMin: 1, TMax: 1}, cfg.VocabSize, 3)
	rng := rand.New(rand.NewPCG(7, 8))
	next := randTokens(rng, 19, cfg.VocabSize) // 8 + 8 + 3
	drawn := 0
	for k := range 12 {
		temperature := []float64{0, 0.8, 2}[k%3]
		id, err := dev.EncodeNext(next, smpDev.PlanToken(temperature))
		if err != nil {
			t.Fatal(err)
		}
		logits, err := ref.Encode(next)
		if err != nil {
			t.Fatal(err)
		}
		want := smpRef.PickToken(logits, smpRef.PlanToken(temperature))
		if id != want || dev.Len() != ref.Len() {
			t.Fatalf("token %d at T=%g: EncodeNext %d (%d cached), Encode and pick %d (%d cached)",
				k, temperature, id, dev.Len(), want, ref.Len())
		}
		if id != sampler.Argmax(logits) {
			drawn++
		}
		next = []int{id}
	}
	if drawn == 0 {
		t.Error("every token was the argmax: the test does not exercise the draw")
	}
	a, err := dev.Encode(next)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ref.Encode(next)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(a, toF64(b)); e > 1e-6 {
		t.Errorf("logits after the decoded tokens differ by %.2e: the caches differ", e)
	}

	host := runner()
	host.HostDecoder = true
	if _, err := host.EncodeNext(next, sampler.TokenPlan{}); err == nil || !strings.Contains(err.Error(), "host") {
		t.Errorf("host path EncodeNext: err %v, want a refusal naming the host", err)
	}
}
