package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestDecodeStepMatchesHostSampler develops canvases twice on the same graph runner:
// DecodeStep (decoder, head and sampler in one executable, ids back) and Decode
// (logits back) followed by the host sampler's Step with the same plan. Every step's
// draft, acceptance and argmax are equal, the entropies and the next soft embedding
// agree to float32 rounding. A second development after Reset compiles nothing new.
func TestDecodeStepMatchesHostSampler(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 21, dtypes.Float32)
	r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	r.HostDecoder, r.HostHead, r.MinCapacity = false, false, 16
	if !r.StepsOnDevice() {
		t.Fatal("graph runner does not step on the device")
	}
	prompt := randTokens(rand.New(rand.NewPCG(3, 4)), 9, cfg.VocabSize)
	const c, steps = 8, 4
	p := sampler.Params{MaxSteps: steps, TMin: 0.4, TMax: 0.9, EntropyBound: 9, ConfidenceThreshold: 0.01, StabilityThreshold: 1}

	develop := func() (tokens []int) {
		r.Reset()
		if _, err := r.Encode(prompt); err != nil {
			t.Fatal(err)
		}
		smp, err := sampler.New(p, cfg.VocabSize, 77)
		if err != nil {
			t.Fatal(err)
		}
		draft := smp.Canvas([]int{5, 6}, 2, c)
		var softDev, softHost *tensors.Tensor
		mixed := false
		for step := 1; step <= steps; step++ {
			plan := smp.Plan(step)
			got, nextDev, devLogits, err := r.DecodeStep(draft, softDev, plan)
			if err != nil {
				t.Fatal(err)
			}
			logits, nextHost, err := r.Decode(draft, softHost, plan.Temperature)
			if err != nil {
				t.Fatal(err)
			}
			if step%2 == 0 {
				devLogits.Free()
			} else if l, err := devLogits.Read(); err != nil || relErr(l, toF64(logits)) > 1e-6 {
				t.Errorf("step %d: the step's logits differ from Decode's (%v)", step, err)
			}
			want, err := smp.Step(logits, step)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Draft, want.Draft) || !slices.Equal(got.Accepted, want.Accepted) || !slices.Equal(got.Argmax, want.Argmax) {
				t.Fatalf("step %d:\ndevice draft %v accepted %v argmax %v\nhost   draft %v accepted %v argmax %v",
					step, got.Draft, got.Accepted, got.Argmax, want.Draft, want.Accepted, want.Argmax)
			}
			if e := relErr(got.Entropy, toF64(want.Entropy)); e > 1e-5 {
				t.Errorf("step %d: entropies differ by %.2e relative", step, e)
			}
			if e := relErr(tensors.MustCopyFlatData[float32](nextDev), toF64(tensors.MustCopyFlatData[float32](nextHost))); e > 1e-5 {
				t.Errorf("step %d: next soft embeddings differ by %.2e relative", step, e)
			}
			if want.NumAccepted > 2 && want.NumAccepted < c {
				mixed = true
			}
			draft, softDev, softHost = want.Draft, nextDev, nextHost
			tokens = want.Argmax
		}
		if !mixed {
			t.Error("no step accepted some positions besides the held ones and rejected others")
		}
		return tokens
	}
	first := develop()
	compiled := r.Compilations()
	if again := develop(); !slices.Equal(again, first) {
		t.Errorf("same seed, other tokens: %v then %v", first, again)
	}
	// encode (prompt bucket 16), decode, step: three graphs; none new the second time.
	if compiled < 3 || compiled > 4 || r.Compilations() != compiled {
		t.Errorf("compilations: %d in the first development, %d after the second; want 3–4, then none new", compiled, r.Compilations())
	}
	t.Logf("compilations: %d for one development, %d new for the second", compiled, r.Compilations()-compiled)
	if _, _, _, err := r.DecodeStep(make([]int, c), nil, sampler.Plan{Temperature: 0.5, Held: make([]int, c+1)}); err == nil {
		t.Error("more held tokens than the canvas accepted")
	}
	// A soft embedding for another canvas size is refused by both, naming the call.
	wrong := tensors.FromShape(shapes.Make(dtypes.Float32, 1, c+1, cfg.HiddenSize))
	if _, _, _, err := r.DecodeStep(make([]int, c), wrong, sampler.Plan{Temperature: 0.5}); err == nil || !strings.HasPrefix(err.Error(), "decode step: soft embedding has shape") {
		t.Errorf("DecodeStep with a soft embedding of %d rows on a canvas of %d: %v", c+1, c, err)
	}
	if _, _, err := r.Decode(make([]int, c), wrong, 0.5); err == nil || !strings.HasPrefix(err.Error(), "decode: soft embedding has shape") {
		t.Errorf("Decode with a soft embedding of %d rows on a canvas of %d: %v", c+1, c, err)
	}
	r.HostHead = true
	if _, _, _, err := r.DecodeStep(make([]int, c), nil, sampler.Plan{Temperature: 0.5}); err == nil {
		t.Error("a step on the device with the host head accepted")
	}
}
