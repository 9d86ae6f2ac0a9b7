package sampler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveRound is Guide.Round written from its definition in float64 with math.Exp;
// weight(i) is the causal head's weight at position i.
func naiveRound(a []int, dec, ar []float32, vocab int, weight func(i int) float64, frozen []bool, from, to int) []int {
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
			if s := d[j] + weight(i)*r[j]; s > best {
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
		// Odd trials weigh the causal head 4λ inside words: ids ≡ 1, 2 (mod 3) end
		// a word in a letter, ids ≡ 0, 1 (mod 4) begin with one.
		weight := func(int) float64 { return lambda }
		if trial%2 == 1 {
			ends, conts := make([]bool, vocab), make([]bool, vocab)
			for j := range vocab {
				ends[j], conts[j] = j%3 != 0, j%4 < 2
			}
			if err := g.InWords(4*lambda, a, ends, conts); err != nil {
				t.Fatal(err)
			}
			weight = func(i int) float64 {
				if i > 0 && (ends[a[i-1]] && conts[a[i]] || a[i] == a[i-1]) {
					return 4 * lambda
				}
				return lambda
			}
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
		want := naiveRound(a, dec, ar, vocab, weight, frozen, from, to)
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
	for _, tc := range []struct {
		name       string
		weight     float64
		ends, cont []bool
	}{
		{"NaN in-word weight", math.NaN(), make([]bool, 8), make([]bool, 8)},
		{"infinite in-word weight", math.Inf(1), make([]bool, 8), make([]bool, 8)},
		{"short word table", 2, make([]bool, 8), make([]bool, 5)},
	} {
		if err := g.InWords(tc.weight, make([]int, 4), tc.ends, tc.cont); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if err := g.InWords(2, make([]int, 3), make([]bool, 8), make([]bool, 8)); err == nil {
		t.Error("in-word canvas of the wrong length: no error")
	}
	if err := g.InWords(2, []int{0, 9, 0, 0}, make([]bool, 8), make([]bool, 8)); err == nil {
		t.Error("in-word canvas id outside the vocabulary: no error")
	}
	if _, _, err := g.Round(make([]int, 3), 0, 3, nil); err == nil {
		t.Error("canvas of the wrong length: no error")
	}
	if _, _, err := g.Round(make([]int, 4), 0, 4, func(int) []float32 { return make([]float32, 7) }); err == nil {
		t.Error("short causal row: no error")
	}
}

// guideMovingNothingAtOne is a guide at λ 1 over dec for canvas a, and the
// causal rows of ar; it checks that a round at λ 1 everywhere moves nothing,
// the starting point of the hand-made cases below.
func guideMovingNothingAtOne(t *testing.T, a []int, dec, ar []float32, vocab int) (*Guide, func(int) []float32) {
	t.Helper()
	rows := func(i int) []float32 { return ar[i*vocab : (i+1)*vocab] }
	g, err := NewGuide(dec, vocab, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, n, _ := g.Round(a, 0, len(a), rows); n != 0 {
		t.Errorf("λ 1 everywhere moved %d positions: %v", n, got)
	}
	return g, rows
}

func TestGuideInWordsSpellsWithTheCausalHead(t *testing.T) {
	// ids: 0 " compu" (a word's first piece), 1 "ter" and 2 "gram" (continuations),
	// 3 " the" (a whole word). The decoder wrote " compu" "gram" " the" and prefers
	// its own guesses by 2 nats; the causal head prefers "ter" after " compu" and
	// " compu" at the start, by 1.5 nats. At λ 1 nothing moves; inside words at
	// weight 2, "gram" becomes "ter" and the word starts stay the decoder's.
	const vocab = 4
	a := []int{0, 2, 3}
	dec := []float32{
		2, 0, 0, 0, // " compu"
		0, 0, 2, 0, // "gram"
		0, 0, 0, 2, // " the"
	}
	ar := []float32{
		0, 0, 0, 1.5, // the causal head would start with " the"
		0, 1.5, 0, 0, // "ter" after " compu"
		1.5, 0, 0, 0, // " compu" after it
	}
	ends := []bool{true, true, true, true}
	conts := []bool{false, true, true, false}
	g, rows := guideMovingNothingAtOne(t, a, dec, ar, vocab)
	if err := g.InWords(2, a, ends, conts); err != nil {
		t.Fatal(err)
	}
	got, n, err := g.Round(a, 0, 3, rows)
	if err != nil || n != 1 || !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("in-word weight 2: %v, %d moved, err %v; want [0 1 3], 1", got, n, err)
	}
	// The positions are the developed canvas's: after the move, 1 holds "ter"
	// and is still inside the word; the next round keeps it.
	if again, n, _ := g.Round(got, 0, 3, rows); n != 0 || !slices.Equal(again, got) {
		t.Errorf("second round moved %d positions: %v", n, again)
	}
	if err := g.InWords(0, a, ends, conts); err != nil { // off again
		t.Fatal(err)
	}
	if _, n, _ := g.Round(a, 0, 3, rows); n != 0 {
		t.Errorf("in-word weight off moved %d positions", n)
	}
}

// TestGuideRepeatedWordGoesToTheCausalHead: the decoder wrote a word twice side
// by side (" anything else else"); at the repeat the causal head weighs as it
// does inside a word, and there only.
func TestGuideRepeatedWordGoesToTheCausalHead(t *testing.T) {
	// ids: 0 " else", 1 " anything", 2 " it" — whole words, none continues one.
	const vocab = 3
	a := []int{1, 0, 0}
	dec := []float32{
		0, 2, 0, // " anything"
		2, 0, 0, // " else"
		2, 0, 0, // " else" again
	}
	ar := []float32{
		0, 2, 0, // " anything" at the start
		0, 0, 1.5, // the causal head would go on with " it" after " anything"…
		0, 0, 1.5, // …and after " anything else"
	}
	g, rows := guideMovingNothingAtOne(t, a, dec, ar, vocab)
	if err := g.InWords(2, a, []bool{true, true, true}, make([]bool, vocab)); err != nil {
		t.Fatal(err)
	}
	got, n, err := g.Round(a, 0, 3, rows)
	if err != nil || n != 1 || !slices.Equal(got, []int{1, 0, 2}) {
		t.Errorf("repeat at weight 2: %v, %d moved, err %v; want [1 0 2] (\" anything else it\"), 1", got, n, err)
	}
}

// TestGuideNoStutters: a decoder sure of the same word at two neighbouring
// positions, and a causal head that does not object, keep it twice without
// NoStutters; with it the second position takes its next-best piece that spells
// another word — not the same word with a leading space or in capitals (ids 3
// and 4 spell id 2's word), nor across a space — while digits (word −1) may
// repeat.
func TestGuideNoStutters(t *testing.T) {
	const vocab = 8
	row := func(best ...int) []float32 { // logits falling in the order given
		r := make([]float32, vocab)
		for j := range r {
			r[j] = -10
		}
		for k, j := range best {
			r[j] = float32(5 - k)
		}
		return r
	}
	// Canvas: 1 2 2 6 6 1 0 1; id 6 is a digit and id 0 a space (Space).
	a := []int{1, 2, 2, 6, 6, 1, 0, 1}
	dec := slices.Concat(row(1), row(2), row(2, 3, 4, 5), row(6), row(6, 7), row(1), row(0), row(1, 4))
	flat := make([]float32, vocab)
	ar := func(int) []float32 { return flat }
	word := []int{Space, 0, 1, 1, 1, 2, -1, 3}
	for _, on := range []bool{false, true} {
		g, err := NewGuide(dec, vocab, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if on {
			if err := g.NoStutters(word); err != nil {
				t.Fatal(err)
			}
		}
		out, _, err := g.Round(a, 0, len(a), ar)
		if err != nil {
			t.Fatal(err)
		}
		want := a
		if on {
			want = []int{1, 2, 5, 6, 6, 1, 0, 4} // 7 looks past the space to 5's word
		}
		if !slices.Equal(out, want) {
			t.Errorf("NoStutters %v: %v, want %v", on, out, want)
		}
	}
	g, _ := NewGuide(dec, vocab, 1, nil)
	if err := g.NoStutters(make([]int, vocab-1)); err == nil {
		t.Error("a word table of the wrong size: no error")
	}
}
