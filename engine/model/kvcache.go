package model

import (
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// The Runner's KV cache (graph and host paths alike) keeps only what a future token
// can see, as the spec describes:
//
//   - Sliding layers keep the last sliding_window−1 positions in a ring buffer: the
//     decoder reads the last W−1 cached tokens, and an encoder chunk's first query
//     (position L) sees keys with pos > L − W, i.e. the same W−1. Position p lives in
//     slot p mod R (R = RingSlots: those W−1 and RingSlack more, so that a kept
//     prompt's cache can be cut back to a chunk boundary before its end); positions
//     stay absolute (RoPE is applied before caching, and the masks use each slot's
//     stored position, so the slack's older positions are masked out).
//   - Full-attention layers (K = V) keep V = v_norm(k_proj(x)) only, for every
//     position. K = RoPE(k_norm(k_proj(x))) = RoPE(V ⊙ k_norm.weight): RMSNorm is
//     x/√(mean(x²)+eps) times its weight, so K is recomputed from the cached V at each
//     use — bit for bit the value the layer computed, at the cost of one multiply and
//     one rotation over the prefix (see keysFromValues).
//
// A full layer's cache is a ring too, of the runner's capacity, which never wraps
// (capacity ≥ length): one slot rule serves both.

// DefaultMinCapacity is the Runner's default MinCapacity: the smallest cache capacity.
const DefaultMinCapacity = 256

// DefaultMaxChunk and DefaultHostPass are the Runner's default MaxChunk and HostPass:
// the host encoder reads a prompt in passes of HostPassTokens.
const (
	DefaultMaxChunk = 256
	DefaultHostPass = 4
	HostPassTokens  = DefaultMaxChunk * DefaultHostPass
)

// CacheCapacity is the capacity a Runner with the default MinCapacity reaches to hold
// tokens positions: the next power of two, at least DefaultMinCapacity.
func CacheCapacity(tokens int) int { return max(DefaultMinCapacity, nextPow2(tokens)) }

// SlidingCacheSlots is how many cached positions a sliding layer's queries can see
// when the runner's capacity is capacity tokens: min(capacity, sliding_window−1), at
// least 1; the capacity itself when the config has no window. Its ring holds
// RingSlots.
func SlidingCacheSlots(cfg *config.Text, capacity int) int {
	if cfg.SlidingWindow <= 0 {
		return capacity
	}
	return max(1, min(capacity, cfg.SlidingWindow-1))
}

// RingSlack is how many positions a sliding layer's ring holds beyond the window's
// sliding_window−1, so that a kept prompt's cache can be cut back by up to that many
// tokens (Runner.Restore: to the encoder's last chunk boundary before the prompt's
// end, the point from which the next prompt is encoded) after the window has filled.
const RingSlack = 256

// RingSlots is how many positions a sliding layer's ring holds when the cache holds
// (host path) or has the capacity for (graph path) tokens positions:
// SlidingCacheSlots(cfg, sliding_window) + RingSlack at most; tokens where the config
// has no window.
func RingSlots(cfg *config.Text, tokens int) int {
	if cfg.SlidingWindow <= 0 {
		return tokens
	}
	return min(tokens, SlidingCacheSlots(cfg, cfg.SlidingWindow)+RingSlack)
}

// ringHolds reports whether a ring of r slots that has had positions [0, written)
// written still holds the window before position n (positions [n−sliding_window+1,
// n), given r ≥ the window's slots + RingSlack or no wrap): nothing wrapped (written ≤
// r), or at most RingSlack positions were written past n.
func ringHolds(r, written, n int) bool { return written <= max(n+RingSlack, r) }

// cacheSlots is layer i's cache length at the given capacity.
func cacheSlots(cfg *config.Text, i, capacity int) int {
	if cfg.IsSliding(i) {
		return RingSlots(cfg, capacity)
	}
	return capacity
}

// cachesK reports whether layer i caches K (sliding layers); full (K=V) layers cache
// V only and recompute K.
func cachesK(cfg *config.Text, i int) bool { return cfg.IsSliding(i) }

// KVCacheBytes is the memory of the Runner's KV cache holding tokens positions
// (capacity tokens; the cache grows in powers of two, so a Runner at capacity C holds
// exactly KVCacheBytes(cfg, C, dtype)), with elements of dtype: sliding layers K and
// V for RingSlots positions, full layers V only for every position.
func KVCacheBytes(cfg *config.Text, tokens int, dtype dtypes.DType) int64 {
	var total int64
	for i := range cfg.NumHiddenLayers {
		n := int64(cacheSlots(cfg, i, tokens)) * int64(cfg.KVHeads(i)) * int64(cfg.LayerHeadDim(i))
		if cachesK(cfg, i) {
			n *= 2
		}
		total += n * int64(dtype.Size())
	}
	return total
}

// HostKVCacheBytes is KVCacheBytes for the host path's cache holding tokens positions,
// float32: it grows by the token, not in powers of two; without Keep's copies
// (Runner.CacheBytes counts them too).
func HostKVCacheBytes(cfg *config.Text, tokens int) int64 { return hostCacheBytes(cfg, tokens) }

// HostKeptBytes is the copies of the host cache that Runner.Keep holds (KeptSlots of
// them) at tokens positions: what a host runner that keeps its prompts for the next
// ones holds beside HostKVCacheBytes, at most.
func HostKeptBytes(cfg *config.Text, tokens int) int64 {
	return KeptSlots * hostCacheBytes(cfg, tokens)
}

// hostCacheBytes is the host cache's rows at tokens positions, float32.
func hostCacheBytes(cfg *config.Text, tokens int) int64 {
	var total int64
	for i := range cfg.NumHiddenLayers {
		rows := tokens
		if r := hostRingRows(cfg, i); r > 0 {
			rows = min(tokens, r)
		}
		n := int64(rows) * int64(cfg.KVHeads(i)) * int64(cfg.LayerHeadDim(i))
		if cachesK(cfg, i) {
			n *= 2
		}
		total += n * 4
	}
	return total
}

// ringPositions is the absolute position held by each of a cache's R slots once
// length tokens are cached, and whether the slot holds one: slot s holds the latest
// p < length with p ≡ s (mod R), valid iff p ≥ 0. While length ≤ R (and always for a
// full layer's cache) that is p = s for s < length.
//
// length: scalar Int32 → pos: [1, R] Int32, valid: [1, R] Bool
func ringPositions(g *Graph, length *Node, r int) (pos, valid *Node) {
	s := Iota(g, shapes.Make(dtypes.Int32, r), 0)
	a := Sub(AddScalar(length, r-1), s) // length−1−s+R ≥ 0
	p := Sub(SubScalar(length, 1), Rem(a, Scalar(g, dtypes.Int32, r)))
	return Reshape(p, 1, r), Reshape(GreaterOrEqual(p, ScalarZero(g, dtypes.Int32)), 1, r)
}

// keysFromValues is a full (K=V) layer's K recomputed from its cached V:
// RoPE(V ⊙ k_norm.weight) at the slots' positions, in float32 — exactly what Attention
// computes as RoPE(k_norm(k_proj(x))), since k_norm(x) = v_norm(x) ⊙ weight.
//
// v: [B, S, Kv, Hd] (any float dtype), positions: [B, S] → [B, S, Kv, Hd] Float32
func (p *Params) keysFromValues(layer int, v, positions *Node) *Node {
	w := p.Get(layerPrefix(layer) + "self_attn.k_norm.weight")
	v = toF32(v)
	k := Mul(v, ExpandLeftToRank(ConvertDType(w, v.DType()), v.Rank()))
	return ApplyRoPE(k, positions, p.layerInvFreq(layer))
}

// cachedPrefix is one layer's cached keys and values as the attention reads them,
// in float32: K (recomputed on full layers), V, and the slots' positions and validity.
//
// cache: the layer's entries ([1, R, Kv, Hd] each: K and V, or V only) →
// K, V: [1, R, Kv, Hd] Float32, pos: [1, R] Int32, valid: [1, R] Bool
func (p *Params) cachedPrefix(layer int, k, v, length *Node) (K, V, pos, valid *Node) {
	r := v.Shape().Dimensions[1]
	pos, valid = ringPositions(v.Graph(), length, r)
	V = toF32(v)
	if k != nil {
		K = toF32(k)
	} else {
		K = p.keysFromValues(layer, v, pos)
	}
	return K, V, pos, valid
}

// splitCache maps the runner's flat cache list (per layer: K then V on sliding layers,
// V only on full ones) to per-layer K (nil where not cached) and V.
func splitCache(cfg *config.Text, flat []*Node) (k, v []*Node) {
	nl := cfg.NumHiddenLayers
	k, v = make([]*Node, nl), make([]*Node, nl)
	j := 0
	for i := range nl {
		if cachesK(cfg, i) {
			k[i] = flat[j]
			j++
		}
		v[i] = flat[j]
		j++
	}
	return k, v
}

// joinCache is the inverse of splitCache.
func joinCache(cfg *config.Text, k, v []*Node) []*Node {
	var flat []*Node
	for i := range cfg.NumHiddenLayers {
		if cachesK(cfg, i) {
			flat = append(flat, k[i])
		}
		flat = append(flat, v[i])
	}
	return flat
}

// cacheEntries is how many tensors the flat cache list has.
func cacheEntries(cfg *config.Text) int {
	n := 0
	for i := range cfg.NumHiddenLayers {
		n++
		if cachesK(cfg, i) {
			n++
		}
	}
	return n
}

// CacheShapes are the shapes of the Runner's flat cache list at capacity tokens, in
// order (per layer: K then V on sliding layers, V only on full ones).
func CacheShapes(cfg *config.Text, capacity int, dtype dtypes.DType) []shapes.Shape {
	var out []shapes.Shape
	for i := range cfg.NumHiddenLayers {
		s := shapes.Make(dtype, 1, cacheSlots(cfg, i, capacity), cfg.KVHeads(i), cfg.LayerHeadDim(i))
		out = append(out, s)
		if cachesK(cfg, i) {
			out = append(out, s)
		}
	}
	return out
}

// runnerKeys is the Runner's decoder: canvas queries see the visible cached slots of
// each layer and the whole canvas (bidirectional). Sliding layers see valid slots with
// position > start − W (the last W−1 cached tokens), full layers every valid slot.
// The cache is read, never written.
type runnerKeys struct {
	p      *Params
	k, v   []*Node // per layer, as splitCache
	length *Node   // scalar Int32: cached tokens = the canvas's first position
	masks  map[int]*Node
}

func (s *runnerKeys) keys(layer int, k, v *Node) (K, V, visible *Node) {
	pk, pv, m := s.p.cachedLayer(layer, s.k[layer], s.v[layer], s.length, k, s.masks,
		func(pos, valid *Node, b, t, r, win int) *Node {
			pm := prefixVisible(Reshape(s.length, 1), pos, valid, t, win)
			return Concatenate([]*Node{pm, BroadcastToDims(Const(k.Graph(), true), b, t, t)}, -1)
		})
	return Concatenate([]*Node{pk, k}, 1), Concatenate([]*Node{pv, v}, 1), m
}

// cachedLayer is what the two key sources over a cache (runnerKeys, cacheKeys) share
// for one layer: its cached prefix (cachedPrefix, kc/vc the layer's cache entries)
// and its attention mask, built by mask for the chunk k [B, T, Kv, Hd], R cached
// slots and the layer's window (0 on full layers), memoized in masks by (R, sliding).
func (p *Params) cachedLayer(layer int, kc, vc, length, k *Node, masks map[int]*Node,
	mask func(pos, valid *Node, b, t, r, win int) *Node) (pk, pv, visible *Node) {
	pk, pv, pos, valid := p.cachedPrefix(layer, kc, vc, length)
	b, t, r := k.Shape().Dimensions[0], k.Shape().Dimensions[1], pv.Shape().Dimensions[1]
	win := 0
	if p.Cfg.IsSliding(layer) {
		win = p.Cfg.SlidingWindow
	}
	key := r<<1 | min(win, 1)
	m, ok := masks[key]
	if !ok {
		m = mask(pos, valid, b, t, r, win)
		masks[key] = m
	}
	return pk, pv, m
}
