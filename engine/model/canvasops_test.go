//go:build linux

package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// BenchmarkCanvasOps splits a canvas's two kinds of host forward pass — an AR-guidance
// round's encoder pass (Runner.Score over 255 canvas tokens) and a denoising step's
// decoder (Runner.DecodeStep's decoder, without its head) — after a 64-token prompt
// into their ops' wall time (<op>-ms/op), the process's CPU time (cpu-ms/op), its
// threads' time waiting for a CPU (runq-ms/op: other processes) and what is left of
// GOMAXPROCS·wall (idle-ms/op: processors with nothing to run), on
// Darkroom Mini's dims and Darkroom Mini 2's (random weights), or on the checkpoint in
// DARKROOM_CANVAS_MODEL. With -cpu 1 the products run on the calling goroutine alone,
// so cpu-ms/op is one core's work, which a busy machine moves less than the wall.
//
//	go test ./engine/model -run '^$' -bench CanvasOps -cpu 1 -benchtime 100x
func BenchmarkCanvasOps(b *testing.B) {
	models := map[string]func(*testing.B) *Runner{
		"mini":  func(b *testing.B) *Runner { r, _ := miniBenchRunner(b); return r },
		"mini2": func(b *testing.B) *Runner { r, _ := randomRunner(b, mini2Config()); return r },
	}
	if dir := os.Getenv("DARKROOM_CANVAS_MODEL"); dir != "" {
		models = map[string]func(*testing.B) *Runner{"model": func(b *testing.B) *Runner { return mappedRunner(b, dir) }}
	}
	for name, open := range models {
		for _, pass := range []string{"score", "decode"} {
			b.Run(name+"/"+pass, func(b *testing.B) {
				r := open(b)
				rng := rand.New(rand.NewPCG(3, 3))
				prompt, canvas := randTokens(rng, 64, r.cfg.VocabSize), randTokens(rng, 256, r.cfg.VocabSize)
				if _, err := r.Encode(prompt); err != nil {
					b.Fatal(err)
				}
				ids := make([]int32, len(canvas))
				for i, t := range canvas {
					ids[i] = int32(t)
				}
				if err := r.head.prepare(r.weights, r.weights.embedScale(r.cfg)); err != nil {
					b.Fatal(err)
				}
				plan := sampler.Plan{Temperature: 0.8, EntropyBound: 30}
				ops := map[string]time.Duration{}
				run := func() {
					m, cache := r.hostModel(), &r.hcache
					m.use(cache) // as decode and encode ready it
					if pass == "score" {
						o := &timedOps{o: &hostOps{h: m, cache: cache, start: cache.n, causal: true, readOnly: true}, wall: ops}
						hn := arch.Output(o, m.cfg, arch.Layers(o, m.cfg, m.embed(ids[:255]), r.weights.encoderScalar))
						defer o.time("head")()
						r.head.logitsInto(r.scoreBuffer(255*m.cfg.VocabSize), hn, 255, m.cfg.FinalLogitSoftcapping)
						return
					}
					o := &timedOps{o: &hostOps{h: m, cache: cache, start: cache.n}, wall: ops}
					x := arch.DecoderInput(o, m.cfg, m.embed(ids), nil, false)
					hn := arch.Output(o, m.cfg, arch.Layers(o, m.cfg, x, arch.DecoderScalar))
					defer o.time("head")()
					r.head.step(hn, len(ids), m.cfg.FinalLogitSoftcapping, plan)
				}
				run() // warm-up: the scratch and the rotation tables
				clear(ops)
				r0, w0, q0 := rusage(b), time.Now(), runQueueWait(b)
				b.ResetTimer()
				for range b.N {
					run()
				}
				b.StopTimer()
				wall, cpu, runq := time.Since(w0), cpuTime(rusage(b))-cpuTime(r0), runQueueWait(b)-q0
				per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
				b.ReportMetric(per(wall), "ms/op")
				b.ReportMetric(per(cpu), "cpu-ms/op")
				b.ReportMetric(per(runq), "runq-ms/op")
				b.ReportMetric(per(time.Duration(runtime.GOMAXPROCS(0))*wall-cpu-runq), "idle-ms/op")
				for op, d := range ops {
					b.ReportMetric(per(d), op+"-ms/op")
				}
			})
		}
	}
}

// mini2Config is Darkroom Mini 2's dims: hidden 192, six layers (the sixth full),
// 6 heads over 2 KV heads of 32 (full layers 2 of 64), MLP 384, 8 experts of 192
// top-2, window 128, a 4096-token vocabulary.
func mini2Config() *config.Text {
	cfg := benchConfig()
	cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.NumGlobalKVHeads = 192, 6, 6, 2, 2
	cfg.IntermediateSize, cfg.MoEIntermediateSize, cfg.NumExperts = 384, 192, 8
	cfg.LayerTypes = []config.LayerType{config.SlidingAttention, config.SlidingAttention, config.SlidingAttention,
		config.SlidingAttention, config.SlidingAttention, config.FullAttention}
	return cfg
}

// mappedRunner is a host runner over the checkpoint in dir, mapped in place.
func mappedRunner(b *testing.B, dir string) *Runner {
	cfg, err := config.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	mapped, ok, err := weights.Map(dir, cfg, nil)
	if err != nil || !ok {
		b.Fatalf("map %s: ok %v, %v", dir, ok, err)
	}
	b.Cleanup(func() { mapped.Close() })
	r, err := NewHostRunner(&cfg.Text, mapped)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkAttend is the host attention core alone (hostModel.attend) on a sliding and
// a full layer of Darkroom Mini and Mini 2 (random weights, a 64-token prompt cached):
// causal over 255 new tokens as an AR-guidance round's Score runs it, and bidirectional
// over a 256-token canvas as a denoising step does; cpu-ms/op is the process's CPU time
// (with -cpu 1, one core's work).
//
//	go test ./engine/model -run '^$' -bench Attend -cpu 1
func BenchmarkAttend(b *testing.B) {
	for _, model := range []struct {
		name string
		cfg  func() *config.Text
	}{{"mini", func() *config.Text { _, c := miniBenchRunner(b); return c }}, {"mini2", mini2Config}} {
		cfg := model.cfg()
		r, _ := randomRunner(b, cfg)
		rng := rand.New(rand.NewPCG(5, 5))
		if _, err := r.Encode(randTokens(rng, 64, cfg.VocabSize)); err != nil {
			b.Fatal(err)
		}
		for _, layer := range []int{0, cfg.NumHiddenLayers - 1} {
			for _, pass := range []string{"score", "decode"} {
				b.Run(fmt.Sprintf("%s/layer=%d/%s", model.name, layer, pass), func(b *testing.B) {
					m := r.hostModel()
					m.scratch = &r.hcache.scratch
					c, causal := 256, pass == "score"
					if causal {
						c = 255
					}
					nh, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(layer), cfg.LayerHeadDim(layer)
					q, k, v := randFloats32(rng, c*nh*hd), randFloats32(rng, c*kvh*hd), randFloats32(rng, c*kvh*hd)
					lo := 0
					if cfg.IsSliding(layer) {
						lo = max(0, r.Len()-(cfg.SlidingWindow-1))
					}
					pre := m.prefix(&r.hcache, layer, lo, r.Len())
					m.attend(layer, q, k, v, r.Len(), pre, causal) // the scratch
					r0 := rusage(b)
					b.ResetTimer()
					for range b.N {
						m.attend(layer, q, k, v, r.Len(), pre, causal)
					}
					b.StopTimer()
					b.ReportMetric((cpuTime(rusage(b))-cpuTime(r0)).Seconds()*1e3/float64(b.N), "cpu-ms/op")
				})
			}
		}
	}
}
