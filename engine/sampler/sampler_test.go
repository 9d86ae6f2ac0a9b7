package sampler

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func defaults() Params {
	return Params{MaxSteps: 48, TMin: 0.4, TMax: 0.8, EntropyBound: 0.1, ConfidenceThreshold: 0.005, StabilityThreshold: 1}
}

func TestTemperatureSchedule(t *testing.T) {
	p := defaults()
	cases := []struct {
		step int
		want float64
	}{
		{1, 0.8},                 // r = N: t_max
		{48, 0.4 + 0.4/48},       // r = 1: ≈ 0.408, never t_min itself
		{25, 0.4 + 0.4*24.0/48},  // r = 24
		{2, 0.4 + 0.4*47.0/48.0}, // decreasing
	}
	for _, c := range cases {
		if got := Temperature(p, c.step); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Temperature(step %d) = %v, want %v", c.step, got, c.want)
		}
	}
	for s := 2; s <= p.MaxSteps; s++ {
		if Temperature(p, s) >= Temperature(p, s-1) {
			t.Fatalf("schedule not decreasing at step %d", s)
		}
	}
}

// entropy of softmax(logits/T) by the textbook formula, float64.
func refEntropy(row []float64, temp float64) float64 {
	m := math.Inf(-1)
	for _, x := range row {
		m = math.Max(m, x/temp)
	}
	var s float64
	for _, x := range row {
		s += math.Exp(x/temp - m)
	}
	var h float64
	for _, x := range row {
		p := math.Exp(x/temp-m) / s
		if p > 0 {
			h -= p * math.Log(p)
		}
	}
	return h
}

func TestTemperedEntropyAndArgmax(t *testing.T) {
	cases := []struct {
		name    string
		row     []float32
		temp    float64
		argmax  int
		entropy float64 // <0: compare with refEntropy
	}{
		{"uniform", []float32{0, 0, 0, 0}, 0.7, 0, math.Log(4)},
		{"one-hot", []float32{0, 0, 100, 0}, 0.4, 2, 0},
		{"tie lowest id", []float32{1, 3, 3, -2}, 1, 1, -1},
		{"two-way", []float32{0, float32(math.Log(3))}, 1, 1, -1}, // p = 1/4, 3/4
		{"temperature sharpens", []float32{1, 2, 3, 4, 5}, 0.4, 4, -1},
		{"softcapped extremes", []float32{-30, 30, 29.5, -30}, 0.8, 1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Tempered(c.row, len(c.row), c.temp, []float64{0.5})[0]
			if p.Argmax != c.argmax {
				t.Errorf("argmax = %d, want %d", p.Argmax, c.argmax)
			}
			want := c.entropy
			if want < 0 {
				r := make([]float64, len(c.row))
				for i, x := range c.row {
					r[i] = float64(x)
				}
				want = refEntropy(r, c.temp)
			}
			if math.Abs(float64(p.Entropy)-want) > 1e-6 {
				t.Errorf("entropy = %v, want %v", p.Entropy, want)
			}
		})
	}
}

func TestTemperedSamplesInverseCDF(t *testing.T) {
	// p = [0.1, 0.2, 0.3, 0.4] at T=1: the CDF boundaries are 0.1, 0.3, 0.6.
	row := []float32{float32(math.Log(0.1)), float32(math.Log(0.2)), float32(math.Log(0.3)), float32(math.Log(0.4))}
	for _, c := range []struct {
		u    float64
		want int
	}{{0, 0}, {0.05, 0}, {0.15, 1}, {0.29, 1}, {0.31, 2}, {0.59, 2}, {0.61, 3}, {0.999999, 3}} {
		if got := Tempered(row, 4, 1, []float64{c.u})[0].Sampled; got != c.want {
			t.Errorf("u=%v: sampled %d, want %d", c.u, got, c.want)
		}
	}
	// A zero-probability id is never drawn, even at the edges.
	row = []float32{-1e30, 0, -1e30}
	for _, u := range []float64{0, 0.5, 0.9999999999} {
		if got := Tempered(row, 3, 1, []float64{u})[0].Sampled; got != 1 {
			t.Errorf("u=%v: sampled %d from a one-hot, want 1", u, got)
		}
	}
}

func TestSampleFrequencies(t *testing.T) {
	// Draws from softmax(logits/T) follow the tempered distribution.
	row := []float32{0, 1, 2}
	const temp = 0.5
	s, err := New(defaults(), 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 3)
	const n = 20000
	for range n {
		counts[s.Token(row, temp)]++
	}
	z := math.Exp(0) + math.Exp(2) + math.Exp(4)
	for i, e := range []float64{1 / z, math.Exp(2) / z, math.Exp(4) / z} {
		if got := float64(counts[i]) / n; math.Abs(got-e) > 0.015 {
			t.Errorf("id %d: frequency %.4f, want %.4f", i, got, e)
		}
	}
	if s.Token(row, 0) != 2 {
		t.Errorf("greedy token is not the argmax")
	}
}

func TestAccept(t *testing.T) {
	cases := []struct {
		name    string
		entropy []float32
		bound   float64
		want    []bool
	}{
		// sorted: 0.01(2) 0.02(0) 0.05(3) 0.5(1) 2(4); sums before: 0, .01, .03, .08, .58
		{"prefix", []float32{0.02, 0.5, 0.01, 0.05, 2}, 0.1, []bool{true, true, true, true, false}},
		{"tight", []float32{0.02, 0.5, 0.01, 0.05, 2}, 0.02, []bool{true, false, true, false, false}},
		{"at least one", []float32{3, 1, 2}, 0.1, []bool{false, true, false}},
		{"zero bound", []float32{3, 1, 2}, 0, []bool{false, true, false}},
		{"zero-entropy run", []float32{0, 0, 0, 4, 4}, 0, []bool{true, true, true, true, false}},
		{"ties by position", []float32{1, 1, 1}, 1.5, []bool{true, true, false}},
		{"all", []float32{0.01, 0.01, 0.01}, 0.1, []bool{true, true, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Accept(c.entropy, c.bound); !slices.Equal(got, c.want) {
				t.Errorf("Accept(%v, %v) = %v, want %v", c.entropy, c.bound, got, c.want)
			}
		})
	}
}

func TestRenoise(t *testing.T) {
	const vocab = 1000
	sampled := []int{5, 6, 7, 8, 9, 10, 11, 12}
	accepted := []bool{true, false, true, false, false, false, false, true}
	noise := NewRNG(1).Key(1, 1, streamNoise)
	out := Renoise(sampled, accepted, vocab, noise)
	changed := 0
	for i := range out {
		if accepted[i] && out[i] != sampled[i] {
			t.Errorf("accepted position %d changed %d → %d", i, sampled[i], out[i])
		}
		if out[i] < 0 || out[i] >= vocab {
			t.Errorf("position %d: id %d outside the vocabulary", i, out[i])
		}
		if !accepted[i] && out[i] != sampled[i] {
			changed++
		}
	}
	if changed < 4 { // 5 re-noised positions over 1000 ids: at most one collision expected
		t.Errorf("only %d of 5 rejected positions got a fresh id: %v", changed, out)
	}
	// The same stream gives the same noise.
	if again := Renoise(sampled, accepted, vocab, NewRNG(1).Key(1, 1, streamNoise)); !slices.Equal(again, out) {
		t.Errorf("same seed, different noise: %v vs %v", again, out)
	}
}

func TestInitCanvasWarmStart(t *testing.T) {
	const vocab = 50
	rng := NewRNG(3).Key(1, 0, streamNoise)
	full := InitCanvas([]int{1, 2, 3, 4}, 4, vocab, rng)
	if !slices.Equal(full, []int{1, 2, 3, 4}) {
		t.Errorf("full warm start changed: %v", full)
	}
	long := InitCanvas([]int{1, 2, 3, 4, 5, 6}, 4, vocab, rng)
	if !slices.Equal(long, []int{1, 2, 3, 4}) {
		t.Errorf("longer warm start not cut to the canvas: %v", long)
	}
	short := InitCanvas([]int{9, 8}, 64, vocab, rng)
	if short[0] != 9 || short[1] != 8 || len(short) != 64 {
		t.Errorf("short warm start: %v", short)
	}
	distinct := map[int]bool{}
	for _, id := range short[2:] {
		if id < 0 || id >= vocab {
			t.Fatalf("noise id %d outside vocabulary", id)
		}
		distinct[id] = true
	}
	if len(distinct) < 10 {
		t.Errorf("rest of the canvas is not noise: %v", short)
	}
}

func TestTruncateEOS(t *testing.T) {
	cases := []struct {
		ids   []int
		want  []int
		n     int
		found bool
	}{
		{[]int{5, 6, 1, 7, 106}, []int{5, 6, 0, 0, 0}, 2, true},
		{[]int{5, 106, 7, 1}, []int{5, 0, 0, 0}, 1, true},
		{[]int{1, 5}, []int{0, 0}, 0, true},
		{[]int{5, 6, 7}, []int{5, 6, 7}, 3, false},
	}
	for _, c := range cases {
		got, n, found := TruncateEOS(c.ids, []int{1, 106}, 0)
		if !slices.Equal(got, c.want) || n != c.n || found != c.found {
			t.Errorf("TruncateEOS(%v) = %v, %d, %v; want %v, %d, %v", c.ids, got, n, found, c.want, c.n, c.found)
		}
	}
}

func TestStopper(t *testing.T) {
	confident := []float32{0.001, 0.002}
	unsure := []float32{0.001, 0.5}
	t.Run("stability 1", func(t *testing.T) {
		s := NewStopper(defaults())
		if s.Observe([]int{1, 2}, confident) {
			t.Error("stopped at the first step (no history)")
		}
		if s.Observe([]int{1, 3}, confident) {
			t.Error("stopped on a changed argmax")
		}
		if s.Observe([]int{1, 3}, unsure) {
			t.Error("stopped with mean entropy above the threshold")
		}
		if !s.Observe([]int{1, 3}, confident) {
			t.Error("did not stop when stable and confident")
		}
	})
	t.Run("stability 2", func(t *testing.T) {
		p := defaults()
		p.StabilityThreshold = 2
		s := NewStopper(p)
		s.Observe([]int{4}, confident[:1])
		if s.Observe([]int{4}, confident[:1]) {
			t.Error("stopped after one stable step with threshold 2")
		}
		if !s.Observe([]int{4}, confident[:1]) {
			t.Error("did not stop after two stable steps")
		}
		if s.Observe([]int{5}, confident[:1]) {
			t.Error("stopped right after a change")
		}
	})
	t.Run("stability 0", func(t *testing.T) {
		p := defaults()
		p.StabilityThreshold = 0
		if !NewStopper(p).Observe([]int{4}, confident[:1]) {
			t.Error("threshold 0 should stop on confidence alone")
		}
	})
}

// peaked builds logits [c·v] where position i prefers id (i*7)%v by margin.
func peaked(c, v int, margin float32) []float32 {
	l := make([]float32, c*v)
	for i := range c {
		for j := range v {
			l[i*v+j] = float32((i*31+j*17)%13) / 13
		}
		l[i*v+(i*7)%v] += margin
	}
	return l
}

func TestStepAcceptsConfidentAndStops(t *testing.T) {
	const c, v = 6, 40
	p := defaults()
	p.MaxSteps = 5
	s, err := New(p, v, 11)
	if err != nil {
		t.Fatal(err)
	}
	s.Canvas(nil, 0, c)
	// Position 3 is near-deterministic, the rest nearly uniform.
	logits := peaked(c, v, 0.2)
	for j := range v {
		logits[3*v+j] = -30
	}
	logits[3*v+9] = 30
	r, err := s.Step(logits, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Temperature != 0.8 {
		t.Errorf("step 1 temperature %v", r.Temperature)
	}
	if !r.Accepted[3] || r.Draft[3] != 9 || r.Argmax[3] != 9 {
		t.Errorf("confident position not accepted with its token: accepted=%v draft=%v", r.Accepted, r.Draft)
	}
	// The confident position has H≈0, so the next-lowest one is accepted too
	// (only the entropies before a position count against the bound); no more.
	if r.NumAccepted != 2 {
		t.Errorf("accepted %d positions, want the confident one plus one", r.NumAccepted)
	}
	if r.Stop {
		t.Error("stopped on uncertain logits")
	}
	// Sharp logits everywhere: all accepted; the second identical step stops.
	sharp := peaked(c, v, 60)
	r1, _ := s.Step(sharp, 2)
	r2, _ := s.Step(sharp, 3)
	if r1.NumAccepted != c || r1.Stop || !r2.Stop {
		t.Errorf("sharp: accepted %d, stop %v then %v; want %d, false, true", r1.NumAccepted, r1.Stop, r2.Stop, c)
	}
	// The last step always stops.
	if r, _ := s.Step(logits, 5); !r.Stop {
		t.Error("max steps did not stop")
	}
	if _, err := s.Step(logits[:v+1], 1); err == nil {
		t.Error("ragged logits accepted")
	}
}

func TestSameSeedBitIdentical(t *testing.T) {
	const c, v = 300, 300 // large enough to take the parallel path
	run := func(seed uint64) ([]int, [][]int) {
		s, err := New(defaults(), v, seed)
		if err != nil {
			t.Fatal(err)
		}
		canvas := s.Canvas([]int{1, 2, 3}, 0, c)
		var drafts [][]int
		for step := 1; step <= 4; step++ {
			r, err := s.Step(peaked(c, v, float32(step)), step)
			if err != nil {
				t.Fatal(err)
			}
			drafts = append(drafts, r.Draft)
		}
		return canvas, drafts
	}
	c1, d1 := run(42)
	c2, d2 := run(42)
	c3, d3 := run(43)
	if !slices.Equal(c1, c2) {
		t.Fatal("same seed, different canvas")
	}
	for i := range d1 {
		if !slices.Equal(d1[i], d2[i]) {
			t.Fatalf("same seed, step %d drafts differ", i+1)
		}
	}
	if slices.Equal(c1, c3) && slices.Equal(d1[0], d3[0]) {
		t.Error("different seeds gave identical output")
	}
}

func TestValidate(t *testing.T) {
	bad := []func(*Params){
		func(p *Params) { p.MaxSteps = 0 },
		func(p *Params) { p.TMin = 0 },
		func(p *Params) { p.TMax = math.NaN() },
		func(p *Params) { p.EntropyBound = -1 },
		func(p *Params) { p.StabilityThreshold = -1 },
	}
	for i, f := range bad {
		p := defaults()
		f(&p)
		if _, err := New(p, 10, 0); err == nil {
			t.Errorf("case %d: bad params accepted: %+v", i, p)
		}
	}
}

// TestHeldPositionsNeverChange: held tokens come out of every step as they went
// in — in the draft, the argmax and the acceptance — whatever the logits say,
// with entropy 0 so they use none of the bound; the positions after them
// develop as usual, and the next canvas holds nothing.
func TestHeldPositionsNeverChange(t *testing.T) {
	const c, v = 8, 40
	s, err := New(defaults(), v, 3)
	if err != nil {
		t.Fatal(err)
	}
	held := []int{7, 8, 9}
	canvas := s.Canvas(append(slices.Clone(held), 30), len(held), c)
	if !slices.Equal(canvas[:4], []int{7, 8, 9, 30}) {
		t.Fatalf("canvas starts %v", canvas[:4])
	}
	// Logits that are sure of other tokens at the held positions.
	logits := peaked(c, v, 60)
	sure := make([]int, c)
	for i := range c {
		sure[i] = (i * 7) % v
	}
	for step := 1; step <= 3; step++ {
		r, err := s.Step(logits, step)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range held {
			if r.Draft[i] != id || r.Argmax[i] != id || !r.Accepted[i] || r.Entropy[i] != 0 {
				t.Fatalf("step %d position %d: draft %d argmax %d accepted %v entropy %v, want held %d",
					step, i, r.Draft[i], r.Argmax[i], r.Accepted[i], r.Entropy[i], id)
			}
		}
		if !slices.Equal(r.Argmax[len(held):], sure[len(held):]) {
			t.Fatalf("step %d: free positions %v, want the logits' argmax %v", step, r.Argmax[len(held):], sure[len(held):])
		}
	}
	// The 4th given token was a warm start, not held: the logits decide it.
	if r, _ := s.Step(logits, 4); r.Argmax[3] != sure[3] {
		t.Errorf("warm-start position took %d, want %d", r.Argmax[3], sure[3])
	}
	// A new canvas holds nothing unless asked; hold beyond given or c is clamped.
	s.Canvas(held, 0, c)
	if r, _ := s.Step(logits, 1); r.Argmax[0] != sure[0] {
		t.Errorf("unheld canvas kept %d at 0, want %d", r.Argmax[0], sure[0])
	}
	s.Canvas(held, 99, 2)
	if r, _ := s.Step(logits[:2*v], 1); !slices.Equal(r.Argmax, held[:2]) {
		t.Errorf("hold clamped to the canvas: argmax %v, want %v", r.Argmax, held[:2])
	}
}

// TestPenalize holds the repetition penalty to a hand computation of Hugging Face's
// rule: a seen id's positive (or zero) logit divided by θ, a negative one multiplied
// by θ, unseen ids untouched; an id seen twice is penalised once.
func TestPenalize(t *testing.T) {
	logits := []float32{2, -1.5, 0, 3, -4, 1.2}
	s, err := New(Params{MaxSteps: 1, TMin: 1, TMax: 1, RepetitionPenalty: 2}, len(logits), 1)
	if err != nil {
		t.Fatal(err)
	}
	s.See([]int{0, 1, 2, 0, 0, 4, 1})
	got := slices.Clone(logits)
	Penalize(got, s.PlanToken(0).Seen, 2)
	want := []float32{1, -3, 0, 3, -8, 1.2}
	if !slices.Equal(got, want) {
		t.Errorf("penalized %v, want %v", got, want)
	}
	// Unpenalized, 3 is the argmax and unseen; make the seen id 0 the argmax (4 → 2)
	// and greedy moves to 3.
	logits[0] = 4
	if id := s.Token(logits, 0); id != 3 {
		t.Errorf("greedy pick %d, want 3", id)
	}
	if !slices.Equal(logits, []float32{4, -1.5, 0, 3, -4, 1.2}) {
		t.Errorf("Token changed its logits: %v", logits)
	}
	// θ = 1 is off: every logit keeps its bits, and the plan carries no seen ids.
	same := slices.Clone(logits)
	Penalize(same, []bool{true, true, true, true, true, true}, 1)
	for i := range same {
		if math.Float32bits(same[i]) != math.Float32bits(logits[i]) {
			t.Errorf("θ=1 changed logit %d: %v → %v", i, logits[i], same[i])
		}
	}
	for _, θ := range []float64{0, 1} {
		off, _ := New(Params{MaxSteps: 1, TMin: 1, TMax: 1, RepetitionPenalty: θ}, len(logits), 1)
		off.See([]int{3})
		if p := off.PlanToken(0.7); p.Penalty != 1 || p.Seen != nil {
			t.Errorf("θ=%g: plan %+v, want the penalty off", θ, p)
		}
		if id := off.Token([]float32{0, 0, 0, 5, 0, 0}, 0); id != 3 {
			t.Errorf("θ=%g: greedy pick %d, want the seen argmax 3", θ, id)
		}
	}
}

func TestRepetitionPenaltyValidate(t *testing.T) {
	for _, θ := range []float64{-1, math.NaN(), math.Inf(1)} {
		p := defaults()
		p.RepetitionPenalty = θ
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "repetition penalty") {
			t.Errorf("θ=%v: %v, want a repetition penalty error", θ, err)
		}
	}
}
