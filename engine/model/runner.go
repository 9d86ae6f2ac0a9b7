package model

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/sampler"
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
// handful of graphs (prompt bucket, canvas commit, decoder or the whole denoising step
// of DecodeStep; in AR mode EncodeNext's prompt bucket and one token's, the pick in
// them; ×1 per capacity reached; Reserve fixes the capacity up front).
// Executables are cached per shape and reused across generations (Reset keeps them);
// Compilations counts the graphs built.
//
// The cache tensors stay on the device between calls: they are donated to the encode
// executable, which returns the updated cache, and only read by the decode executable.
// They hold what the spec says a future token can see (kvcache.go): sliding layers a
// ring of the last sliding_window−1 positions and RingSlack more (K and V), full (K=V)
// layers V only for every position, K recomputed from it; KVCacheBytes(cfg,
// Capacity(), CacheDType) is their size. Keep copies them to host memory, and Restore
// brings a copy back.
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

	// HostPass is how many of MaxChunk's chunks the host encoder reads in one pass
	// (DefaultHostPass; 1 reads each alone): the same values, bit for bit, the chunks'
	// attention one after another and their products over all the pass's rows
	// (hostModel.encodePass). A 26B expert's integer product packs its weights once a
	// pass for the rows routed to it, about 16 a chunk: on 2 cores the NVFP4 export
	// read a 986-token prompt in 27–29 s a chunk at a time, in 21–25 s in one pass
	// (passes of 8 chunks read 1,958 tokens no faster than of 4).
	HostPass int

	// HostHead computes the decoder's LM head, soft-cap and next soft embedding on the
	// host with package kernels instead of in the graph (see hostHead). NewRunner turns it
	// on for the pure-Go backend, where it is several times faster; accelerators keep
	// the in-graph head.
	HostHead bool

	// OnCompile, if set, is called as a graph is built, before it compiles
	// (every one Compilations counts): the engine tells its caller that the
	// step about to run first prepares the model for this device
	// (engine.EventPrepare).
	OnCompile func()

	// HostDecoder runs the model on the host (see hostModel) instead of in GoMLX
	// graphs: Encode, Decode (with the host head) and the KV cache, kept in host
	// memory; the weights stay in their stored format (BF16, int8, int4, NVFP4: see
	// hostWeights), so the host path takes no more memory than the weights do.
	// NewRunner turns it on for the pure-Go backend, whatever the model's size. Choose
	// before the first Encode: the graph and host caches are separate.
	HostDecoder bool

	// MoEBlock, if > 0, overrides the experts' row-block size (see MoEBlockSize and
	// Params.MoEBlock). Set it before the first Encode/Decode: compiled graphs keep
	// the size they were built with.
	MoEBlock int

	// CacheDType is the graph cache's element type (zero: Float32). BFloat16 halves
	// the cache but moves the logits by ~4e-2 relative on the test model, against the
	// runner's 1e-4 tolerance for Float32, so it is opt-in. Set it before the first
	// Encode; the host path always caches Float32.
	CacheDType dtypes.DType

	// ComputeDType is the graphs' dtype for the weight products (Params.Compute): zero
	// or Float32, or BFloat16 (bf16 operands, float32 accumulation, as upstream's bf16
	// model). Set it before the first Encode/Decode: compiled graphs keep it.
	ComputeDType dtypes.DType

	encodeExec, decodeExec, hiddenExec *context.Exec
	scoreExec                          *context.Exec
	nextExec                           *context.Exec // EncodeNext's, made on first use
	unseen                             []bool        // EncodeNext's mask where a TokenPlan has none (vocabRow): all false
	noBias                             []float32     // EncodeNext's bias where a TokenPlan has none (vocabRow): all zero
	stepExec                           *context.Exec // DecodeStep's (step.go), made on first use
	compilations                       int           // graphs built (counted)
	growExecs                          map[int]*Exec // by the capacity they grow from
	head                               hostHead
	hcache                             hostCache // HostDecoder's KV cache (a split model's: its host layers')
	weights                            *hostWeights
	deviceLayers                       int          // a split model's device layers (NewSplitRunner), else 0
	front                              *config.Text // a split model's device part (FrontConfig)
	splitExecs                         splitExecs   // a split model's executables

	scored   []float32            // Score's logits, reused by every call (see Score)
	cache    []*tensors.Tensor    // CacheShapes(cfg, capacity, CacheDType): per layer K, V (sliding) or V (full)
	kept     [KeptSlots]graphKept // Keep's host copies of the graph cache
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
	r = &Runner{backend: backend, cfg: cfg, ctx: ctx, MinCapacity: DefaultMinCapacity, MaxChunk: DefaultMaxChunk, HostPass: DefaultHostPass,
		compiled: map[string]bool{}, growExecs: map[int]*Exec{}, zeroSoft: map[int]*tensors.Tensor{}, HostHead: isPureGo(backend), HostDecoder: isPureGo(backend),
		weights: newHostWeights(ContextSource(ctx))}
	err = try("new runner", func() {
		r.encodeExec = must(context.NewExecAny(backend, ctx, r.counted(r.encodeGraph)))
		r.encodeExec.SetMaxCache(-1)
		r.decodeExec = must(context.NewExecAny(backend, ctx, r.counted(r.decodeGraph)))
		r.decodeExec.SetMaxCache(-1)
		r.hiddenExec = must(context.NewExecAny(backend, ctx, r.counted(r.decodeHiddenGraph)))
		r.hiddenExec.SetMaxCache(-1)
		r.scoreExec = must(context.NewExecAny(backend, ctx, r.counted(r.scoreGraph)))
		r.scoreExec.SetMaxCache(-1)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// NewHostRunner prepares a runner that runs the model on the host only (HostDecoder,
// which must stay on; the pure-Go backend's path) over the weights src holds as
// stored — e.g. a checkpoint mapped in place (weights.Mapped) — with no GoMLX context:
// the weights never become tensors.
func NewHostRunner(cfg *config.Text, src HostSource) (*Runner, error) {
	if err := CheckConfig(cfg); err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, ctx: context.New(), MinCapacity: DefaultMinCapacity, MaxChunk: DefaultMaxChunk, HostPass: DefaultHostPass,
		compiled: map[string]bool{}, growExecs: map[int]*Exec{}, zeroSoft: map[int]*tensors.Tensor{},
		HostHead: true, HostDecoder: true, weights: newHostWeights(src)}, nil
}

// IsPureGo reports whether b is GoMLX's pure-Go backend, where the model runs on the
// host (HostDecoder) unless graphs are asked for.
func IsPureGo(b backends.Backend) bool { return isPureGo(b) }

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

// Truncate drops cached tokens after the first n. The sliding layers keep only the
// last sliding_window−1 positions, so once more than that are cached it can only
// drop all of them (n = 0) or none.
func (r *Runner) Truncate(n int) error {
	if n < 0 || n > r.length {
		return fmt.Errorf("truncate cache to %d: only %d tokens cached", n, r.length)
	}
	if n > 0 && n < r.length && r.length > SlidingCacheSlots(r.cfg, r.length) {
		return fmt.Errorf("truncate cache to %d of %d tokens: the sliding layers keep only the last %d positions",
			n, r.length, SlidingCacheSlots(r.cfg, r.length))
	}
	r.length = n
	r.hcache.truncate(r.cfg, n)
	return nil
}

// graphKept is a copy of the graph path's cache that Keep made: its tensors in host
// memory (a device's memory is the scarcer: a 26B's cache at 4,096 tokens is 0.6 GB, a
// copy each way a few tens of milliseconds over PCIe), and the length and capacity it
// had. A slot's buffers are reused by its next Keep at the same capacity.
type graphKept struct {
	cache            []*tensors.Tensor
	length, capacity int
}

// free releases the copy.
func (k *graphKept) free() {
	for _, t := range k.cache {
		_ = t.FinalizeAll()
	}
	*k = graphKept{}
}

// Keep copies the cache as it is now into slot (< KeptSlots), so that Restore can come
// back to a prefix of what is cached now, whatever is cached meanwhile: a conversation
// keeps its prompt, and its next message, which begins with that prompt, encodes only
// what follows, even after a page was made in between (kept in the other slot). The
// host path copies its rows (a copy of a 26B's cache is over half a GB:
// HostKeptBytes); the graph path copies its tensors to host memory (graphKept), so the
// copies take none of the device's. It keeps nothing, and reports false, below one of
// the encoder's chunks (MaxChunk) cached, where Restore could bring back nothing, or
// where the copy fails.
func (r *Runner) Keep(slot int) bool {
	if r.length < max(r.MaxChunk, 1) || slot < 0 || slot >= KeptSlots {
		return false
	}
	if r.HostDecoder {
		r.hcache.keep(slot)
		return true
	}
	k := &r.kept[slot]
	if k.capacity != r.capacity || len(k.cache) != len(r.cache) {
		k.free()
		for _, t := range r.cache {
			k.cache = append(k.cache, tensors.FromShape(t.Shape()))
		}
	}
	for j, t := range r.cache {
		if err := k.cache[j].CopyFrom(t); err != nil {
			k.free()
			return false
		}
	}
	k.length, k.capacity = r.length, r.capacity
	if r.split() {
		r.hcache.keep(slot)
	}
	return true
}

// Restore makes the cache the first m ≤ n tokens of what Keep kept in slot and returns
// m: n rounded down to a whole number of the encoder's chunks (MaxChunk), so that the
// rest of a prompt is encoded in the very chunks a pass over all of it from an empty
// cache encodes it in, and gives its values bit for bit (on the host path a chunk's
// rows sum in another order below kernels.DotRows rows, and a sliding layer's
// attention sums its keys in depth blocks counted from the chunk's first visible key;
// on the graph path each chunk runs the executable of its own bucket). The kept pass
// must itself have begun at a chunk boundary (from empty, or from a Restore). It
// returns 0, the cache left as it was, where it cannot: n below one chunk, more than
// was kept, nothing kept in slot, or the sliding rings no longer holding the window
// before it (they hold RingSlack positions more than the window needs: ringHolds).
// On the graph path the kept copy is copied back to the device in place of the cache
// (freed first, so the device never holds both; should the copy fail, the cache is
// left empty), and the slot keeps it for the next Restore.
func (r *Runner) Restore(slot, n int) int {
	chunk := max(r.MaxChunk, 1)
	n = n / chunk * chunk
	if n <= 0 || slot < 0 || slot >= KeptSlots {
		return 0
	}
	if r.HostDecoder {
		if !r.hcache.restore(r.cfg, slot, n) {
			return 0
		}
		r.length = n
		return n
	}
	k := &r.kept[slot]
	if k.cache == nil || n > k.length {
		return 0
	}
	gc := r.graphCfg()
	for i := range gc.NumHiddenLayers {
		if gc.IsSliding(i) && !ringHolds(cacheSlots(gc, i, k.capacity), k.length, n) {
			return 0
		}
	}
	if r.split() && !r.hcache.restore(r.cfg, slot, n) { // the host's layers (Keep kept them with the device's)
		return 0
	}
	for _, t := range r.cache {
		_ = t.FinalizeAll()
	}
	r.dropCache()
	cache := make([]*tensors.Tensor, len(k.cache))
	for j, t := range k.cache {
		c, err := t.OnDeviceClone(r.backend, 0)
		if err != nil {
			for _, c := range cache[:j] {
				_ = c.FinalizeAll()
			}
			r.hcache.truncate(r.cfg, 0) // a split model's host layers: empty with the device's
			return 0
		}
		cache[j] = c
	}
	r.cache, r.length, r.capacity = cache, n, k.capacity
	return n
}

// Close frees the cache tensors. The runner can still be used (the cache is
// reallocated), but it starts empty.
func (r *Runner) Close() {
	for _, t := range r.cache {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
	r.cache, r.length, r.capacity = nil, 0, 0
	r.hcache = hostCache{}
	for i := range r.kept {
		r.kept[i].free()
	}
}

// CacheBytes is the memory the KV cache holds now: the graph cache's tensors
// (KVCacheBytes(cfg, Capacity(), CacheDType)), or with HostDecoder the host cache's
// rows (KVCacheBytes(cfg, Len(), Float32)) plus its table of the full layers' RoPE
// rotations (8 bytes per rotated pair per position).
func (r *Runner) CacheBytes() int64 {
	if r.HostDecoder {
		return r.hcache.bytes()
	}
	n := r.deviceCacheBytes()
	if r.split() {
		n += r.hcache.bytes()
	}
	return n
}

// deviceCacheBytes is the graph cache's tensors' bytes.
func (r *Runner) deviceCacheBytes() int64 {
	var n int64
	for _, t := range r.cache {
		n += int64(t.Shape().Memory())
	}
	return n
}

// Encode runs the causal encoder over tokens at positions Len()…Len()+n−1, appends
// their K/V to the cache and returns the float32, soft-capped logits [V] of the last
// token (what AR mode samples from on the host; on the graph path EncodeNext picks the
// token in the same executable instead). Used for the prompt, for committing a canvas,
// and for AR decoding one token at a time.
func (r *Runner) Encode(tokens []int) (lastLogits []float32, err error) {
	if len(tokens) == 0 {
		return nil, errors.New("encode: no tokens")
	}
	if err := r.checkPositions("encode", "new tokens", len(tokens)); err != nil {
		return nil, err
	}
	if r.HostDecoder {
		return r.encodeOnHost(tokens)
	}
	if r.split() {
		return r.encodeSplit(tokens)
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
	out, err := r.runEncode("encode", r.encodeExec, chunk)
	if err != nil {
		return nil, err
	}
	var logits []float32
	err = try("encode: read logits", func() { logits = tensors.MustCopyFlatData[float32](out) })
	_ = out.FinalizeAll()
	return logits, err
}

// EncodeNext is Encode followed by the AR mode's pick of the next token
// (sampler.TokenGraph with plan) in the same executable, the last chunk's: only
// the picked id comes back, not the logits row [V] (a megabyte per token at the
// 26B's vocabulary). Same id as sampler.Sampler.PickToken over Encode's logits. The
// graph path only (TokensOnDevice).
func (r *Runner) EncodeNext(tokens []int, plan sampler.TokenPlan) (id int, err error) {
	switch {
	case !r.TokensOnDevice():
		return 0, errors.New("encode next: the model runs on the host (HostDecoder, or a split model's layers): use Encode and the host sampler")
	case len(tokens) == 0:
		return 0, errors.New("encode next: no tokens")
	}
	if err := r.checkPositions("encode next", "new tokens", len(tokens)); err != nil {
		return 0, err
	}
	if err := r.ensureCapacity(r.length + len(tokens)); err != nil {
		return 0, err
	}
	last := (len(tokens) - 1) / r.MaxChunk * r.MaxChunk
	for start := 0; start < last; start += r.MaxChunk {
		if _, err := r.encodeChunk(tokens[start : start+r.MaxChunk]); err != nil {
			return 0, err
		}
	}
	if _, err := r.execOnce("encode next", &r.nextExec, r.encodeNextGraph); err != nil {
		return 0, err
	}
	seen, err := vocabRow("seen ids' mask", plan.Seen, &r.unseen, r.cfg.VocabSize) // nil: the penalty is off (θ = 1)
	if err != nil {
		return 0, err
	}
	bias, err := vocabRow("biases", plan.Bias, &r.noBias, r.cfg.VocabSize) // nil: the frequency penalty is off
	if err != nil {
		return 0, err
	}
	banned, err := vocabRow("banned ids' mask", plan.Banned, &r.unseen, r.cfg.VocabSize) // nil: no id is banned
	if err != nil {
		return 0, err
	}
	out, err := r.runEncode("encode next", r.nextExec, tokens[last:], plan.Temperature,
		tensors.FromFlatDataAndDimensions([]uint32{plan.Key.K1, plan.Key.K2}, 2), plan.Penalty,
		tensors.FromFlatDataAndDimensions(seen, len(seen)), tensors.FromFlatDataAndDimensions(bias, len(bias)),
		tensors.FromFlatDataAndDimensions(banned, len(banned)))
	if err != nil {
		return 0, err
	}
	err = try("encode next: read the id", func() { id = int(tensors.ToScalar[int32](out)) })
	_ = out.FinalizeAll()
	return id, err
}

// vocabRow is a [vocab] row EncodeNext sends (TokenPlan.Seen, Bias, Banned):
// row itself, or, where row is nil, *none — all false or zero, made on first
// use and kept.
func vocabRow[T bool | float32](what string, row []T, none *[]T, vocab int) ([]T, error) {
	switch {
	case row == nil:
		if *none == nil {
			*none = make([]T, vocab)
		}
		return *none, nil
	case len(row) != vocab:
		return nil, fmt.Errorf("encode next: %d %s entries for a vocabulary of %d", len(row), what, vocab)
	}
	return row, nil
}

// TokensOnDevice reports whether EncodeNext runs: the model is in graphs (not
// HostDecoder; the encoder's head is in the graph whatever HostHead says), all of it
// (not split with the host).
func (r *Runner) TokensOnDevice() bool { return !r.HostDecoder && !r.split() }

// runEncode runs exec, an encoder executable over in = [tokens [1, Tb], count,
// length, extra…, cache…] (encodeGraph, encodeNextGraph), on chunk (padded to its
// power-of-two bucket) with the cache donated, keeps the updated cache, and returns
// the executable's first output. op names the call in errors and the compiled set.
func (r *Runner) runEncode(op string, exec *context.Exec, chunk []int, extra ...any) (*tensors.Tensor, error) {
	n := len(chunk)
	nb := nextPow2(n)
	ids, err := r.paddedIDs(op, chunk, nb)
	if err != nil {
		return nil, err
	}
	args := append([]any{tensors.FromFlatDataAndDimensions(ids, 1, nb), int32(n), int32(r.length)}, extra...)
	for _, t := range r.cache {
		d, err := DonateTensorBuffer(t, r.backend, 0)
		if err != nil {
			r.dropCache()
			return nil, fmt.Errorf("%s: donate cache: %w", op, err)
		}
		args = append(args, d)
	}
	r.compiled[fmt.Sprintf("%s/%d/%d", op, nb, r.capacity)] = true
	var out []*tensors.Tensor
	err = try(op, func() { out = must(exec.Exec(args...)) })
	if err != nil {
		r.dropCache() // the donated cache is gone
		return nil, err
	}
	r.cache = out[1:]
	r.length += n
	return out[0], nil
}

// Score runs the causal encoder over tokens at positions Len()…Len()+n−1, as Encode
// would, and returns the float32, soft-capped logits of tokens from…n−1
// [(n−from)·V] (row i−from predicts the token after tokens[i]) — but leaves the cache
// as it was: nothing is appended. The generation loop uses it to read what the causal
// model thinks of a developed canvas (AR guidance); from skips rows it already has
// (the host path then skips their LM head). At most MaxChunk tokens.
//
// The logits are in a buffer the Runner keeps for every Score (each guidance round
// would otherwise allocate (n−from)·V floats, 4 MB at 262k×4 rows): they are valid
// until the next Score or Encode on this Runner. A caller that keeps them longer
// copies them first.
func (r *Runner) Score(tokens []int, from int) (logits []float32, err error) {
	n := len(tokens)
	switch {
	case n == 0:
		return nil, errors.New("score: no tokens")
	case n > max(r.MaxChunk, 1):
		return nil, fmt.Errorf("score: %d tokens, at most %d in one pass", n, max(r.MaxChunk, 1))
	case from < 0 || from >= n:
		return nil, fmt.Errorf("score: rows from %d of %d tokens", from, n)
	}
	if err := r.checkPositions("score", "new tokens", n); err != nil {
		return nil, err
	}
	nb := nextPow2(n)
	ids, err := r.paddedIDs("score", tokens, nb)
	if err != nil {
		return nil, err
	}
	if r.HostDecoder {
		return r.scoreOnHost(ids[:n], from)
	}
	if r.split() {
		return r.scoreSplit(ids, n, from)
	}
	if err := r.ensureCapacity(r.length + n); err != nil {
		return nil, err
	}
	out, err := r.runScore("score", r.scoreExec, ids, n)
	if err != nil {
		return nil, err
	}
	v := r.cfg.VocabSize
	logits = r.scoreBuffer((n - from) * v)
	err = try("score: read logits", func() {
		if err := tensors.ConstFlatData(out, func(flat []float32) { copy(logits, flat[from*v:n*v]) }); err != nil {
			panic(err)
		}
	})
	_ = out.FinalizeAll()
	if err != nil {
		return nil, err
	}
	return logits, nil
}

// runScore runs exec, a read-only encoder executable over in = [tokens [1, Tb], count,
// length, cache…] (scoreGraph, frontScoreGraph), on ids (n of them real, padded to
// their bucket) with the cache read, not donated, and returns its output. kind names
// the executable in errors and the compiled set.
func (r *Runner) runScore(kind string, exec *context.Exec, ids []int32, n int) (*tensors.Tensor, error) {
	args := []any{tensors.FromFlatDataAndDimensions(ids, 1, len(ids)), int32(n), int32(r.length)}
	for _, t := range r.cache {
		args = append(args, t) // read only: not donated
	}
	r.compiled[fmt.Sprintf("%s/%d/%d", kind, len(ids), r.capacity)] = true
	var out []*tensors.Tensor
	if err := try("score", func() { out = must(exec.Exec(args...)) }); err != nil {
		return nil, err
	}
	return out[0], nil
}

// scoreBuffer is the Runner's Score buffer, grown to hold n values and cut to n.
func (r *Runner) scoreBuffer(n int) []float32 {
	if cap(r.scored) < n {
		r.scored = make([]float32, n)
	}
	return r.scored[:n]
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
	if err := r.checkPositions("decode", "canvas tokens", c); err != nil {
		return nil, nil, err
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
	soft, err = r.softInput("decode", soft, c)
	if err != nil {
		return nil, nil, err
	}
	if r.split() {
		return r.decodeSplit(ids, soft, temperature)
	}
	if r.HostDecoder || r.HostHead {
		hn, err := r.decodeHidden("decode", ids, soft)
		if err != nil {
			return nil, nil, err
		}
		return r.runHead(hn, c, temperature)
	}
	args := []any{tensors.FromFlatDataAndDimensions(ids, 1, c), soft, float32(temperature), int32(r.length)}
	for _, t := range r.cache {
		args = append(args, t)
	}
	r.compiled[fmt.Sprintf("decode/%d/%d", c, r.capacity)] = true
	var out []*tensors.Tensor
	if err := try("decode", func() { out = must(r.decodeExec.Exec(args...)) }); err != nil {
		return nil, nil, err
	}
	return decodeResult(out)
}

// decodeResult is Decode's result from its executable's outputs [logits, next soft]
// (decodeOutputs): the logits read to the host and freed, the next soft embedding
// kept on the device (freed too where the logits cannot be read).
func decodeResult(out []*tensors.Tensor) (logits []float32, nextSoft *tensors.Tensor, err error) {
	err = try("decode: read logits", func() { logits = tensors.MustCopyFlatData[float32](out[0]) })
	_ = out[0].FinalizeAll()
	if err != nil {
		_ = out[1].FinalizeAll()
		return nil, nil, err
	}
	return logits, out[1], nil
}

// execOnce is the executable of graph function fn kept in *slot, made on first use
// (op names the call in the error): the executables not every runner needs
// (EncodeNext's, DecodeStep's, a split model's).
func (r *Runner) execOnce(op string, slot **context.Exec, fn func(*context.Context, []*Node) []*Node) (*context.Exec, error) {
	if *slot != nil {
		return *slot, nil
	}
	err := try(op, func() {
		*slot = must(context.NewExecAny(r.backend, r.ctx, r.counted(fn)))
		(*slot).SetMaxCache(-1)
	})
	return *slot, err
}

// softInput is the soft embedding a decode of c canvas tokens is fed: soft itself
// when it has shape [1, c, hidden], else (soft nil) a zero tensor kept per c. op
// names the call in the error.
func (r *Runner) softInput(op string, soft *tensors.Tensor, c int) (*tensors.Tensor, error) {
	want := shapes.Make(dtypes.Float32, 1, c, r.cfg.HiddenSize)
	if soft == nil {
		if r.zeroSoft[c] == nil {
			r.zeroSoft[c] = tensors.FromShape(want)
		}
		return r.zeroSoft[c], nil
	}
	if !soft.Shape().Equal(want) {
		return nil, fmt.Errorf("%s: soft embedding has shape %s, want %s", op, soft.Shape(), want)
	}
	return soft, nil
}

// decodeHidden is the decoder pass of Decode and DecodeStep with the output head on
// the host: the final-normed hidden state [C·D] the head reads, from the host model
// (HostDecoder) or from the graph (HostHead). op names the call in errors.
func (r *Runner) decodeHidden(op string, ids []int32, soft *tensors.Tensor) ([]float32, error) {
	if r.HostDecoder {
		return r.hiddenOnHost(op, ids, soft)
	}
	return r.hiddenInGraph(op, ids, soft)
}

// hiddenInGraph is decodeHidden by the graph: it returns the final-normed hidden
// state and hostHead does the rest.
func (r *Runner) hiddenInGraph(op string, ids []int32, soft *tensors.Tensor) (hn []float32, err error) {
	out, err := r.runDecoder(op, "decode-hidden", r.hiddenExec, ids, soft)
	if err != nil {
		return nil, err
	}
	return r.hiddenRows(op, out, len(ids))
}

// hiddenRows copies the first n rows [n·D] of a hidden state out of t ([1, ≥n, D]) and
// frees t.
func (r *Runner) hiddenRows(op string, t *tensors.Tensor, n int) (x []float32, err error) {
	err = try(op+": read hidden state", func() {
		if err := tensors.ConstFlatData(t, func(flat []float32) {
			x = slices.Clone(flat[:n*r.cfg.HiddenSize])
		}); err != nil {
			panic(err)
		}
	})
	_ = t.FinalizeAll()
	return x, err
}

// runDecoder runs exec, a decoder executable over in = [canvas [1, C], soft [1, C, D],
// length, cache…] (decodeHiddenGraph, frontDecodeGraph), on the canvas ids and
// returns its output [1, C, D]. op names the call in errors, kind the executable in
// the compiled set.
func (r *Runner) runDecoder(op, kind string, exec *context.Exec, ids []int32, soft *tensors.Tensor) (*tensors.Tensor, error) {
	c := len(ids)
	args := []any{tensors.FromFlatDataAndDimensions(ids, 1, c), soft, int32(r.length)}
	for _, t := range r.cache {
		args = append(args, t)
	}
	r.compiled[fmt.Sprintf("%s/%d/%d", kind, c, r.capacity)] = true
	var out []*tensors.Tensor
	if err := try(op, func() { out = must(exec.Exec(args...)) }); err != nil {
		return nil, err
	}
	return out[0], nil
}

// hiddenOnHost is decodeHidden by the host model.
func (r *Runner) hiddenOnHost(op string, ids []int32, soft *tensors.Tensor) (hn []float32, err error) {
	err = try(op, func() {
		var sf []float32
		if soft != r.zeroSoft[len(ids)] {
			sf = tensors.MustCopyFlatData[float32](soft)
		}
		hn = r.hostModel().decode(&r.hcache, ids, sf, r.length)
	})
	return hn, err
}

// runHead applies the host output head to the final-normed hidden state hn [C·D]:
// Decode's logits and next soft embedding.
func (r *Runner) runHead(hn []float32, c int, temperature float64) (logits []float32, nextSoft *tensors.Tensor, err error) {
	err = try("decode: output head", func() {
		if err := r.head.prepare(r.weights, r.weights.embedScale(r.cfg)); err != nil {
			panic(err)
		}
		var next []float32
		logits, next = r.head.run(hn, c, r.cfg.FinalLogitSoftcapping, temperature)
		nextSoft = tensors.FromFlatDataAndDimensions(next, 1, c, r.cfg.HiddenSize)
	})
	if err != nil {
		return nil, nil, err
	}
	return logits, nextSoft, nil
}

// hostModel is the host model over the runner's weights.
func (r *Runner) hostModel() *hostModel {
	if r.split() { // the host's layers only: no embedding, no head
		return &hostModel{cfg: r.cfg, w: r.weights, from: r.deviceLayers}
	}
	return &hostModel{cfg: r.cfg, w: r.weights, embedScale: r.weights.embedScale(r.cfg)}
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
		scalar := r.weights.encoderScalar
		var hn []float32
		// Chunks of MaxChunk bound the attention scores' memory ([chunk, cached+chunk]);
		// passes of HostPass chunks the activations'.
		chunk := max(r.MaxChunk, 1)
		pass := chunk * max(r.HostPass, 1)
		for start := 0; start < len(ids); start += pass {
			hn = m.encodePass(&r.hcache, ids[start:min(start+pass, len(ids))], r.length+start, scalar, chunk)
		}
		if err := r.head.prepare(r.weights, m.embedScale); err != nil {
			panic(err)
		}
		lastLogits = r.head.logits(hn, 1, r.cfg.FinalLogitSoftcapping)
	})
	if err != nil {
		// Drop partly written chunks; if a sliding ring already overwrote older
		// positions, the cache is lost (as a failed graph Encode loses it).
		if !r.hcache.truncate(r.cfg, r.length) {
			r.length = 0
		}
		return nil, err
	}
	r.length += len(tokens)
	r.capacity = max(r.capacity, r.MinCapacity, nextPow2(r.length))
	return lastLogits, nil
}

// checkPositions refuses n more tokens (named what) after the cache when they would
// run past max_position_embeddings; op names the caller in the error.
func (r *Runner) checkPositions(op, what string, n int) error {
	if max := r.cfg.MaxPositionEmbeddings; max > 0 && r.length+n > max {
		return fmt.Errorf("%s: %d cached + %d %s exceed max_position_embeddings %d", op, r.length, n, what, max)
	}
	return nil
}

// paddedIDs checks tokens against the vocabulary and returns them as int32,
// zero-padded to nb (the executable's bucket).
func (r *Runner) paddedIDs(what string, tokens []int, nb int) ([]int32, error) {
	ids := make([]int32, nb)
	for i, t := range tokens {
		if t < 0 || t >= r.cfg.VocabSize {
			return nil, fmt.Errorf("%s: token id %d out of range [0, %d)", what, t, r.cfg.VocabSize)
		}
		ids[i] = int32(t)
	}
	return ids, nil
}

// scoreOnHost is Score computed on the host: an encoder pass that reads the host
// cache and writes nothing to it (hostModel.score), so no copy of the cache per
// guidance round.
func (r *Runner) scoreOnHost(ids []int32, from int) (logits []float32, err error) {
	err = try("score", func() {
		m := r.hostModel()
		if r.hcache.v == nil && r.length > 0 {
			panic(fmt.Errorf("host cache is empty but %d tokens are cached", r.length))
		}
		hn := m.score(&r.hcache, ids, r.length, r.weights.encoderScalar, from)
		if err := r.head.prepare(r.weights, m.embedScale); err != nil {
			panic(err)
		}
		rows := len(ids) - from
		logits = r.head.logitsInto(r.scoreBuffer(rows*r.cfg.VocabSize), hn, rows, r.cfg.FinalLogitSoftcapping)
	})
	return logits, err
}

// ensureCapacity grows the cache (power of two ≥ MinCapacity) to hold n tokens. Full
// layers' caches grow with the capacity; sliding layers' rings only until they reach
// RingSlots. A ring grows only while it has not wrapped (length ≤ its
// slots, since its slots equal the old capacity then), so position p stays in slot
// p mod R and growing is appending zero slots.
func (r *Runner) ensureCapacity(n int) error {
	if r.cache != nil && n <= r.capacity {
		return nil
	}
	newCap := max(r.MinCapacity, nextPow2(n))
	if r.cache == nil {
		if r.CacheDType == dtypes.InvalidDType {
			r.CacheDType = dtypes.Float32
		}
		for _, s := range CacheShapes(r.graphCfg(), newCap, r.CacheDType) {
			r.cache = append(r.cache, tensors.FromShape(s))
		}
		r.capacity = newCap
		return nil
	}
	for r.capacity < newCap { // double, one small graph per capacity
		from, to := CacheShapes(r.graphCfg(), r.capacity, r.CacheDType), CacheShapes(r.graphCfg(), 2*r.capacity, r.CacheDType)
		var grow []int // the entries whose length changes
		var in []any
		for j, t := range r.cache {
			if from[j].Equal(to[j]) {
				continue
			}
			d, err := DonateTensorBuffer(t, r.backend, 0)
			if err != nil {
				r.dropCache()
				return fmt.Errorf("grow cache: %w", err)
			}
			grow, in = append(grow, j), append(in, d)
		}
		if len(grow) > 0 {
			exec, err := r.growExec(r.capacity, grow, to)
			if err != nil {
				r.dropCache()
				return err
			}
			r.compiled[fmt.Sprintf("grow/%d", r.capacity)] = true
			var out []*tensors.Tensor
			if err := try("grow cache", func() { out = must(exec.Exec(in...)) }); err != nil {
				r.dropCache()
				return err
			}
			for k, j := range grow {
				r.cache[j] = out[k]
			}
		}
		r.capacity *= 2
	}
	return nil
}

// growExec is the executable that grows the cache entries grow from capacity to
// their shapes in to (zero slots appended): growGraph for those targets.
func (r *Runner) growExec(capacity int, grow []int, to []shapes.Shape) (*Exec, error) {
	if e, ok := r.growExecs[capacity]; ok {
		return e, nil
	}
	slots := make([]int, len(grow))
	for k, j := range grow {
		slots[k] = to[j].Dimensions[1]
	}
	var e *Exec
	err := try("grow cache", func() {
		e = must(NewExecAny(r.backend, func(in []*Node) []*Node {
			r.compiling()
			return growGraph(in, slots)
		}))
		e.SetMaxCache(-1)
	})
	if err != nil {
		return nil, err
	}
	r.growExecs[capacity] = e
	return e, nil
}

// dropCache forgets a cache whose buffers were donated to a failed call.
func (r *Runner) dropCache() {
	r.cache, r.length, r.capacity = nil, 0, 0
}

// encodeGraph: in = [tokens [1, Tb], count, length, cache… (CacheShapes)]
// → [last logits [V], cache'…].
func (r *Runner) encodeGraph(ctx *context.Context, in []*Node) []*Node {
	p, h, src := r.encoderPass(ctx, in[:3], in[3:])
	return append([]*Node{Logits(p, r.lastRow(h, in[1]))}, joinCache(r.cfg, src.k, src.v)...)
}

// encodeNextGraph: in = [tokens [1, Tb], count, length, temperature f64, key [2]
// Uint32, penalty f64, seen [V] Bool, bias [V] Float32, banned [V] Bool, cache…] →
// [next id Int32 scalar, cache'…]: encodeGraph with sampler.TokenGraph on its last logits.
func (r *Runner) encodeNextGraph(ctx *context.Context, in []*Node) []*Node {
	p, h, src := r.encoderPass(ctx, in[:3], in[9:])
	id := sampler.TokenGraph(Logits(p, r.lastRow(h, in[1])), in[3], in[4], in[5], in[6], in[7], in[8])
	return append([]*Node{id}, joinCache(r.cfg, src.k, src.v)...)
}

// lastRow is the hidden state of the chunk's last real token.
//
// h: [1, Tb, D], count: scalar → [D]
func (r *Runner) lastRow(h, count *Node) *Node {
	tb := h.Shape().Dimensions[1]
	return Gather(Reshape(h, tb, r.cfg.HiddenSize), Reshape(SubScalar(count, 1), 1))
}

// scoreGraph: in = [tokens [1, Tb], count, length, cache…] → [logits [1, Tb, V]]: the
// encoder pass of encodeGraph with every row's logits, its cache writes discarded.
func (r *Runner) scoreGraph(ctx *context.Context, in []*Node) []*Node {
	p, h, _ := r.encoderPass(ctx, in[:3], in[3:])
	return []*Node{Logits(p, h)}
}

// encoderPass is the causal encoder over in = [tokens [1, Tb], count, length] and
// the cache (CacheShapes): the last layer's output h [1, Tb, D] and the cache source
// holding the chunk's writes (src.k, src.v: the updated caches).
func (r *Runner) encoderPass(ctx *context.Context, in, cache []*Node) (p *Params, h *Node, src *cacheKeys) {
	g := in[0].Graph()
	tokens, count, length := in[0], in[1], in[2]
	tb := tokens.Shape().Dimensions[1]
	p = r.params(ctx, g)
	gc := r.graphCfg() // the layers the graph runs: all, or a split model's device's
	k, v := splitCache(gc, cache)
	qpos := iotaPositions(g, 1, tb, length)
	qvalid := LessThan(Iota(g, shapes.Make(dtypes.Int32, 1, tb), 1), count)
	src = &cacheKeys{p: p, k: k, v: v, length: length, count: count, qpos: qpos, qvalid: qvalid,
		masks: map[int]*Node{}, writes: map[int]cacheWrite{}}
	o := &graphOps{p: p, positions: qpos, src: src}
	return p, arch.Layers(o, gc, p.Embed(tokens), p.encoderScalar), src
}

// runnerDecoder is Decoder over the runner's cache (runnerKeys instead of a KV
// prefix): the canvas at positions length…length+C−1.
//
// canvas: [1, C], soft: [1, C, D], length: scalar, cache… → [1, C, D] (before the final norm)
func (r *Runner) runnerDecoder(p *Params, canvas, soft, length *Node, cache []*Node) *Node {
	c, gc := canvas.Shape().Dimensions[1], r.graphCfg()
	k, v := splitCache(gc, cache)
	src := &runnerKeys{p: p, k: k, v: v, length: length, masks: map[int]*Node{}}
	o := &graphOps{p: p, positions: iotaPositions(canvas.Graph(), 1, c, length), src: src}
	return arch.Layers(o, gc, p.SelfCondition(canvas, soft), arch.DecoderScalar)
}

// decodeGraph: in = [canvas [1, C], soft [1, C, D], temperature, length, cache…]
// → [logits [1, C, V], next soft [1, C, D]].
func (r *Runner) decodeGraph(ctx *context.Context, in []*Node) []*Node {
	p := r.params(ctx, in[0].Graph())
	return r.decodeOutputs(p, r.runnerDecoder(p, in[0], in[1], in[3], in[4:]), in[2])
}

// decodeOutputs are Decode's outputs from the last layer's output h [1, C, D]:
// [logits [1, C, V], next soft [1, C, D]].
func (r *Runner) decodeOutputs(p *Params, h, temperature *Node) []*Node {
	logits := Logits(p, h)
	return []*Node{logits, SoftEmbedding(p, logits, temperature)}
}

// decodeHiddenGraph: in = [canvas [1, C], soft [1, C, D], length, cache…]
// → [final-normed hidden [1, C, D]] (the input of the LM head; see hostHead).
func (r *Runner) decodeHiddenGraph(ctx *context.Context, in []*Node) []*Node {
	p := r.params(ctx, in[0].Graph())
	h := r.runnerDecoder(p, in[0], in[1], in[2], in[3:])
	return []*Node{p.norm(h, "norm.weight")}
}

// params is the graphs' weight reader, with the runner's settings.
func (r *Runner) params(ctx *context.Context, g *Graph) *Params {
	p := NewParams(ctx, g, r.cfg)
	p.MoEBlock, p.Compute = r.MoEBlock, r.ComputeDType
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

// growGraph: in = cache entries [1, R_j, Kv, Hd] → the same with slots[j] slots
// (axis 1), the new ones zero-filled.
func growGraph(in []*Node, slots []int) []*Node {
	out := make([]*Node, len(in))
	for i, x := range in {
		dims := append([]int{}, x.Shape().Dimensions...)
		dims[1] = slots[i] - dims[1]
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
