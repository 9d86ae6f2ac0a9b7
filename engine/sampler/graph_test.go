package sampler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// graphStep runs StepGraph on the go backend over logits [c·v] with plan.
func graphStep(t *testing.T, logits []float32, c, v int, plan Plan) StepResult {
	t.Helper()
	b, err := backends.NewWithConfig("go:ops_sequential") // as engine/backend runs it: simplego's parallel ops race and can deadlock
	if err != nil {
		t.Fatal(err)
	}
	held := make([]int32, c)
	for i := range held {
		held[i] = -1
		if i < len(plan.Held) {
			held[i] = int32(plan.Held[i])
		}
	}
	exec, err := NewExec(b, func(l, temp, keys, held, bound *Node) []*Node {
		d, a, e, am := StepGraph(l, temp, keys, held, bound)
		return []*Node{d, a, e, am}
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec(tensors.FromFlatDataAndDimensions(logits, c, v), plan.Temperature,
		tensors.FromFlatDataAndDimensions(plan.Keys[:], 4), tensors.FromFlatDataAndDimensions(held, c),
		plan.EntropyBound)
	if err != nil {
		t.Fatal(err)
	}
	toInts := func(x []int32) []int {
		r := make([]int, len(x))
		for i, id := range x {
			r[i] = int(id)
		}
		return r
	}
	return StepResult{Draft: toInts(tensors.MustCopyFlatData[int32](out[0])), Accepted: tensors.MustCopyFlatData[bool](out[1]),
		Entropy: tensors.MustCopyFlatData[float32](out[2]), Argmax: toInts(tensors.MustCopyFlatData[int32](out[3]))}
}

// TestStepGraphMatchesStep holds the in-graph step to the host's Step on the same
// logits and plan: the same draft (samples and noise), acceptance and argmax, the
// entropies to float32 rounding; over several steps, vocabularies that fill the
// CDF's blocks exactly or not, sharp and nearly uniform rows, held positions.
func TestStepGraphMatchesStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		c, v    int
		hold    int
		scale   float64
		bound   float64
		accepts bool // some step accepts more than one position and rejects another
	}{
		{"padded blocks", 24, 300, 2, 4, 1.5, true},
		{"one block", 8, 16, 0, 2, 0.5, true},
		{"exact blocks", 16, 256, 3, 8, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := defaults()
			p.EntropyBound = tc.bound
			s, err := New(p, tc.v, 42)
			if err != nil {
				t.Fatal(err)
			}
			given := []int{5, 7, 11}
			s.Canvas(given, tc.hold, tc.c)
			rng := rand.New(rand.NewPCG(1, 2))
			mixed := false
			for step := 1; step <= 4; step++ {
				logits := make([]float32, tc.c*tc.v)
				for i := range tc.c {
					sharp := float64(i%4) * tc.scale // row 0 of each four nearly uniform
					for j := range tc.v {
						logits[i*tc.v+j] = float32(rng.NormFloat64() * (0.1 + sharp))
					}
				}
				logits[3] = logits[4] // a tie for argmax in row 0
				plan := s.Plan(step)
				got := graphStep(t, logits, tc.c, tc.v, plan)
				want, err := s.Step(logits, step)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Draft, want.Draft) || !slices.Equal(got.Accepted, want.Accepted) ||
					!slices.Equal(got.Argmax, want.Argmax) {
					t.Fatalf("step %d:\ngraph draft %v accepted %v argmax %v\nhost  draft %v accepted %v argmax %v",
						step, got.Draft, got.Accepted, got.Argmax, want.Draft, want.Accepted, want.Argmax)
				}
				for i := range want.Entropy {
					if d := math.Abs(float64(got.Entropy[i] - want.Entropy[i])); d > 1e-5*(1+float64(want.Entropy[i])) {
						t.Errorf("step %d position %d: entropy %v, host %v", step, i, got.Entropy[i], want.Entropy[i])
					}
				}
				if n := want.NumAccepted; n > 1 && n < tc.c {
					mixed = true
				}
			}
			if tc.accepts && !mixed {
				t.Error("no step both accepted several positions and rejected some: the test does not exercise acceptance")
			}
		})
	}
}

// TestKeyHashInGraph checks the graph's hash, uniform and id draws against Key's for
// many keys and positions (every bit of the uint32 arithmetic).
func TestKeyHashInGraph(t *testing.T) {
	b, err := backends.NewWithConfig("go:ops_sequential") // as engine/backend runs it: simplego's parallel ops race and can deadlock
	if err != nil {
		t.Fatal(err)
	}
	const n, vocab = 1000, 262144 + 7
	exec, err := NewExec(b, func(keys *Node) []*Node {
		pos := Iota(keys.Graph(), shapes.Make(dtypes.Uint32, n), 0)
		h := hashGraph(pos, keyElem(keys, 0), keyElem(keys, 1))
		return []*Node{h, intNGraph(h, vocab)}
	})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(5) {
		k := NewRNG(seed).Key(int(seed)*3, 7, streamNoise)
		out, err := exec.Exec(tensors.FromFlatDataAndDimensions([]uint32{k.K1, k.K2, 0, 0}, 4))
		if err != nil {
			t.Fatal(err)
		}
		h, ids := tensors.MustCopyFlatData[uint32](out[0]), tensors.MustCopyFlatData[int32](out[1])
		for i := range n {
			if h[i] != k.Uint32(i) || int(ids[i]) != k.IntN(i, vocab) {
				t.Fatalf("seed %d position %d: graph %d/%d, host %d/%d", seed, i, h[i], ids[i], k.Uint32(i), k.IntN(i, vocab))
			}
		}
	}
}

// TestTokenGraphMatchesToken holds the in-graph AR pick to the host's Token on the
// same logits and plans: greedy (with a tie for the max, which goes to the lowest
// id) and draws at several temperatures over vocabularies that fill the CDF's
// blocks exactly or not, so that over the draws both the argmax and other ids come
// out; without the repetition penalty and with it (θ = 1.3 over the ids picked so
// far, as the engine's AR loop sees them), where the greedy picks must move off the
// unpenalized argmax at least once; and with the frequency penalty over the
// picked ids too.
func TestTokenGraphMatchesToken(t *testing.T) {
	b, err := backends.NewWithConfig("go:ops_sequential") // as engine/backend runs it: simplego's parallel ops race and can deadlock
	if err != nil {
		t.Fatal(err)
	}
	exec, err := NewExec(b, func(in []*Node) *Node { // logits, temperature, key, penalty, seen, bias, banned
		return TokenGraph(in[0], in[1], in[2], in[3], in[4], in[5], in[6])
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		penalty   float64
		stutters  bool
		frequency float64
		presence  float64
	}{{0, false, 0, 0}, {1.3, false, 0, 0}, {0, true, 0, 0}, {1.3, false, 0.7, 0}, {0, false, 0, 0.9}, {1.3, false, 0.7, 0.9}} {
		penalty := tc.penalty
		p := defaults()
		p.RepetitionPenalty = penalty
		p.FrequencyPenalty, p.PresencePenalty = tc.frequency, tc.presence
		for _, v := range []int{300, 256, 7} {
			s, err := New(p, v, 9)
			if err != nil {
				t.Fatal(err)
			}
			if tc.stutters { // words of three ids; every fifth id is punctuation, every seventh spaces
				word := make([]int, v)
				for id := range word {
					word[id] = id / 3
					if id%5 == 4 {
						word[id] = -1
					} else if id%7 == 6 {
						word[id] = Space
					}
				}
				if err := s.NoStutters(word); err != nil {
					t.Fatal(err)
				}
			}
			prev := -1
			var evens []int // half the vocabulary seen, so that greedy argmaxes are hit
			for id := 0; id < v; id += 2 {
				evens = append(evens, id)
			}
			s.See(evens)
			s.Picked(evens[:len(evens)/2]...) // the frequency penalty's counts, where on
			rng := rand.New(rand.NewPCG(3, uint64(v)))
			notArgmax, moved := 0, 0
			for k := range 40 {
				logits := make([]float32, v)
				for j := range logits {
					logits[j] = float32(rng.NormFloat64() * 2)
				}
				am := Argmax(logits)
				logits[max(am-1, 0)] = logits[am] // a tie: the lowest id wins
				if tc.stutters && prev >= 0 && k%2 == 0 {
					logits[prev] = logits[am] + 1 // the previous word, on top: banned
				}
				temperature := []float64{0, 0.4, 1, 2.5}[k%4]
				plan := s.PlanToken(temperature)
				seen := plan.Seen
				if seen == nil {
					seen = make([]bool, v)
				}
				banned := plan.Banned
				if banned == nil {
					banned = make([]bool, v)
				}
				bias := plan.Bias
				if bias == nil {
					bias = make([]float32, v)
				}
				out, err := exec.Exec(tensors.FromFlatDataAndDimensions(logits, v), plan.Temperature,
					tensors.FromFlatDataAndDimensions([]uint32{plan.Key.K1, plan.Key.K2}, 2), plan.Penalty,
					tensors.FromFlatDataAndDimensions(seen, v), tensors.FromFlatDataAndDimensions(bias, v),
					tensors.FromFlatDataAndDimensions(banned, v))
				if err != nil {
					t.Fatal(err)
				}
				got, want := int(tensors.ToScalar[int32](out[0])), s.PickToken(logits, plan)
				if got != want {
					t.Fatalf("θ=%g vocab %d, pick %d at T=%g: graph %d, host %d", penalty, v, k, temperature, got, want)
				}
				if want != Argmax(logits) {
					notArgmax++
					if temperature == 0 {
						moved++
					}
				}
				if tc.stutters && plan.Banned != nil && plan.Banned[want] {
					t.Fatalf("vocab %d, pick %d: %d spells the word of the id before it", v, k, want)
				}
				s.See([]int{want})
				s.Picked(want)
				prev = want
			}
			if notArgmax == 0 {
				t.Errorf("θ=%g vocab %d: every pick was the argmax: the test does not exercise the draw", penalty, v)
			}
			if (moved > 0) != (penalty > 1 || tc.stutters || tc.frequency != 0 || tc.presence != 0) {
				t.Errorf("θ=%g stutters %v α=%g β=%g vocab %d: %d greedy picks were not the argmax, want some only with a penalty or the stutter rule",
					penalty, tc.stutters, tc.frequency, tc.presence, v, moved)
			}
		}
	}
}

// TestTokenIsPlanThenPick: Token draws what PickToken draws from PlanToken's plans,
// the counter advancing per draw and not per greedy pick.
func TestTokenIsPlanThenPick(t *testing.T) {
	a, _ := New(defaults(), 50, 4)
	b, _ := New(defaults(), 50, 4)
	rng := rand.New(rand.NewPCG(5, 6))
	for k := range 30 {
		logits := make([]float32, 50)
		for j := range logits {
			logits[j] = float32(rng.NormFloat64())
		}
		temperature := float64(k%3) * 0.7 // greedy every third
		if got, want := a.Token(logits, temperature), b.PickToken(logits, b.PlanToken(temperature)); got != want {
			t.Fatalf("pick %d: Token %d, PickToken(PlanToken) %d", k, got, want)
		}
	}
	if p := a.PlanToken(0); p.Temperature != 0 || p.Key != (Key{}) || p.Penalty != 1 || p.Seen != nil {
		t.Errorf("greedy plan without a penalty %+v, want no draw, θ = 1 and no seen ids", p)
	}
}
