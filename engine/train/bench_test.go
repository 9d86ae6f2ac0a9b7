package train

import (
	"bytes"
	"os"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"
)

// TestMeasureThroughput times training steps of the Darkroom Mini architecture
// on synthetic data (set DARKROOM_TRAIN_BENCH=1; optional DARKROOM_TRAIN_BENCH_HIDDEN,
// _VOCAB, _BATCH, _LAYERS, _STEPS). It is how the shipped size was chosen.
func TestMeasureThroughput(t *testing.T) {
	if os.Getenv("DARKROOM_TRAIN_BENCH") == "" {
		t.Skip("set DARKROOM_TRAIN_BENCH=1 to measure the trainer's tokens/s")
	}
	env := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv("DARKROOM_TRAIN_BENCH_" + k)); err == nil {
			return v
		}
		return def
	}
	size := DefaultMiniSize
	size.Hidden = env("HIDDEN", size.Hidden)
	size.Layers = env("LAYERS", size.Layers)
	size.Intermediate = env("INTER", size.Intermediate)
	size.MoEIntermediate = env("MOE", size.MoEIntermediate)
	size.Experts = env("EXPERTS", size.Experts)
	cfg, err := MiniConfig(size, env("VOCAB", 4096), []int{1, 106}, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Batch, o.PrefixBuckets, o.Steps = env("BATCH", 4), []int{env("PREFIX", 32)}, 100
	o.EvalBatches = 0
	data := synthData(64, cfg)
	var log bytes.Buffer
	tr, err := NewTrainer(goBackend(t), cfg, data, o, t.TempDir(), false, &log)
	if err != nil {
		t.Fatal(err)
	}
	steps := env("STEPS", 3)
	if env("EVALFIRST", 0) == 1 {
		tr.opts.EvalBatches = 1
		tr.evalSet = []*Batch{tr.BatchAt(0)}
		for i := 0; i < 2; i++ {
			t0 := time.Now()
			if _, _, _, err := tr.Eval(); err != nil {
				t.Fatal(err)
			}
			t.Logf("forward-only objective: %v", time.Since(t0))
		}
	}
	if prof := os.Getenv("DARKROOM_TRAIN_BENCH_PROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		go func() {
			time.Sleep(time.Duration(env("PROFSECS", 60)) * time.Second)
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	t0 := time.Now()
	if _, err := tr.Step(); err != nil {
		t.Fatal(err)
	}
	t.Logf("first step (with compile): %v", time.Since(t0))
	t0 = time.Now()
	for i := 0; i < steps; i++ {
		r, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("step %d loss %.3f", i, r.Loss)
	}
	d := time.Since(t0) / time.Duration(steps)
	pos := o.Batch * (o.PrefixBuckets[0] + 2*cfg.CanvasLength)
	set, _ := ParamsSet(tr.Context(), cfg)
	t.Logf("hidden %d layers %d vocab %d batch %d prefix %d: %v/step, %.0f positions/s, %.2f examples/s, %.1f MB f32",
		size.Hidden, size.Layers, cfg.Text.VocabSize, o.Batch, o.PrefixBuckets[0], d, float64(pos)/d.Seconds(),
		float64(o.Batch)/d.Seconds(), float64(set.Bytes())/1e6)
}
