package sampler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveRound is Guide.Round written from its definition in float64 with math.Exp.
func naiveRound(a []int, dec, ar []float32, vocab int, lambda float64, frozen []bool, from, to int) []int {
	logSoftmax := func(row []float32) []float64 {
		m := math.Inf(-1)
		for _, x := range row {
			m = math.Max(m, float64(x))
		}
		var s float64
		for _, x := range row {
			s += math.Exp(float64(x) - m)
		}
		out := make([]float64, len(row))
		for j, x := range row {
			out[j] = float64(x) - m - math.Log(s)
		}
		return out
	}
	out := slices.Clone(a)
	for i := from; i < to; i++ {
		if i > 0 && out[i-1] != a[i-1] || frozen[a[i]] {
			continue
		}
		d, r := logSoftmax(dec[i*vocab:(i+1)*vocab]), logSoftmax(ar[i*vocab:(i+1)*vocab])
		best, bi := math.Inf(-1), a[i]
		for j := range vocab {
			if frozen[j] {
				continue
			}
			if s := d[j] + lambda*r[j]; s > best {
				best, bi = s, j
			}
		}
		out[i] = bi
	}
	return out
}

func TestGuideRoundMatchesNaive(t *testing.T) {
	const vocab, c = 64, 40
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 20 {
		dec := make([]float32, c*vocab)
		ar := make([]float32, c*vocab)
		for i := range dec {
			dec[i] = float32(rng.NormFloat64() * 3)
			ar[i] = float32(rng.NormFloat64() * 3)
		}
		frozen := make([]bool, vocab)
		for j := range frozen {
			frozen[j] = j%9 == 0
		}
		a := make([]int, c)
		for i := range a {
			a[i] = Argmax(dec[i*vocab : (i+1)*vocab])
		}
		lambda := 0.5 + float64(trial)/5
		from, to := trial%3, c-trial%4
		g, err := NewGuide(dec, vocab, lambda, frozen)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		got, changed, err := g.Round(a, from, to, func(i int) []float32 {
			calls++
			if i < from || i >= to {
				t.Fatalf("causal row of position %d read outside [%d, %d)", i, from, to)
			}
			return ar[i*vocab : (i+1)*vocab]
		})
		if err != nil {
			t.Fatal(err)
		}
		want := naiveRound(a, dec, ar, vocab, lambda, frozen, from, to)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (λ %g):\n got %v\nwant %v", trial, lambda, got, want)
		}
		n := 0
		for i := range a {
			if got[i] != a[i] {
				n++
				if frozen[got[i]] || frozen[a[i]] {
					t.Errorf("trial %d: position %d moved %d → %d across the frozen set", trial, i, a[i], got[i])
				}
				if i > 0 && got[i-1] != a[i-1] {
					t.Errorf("trial %d: positions %d and %d both moved in one round", trial, i-1, i)
				}
			}
		}
		if n != changed || n == 0 {
			t.Errorf("trial %d: %d positions changed, reported %d (want some)", trial, n, changed)
		}
		if calls == 0 || calls > to-from {
			t.Errorf("trial %d: %d causal rows read for %d positions", trial, calls, to-from)
		}
	}
}

func TestGuideAgreeingHeadsChangeNothing(t *testing.T) {
	// Where the causal head agrees with the decoder's argmax, no weight moves it.
	const vocab, c = 16, 8
	dec := make([]float32, c*vocab)
	a := make([]int, c)
	for i := range a {
		a[i] = (i * 5) % vocab
		dec[i*vocab+a[i]] = 4
	}
	for _, lambda := range []float64{0.1, 1, 10} {
		g, err := NewGuide(dec, vocab, lambda, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, changed, err := g.Round(a, 0, c, func(i int) []float32 { return dec[i*vocab : (i+1)*vocab] })
		if err != nil || changed != 0 || !slices.Equal(got, a) {
			t.Errorf("λ %g: %v, %d changed, err %v", lambda, got, changed, err)
		}
	}
}

func TestGuideRejectsBadInput(t *testing.T) {
	dec := make([]float32, 4*8)
	for _, tc := range []struct {
		name   string
		dec    []float32
		vocab  int
		lambda float64
		frozen []bool
	}{
		{"ragged logits", dec[:30], 8, 1, nil},
		{"zero weight", dec, 8, 0, nil},
		{"NaN weight", dec, 8, math.NaN(), nil},
		{"infinite weight", dec, 8, math.Inf(1), nil},
		{"short frozen set", dec, 8, 1, make([]bool, 7)},
	} {
		if _, err := NewGuide(tc.dec, tc.vocab, tc.lambda, tc.frozen); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	g, err := NewGuide(dec, 8, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Round(make([]int, 3), 0, 3, nil); err == nil {
		t.Error("canvas of the wrong length: no error")
	}
	if _, _, err := g.Round(make([]int, 4), 0, 4, func(int) []float32 { return make([]float32, 7) }); err == nil {
		t.Error("short causal row: no error")
	}
}
