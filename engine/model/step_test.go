package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
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
//
// A model split between the device and the host (NewSplitRunner, after its first
// layer) passes the same test, with the whole graph's tokens.
func TestDecodeStepMatchesHostSampler(t *testing.T) {
	var whole []int
	t.Run("graph", func(t *testing.T) { whole = testDecodeStep(t, false) })
	t.Run("split", func(t *testing.T) {
		if split := testDecodeStep(t, true); !slices.Equal(split, whole) {
			t.Errorf("split model's tokens %v, the whole graph's %v", split, whole)
		}
	})
}

func testDecodeStep(t *testing.T, split bool) []int {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 21, dtypes.Float32)
	r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if split {
		r = splitRunner(t, cfg, w, 1)
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
	// Split: the encoder's front and logits tail, the decoder's front (Decode's and
	// DecodeStep's) and the two tails: five.
	least := 3
	if split {
		least = 5
	}
	if compiled < least || compiled > least+1 || r.Compilations() != compiled {
		t.Errorf("compilations: %d in the first development, %d after the second; want %d–%d, then none new", compiled, r.Compilations(), least, least+1)
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
	return first
}

// TestHostStepMatchesDecode develops whole canvases on the host path (HostDecoder)
// and with the host head after the graph decoder (HostHead), twice each: DecodeStep
// (the fused head: statistics per block of logits, no [C, V] array) and the unfused
// reference, Decode's logits followed by the sampler's Step with the same plan. Every
// step's draft, acceptance, argmax and entropies, and the next soft embedding, are
// equal bit for bit, and so are the logits a step hands back when read. The
// vocabulary (1003 words) is not a multiple of any tile and the canvas (150
// positions) spans two blocks of the fused head; E is float32 (packed) or bf16
// (decoded, then packed).
func TestHostStepMatchesDecode(t *testing.T) {
	cfg := tinyConfig()
	cfg.VocabSize = 1003
	for _, storage := range []dtypes.DType{dtypes.Float32, dtypes.BFloat16} {
		for _, mode := range []string{"host", "hosthead"} {
			t.Run(fmt.Sprintf("%s/%s", storage, mode), func(t *testing.T) {
				w, _ := randomModel(t, cfg, 23, storage)
				r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
				if err != nil {
					t.Fatal(err)
				}
				r.HostDecoder, r.HostHead, r.MinCapacity = mode == "host", true, 16
				if r.StepsOnDevice() {
					t.Fatal("a host runner steps on the device")
				}
				testHostStep(t, r, cfg)
			})
		}
	}
}

func testHostStep(t *testing.T, r *Runner, cfg *config.Text) {
	prompt := randTokens(rand.New(rand.NewPCG(5, 6)), 9, cfg.VocabSize)
	if _, err := r.Encode(prompt); err != nil {
		t.Fatal(err)
	}
	const c = 150
	p := sampler.Params{MaxSteps: 12, TMin: 0.3, TMax: 1.2, EntropyBound: 40, ConfidenceThreshold: 0.05, StabilityThreshold: 1}
	fused, err := sampler.New(p, cfg.VocabSize, 99)
	if err != nil {
		t.Fatal(err)
	}
	unfused, _ := sampler.New(p, cfg.VocabSize, 99)
	draft := fused.Canvas([]int{5, 6, 7}, 3, c)
	if again := unfused.Canvas([]int{5, 6, 7}, 3, c); !slices.Equal(again, draft) {
		t.Fatal("two samplers of one seed start other canvases")
	}
	var softFused, softRef *tensors.Tensor
	mixed := false
	for step := 1; ; step++ {
		plan := fused.Plan(step)
		got, nextFused, stepLogits, err := r.DecodeStep(draft, softFused, plan)
		if err != nil {
			t.Fatal(err)
		}
		got = fused.Finish(got, step)
		logits, nextRef, err := r.Decode(draft, softRef, plan.Temperature)
		if err != nil {
			t.Fatal(err)
		}
		want, err := unfused.Step(logits, step)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Draft, want.Draft) || !slices.Equal(got.Accepted, want.Accepted) || !slices.Equal(got.Argmax, want.Argmax) ||
			!slices.Equal(got.Entropy, want.Entropy) || got.Stop != want.Stop {
			t.Fatalf("step %d: the fused step differs from Decode and Step:\nfused   draft %v…\nunfused draft %v…", step, got.Draft[:8], want.Draft[:8])
		}
		if !slices.Equal(tensors.MustCopyFlatData[float32](nextFused), tensors.MustCopyFlatData[float32](nextRef)) {
			t.Fatalf("step %d: the next soft embeddings differ", step)
		}
		if step%3 == 0 || want.Stop {
			l, err := stepLogits.Read()
			if err != nil || !slices.Equal(l, logits) {
				t.Fatalf("step %d: the step's logits, read, differ from Decode's (%v)", step, err)
			}
		} else {
			stepLogits.Free()
		}
		if want.NumAccepted > 3 && want.NumAccepted < c {
			mixed = true
		}
		if want.Stop {
			t.Logf("%d steps; accepted %d of %d at the last", step, want.NumAccepted, c)
			break
		}
		draft, softFused, softRef = want.Draft, nextFused, nextRef
	}
	if !mixed {
		t.Error("no step accepted some positions besides the held ones and rejected others")
	}
	// The host step refuses what the device step refuses, naming the call.
	plan := sampler.Plan{Temperature: 0.5}
	for name, call := range map[string]func() error{
		"a token id out of range": func() error {
			_, _, _, err := r.DecodeStep([]int{cfg.VocabSize}, nil, plan)
			return err
		},
		"more held tokens than the canvas": func() error {
			_, _, _, err := r.DecodeStep(make([]int, 2), nil, sampler.Plan{Temperature: 0.5, Held: make([]int, 3)})
			return err
		},
		"a soft embedding for another canvas": func() error {
			_, _, _, err := r.DecodeStep(make([]int, 4), tensors.FromShape(shapes.Make(dtypes.Float32, 1, 5, cfg.HiddenSize)), plan)
			return err
		},
		"temperature 0": func() error {
			_, _, _, err := r.DecodeStep(make([]int, 4), nil, sampler.Plan{})
			return err
		},
	} {
		if err := call(); err == nil || !strings.HasPrefix(err.Error(), "decode step: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// BenchmarkMiniStep: one denoising step over Darkroom Mini's 256-token canvas after a
// 64-token prompt (miniBenchRunner), as the host path runs it — DecodeStep, the fused
// head — against the unfused Decode followed by the sampler's Step.
func BenchmarkMiniStep(b *testing.B) {
	r, cfg := miniBenchRunner(b)
	canvas, smp := stepBenchSetup(b, r, cfg, 64)
	b.Run("fused", func(b *testing.B) { benchDecodeSteps(b, r, canvas, smp) })
	b.Run("unfused", func(b *testing.B) {
		for range b.N {
			logits, _, err := r.Decode(canvas, nil, smp.Temperature(1))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := smp.Step(logits, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMini2Step: one denoising step at Darkroom Mini 2's shape (hidden 192,
// 12 layers — 5 sliding to 1 full, twice — 6 heads sharing 2 K/V heads, 8 experts
// top-2; random float32 weights), a 256-token canvas after a 24-token prompt, as
// the host path runs it: the built-in model's step without its bf16 decoding
// (BenchmarkMiniStep's model is the first Mini's, a tenth of the work).
func BenchmarkMini2Step(b *testing.B) {
	cfg := benchConfig()
	cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.NumGlobalKVHeads = 192, 12, 6, 2, 2
	cfg.IntermediateSize, cfg.MoEIntermediateSize, cfg.NumExperts = 384, 192, 8
	s, f := config.SlidingAttention, config.FullAttention
	cfg.LayerTypes = []config.LayerType{s, s, s, s, s, f, s, s, s, s, s, f}
	r, cfg := randomRunner(b, cfg)
	canvas, smp := stepBenchSetup(b, r, cfg, 24)
	b.ResetTimer()
	benchDecodeSteps(b, r, canvas, smp)
}

// stepBenchSetup encodes a random prompt of promptLen tokens and returns a
// random 256-token canvas and a sampler ready for its first step.
func stepBenchSetup(b *testing.B, r *Runner, cfg *config.Text, promptLen int) ([]int, *sampler.Sampler) {
	rng := rand.New(rand.NewPCG(3, 3))
	prompt, canvas := randTokens(rng, promptLen, cfg.VocabSize), randTokens(rng, 256, cfg.VocabSize)
	if _, err := r.Encode(prompt); err != nil {
		b.Fatal(err)
	}
	p := sampler.Params{MaxSteps: 48, TMin: 0.4, TMax: 0.9, EntropyBound: 30, ConfidenceThreshold: 0.01, StabilityThreshold: 1}
	smp, err := sampler.New(p, cfg.VocabSize, 1)
	if err != nil {
		b.Fatal(err)
	}
	smp.Canvas(nil, 0, len(canvas))
	return canvas, smp
}

// benchDecodeSteps runs b.N fused denoising steps (DecodeStep) over canvas.
func benchDecodeSteps(b *testing.B, r *Runner, canvas []int, smp *sampler.Sampler) {
	for range b.N {
		_, _, l, err := r.DecodeStep(canvas, nil, smp.Plan(1))
		if err != nil {
			b.Fatal(err)
		}
		l.Free()
	}
}
