// Package model is the DiffusionGemma graph on GoMLX: one shared layer stack run in
// two modes, as in vLLM's diffusion_gemma.py.
//
//   - Encoder mode is causal (sliding-window on sliding layers, full causal on full
//     layers). It runs over the prompt and, later, over each committed canvas, and it
//     writes the per-layer K/V cache. Its layer_scalar is the encoder's own buffer.
//   - Decoder (denoiser) mode is bidirectional over the 256-token canvas and reads the
//     cached prefix in front of it (sliding layers: the last sliding_window−1 cached
//     tokens; full layers: all of them). It never writes the cache. Its only own
//     weights are the self-conditioning MLP at the input.
//
// Every layer: sandwich-normed attention (GQA, QK-norm, scale-free v_norm, scale 1.0;
// full layers K=V with proportional partial RoPE), then a dense shared GeGLU MLP and a
// sparse top-k mixture of experts side by side, each with its own norms, and the
// layer_scalar multiplying the whole layer output. Final norm, tied head, logit
// soft-cap. That recipe is written once, in package arch, over a small set of
// operations; this package implements them twice — on graph nodes (graphops.go: the
// weights through Params, the keys through a keySource, the experts as a grouped
// GEMM) and on the host's float32 rows (hostops.go) — and engine/train/hostgrad a
// third time on its reverse-mode tape. Everything computes in float32 except, when Params.Compute asks for it,
// the weight products: bf16 operands with float32 accumulation, as upstream's bf16
// model. Weights stay on the device as stored (BF16, int8, int4, NVFP4; a GGUF's
// blocks in their own bits, engine/quant's block formats) and are converted or
// dequantized in-graph by
// Params one matmul block at a time (chunk.go): rows gathered before they are
// decoded, the tied head and the experts in bounded blocks.
//
// Graph functions are batched ([B, T, …]) and differentiable so engine/train can use
// them; Runner wraps them for generation with fixed-capacity KV caches and cached
// executables, and runs a whole denoising step — decoder, head, the sampler's step
// (engine/sampler's StepGraph) and the next soft embedding — in one executable
// (DecodeStep, step.go). memory.go says what it holds on the device. Weights are
// context variables in scope "dg" named by their canonical names (engine/weights.Specs;
// see Params).
//
// On the pure-Go backend the Runner computes generation on the host instead (host.go,
// hostops.go, head.go), for every model whatever its size: the same recipe over
// float32 row-major matrices, with the products and exponentials in package kernels,
// which multiplies each weight in its stored format (hostweights.go: BF16, int8, int4,
// NVFP4 and GGUF blocks, from the context's tensors or a checkpoint mapped in place —
// NewHostRunner), so the host path takes no more memory than the weights do. Its
// encoder reads a prompt in passes of several of the graph's chunks (Runner.HostPass),
// bit for bit the values of reading the chunks one by one.
//
// A model too big for its device can be split with the host (NewSplitRunner, split.go):
// its first layers, the embedding, the head and the sampler in graphs, its other
// layers on the host path, per call only the rows' hidden state crossing between.
// simplego's DotGeneral reaches 1.5–4 GFLOP/s on two cores, the kernels 25–100, so a
// decoder step is about 10× faster; the tests hold both paths to the float64
// reference.
package model

import (
	"fmt"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// KV is a per-layer key/value cache, as graph nodes.
//
// K[i] and V[i] are [B, S, KVHeads(i), LayerHeadDim(i)]: K after k_norm and RoPE, V
// after the scale-free v_norm. This is the trainer-facing form (Encoder, Decoder), which
// keeps both for every layer and position. The Runner's cache is smaller (kvcache.go):
// sliding layers keep the last sliding_window−1 positions and full (K=V) layers only V,
// from which K = RoPE(V ⊙ k_norm.weight) is recomputed exactly at every step.
//
// Positions [B, S] Int32 are the absolute positions of the slots and Valid [B, S] Bool
// marks the filled ones.
type KV struct {
	K, V      []*Node
	Positions *Node
	Valid     *Node
}

func layerPrefix(i int) string { return arch.LayerPrefix(i) }

// Embed looks tokens up in the (tied) embedding table and scales by √D rounded to the
// table's storage dtype (53.0 for D=2816 in bf16).
//
// tokens: [B, T] Int → [B, T, D] Float32
func (p *Params) Embed(tokens *Node) *Node {
	b, t := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	x := p.GatherRows(weights.EmbeddingName, Reshape(ConvertDType(tokens, dtypes.Int32), b, t, 1))
	return MulScalar(x, p.EmbedScale())
}

// encoderScalar is the encoder's own layer_scalar, falling back to the decoder's when a
// checkpoint does not store it.
func (p *Params) encoderScalar(i int) string { return encoderScalar(p.Has, i) }

// encoderScalar is arch.EncoderScalar.
func encoderScalar(has func(string) bool, i int) string { return arch.EncoderScalar(has, i) }

func (p *Params) slidingLayers() []bool {
	s := make([]bool, p.Cfg.NumHiddenLayers)
	for i := range s {
		s[i] = p.Cfg.IsSliding(i)
	}
	return s
}

func (p *Params) newKV() *KV {
	n := p.Cfg.NumHiddenLayers
	return &KV{K: make([]*Node, n), V: make([]*Node, n)}
}

// Encoder runs the causal encoder over tokens and returns the last layer's output (the
// residual stream before the final norm; see Logits) and the K/V of every layer.
// Key j is visible to query i iff keyValid[j], pos_j ≤ pos_i and, on sliding layers,
// pos_j > pos_i − sliding_window. Positions are absolute and need not start at 0, so
// padded batches (right padding, keyValid false) work.
//
// tokens: [B, T] Int, positions: [B, T] Int32, keyValid: [B, T] Bool →
// hidden: [B, T, D], kv: K/V [B, T, Kv_i, Hd_i] with Positions = positions, Valid = keyValid.
func Encoder(p *Params, tokens, positions, keyValid *Node) (hidden *Node, kv *KV) {
	positions = ConvertDType(positions, dtypes.Int32)
	kv = p.newKV()
	kv.Positions, kv.Valid = positions, keyValid
	src := &selfKeys{positions: positions, valid: keyValid, window: p.Cfg.SlidingWindow, kv: kv,
		sliding: p.slidingLayers(), masks: map[bool]*Node{}}
	o := &graphOps{p: p, positions: positions, src: src}
	return arch.Layers(o, p.Cfg, p.Embed(tokens), p.encoderScalar), kv
}

// Decoder runs the bidirectional denoiser over a canvas after a cached prefix and
// returns the last layer's output (before the final norm; see Logits).
//
// Canvas positions must be contiguous and ascending per example; positions[:, 0] is
// the number of cached tokens L in front of the canvas. Canvas queries see every
// canvas position and the prefix keys that are valid (prefixValid, or prefix.Valid
// when nil) — on sliding layers only those with position > L − sliding_window, i.e.
// the last sliding_window−1 cached tokens (transformers' generate). prefix == nil means
// no prefix. soft == nil is the first step of a canvas (see SelfCondition).
//
// canvas: [B, C] Int, positions: [B, C] Int32, soft: [B, C, D] or nil,
// prefix: K/V [B, S, …] (any float dtype), prefixValid: [B, S] Bool or nil → [B, C, D]
func Decoder(p *Params, canvas, positions, soft *Node, prefix *KV, prefixValid *Node) *Node {
	b := canvas.Shape().Dimensions[0]
	positions = ConvertDType(positions, dtypes.Int32)
	src := &prefixKeys{prefix: prefix, window: p.Cfg.SlidingWindow, sliding: p.slidingLayers(),
		masks: map[bool]*Node{}}
	if prefix != nil {
		src.valid = prefixValid
		if src.valid == nil {
			src.valid = prefix.Valid
		}
		src.start = Reshape(Slice(positions, AxisRange(), AxisElem(0)), b)
	}
	o := &graphOps{p: p, positions: positions, src: src}
	h := arch.DecoderInput(o, p.Cfg, p.Embed(canvas), soft, soft != nil)
	return arch.Layers(o, p.Cfg, h, arch.DecoderScalar)
}

// Logits is the output head: final RMSNorm, the tied embedding as the LM head (no
// embedding scale), and the soft-cap c·tanh(x/c) with c = final_logit_softcapping (none
// when 0), all in float32. The embedding is converted to float32 in vocabulary chunks
// of HeadChunkRows rows (chunk.go), so a large table is never whole in float32.
//
// hidden: [..., D] → [..., V]
func Logits(p *Params, hidden *Node) *Node {
	return logitsChunked(p, hidden, HeadChunkRows(p.Cfg.VocabSize, p.Cfg.HiddenSize))
}

// logitsChunked is Logits over vocabulary chunks of rows rows.
func logitsChunked(p *Params, hidden *Node, rows int) *Node {
	h := arch.Output(&graphOps{p: p}, p.Cfg, hidden)
	logits := headProduct(p, h, rows)
	if c := p.Cfg.FinalLogitSoftcapping; c > 0 {
		logits = MulScalar(Tanh(DivScalar(logits, c)), c)
	}
	return logits
}

// SoftEmbedding is Params.SoftEmbedding as a free function, for symmetry with Logits.
//
// logits: [B, C, V], temperature: scalar → [B, C, D]
func SoftEmbedding(p *Params, logits, temperature *Node) *Node {
	return p.SoftEmbedding(logits, temperature)
}

// CheckConfig reports, as errors, what would make the graph fail to build.
func CheckConfig(cfg *config.Text) error {
	switch {
	case cfg.HiddenSize <= 0, cfg.VocabSize <= 0, cfg.NumHiddenLayers <= 0, cfg.NumAttentionHeads <= 0,
		cfg.IntermediateSize <= 0:
		return fmt.Errorf("model config: hidden_size, vocab_size, num_hidden_layers, num_attention_heads and intermediate_size must be positive")
	case len(cfg.LayerTypes) != cfg.NumHiddenLayers:
		return fmt.Errorf("model config: %d layer_types for %d layers", len(cfg.LayerTypes), cfg.NumHiddenLayers)
	}
	if err := checkMoE(cfg.NumExperts, cfg.TopKExperts, cfg.MoEIntermediateSize); err != nil {
		return fmt.Errorf("model config: %w", err)
	}
	for i := range cfg.NumHiddenLayers {
		if t := cfg.LayerTypes[i]; t != config.SlidingAttention && t != config.FullAttention {
			return fmt.Errorf("model config: layer %d has unknown type %q", i, t)
		}
		kvh := cfg.KVHeads(i)
		if kvh <= 0 || cfg.NumAttentionHeads%kvh != 0 {
			return fmt.Errorf("model config: layer %d: %d heads are not a multiple of %d KV heads", i, cfg.NumAttentionHeads, kvh)
		}
		if _, err := InvFreq(cfg.LayerRope(i), cfg.LayerHeadDim(i)); err != nil {
			return fmt.Errorf("model config: layer %d: %w", i, err)
		}
	}
	return nil
}

// iotaPositions is positions start..start+t−1 for every row: [B, T] Int32.
func iotaPositions(g *Graph, b, t int, start *Node) *Node {
	pos := Iota(g, shapes.Make(dtypes.Int32, b, t), 1)
	if start != nil {
		pos = Add(pos, ConvertDType(start, dtypes.Int32))
	}
	return pos
}
