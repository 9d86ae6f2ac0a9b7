package sampler

import (
	"math"
	"testing"
)

// TestKeysAreDistinctAndUniform: every coordinate of a key changes it, and a key's
// draws are uniform (ids over a small vocabulary, floats' mean and range).
func TestKeysAreDistinctAndUniform(t *testing.T) {
	base := NewRNG(9).Key(2, 3, streamSample)
	for name, k := range map[string]Key{
		"seed": NewRNG(10).Key(2, 3, streamSample), "counter": NewRNG(9).Key(3, 3, streamSample),
		"step": NewRNG(9).Key(2, 4, streamSample), "stream": NewRNG(9).Key(2, 3, streamNoise),
	} {
		if k == base {
			t.Errorf("another %s gives the same key %v", name, k)
		}
	}
	const n, vocab = 100000, 10
	counts := make([]int, vocab)
	var sum float64
	for i := range n {
		counts[base.IntN(i, vocab)]++
		u := base.Float64(i)
		if u < 0 || u >= 1 {
			t.Fatalf("Float64(%d) = %v outside [0, 1)", i, u)
		}
		sum += u
	}
	for id, c := range counts {
		if math.Abs(float64(c)-n/vocab) > 5*math.Sqrt(n/vocab) { // 5σ
			t.Errorf("id %d drawn %d times of %d, want about %d", id, c, n, n/vocab)
		}
	}
	if mean := sum / n; math.Abs(mean-0.5) > 0.005 {
		t.Errorf("mean uniform draw %v", mean)
	}
}
