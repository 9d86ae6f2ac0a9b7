package sampler

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// refTruncated is top-k and top-p sampling written plainly: every id sorted by
// its tempered probability (ties: the lower id), the first k kept, then the
// fewest whose probability reaches p of what is left, and the inverse CDF of
// u over them.
func refTruncated(logits []float32, temperature float64, k int, p, u float64) int {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v)/temperature)
	}
	q := make([]float64, len(logits))
	var ids []int
	for j, v := range logits {
		if q[j] = math.Exp(float64(v)/temperature - mx); q[j] > 0 {
			ids = append(ids, j)
		}
	}
	sort.SliceStable(ids, func(a, b int) bool { return q[ids[a]] > q[ids[b]] })
	if k > 0 && k < len(ids) {
		ids = ids[:k]
	}
	var mass float64
	for _, id := range ids {
		mass += q[id]
	}
	if p > 0 && p < 1 {
		cum := 0.0
		for i, id := range ids {
			if cum += q[id]; cum >= p*mass {
				ids = ids[:i+1]
				break
			}
		}
		mass = 0
		for _, id := range ids {
			mass += q[id]
		}
	}
	cum := 0.0
	for _, id := range ids {
		if cum += q[id]; cum > u*mass {
			return id
		}
	}
	return ids[len(ids)-1]
}

// TestTruncatedDraw holds the host's top-k/top-p draw, which sorts only the
// ids that can matter, to the plain one over peaked and flat rows, ties and
// banished ids, and checks that it truncates: a draw never leaves the k
// likeliest, nor the nucleus.
func TestTruncatedDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	s, err := New(defaults(), 4096, 1)
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 400 {
		v := []int{7, 300, 4096}[trial%3]
		logits := make([]float32, v)
		spread := []float64{0.5, 3, 12}[rng.IntN(3)]
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * spread)
		}
		if v > 10 {
			logits[1], logits[5] = logits[3], logits[3] // ties
			logits[2] = Banish
		}
		k := []int{0, 1, 5, 64, v + 3}[rng.IntN(5)]
		p := []float64{0, 0.1, 0.5, 0.9, 0.95, 1}[rng.IntN(6)]
		if k == 0 && (p == 0 || p == 1) {
			k = 40 // (truncate something)
		}
		temperature := []float64{0.3, 1, 1.7}[rng.IntN(3)]
		for range 5 {
			u := rng.Float64()
			plan := TokenPlan{Temperature: temperature, TopK: k, TopP: p, Penalty: 1}
			got, want := s.drawTruncated(logits, plan, u), refTruncated(logits, temperature, k, p, u)
			if got != want {
				t.Fatalf("vocab %d k %d p %g T %g u %g: drew %d, the plain draw %d", v, k, p, temperature, u, got, want)
			}
			if got == 2 && v > 10 {
				t.Fatalf("drew the banished id")
			}
		}
	}
	// k = 1 is the argmax; a tiny p is too.
	logits := []float32{0.5, 2, 1.9, -1}
	for _, plan := range []TokenPlan{{Temperature: 1, TopK: 1}, {Temperature: 1, TopP: 1e-6}} {
		for _, u := range []float64{0, 0.5, 0.999} {
			if got := s.drawTruncated(logits, plan, u); got != 1 {
				t.Errorf("%+v u %g: %d, want the argmax 1", plan, u, got)
			}
		}
	}
	if !(TokenPlan{Temperature: 1, TopP: 0.9}).Truncates() || (TokenPlan{Temperature: 0, TopK: 5}).Truncates() ||
		(TokenPlan{Temperature: 1, TopP: 1}).Truncates() {
		t.Error("Truncates: greedy picks and p = 1 do not truncate; p = 0.9 does")
	}
}

// BenchmarkTruncatedDraw prices a top-k and a top-p draw over a 262,144-id row.
func BenchmarkTruncatedDraw(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	logits := make([]float32, 262144)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 4)
	}
	s, _ := New(defaults(), len(logits), 1)
	for _, plan := range []TokenPlan{{Temperature: 1, TopK: 64}, {Temperature: 1, TopP: 0.95}, {Temperature: 1, TopK: 64, TopP: 0.95}} {
		b.Run(map[bool]string{true: "top-k", false: "top-p"}[plan.TopP == 0]+map[bool]string{true: "+p", false: ""}[plan.TopK > 0 && plan.TopP > 0], func(b *testing.B) {
			for b.Loop() {
				s.drawTruncated(logits, plan, 0.5)
			}
		})
	}
}
