package sampler

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestLogProbs holds LogProbs to a plain reference: log softmax in float64 over
// the whole row, and the ids sorted by logit (ties by id).
func TestLogProbs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 4096, 262144} {
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 8)
		}
		if n > 10 {
			logits[3], logits[9] = 40, 40 // a tie at the top: the lower id first
		}
		var sum float64
		for _, v := range logits {
			sum += math.Exp(float64(v) - 40)
		}
		lse := 40 + math.Log(sum)
		if n < 10 {
			lse = logSumExpRef(logits)
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
		for _, top := range []int{0, 1, 5, 20} {
			id := rng.IntN(n)
			lp, ids, lps := LogProbs(logits, id, top)
			if want := float64(logits[id]) - lse; math.Abs(float64(lp)-want) > 1e-4 {
				t.Errorf("n %d: logprob of %d = %g, want %g", n, id, lp, want)
			}
			if len(ids) != min(top, n) || len(lps) != len(ids) {
				t.Fatalf("n %d top %d: %d ids, %d logprobs", n, top, len(ids), len(lps))
			}
			for k := range ids {
				if ids[k] != order[k] || math.Abs(float64(lps[k])-(float64(logits[order[k]])-lse)) > 1e-4 {
					t.Errorf("n %d top %d: #%d is %d (%g), want %d (%g)", n, top, k, ids[k], lps[k], order[k], float64(logits[order[k]])-lse)
				}
			}
		}
	}
	// A distribution with one sure token: its logprob is 0, the others' far below.
	lp, ids, lps := LogProbs([]float32{Banish, 30, -30, float32(math.NaN())}, 1, 4)
	if lp != 0 || len(ids) != 3 || ids[0] != 1 || lps[0] != 0 || ids[1] != 2 || lps[1] > -59 || ids[2] != 0 || lps[2] != MinLogProb {
		t.Errorf("sure token: %g %v %v", lp, ids, lps)
	}
	if lp, _, _ := LogProbs([]float32{1, 2}, 5, 0); lp != MinLogProb {
		t.Errorf("an id outside the row: %g", lp)
	}
	if lp, _, _ := LogProbs([]float32{1, float32(math.NaN())}, 1, 0); lp != MinLogProb {
		t.Errorf("a logit that is not a number: %g", lp)
	}
}

func logSumExpRef(x []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}

// TestPresenceAndFrequencyBias: after picks, an id's bias is OpenAI's
// −α·count − β·[count > 0]: the presence penalty once, the frequency penalty
// per pick.
func TestPresenceAndFrequencyBias(t *testing.T) {
	for _, c := range []struct{ α, β float64 }{{0, 0.5}, {0.25, 0}, {0.25, 0.5}} {
		p := defaults()
		p.FrequencyPenalty, p.PresencePenalty = c.α, c.β
		s, err := New(p, 10, 1)
		if err != nil {
			t.Fatal(err)
		}
		s.Picked(3, 3, 3, 7)
		bias := s.PlanToken(0).Bias
		for id, want := range map[int]float64{3: -3*c.α - c.β, 7: -c.α - c.β, 5: 0} {
			if math.Abs(float64(bias[id])-want) > 1e-6 {
				t.Errorf("α %g β %g: id %d bias %g, want %g", c.α, c.β, id, bias[id], want)
			}
		}
	}
	// A logit bias is there from the first pick, and stays beside the penalties.
	p := defaults()
	p.FrequencyPenalty, p.PresencePenalty, p.LogitBias = 0.25, 0.5, map[int]float32{3: 2, 9: -100}
	s, err := New(p, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if bias := s.PlanToken(0).Bias; bias == nil || bias[3] != 2 || bias[9] != -100 || bias[4] != 0 {
		t.Errorf("before any pick: %v", bias)
	}
	s.Picked(3, 3)
	if bias := s.PlanToken(0).Bias; math.Abs(float64(bias[3])-(2-0.5-0.5)) > 1e-6 || bias[9] != -100 {
		t.Errorf("after two picks of 3: %v", bias)
	}
	for _, bad := range []Params{{PresencePenalty: math.Inf(1)}, {LogitBias: map[int]float32{1: float32(math.NaN())}}} {
		q := defaults()
		q.PresencePenalty, q.LogitBias = bad.PresencePenalty, bad.LogitBias
		if _, err := New(q, 10, 1); err == nil {
			t.Errorf("%+v was taken", bad)
		}
	}
	q := defaults()
	q.LogitBias = map[int]float32{10: 1}
	if _, err := New(q, 10, 1); err == nil {
		t.Error("a logit bias outside the vocabulary was taken")
	}
}
