package train

import (
	"bytes"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/darkroomlabs/darkroom/engine/config"
)

func goBackend(t *testing.T) backends.Backend {
	t.Helper()
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatalf("backend: %v", err)
	}
	return b
}

// synthData is a learnable toy task: the prompt names a key k, the answer is a
// fixed sequence derived from k (so the loss can fall well below its start).
func synthData(n int, cfg *config.Model) Data {
	rng := rand.New(rand.NewPCG(3, 4))
	v := cfg.Text.VocabSize
	var ex []Example
	for i := 0; i < n; i++ {
		k := 10 + rng.IntN(8)
		prompt := []int{2, 5, 6, k}
		answer := []int{}
		for j := 0; j < 5+k%4; j++ {
			answer = append(answer, 20+(k*7+j*3)%(v-20))
		}
		answer = append(answer, 106%v)
		ex = append(ex, Example{Title: "t", Prompt: prompt, Answer: answer})
	}
	return Data{Train: ex, Heldout: ex[:8], EOS: 1, Pad: 0}
}

func tinyOptions() Options {
	o := DefaultOptions()
	o.Steps, o.Batch, o.PrefixBuckets = 40, 4, []int{8}
	o.LR, o.MinLR, o.Warmup = 1e-2, 1e-3, 3
	o.EvalEvery, o.EvalBatches, o.CheckpointEvery, o.CheckpointMins = 0, 2, 0, 0
	return o
}

func TestTrainingStepsLowerLoss(t *testing.T) {
	cfg := config.Tiny()
	var log bytes.Buffer
	tr, err := NewTrainer(goBackend(t), cfg, synthData(64, cfg), tinyOptions(), t.TempDir(), false, &log)
	if err != nil {
		t.Fatal(err)
	}
	before, _, _, err := tr.Eval()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		if _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	after, d, a, err := tr.Eval()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held-out loss %.3f → %.3f (diffusion %.3f, ar %.3f)", before, after, d, a)
	if !(after < before-1.0) {
		t.Fatalf("loss did not fall: %.4f → %.4f", before, after)
	}
}

func TestResumeGivesIdenticalNextStep(t *testing.T) {
	cfg := config.Tiny()
	data := synthData(32, cfg)
	dir := t.TempDir()
	var log bytes.Buffer
	b := goBackend(t)
	a, err := NewTrainer(b, cfg, data, tinyOptions(), dir, false, &log)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := a.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	wantRes, err := a.Step()
	if err != nil {
		t.Fatal(err)
	}
	want := paramsSnapshot(t, a)

	r, err := NewTrainer(b, cfg, data, tinyOptions(), dir, true, &log)
	if err != nil {
		t.Fatal(err)
	}
	if r.State().Step != 3 {
		t.Fatalf("resumed at step %d, want 3", r.State().Step)
	}
	gotRes, err := r.Step()
	if err != nil {
		t.Fatal(err)
	}
	if gotRes != wantRes {
		t.Fatalf("resumed step differs: got %+v, want %+v", gotRes, wantRes)
	}
	got := paramsSnapshot(t, r)
	for name, w := range want {
		g := got[name]
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("parameter %s[%d] after the resumed step: %v, want %v", name, i, g[i], w[i])
			}
		}
	}
	// A fresh trainer without resume starts from step 0 and must differ.
	f, err := NewTrainer(b, cfg, data, tinyOptions(), filepath.Join(dir, "other"), false, &log)
	if err != nil {
		t.Fatal(err)
	}
	if f.State().Step != 0 {
		t.Fatalf("fresh trainer at step %d", f.State().Step)
	}
}

func paramsSnapshot(t *testing.T, tr *Trainer) map[string][]float32 {
	t.Helper()
	set, err := ParamsSet(tr.Context(), tr.cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for name, tt := range set.Tensors {
		out[name] = tensors.MustCopyFlatData[float32](tt)
	}
	return out
}
