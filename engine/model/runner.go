package model

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Runner drives the model for generation (batch 1): it owns the KV cache and the
// compiled executables.
//
// Static shapes: the cache has a fixed capacity, a power of two ≥ MinCapacity, and
// grows (by doubling, in one small graph) only when a chunk would not fit; Encode pads
// its tokens to a power-of-two bucket (chunks of at most MaxChunk); Decode takes the
// canvas as is (fixed at 256 in practice). The filled length is a graph input, so one
// executable serves every length within a capacity, and a whole generation compiles a
// handful of graphs (prompt bucket, canvas commit, decoder; ×1 per capacity reached).
// Executables are cached per shape and reused across generations (Reset keeps them).
//
// The cache tensors stay on the device between calls: they are donated to the encode
// executable, which returns the updated cache, and only read by the decode executable.
// K and V are kept for every layer (see KV), Float32, at full length even on sliding
// layers (no ring buffer: the masks stay simple; at long contexts this costs memory
// that a window-sized ring for the sliding layers would save).
//
// With HostDecoder (the default on the pure-Go backend) none of this applies: the model
// runs on the host (hostModel) with a host-memory cache and compiles nothing.
//
// A Runner is not safe for concurrent use.
type Runner struct {
	backend backends.Backend
	cfg     *config.Text
	ctx     *context.Context

	// MinCapacity is the smallest cache capacity (default 256); MaxChunk bounds the
	// tokens encoded per graph call (default 256, a power of two).
	MinCapacity, MaxChunk int

	// HostHead computes the decoder's LM head, soft-cap and next soft embedding on the
	// host with package gemm instead of in the graph (see hostHead). NewRunner turns it
	// on for the pure-Go backend, where it is several times faster; accelerators keep
	// the in-graph head.
	HostHead bool

	// HostDecoder runs the model on the host (see hostModel) instead of in GoMLX
	// graphs: Encode, Decode (with the host head) and the KV cache, kept in host
	// memory; weights are converted to float32 host copies once (BF16 widened,
	// int8/int4 dequantized). NewRunner turns it on for the pure-Go backend when those
	// copies take under a quarter of RAM; otherwise the graphs convert or dequantize
	// in-graph each call (compact storage, slower). Choose before the first Encode:
	// the graph and host caches are separate.
	HostDecoder bool

	// MoEBlock, if > 0, overrides the experts' row-block size (see MoEBlockSize and
	// Params.MoEBlock). Set it before the first Encode/Decode: compiled graphs keep
	// the size they were built with.
	MoEBlock int

	encodeExec, decodeExec, hiddenExec *context.Exec
	growExec                           *Exec
	head                               hostHead
	hcache                             hostCache // HostDecoder's KV cache
	weights                            *hostWeights

	k, v     []*tensors.Tensor // per layer: [1, capacity, Kv_i, Hd_i]
	length   int
	capacity int
	compiled map[string]bool
	zeroSoft map[int]*tensors.Tensor
}

// NewRunner prepares a runner for the model whose weights are in ctx (scope "dg").
// Nothing is compiled until the first Encode/Decode.
func NewRunner(backend backends.Backend, cfg *config.Text, ctx *context.Context) (r *Runner, err error) {
	if err := CheckConfig(cfg); err != nil {
		return nil, err
	}
	r = &Runner{backend: backend, cfg: cfg, ctx: ctx, MinCapacity: 256, MaxChunk: 256,
		compiled: map[string]bool{}, zeroSoft: map[int]*tensors.Tensor{}, HostHead: isPureGo(backend), HostDecoder: isPureGo(backend) && hostModelFits(ctx),
		weights: newHostWeights(ctx)}
	err = try("new runner", func() {
		r.encodeExec = must(context.NewExecAny(backend, ctx, r.encodeGraph))
		r.encodeExec.SetMaxCache(-1)
		r.decodeExec = must(context.NewExecAny(backend, ctx, r.decodeGraph))
		r.decodeExec.SetMaxCache(-1)
		r.hiddenExec = must(context.NewExecAny(backend, ctx, r.decodeHiddenGraph))
		r.hiddenExec.SetMaxCache(-1)
		r.growExec = must(NewExecAny(backend, r.growGraph))
		r.growExec.SetMaxCache(-1)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// LoadSet puts a weights.Set (plain and quantized tensors) into ctx for NewRunner and
// the graph functions.
func LoadSet(ctx *context.Context, set *weights.Set) error {
	return LoadTensors(ctx, set.Tensors)
}

// Len is the number of cached tokens (the next Encode writes at this position).
func (r *Runner) Len() int { return r.length }

// Capacity is the current cache capacity in tokens.
func (r *Runner) Capacity() int { return r.capacity }

// CompiledGraphs is how many distinct executables (kind × input shapes) the runner has
// compiled so far.
func (r *Runner) CompiledGraphs() int { return len(r.compiled) }

// Reset forgets the cached tokens. The cache memory and the compiled executables are
// kept for the next generation (stale slots are masked out and overwritten).
func (r *Runner) Reset() {
	r.length = 0
	r.hcache.truncate(r.cfg, 0)
}

// Truncate drops cached tokens after the first n.
func (r *Runner) Truncate(n int) error {
	if n < 0 || n > r.length {
		return fmt.Errorf("truncate cache to %d: only %d tokens cached", n, r.length)
	}
	r.length = n
	r.hcache.truncate(r.cfg, n)
	return nil
}

// Close frees the cache tensors. The runner can still be used (the cache is
// reallocated), but it starts empty.
func (r *Runner) Close() {
	for _, t := range append(r.k, r.v...) {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
	r.k, r.v, r.length, r.capacity = nil, nil, 0, 0
	r.hcache = hostCache{}
}

// Encode runs the causal encoder over tokens at positions Len()…Len()+n−1, appends
// their K/V to the cache and returns the float32, soft-capped logits [V] of the last
// token (what AR mode samples from). Used for the prompt, for committing a canvas, and
// for AR decoding one token at a time.
func (r *Runner) Encode(tokens []int) (lastLogits []float32, err error) {
	if len(tokens) == 0 {
		return nil, errors.New("encode: no tokens")
	}
	if max := r.cfg.MaxPositionEmbeddings; max > 0 && r.length+len(tokens) > max {
		return nil, fmt.Errorf("encode: %d cached + %d new tokens exceed max_position_embeddings %d",
			r.length, len(tokens), max)
	}
	if r.HostDecoder {
		return r.encodeOnHost(tokens)
	}
	if err := r.ensureCapacity(r.length + len(tokens)); err != nil {
		return nil, err
	}
	for start := 0; start < len(tokens); start += r.MaxChunk {
		chunk := tokens[start:min(start+r.MaxChunk, len(tokens))]
		lastLogits, err = r.encodeChunk(chunk)
		if err != nil {
			return nil, err
		}
	}
	return lastLogits, nil
}

func (r *Runner) encodeChunk(chunk []int) ([]float32, error) {
	n := len(chunk)
	nb := nextPow2(n)
	ids := make([]int32, nb)
	for i, t := range chunk {
		if t < 0 || t >= r.cfg.VocabSize {
			return nil, fmt.Errorf("encode: token id %d out of range [0, %d)", t, r.cfg.VocabSize)
		}
		ids[i] = int32(t)
	}
	args := []any{tensors.FromFlatDataAndDimensions(ids, 1, nb), int32(n), int32(r.length)}
	for _, t := range append(append([]*tensors.Tensor{}, r.k...), r.v...) {
		d, err := DonateTensorBuffer(t, r.backend, 0)
		if err != nil {
			r.dropCache()
			return nil, fmt.Errorf("encode: donate cache: %w", err)
		}
		args = append(args, d)
	}
	r.compiled[fmt.Sprintf("encode/%d/%d", nb, r.capacity)] = true
	var out []*tensors.Tensor
	err := try("encode", func() { out = must(r.encodeExec.Exec(args...)) })
	if err != nil {
		r.dropCache() // the donated cache is gone
		return nil, err
	}
	nl := r.cfg.NumHiddenLayers
	r.k, r.v = out[1:1+nl], out[1+nl:1+2*nl]
	r.length += n
	var logits []float32
	err = try("encode: read logits", func() { logits = tensors.MustCopyFlatData[float32](out[0]) })
	_ = out[0].FinalizeAll()
	return logits, err
}

// Decode runs one denoising step of the bidirectional decoder over canvas (placed
// right after the cached tokens) and returns its float32, soft-capped logits [C·V]
// (row-major, position-major) and the next step's self-conditioning input
// softmax(logits/temperature)@embed·√D (on the device in graph mode, a host tensor with
// HostDecoder or HostHead): pass it back as soft on the next step. soft == nil means
// the first step of a canvas (zero signal).
func (r *Runner) Decode(canvas []int, soft *tensors.Tensor, temperature float64) (logits []float32, nextSoft *tensors.Tensor, err error) {
	c := len(canvas)
	if c == 0 {
		return nil, nil, errors.New("decode: empty canvas")
	}
	if temperature <= 0 {
		return nil, nil, fmt.Errorf("decode: temperature %g must be positive", temperature)
	}
	if max := r.cfg.MaxPositionEmbeddings; max > 0 && r.length+c > max {
		return nil, nil, fmt.Errorf("decode: %d cached + %d canvas tokens exceed max_position_embeddings %d",
			r.length, c, max)
	}
	if !r.HostDecoder {
		if err := r.ensureCapacity(max(r.length, 1)); err != nil {
			return nil, nil, err
		}
	}
	ids := make([]int32, c)
	for i, t := range canvas {
		if t < 0 || t >= r.cfg.VocabSize {
			return nil, nil, fmt.Errorf("decode: token id %d out of range [0, %d)", t, r.cfg.VocabSize)
		}
		ids[i] = int32(t)
	}
	d := r.cfg.HiddenSize
	if soft == nil {
		if r.zeroSoft[c] == nil {
			r.zeroSoft[c] = tensors.FromShape(shapes.Make(dtypes.Float32, 1, c, d))
		}
		soft = r.zeroSoft[c]
	} else if want := shapes.Make(dtypes.Float32, 1, c, d); !soft.Shape().Equal(want) {
		return nil, nil, fmt.Errorf("decode: soft embedding has shape %s, want %s", soft.Shape(), want)
	}
	if r.HostDecoder {
		return r.decodeOnHost(ids, soft, temperature)
	}
	if r.HostHead {
		return r.decodeHostHead(ids, soft, temperature)
	}
	args := []any{tensors.FromFlatDataAndDimensions(ids, 1, c), soft, float32(temperature), int32(r.length)}
	for _, t := range append(append([]*tensors.Tensor{}, r.k...), r.v...) {
		args = append(args, t)
	}
	r.compiled[fmt.Sprintf("decode/%d/%d", c, r.capacity)] = true
	var out []*tensors.Tensor
	if err := try("decode", func() { out = must(r.decodeExec.Exec(args...)) }); err != nil {
		return nil, nil, err
	}
	err = try("decode: read logits", func() { logits = tensors.MustCopyFlatData[float32](out[0]) })
	_ = out[0].FinalizeAll()
	if err != nil {
		return nil, nil, err
	}
	return logits, out[1], nil
}

// decodeHostHead is Decode with the output head on the host: the graph returns the
// final-normed hidden state and hostHead does the rest.
func (r *Runner) decodeHostHead(ids []int32, soft *tensors.Tensor, temperature float64) (logits []float32, nextSoft *tensors.Tensor, err error) {
	c, d := len(ids), r.cfg.HiddenSize
	args := []any{tensors.FromFlatDataAndDimensions(ids, 1, c), soft, int32(r.length)}
	for _, t := range append(append([]*tensors.Tensor{}, r.k...), r.v...) {
		args = append(args, t)
	}
	r.compiled[fmt.Sprintf("decode-hidden/%d/%d", c, r.capacity)] = true
	var out []*tensors.Tensor
	if err := try("decode", func() { out = must(r.hiddenExec.Exec(args...)) }); err != nil {
		return nil, nil, err
	}
	var hn []float32
	err = try("decode: read hidden state", func() { hn = tensors.MustCopyFlatData[float32](out[0]) })
	_ = out[0].FinalizeAll()
	if err != nil {
		return nil, nil, err
	}
	return r.runHead(hn, c, d, temperature)
}

// runHead applies the host output head to the final-normed hidden state hn [C·D].
func (r *Runner) runHead(hn []float32, c, d int, temperature float64) (logits []float32, nextSoft *tensors.Tensor, err error) {
	err = try("decode: output head", func() {
		if err := r.head.prepare(r.weights, NewParams(r.ctx, nil, r.cfg).EmbedScale()); err != nil {
			panic(err)
		}
		var next []float32
		logits, next = r.head.run(hn, c, r.cfg.FinalLogitSoftcapping, temperature)
		nextSoft = tensors.FromFlatDataAndDimensions(next, 1, c, d)
	})
	if err != nil {
		return nil, nil, err
	}
	return logits, nextSoft, nil
}

// hostModel is the host model over the runner's weights.
func (r *Runner) hostModel() *hostModel {
	return &hostModel{cfg: r.cfg, w: r.weights, embedScale: NewParams(r.ctx, nil, r.cfg).EmbedScale()}
}

// decodeOnHost is Decode computed on the host (hostModel + hostHead).
func (r *Runner) decodeOnHost(ids []int32, soft *tensors.Tensor, temperature float64) (logits []float32, nextSoft *tensors.Tensor, err error) {
	c, d := len(ids), r.cfg.HiddenSize
	var hn []float32
	err = try("decode", func() {
		var sf []float32
		if soft != r.zeroSoft[c] {
			sf = tensors.MustCopyFlatData[float32](soft)
		}
		hn = r.hostModel().decode(&r.hcache, ids, sf, r.length)
	})
	if err != nil {
		return nil, nil, err
	}
	return r.runHead(hn, c, d, temperature)
}

// encodeOnHost is Encode computed on the host: the K/V go to the host cache.
func (r *Runner) encodeOnHost(tokens []int) (lastLogits []float32, err error) {
	ids := make([]int32, len(tokens))
	for i, t := range tokens {
		if t < 0 || t >= r.cfg.VocabSize {
			return nil, fmt.Errorf("encode: token id %d out of range [0, %d)", t, r.cfg.VocabSize)
		}
		ids[i] = int32(t)
	}
	err = try("encode", func() {
		m := r.hostModel()
		scalar := NewParams(r.ctx, nil, r.cfg).encoderScalar
		var hn []float32
		// Chunks of MaxChunk bound the attention scores' memory ([chunk, cached+chunk]).
		for start := 0; start < len(ids); start += max(r.MaxChunk, 1) {
			chunk := ids[start:min(start+max(r.MaxChunk, 1), len(ids))]
			hn = m.encode(&r.hcache, chunk, r.length+start, scalar)
		}
		if err := r.head.prepare(r.weights, m.embedScale); err != nil {
			panic(err)
		}
		lastLogits = r.head.logits(hn, 1, r.cfg.FinalLogitSoftcapping)
	})
	if err != nil {
		r.hcache.truncate(r.cfg, r.length) // drop partly written chunks
		return nil, err
	}
	r.length += len(tokens)
	r.capacity = max(r.capacity, r.MinCapacity, nextPow2(r.length))
	return lastLogits, nil
}

// ensureCapacity grows the cache (power of two ≥ MinCapacity) to hold n tokens.
func (r *Runner) ensureCapacity(n int) error {
	if r.k != nil && n <= r.capacity {
		return nil
	}
	newCap := max(r.MinCapacity, nextPow2(n))
	nl := r.cfg.NumHiddenLayers
	if r.k == nil {
		r.k, r.v = make([]*tensors.Tensor, nl), make([]*tensors.Tensor, nl)
		for i := range nl {
			s := shapes.Make(dtypes.Float32, 1, newCap, r.cfg.KVHeads(i), r.cfg.LayerHeadDim(i))
			r.k[i], r.v[i] = tensors.FromShape(s), tensors.FromShape(s)
		}
		r.capacity = newCap
		return nil
	}
	for r.capacity < newCap { // double, one small graph per capacity
		in := make([]any, 0, 2*nl)
		for _, t := range append(append([]*tensors.Tensor{}, r.k...), r.v...) {
			d, err := DonateTensorBuffer(t, r.backend, 0)
			if err != nil {
				r.dropCache()
				return fmt.Errorf("grow cache: %w", err)
			}
			in = append(in, d)
		}
		r.compiled[fmt.Sprintf("grow/%d", r.capacity)] = true
		var out []*tensors.Tensor
		if err := try("grow cache", func() { out = must(r.growExec.Exec(in...)) }); err != nil {
			r.dropCache()
			return err
		}
		r.k, r.v = out[:nl], out[nl:]
		r.capacity *= 2
	}
	return nil
}

// dropCache forgets a cache whose buffers were donated to a failed call.
func (r *Runner) dropCache() {
	r.k, r.v, r.length, r.capacity = nil, nil, 0, 0
}

// encodeGraph: in = [tokens [1, Tb], count, length, K_0…K_{L−1}, V_0…V_{L−1}]
// → [last logits [V], K'…, V'…].
func (r *Runner) encodeGraph(ctx *context.Context, in []*Node) []*Node {
	g := in[0].Graph()
	nl := r.cfg.NumHiddenLayers
	tokens, count, length := in[0], in[1], in[2]
	tb := tokens.Shape().Dimensions[1]
	capacity := in[3].Shape().Dimensions[1]
	p := r.params(ctx, g)
	cache := &KV{K: append([]*Node{}, in[3:3+nl]...), V: append([]*Node{}, in[3+nl:3+2*nl]...),
		Positions: iotaPositions(g, 1, capacity, nil)}
	qpos := iotaPositions(g, 1, tb, length)
	src := &cacheKeys{cache: cache, length: length, count: count, qpos: qpos, window: r.cfg.SlidingWindow,
		sliding: p.slidingLayers(), masks: map[bool]*Node{}}
	src.prepare(g, 1, tb, capacity)
	h := p.Embed(tokens)
	for i := range nl {
		h = p.Layer(i, h, qpos, src, p.encoderScalar(i))
	}
	last := Gather(Reshape(h, tb, r.cfg.HiddenSize), Reshape(SubScalar(count, 1), 1)) // [D]
	out := []*Node{Logits(p, last)}
	out = append(out, cache.K...)
	return append(out, cache.V...)
}

// decodeGraph: in = [canvas [1, C], soft [1, C, D], temperature, length, K…, V…]
// → [logits [1, C, V], next soft [1, C, D]].
func (r *Runner) decodeGraph(ctx *context.Context, in []*Node) []*Node {
	g := in[0].Graph()
	nl := r.cfg.NumHiddenLayers
	canvas, soft, temp, length := in[0], in[1], in[2], in[3]
	c := canvas.Shape().Dimensions[1]
	capacity := in[4].Shape().Dimensions[1]
	p := r.params(ctx, g)
	slots := iotaPositions(g, 1, capacity, nil)
	prefix := &KV{K: in[4 : 4+nl], V: in[4+nl : 4+2*nl], Positions: slots, Valid: LessThan(slots, length)}
	h := Decoder(p, canvas, iotaPositions(g, 1, c, length), soft, prefix, nil)
	logits := Logits(p, h)
	return []*Node{logits, SoftEmbedding(p, logits, temp)}
}

// decodeHiddenGraph: in = [canvas [1, C], soft [1, C, D], length, K…, V…]
// → [final-normed hidden [1, C, D]] (the input of the LM head; see hostHead).
func (r *Runner) decodeHiddenGraph(ctx *context.Context, in []*Node) []*Node {
	g := in[0].Graph()
	nl := r.cfg.NumHiddenLayers
	canvas, soft, length := in[0], in[1], in[2]
	c := canvas.Shape().Dimensions[1]
	capacity := in[3].Shape().Dimensions[1]
	p := r.params(ctx, g)
	slots := iotaPositions(g, 1, capacity, nil)
	prefix := &KV{K: in[3 : 3+nl], V: in[3+nl : 3+2*nl], Positions: slots, Valid: LessThan(slots, length)}
	h := Decoder(p, canvas, iotaPositions(g, 1, c, length), soft, prefix, nil)
	return []*Node{p.norm(h, "norm.weight")}
}

// params is the graphs' weight reader, with the runner's settings.
func (r *Runner) params(ctx *context.Context, g *Graph) *Params {
	p := NewParams(ctx, g, r.cfg)
	p.MoEBlock = r.MoEBlock
	return p
}

// isPureGo reports whether b is GoMLX's pure-Go backend (simplego).
// It looks through wrappers (such as engine/backend's Started, which embeds the
// backend) by asking for the backend's name rather than its Go type.
func isPureGo(b backends.Backend) bool {
	if _, ok := b.(*simplego.Backend); ok {
		return true
	}
	return b != nil && b.String() == simplego.BackendName
}

// growGraph: in = [K…, V…] → the same with the capacity (axis 1) doubled, zero-filled.
func (r *Runner) growGraph(in []*Node) []*Node {
	out := make([]*Node, len(in))
	for i, x := range in {
		dims := append([]int{}, x.Shape().Dimensions...)
		out[i] = Concatenate([]*Node{x, Zeros(x.Graph(), shapes.Make(x.DType(), dims...))}, 1)
	}
	return out
}

func nextPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// try runs fn, turning a GoMLX panic into an error with context.
func try(what string, fn func()) (err error) {
	defer func() {
		if rec := recover(); rec != nil {
			if e, ok := rec.(error); ok {
				err = fmt.Errorf("%s: %w", what, e)
			} else {
				err = fmt.Errorf("%s: %v", what, rec)
			}
		}
	}()
	fn()
	return nil
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
