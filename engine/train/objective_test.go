package train

import (
	"math"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// fakeNet makes the objective's arithmetic checkable by hand: the decoder's
// logits are 3·onehot(noisy token) (+ the soft input), the encoder's are
// 3·onehot(token), and the soft embedding is softmax(logits).
type fakeNet struct{ v int }

func (f fakeNet) Encode(tokens, positions, valid *Node) (*Node, any) {
	return MulScalar(OneHot(tokens, f.v, dtypes.Float32), 3), nil
}
func (f fakeNet) Decode(canvas, positions, soft *Node, kv any, prefixValid *Node) *Node {
	h := MulScalar(OneHot(canvas, f.v, dtypes.Float32), 3)
	if soft != nil {
		h = Add(h, MulScalar(soft, 10))
	}
	return h
}
func (f fakeNet) Logits(hidden *Node) *Node        { return hidden }
func (f fakeNet) SoftEmbedding(logits *Node) *Node { return Softmax(logits, -1) }
func (f fakeNet) HeadKV(kv any, n int) any         { return kv }

func runObjective(t *testing.T, b *Batch, v int) (total, diff, ar float64) {
	t.Helper()
	e, err := NewExec(goBackend(t), func(in []*Node) []*Node {
		l := Objective(fakeNet{v}, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8], b.SelfCondRows)
		return []*Node{l.Total, l.Diffusion, l.AR}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Finalize()
	out, err := e.Exec(b.inputs()...)
	if err != nil {
		t.Fatal(err)
	}
	return scalar(out[0]), scalar(out[1]), scalar(out[2])
}

// TestDiffusionLossOnEveryCanvasPosition: the diffusion loss is the plain mean CE
// over all C positions, corrupted and clean alike, with no 1/t weighting.
func TestDiffusionLossOnEveryCanvasPosition(t *testing.T) {
	const v, c, p = 8, 6, 3
	ex := []Example{{Prompt: []int{2, 4}, Answer: []int{5, 6, 7}}}
	pb := plannedBatch{Bucket: p, Items: []item{{0, 0}, {0, 0}}}
	b := buildBatch(ex, pb, c, 1, 0, NoiseConfig{Vocab: v, Eps: 0.5, SelfCondP: 0}, 11, 0, 1)
	// Force a known corruption: example 0 keeps positions 0..2, example 1 has all replaced.
	b.Noisy = []int32{5, 6, 7, 0, 0, 0, 3, 3, 3, 3, 3, 3}
	_, diff, ar := runObjective(t, b, v)

	lse := math.Log(math.Exp(3) + v - 1)
	clean := []int{5, 6, 7, 1, 1, 1} // answer + EOS fill
	want := 0.0
	for e := 0; e < 2; e++ {
		for j := 0; j < c; j++ {
			if int(b.Noisy[e*c+j]) == clean[j] {
				want += lse - 3
			} else {
				want += lse
			}
		}
	}
	want /= 2 * c
	if math.Abs(diff-want) > 1e-5 {
		t.Fatalf("diffusion loss %.6f, want %.6f (mean over every position)", diff, want)
	}
	// AR: the fake encoder predicts the current token, so every valid pair whose
	// next token differs costs lse and an equal one lse−3.
	seq := []int{2, 4, 5, 6, 7, 1, 1, 1}
	wantAR := 0.0
	for j := 1; j < len(seq); j++ {
		if seq[j] == seq[j-1] {
			wantAR += lse - 3
		} else {
			wantAR += lse
		}
	}
	wantAR /= float64(len(seq) - 1)
	if math.Abs(ar-wantAR) > 1e-5 {
		t.Fatalf("AR loss %.6f, want %.6f (valid pairs only, padding excluded)", ar, wantAR)
	}
}

// TestSelfConditioningOnlyWhereFlagged: examples with SelfCond = 0 get exactly the
// zero signal; flipping the flag on changes only the flagged example's loss.
func TestSelfConditioningOnlyWhereFlagged(t *testing.T) {
	const v, c, p = 8, 4, 2
	ex := []Example{{Prompt: []int{2, 4}, Answer: []int{5, 6}}}
	pb := plannedBatch{Bucket: p, Items: []item{{0, 0}}}
	b := buildBatch(ex, pb, c, 1, 0, NoiseConfig{Vocab: v, Eps: 0.5, SelfCondP: 0}, 11, 0, 1)
	b.SelfCondRows = 0
	_, off, _ := runObjective(t, b, v)
	b.SelfCondRows = 1
	_, on, _ := runObjective(t, b, v)
	if off == on {
		t.Fatalf("self-conditioning flag had no effect (loss %.6f both ways)", on)
	}
	// With the flag off, the loss equals the pure no-soft computation.
	lse := math.Log(math.Exp(3) + v - 1)
	clean := []int{5, 6, 1, 1}
	want := 0.0
	for j := 0; j < c; j++ {
		if int(b.Noisy[j]) == clean[j] {
			want += lse - 3
		} else {
			want += lse
		}
	}
	want /= c
	if math.Abs(off-want) > 1e-5 {
		t.Fatalf("loss without self-conditioning %.6f, want %.6f", off, want)
	}
}

func TestNoiseRateMatchesT(t *testing.T) {
	const v, c = 50, 4096
	ex := []Example{{Prompt: []int{2}, Answer: []int{7}}}
	items := make([]item, 16)
	b := buildBatch(ex, plannedBatch{Bucket: 4, Items: items}, c, 1, 0, NoiseConfig{Vocab: v, Eps: 1e-3, SelfCondP: 0.5}, 5, 9, 1)
	clean := canvasTokens(ex[0].Answer, 0, c, 1)
	for e := 0; e < len(items); e++ {
		tl := float64(b.NoiseLevels[e])
		if tl < 1e-3 || tl > 1 {
			t.Fatalf("t = %v outside [eps, 1]", tl)
		}
		changed := 0
		for j := 0; j < c; j++ {
			if int(b.Noisy[e*c+j]) != clean[j] {
				changed++
			}
		}
		// A replacement may draw the clean token itself: P(change) = t·(1 − 1/V).
		want := tl * (1 - 1.0/v)
		got := float64(changed) / c
		sd := math.Sqrt(want*(1-want)/c) + 1e-3
		if math.Abs(got-want) > 5*sd {
			t.Fatalf("example %d: changed share %.4f, want ≈ %.4f (t = %.4f)", e, got, want, tl)
		}
	}
	n := 0
	for _, s := range b.SelfCond {
		n += int(s)
	}
	if n != len(items)/2 {
		t.Fatalf("%d of %d examples self-conditioned, want half", n, len(items))
	}
}

func TestBatchLayoutAndEOSFill(t *testing.T) {
	const c, p = 4, 6
	ex := []Example{{Prompt: []int{2, 9, 9}, Answer: []int{5, 6, 7, 8, 10, 106}}} // two canvases
	pb := plannedBatch{Bucket: p, Items: []item{{0, 0}}}
	b := buildBatch(ex, pb, c, 1, 0, NoiseConfig{Vocab: 200, Eps: 1e-3}, 1, 0, 1)
	tLen := p + c
	type row struct {
		tokens, pos []int32
		valid       []bool
	}
	want := []row{
		{[]int32{0, 0, 0, 2, 9, 9, 5, 6, 7, 8}, []int32{0, 0, 0, 0, 1, 2, 3, 4, 5, 6}, []bool{false, false, false, true, true, true, true, true, true, true}},
	}
	for j := 0; j < tLen; j++ {
		if b.Tokens[j] != want[0].tokens[j] || b.Positions[j] != want[0].pos[j] || b.Valid[j] != want[0].valid[j] {
			t.Fatalf("row 0 position %d: token %d pos %d valid %v; want %d %d %v", j, b.Tokens[j], b.Positions[j], b.Valid[j],
				want[0].tokens[j], want[0].pos[j], want[0].valid[j])
		}
		if b.PrefixValid[j] != (want[0].valid[j] && j < p) {
			t.Fatalf("row 0 position %d: prefixValid %v", j, b.PrefixValid[j])
		}
	}
	for j := 0; j < c; j++ {
		if b.DecPos[j] != int32(3+j) {
			t.Fatalf("decoder position %d = %d, want %d", j, b.DecPos[j], 3+j)
		}
	}
	// Second canvas with a bucket that fits prompt + first canvas: EOS fill after <turn|>.
	pb = plannedBatch{Bucket: 8, Items: []item{{0, 1}}}
	b = buildBatch(ex, pb, c, 1, 0, NoiseConfig{Vocab: 200, Eps: 1e-3}, 1, 0, 1)
	got := b.Tokens[8:]
	wantCanvas := []int32{10, 106, 1, 1}
	for j := range wantCanvas {
		if got[j] != wantCanvas[j] {
			t.Fatalf("second canvas %v, want %v (EOS fill)", got, wantCanvas)
		}
	}
	if b.Tokens[0] != 0 || b.Tokens[1] != 2 || b.Positions[8] != 7 || b.DecPos[0] != 7 {
		t.Fatalf("second canvas prefix layout wrong: tokens %v positions %v", b.Tokens, b.Positions)
	}
}

func TestBatchesDeterministicAndBucketed(t *testing.T) {
	var ex []Example
	for i := 0; i < 30; i++ {
		ans := make([]int, 3+i%9)
		ex = append(ex, Example{Prompt: make([]int, 2+i%5), Answer: ans})
	}
	a, err := NewBatches(ex, []int{4, 12}, 4, 3, 99)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewBatches(ex, []int{4, 12}, 4, 3, 99)
	for step := 0; step < 60; step++ {
		pa, ea := a.At(step)
		pb, eb := b.At(59 - step) // b visits steps in another order: plans must not depend on history
		_ = pb
		_ = eb
		pb2, eb2 := b.At(step)
		if ea != eb2 || pa.Bucket != pb2.Bucket || len(pa.Items) != 3 {
			t.Fatalf("step %d: plans differ", step)
		}
		for i := range pa.Items {
			if pa.Items[i] != pb2.Items[i] {
				t.Fatalf("step %d: item %d differs", step, i)
			}
			it := pa.Items[i]
			if pl := it.prefixLen(ex, 4); pl > pa.Bucket {
				t.Fatalf("step %d: prefix %d does not fit bucket %d", step, pl, pa.Bucket)
			}
		}
	}
}

func TestLearningRateSchedule(t *testing.T) {
	if lr := LearningRate(0, 10, 100, 1, 0.1); math.Abs(lr-0.1) > 1e-12 {
		t.Fatalf("first warm-up step lr %v", lr)
	}
	if lr := LearningRate(9, 10, 100, 1, 0.1); lr != 1 {
		t.Fatalf("end of warm-up lr %v", lr)
	}
	if lr := LearningRate(55, 10, 100, 1, 0.1); math.Abs(lr-0.55) > 1e-9 {
		t.Fatalf("mid-cosine lr %v, want 0.55", lr)
	}
	if lr := LearningRate(100, 10, 100, 1, 0.1); math.Abs(lr-0.1) > 1e-12 {
		t.Fatalf("final lr %v", lr)
	}
}

var _ = tensors.FromScalar[float32]

// TestPerExampleLosses: a row whose Loss is LossDiffusion leaves the AR loss and
// its mean, one with LossAR the diffusion loss and its mean; the rest train both.
func TestPerExampleLosses(t *testing.T) {
	const v, c, p = 8, 4, 3
	ex := []Example{
		{Prompt: []int{2, 4}, Answer: []int{5, 6}},
		{Prompt: []int{3}, Answer: []int{7, 7, 5}, Loss: LossDiffusion},
		{Prompt: []int{2, 2, 4}, Answer: []int{6}, Loss: LossAR},
	}
	pb := plannedBatch{Bucket: p, Items: []item{{0, 0}, {1, 0}, {2, 0}}}
	b := buildBatch(ex, pb, c, 1, 0, NoiseConfig{Vocab: v, Eps: 0.5}, 11, 0, 1)
	if !slices.Equal(b.DiffusionRows, []float32{1, 1, 0}) || !slices.Equal(b.ARRows, []float32{1, 0, 1}) {
		t.Fatalf("rows: diffusion %v, AR %v; want [1 1 0], [1 0 1]", b.DiffusionRows, b.ARRows)
	}
	// Corruption that gives each row its own diffusion loss: all clean, one clean, none.
	b.Noisy = []int32{5, 6, 1, 1, 7, 0, 0, 0, 3, 3, 3, 3}
	_, diff, ar := runObjective(t, b, v)

	// Each row's own means: the same batch counting that row alone.
	alone := func(i int) (diff, ar float64) {
		r := *b
		r.DiffusionRows, r.ARRows = make([]float32, 3), make([]float32, 3)
		r.DiffusionRows[i], r.ARRows[i] = 1, 1
		_, diff, ar = runObjective(t, &r, v)
		return diff, ar
	}
	d0, a0 := alone(0)
	d1, a1 := alone(1)
	d2, a2 := alone(2)
	pairs := func(i int) float64 { return float64(len(ex[i].Prompt) + c - 1) }
	wantDiff := (d0 + d1) / 2
	wantAR := (a0*pairs(0) + a2*pairs(2)) / (pairs(0) + pairs(2))
	if math.Abs(diff-wantDiff) > 1e-5 || math.Abs(ar-wantAR) > 1e-5 {
		t.Fatalf("diffusion %.6f, AR %.6f; want %.6f (rows 0, 1), %.6f (rows 0, 2)", diff, ar, wantDiff, wantAR)
	}
	// The left-out rows' losses differ from the counted ones', so the test can fail.
	if math.Abs(d2-d0) < 1e-6 && math.Abs(d2-d1) < 1e-6 || math.Abs(a1-a0) < 1e-6 && math.Abs(a1-a2) < 1e-6 {
		t.Fatalf("rows have equal losses (diffusion %v %v %v, AR %v %v %v): the test proves nothing", d0, d1, d2, a0, a1, a2)
	}
}

// TestHeldOpening: an example's held opening (Example.Held, Record.Held) stays
// clean on its first canvas whatever the noise level, leaves the rest of the
// batch's noise as it was, and weighs nothing in the diffusion loss — the loss
// does not move when a held target does, and does when one after it does.
func TestHeldOpening(t *testing.T) {
	const v, c, p = 8, 4, 3
	ex := []Example{
		{Prompt: []int{2, 4}, Answer: []int{5, 6, 7, 1}, Loss: LossDiffusion, Held: 2},
		{Prompt: []int{3}, Answer: []int{7, 6, 5}},
	}
	pb := plannedBatch{Bucket: p, Items: []item{{0, 0}, {1, 0}}}
	nc := NoiseConfig{Vocab: v, Eps: 0.999} // every position re-drawn
	b := buildBatch(ex, pb, c, 1, 0, nc, 11, 0, 1)
	free := slices.Clone(ex)
	free[0].Held = 0
	bf := buildBatch(free, pb, c, 1, 0, nc, 11, 0, 1)
	if !slices.Equal(b.Noisy[:2], []int32{5, 6}) || !slices.Equal(b.Noisy[2:], bf.Noisy[2:]) {
		t.Fatalf("noisy %v, without the hold %v: want the held 5 6 clean and the rest the same", b.Noisy, bf.Noisy)
	}
	if w := b.Weight; w == nil || !slices.Equal(w[p:p+c], []float32{0, 0, 1, 1}) || slices.Contains(w[p+c:], 0) {
		t.Fatalf("weights %v: want 0 on the held canvas positions only", w)
	}
	_, diff, _ := runObjective(t, b, v)
	moved := func(pos int) float64 { // the first row's target at canvas position pos, changed: fakeNet scores
		r := *b // the noisy id high, so the loss moves where the target becomes it or stops being it
		r.Tokens = slices.Clone(b.Tokens)
		if r.Tokens[p+pos] == b.Noisy[pos] {
			r.Tokens[p+pos] = (r.Tokens[p+pos] + 1) % v
		} else {
			r.Tokens[p+pos] = b.Noisy[pos]
		}
		_, d, _ := runObjective(t, &r, v)
		return d
	}
	if d := moved(1); math.Abs(d-diff) > 1e-6 {
		t.Errorf("a held target moved the diffusion loss: %v → %v", diff, d)
	}
	if d := moved(2); math.Abs(d-diff) < 1e-6 {
		t.Errorf("a target after the hold did not move the diffusion loss (%v): the test proves nothing", d)
	}
}
