package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/naive"
	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// tinyConfig exercises every feature: sliding and full layers, a window smaller than
// the prompts, K=V full layers with a different KV head count and head dim,
// proportional partial RoPE, 16 experts top-2, the shared MLP, a visible soft-cap.
func tinyConfig() *config.Text {
	c := &config.Text{
		VocabSize: 96, HiddenSize: 32, IntermediateSize: 24, MoEIntermediateSize: 8,
		NumExperts: 16, TopKExperts: 2, NumHiddenLayers: 3,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, NumGlobalKVHeads: 1,
		HeadDim: 8, GlobalHeadDim: 16,
		LayerTypes:    []config.LayerType{config.SlidingAttention, config.FullAttention, config.SlidingAttention},
		SlidingWindow: 4, RMSNormEps: 1e-6, HiddenActivation: "gelu_pytorch_tanh",
		FinalLogitSoftcapping: 10, MaxPositionEmbeddings: 4096, EOSTokenID: 1, BOSTokenID: 2,
	}
	c.RopeParameters.Sliding = config.Rope{Type: "default", Theta: 10000}
	c.RopeParameters.Full = config.Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}
	return c
}

type wspec struct {
	name  string
	shape []int
	kind  int // 0 linear, 1 norm (≈1), 2 scalar/scale (≈1, positive), 3 embedding, 4 router proj
}

// testSpecs lists every text weight by canonical name, written out apart from
// weights.Specs so that the two check each other.
func testSpecs(c *config.Text) []wspec {
	d, v, in := c.HiddenSize, c.VocabSize, c.IntermediateSize
	s := []wspec{{"embed_tokens.weight", []int{v, d}, 3}, {"norm.weight", []int{d}, 1},
		{"self_conditioning.pre_norm.weight", []int{d}, 1},
		{"self_conditioning.gate_proj.weight", []int{in, d}, 0},
		{"self_conditioning.up_proj.weight", []int{in, d}, 0},
		{"self_conditioning.down_proj.weight", []int{d, in}, 0}}
	for i := range c.NumHiddenLayers {
		p := fmt.Sprintf("layers.%d.", i)
		h, kv, hd := c.NumAttentionHeads, c.KVHeads(i), c.LayerHeadDim(i)
		for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
			"post_feedforward_layernorm_1", "pre_feedforward_layernorm_2", "post_feedforward_layernorm_2",
			"post_feedforward_layernorm"} {
			s = append(s, wspec{p + n + ".weight", []int{d}, 1})
		}
		s = append(s, wspec{p + "layer_scalar", []int{1}, 2},
			wspec{fmt.Sprintf("encoder.layers.%d.layer_scalar", i), []int{1}, 2},
			wspec{p + "self_attn.q_proj.weight", []int{h * hd, d}, 0},
			wspec{p + "self_attn.k_proj.weight", []int{kv * hd, d}, 0},
			wspec{p + "self_attn.o_proj.weight", []int{d, h * hd}, 0},
			wspec{p + "self_attn.q_norm.weight", []int{hd}, 1},
			wspec{p + "self_attn.k_norm.weight", []int{hd}, 1},
			wspec{p + "mlp.gate_proj.weight", []int{in, d}, 0},
			wspec{p + "mlp.up_proj.weight", []int{in, d}, 0},
			wspec{p + "mlp.down_proj.weight", []int{d, in}, 0},
			wspec{p + "router.proj.weight", []int{c.NumExperts, d}, 4},
			wspec{p + "router.scale", []int{d}, 2},
			wspec{p + "router.per_expert_scale", []int{c.NumExperts}, 2},
			wspec{p + "experts.gate_up_proj", []int{c.NumExperts, 2 * c.MoEIntermediateSize, d}, 0},
			wspec{p + "experts.down_proj", []int{c.NumExperts, d, c.MoEIntermediateSize}, 0})
		if c.IsSliding(i) {
			s = append(s, wspec{p + "self_attn.v_proj.weight", []int{kv * hd, d}, 0})
		}
	}
	return s
}

// randomModel makes random weights as GoMLX tensors in the given storage dtype and the
// naive model over exactly the same (rounded) values.
func randomModel(t testing.TB, c *config.Text, seed uint64, storage dtypes.DType) (map[string]*tensors.Tensor, *naive.Model) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	ts := map[string]*tensors.Tensor{}
	nm := &naive.Model{Cfg: c, W: map[string]naive.Tensor{}, EmbedScale: EmbedScale(c.HiddenSize, storage)}
	for _, sp := range testSpecs(c) {
		n := 1
		for _, d := range sp.shape {
			n *= d
		}
		in := sp.shape[len(sp.shape)-1]
		vals := make([]float64, n)
		for j := range vals {
			switch sp.kind {
			case 0:
				vals[j] = rng.NormFloat64() / math.Sqrt(float64(in))
			case 1:
				vals[j] = 1 + 0.2*rng.NormFloat64()
			case 2:
				vals[j] = 0.5 + rng.Float64()
			case 3:
				vals[j] = rng.NormFloat64()
			case 4:
				vals[j] = rng.NormFloat64() * 2 / math.Sqrt(float64(in))
			}
		}
		switch storage {
		case dtypes.Float32:
			f := make([]float32, n)
			for j, v := range vals {
				f[j] = float32(v)
				vals[j] = float64(f[j])
			}
			ts[sp.name] = tensors.FromFlatDataAndDimensions(f, sp.shape...)
		case dtypes.Float64:
			ts[sp.name] = tensors.FromFlatDataAndDimensions(append([]float64{}, vals...), sp.shape...)
		case dtypes.BFloat16:
			f := make([]bfloat16.BFloat16, n)
			for j, v := range vals {
				f[j] = bfloat16.FromFloat64(v)
				vals[j] = float64(f[j].Float32())
			}
			ts[sp.name] = tensors.FromFlatDataAndDimensions(f, sp.shape...)
		default:
			t.Fatalf("storage %s", storage)
		}
		nm.W[sp.name] = naive.Tensor{Shape: sp.shape, Data: vals}
	}
	return ts, nm
}

var (
	backendOnce   sync.Once
	sharedBackend backends.Backend
	backendErr    error
)

// newBackend returns the package's one go backend (tensors are tied to a backend
// instance, and weights are shared between helpers within a test).
func newBackend(t testing.TB) backends.Backend {
	t.Helper()
	backendOnce.Do(func() { sharedBackend, backendErr = backends.NewWithConfig(testBackendConfig) })
	if backendErr != nil {
		t.Fatal(backendErr)
	}
	return sharedBackend
}

func newContext(t testing.TB, w map[string]*tensors.Tensor) *context.Context {
	t.Helper()
	ctx := context.New()
	if err := LoadTensors(ctx, w); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func randTokens(rng *rand.Rand, n, vocab int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = rng.IntN(vocab)
	}
	return out
}

// relErr is max|got − want| / max|want| over a row set (a norm-wise relative error,
// stable where single logits pass near zero).
func relErr(got []float32, want []float64) float64 {
	num, den := 0.0, 0.0
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / den
}

func flat(rows [][]float64) []float64 {
	var out []float64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// testBackendConfig runs ops sequentially (each op still uses the worker pool): with
// GoMLX v0.26 simplego's default parallel op execution, a wide graph (the gradient
// graph here) can deadlock on a 2-CPU machine — every pool slot held by a DotGeneral
// waiting for a slot for its own sub-tasks.
const testBackendConfig = "go:ops_sequential"
