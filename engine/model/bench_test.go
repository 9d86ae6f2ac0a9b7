package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/weights"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// benchConfig is a small model of the real architecture: D=128, 4 layers (3 sliding,
// 1 full with K=V and partial RoPE), 16 experts top-2, V=4096.
func benchConfig() *config.Text {
	c := &config.Text{
		VocabSize: 4096, HiddenSize: 128, IntermediateSize: 256, MoEIntermediateSize: 64,
		NumExperts: 16, TopKExperts: 2, NumHiddenLayers: 4,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, NumGlobalKVHeads: 1, HeadDim: 32, GlobalHeadDim: 64,
		LayerTypes: []config.LayerType{config.SlidingAttention, config.SlidingAttention, config.SlidingAttention,
			config.FullAttention},
		SlidingWindow: 128, RMSNormEps: 1e-6, FinalLogitSoftcapping: 30, MaxPositionEmbeddings: 1 << 16,
	}
	c.RopeParameters.Sliding = config.Rope{Type: "default", Theta: 10000}
	c.RopeParameters.Full = config.Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}
	return c
}

// benchModes are the Runner's execution modes on the pure-Go backend: everything in
// GoMLX graphs, graphs with the output head on the host, and the host model (the
// default there).
var benchModes = []string{"graph", "graph+host-head", "host"}

func benchRunner(b *testing.B, mode string) (*Runner, *config.Text) {
	r, cfg := randomRunner(b, benchConfig())
	r.HostHead, r.HostDecoder = mode != "graph", mode == "host"
	return r, cfg
}

// randomRunner is a runner over random weights of cfg, in the runner's default mode.
func randomRunner(b testing.TB, cfg *config.Text) (*Runner, *config.Text) {
	ctx := context.New()
	if err := LoadSet(ctx, weights.Random(&config.Model{Text: *cfg}, 1)); err != nil {
		b.Fatal(err)
	}
	r, err := NewRunner(newBackend(b), cfg, ctx)
	if err != nil {
		b.Fatal(err)
	}
	return r, cfg
}

func reportFLOPs(b *testing.B, flopsPerOp float64, start time.Time) {
	sec := time.Since(start).Seconds()
	b.ReportMetric(flopsPerOp*float64(b.N)/sec/1e9, "GFLOP/s")
	b.ReportMetric(sec/float64(b.N)*1e3, "ms/op")
}

// BenchmarkDecoderStep: one denoising step, canvas 256 after a 64-token prompt, per
// mode (run with -count to compare them in one run).
func BenchmarkDecoderStep(b *testing.B) {
	for _, mode := range benchModes {
		b.Run(mode, func(b *testing.B) { benchDecoderStep(b, mode) })
	}
}

func benchDecoderStep(b *testing.B, mode string) {
	r, cfg := benchRunner(b, mode)
	rng := rand.New(rand.NewPCG(1, 1))
	if _, err := r.Encode(randTokens(rng, 64, cfg.VocabSize)); err != nil {
		b.Fatal(err)
	}
	canvas := randTokens(rng, 256, cfg.VocabSize)
	_, soft, err := r.Decode(canvas, nil, 0.8) // compile
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, soft, err = r.Decode(canvas, soft, 0.8); err != nil {
			b.Fatal(err)
		}
	}
	reportFLOPs(b, FLOPs(cfg, 256, 64), start)
}

// BenchmarkEncoderPrompt64: one causal encoder pass over a 64-token prompt, per mode.
func BenchmarkEncoderPrompt64(b *testing.B) {
	for _, mode := range []string{"graph", "host"} {
		b.Run(mode, func(b *testing.B) { benchEncoderPrompt64(b, mode) })
	}
}

func benchEncoderPrompt64(b *testing.B, mode string) {
	r, cfg := benchRunner(b, mode)
	prompt := randTokens(rand.New(rand.NewPCG(2, 2)), 64, cfg.VocabSize)
	if _, err := r.Encode(prompt); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		r.Reset()
		if _, err := r.Encode(prompt); err != nil {
			b.Fatal(err)
		}
	}
	reportFLOPs(b, EncodeFLOPs(cfg, 64, 0), start)
}

// BenchmarkMatMul: the backend's raw float32 matmul rate, [256, 512] × [512, 512].
func BenchmarkMatMul(b *testing.B) {
	const m, k, n = 256, 512, 512
	exec, err := NewExec(newBackend(b), func(x, y *Node) *Node { return MatMul(x, y) })
	if err != nil {
		b.Fatal(err)
	}
	x := tensors.FromFlatDataAndDimensions(make([]float32, m*k), m, k)
	y := tensors.FromFlatDataAndDimensions(make([]float32, k*n), k, n)
	if _, err := exec.Exec(x, y); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		out, err := exec.Exec(x, y)
		if err != nil {
			b.Fatal(err)
		}
		out[0].FinalizeAll()
	}
	reportFLOPs(b, 2*m*k*n, start)
}

// BenchmarkMatMulHost: package kernels's rate on the same product as BenchmarkMatMul
// (the host model's matmul yardstick).
func BenchmarkMatMulHost(b *testing.B) {
	const m, k, n = 256, 512, 512
	x, y, out := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
	for i := range x {
		x[i] = float32(i%17) / 16
	}
	for i := range y {
		y[i] = float32(i%13) / 16
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		kernels.MulNT(out, x, y, m, n, k)
	}
	reportFLOPs(b, 2*m*k*n, start)
}

// BenchmarkMiniCanvas: one whole canvas as the generation loop runs it with the
// runner's default mode — a 64-token prompt through the encoder, then `steps`
// decoder steps over the 256-token canvas with self-conditioning — on Darkroom Mini's
// dims (miniBenchRunner) with a 4096-token vocabulary.
func BenchmarkMiniCanvas(b *testing.B) {
	r, cfg := miniBenchRunner(b)
	rng := rand.New(rand.NewPCG(3, 3))
	prompt, canvas := randTokens(rng, 64, cfg.VocabSize), randTokens(rng, 256, cfg.VocabSize)
	for _, steps := range []int{8, 12, 16} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			start := time.Now()
			for range b.N {
				r.Reset()
				if _, err := r.Encode(prompt); err != nil {
					b.Fatal(err)
				}
				var soft *tensors.Tensor
				for range steps {
					var err error
					if _, soft, err = r.Decode(canvas, soft, 0.8); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(time.Since(start).Seconds()/float64(b.N)*1e3, "ms/canvas")
		})
	}
}

// BenchmarkMiniScore: one AR guidance round's encoder pass (Runner.Score) over a
// 255-token canvas after a 64-token prompt, next to one decoder step over the same
// canvas, on Darkroom Mini's dims: the ratio is what a guidance round costs in
// denoising steps.
func BenchmarkMiniScore(b *testing.B) {
	r, cfg := miniBenchRunner(b)
	rng := rand.New(rand.NewPCG(3, 3))
	prompt, canvas := randTokens(rng, 64, cfg.VocabSize), randTokens(rng, 256, cfg.VocabSize)
	if _, err := r.Encode(prompt); err != nil {
		b.Fatal(err)
	}
	b.Run("score", func(b *testing.B) {
		for range b.N {
			if _, err := r.Score(canvas[:255], 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for range b.N {
			if _, _, err := r.Decode(canvas, nil, 0.8); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// miniBenchRunner is a runner over random weights with Darkroom Mini's dims
// (engine/train DefaultMiniSize, which imports this package: hidden 64, three layers
// the last of them full, 2 heads of 32 over one KV head, MLP 128, 8 experts of 64 top-2,
// window 128) and a 4096-token vocabulary — the model `darkroom bench` runs.
func miniBenchRunner(b testing.TB) (*Runner, *config.Text) {
	cfg := benchConfig()
	cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.NumKeyValueHeads = 64, 3, 2, 1
	cfg.IntermediateSize, cfg.MoEIntermediateSize, cfg.NumExperts = 128, 64, 8
	cfg.LayerTypes = []config.LayerType{config.SlidingAttention, config.SlidingAttention, config.FullAttention}
	return randomRunner(b, cfg)
}
