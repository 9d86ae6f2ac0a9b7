package sampler

import (
	"math"
	"slices"
)

// Truncated sampling for the AR mode's pick: top-k and top-p (nucleus), in
// Hugging Face's order — the temperature first, then the k likeliest ids,
// then of those the fewest likeliest whose probability reaches p — and a draw
// from what is left, renormalized. The device's pick (TokenGraph) has none of
// it: a plan that truncates is picked on the host (TokenPlan.Truncates).

// drawTruncated is PickToken's draw where plan truncates: logits are the row
// after the penalties, the bias and the bans; u the draw in [0, 1).
//
// Only the ids that can be in the nucleus are sorted: with q_j = exp(z_j − max
// z) and s = Σ q_j, the ids with q_j < (1−p)·s/V hold less than (1−p)·s
// together, so the likeliest ids reach p·s before any of them. Probabilities
// are float64; ties go to the lower id.
func (s *Sampler) drawTruncated(logits []float32, plan TokenPlan, u float64) int {
	inv := 1 / plan.Temperature
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v)*inv)
	}
	if cap(s.q) < len(logits) {
		s.q = make([]float64, len(logits))
	}
	q := s.q[:len(logits)]
	var total float64
	for j, v := range logits {
		q[j] = math.Exp(float64(v)*inv - mx)
		total += q[j]
	}
	p := plan.TopP
	if !(p > 0 && p < 1) {
		p = 1
	}
	// likelier orders ids by probability, then the lower id first.
	likelier := func(a, b int32) int {
		switch {
		case q[a] > q[b]:
			return -1
		case q[a] < q[b]:
			return 1
		}
		return int(a - b)
	}
	// The candidates: the k likeliest (a heap of the k best so far, its root
	// the worst of them), or those that can be in the nucleus.
	ids := s.order[:0]
	if k := plan.TopK; k > 0 {
		for j, w := range q {
			if w <= 0 {
				continue
			}
			if len(ids) < k {
				ids = append(ids, int32(j))
				heapUp(ids, len(ids)-1, likelier)
			} else if likelier(int32(j), ids[0]) < 0 {
				ids[0] = int32(j)
				heapDown(ids, 0, likelier)
			}
		}
	} else {
		floor := 0.0
		if p < 1 {
			floor = (1 - p) * total / float64(len(q))
		}
		for j, w := range q {
			if w >= floor && w > 0 {
				ids = append(ids, int32(j))
			}
		}
	}
	slices.SortFunc(ids, likelier)
	s.order = ids
	if len(ids) == 0 {
		return Argmax(logits)
	}
	mass := total // of what is left: all ids, or the k likeliest
	if plan.TopK > 0 {
		mass = 0
		for _, id := range ids {
			mass += q[id]
		}
	}
	// The nucleus: the fewest ids whose probability (of what is left) reaches p.
	n, cum := len(ids), 0.0
	if p < 1 {
		for i, id := range ids {
			if cum += q[id]; cum >= p*mass {
				n = i + 1
				break
			}
		}
		mass = 0
		for _, id := range ids[:n] {
			mass += q[id]
		}
	}
	target, cum := u*mass, 0.0
	for _, id := range ids[:n] {
		if cum += q[id]; cum > target {
			return int(id)
		}
	}
	return int(ids[n-1])
}

// heapUp and heapDown keep ids a heap whose root is the least likely
// (cmp(a, b) < 0: a is likelier).
func heapUp(ids []int32, i int, cmp func(a, b int32) int) {
	for i > 0 {
		parent := (i - 1) / 2
		if cmp(ids[parent], ids[i]) >= 0 { // the parent is no likelier: in place
			return
		}
		ids[parent], ids[i] = ids[i], ids[parent]
		i = parent
	}
}

func heapDown(ids []int32, i int, cmp func(a, b int32) int) {
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(ids) && cmp(ids[l], ids[worst]) > 0 {
			worst = l
		}
		if r < len(ids) && cmp(ids[r], ids[worst]) > 0 {
			worst = r
		}
		if worst == i {
			return
		}
		ids[i], ids[worst] = ids[worst], ids[i]
		i = worst
	}
}
