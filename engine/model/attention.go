package model

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// maskedScore is added to the scores of invisible keys. It is finite on purpose: a
// query that sees no key at all (a padding row) gets a uniform softmax instead of NaN,
// so padding never poisons real rows (0·NaN would).
const maskedScore = -1e30

// keySource supplies, for one layer, the keys and values the queries attend to and
// which of them each query may see. It is how the same layer code runs as the causal
// encoder (own keys), the cache-writing encoder (Runner) and the bidirectional decoder
// (cached prefix + canvas).
type keySource interface {
	// keys receives the layer's new keys/values (k after k_norm and RoPE, v after
	// v_norm), both [B, T, Kv, Hd], and returns K, V: [B, S, Kv, Hd] and
	// visible: [B, T, S] Bool.
	keys(layer int, k, v *Node) (K, V, visible *Node)
}

// attend is grouped-query attention with scale 1.0 and the softmax in float32.
//
// q: [B, T, H, Hd], K, V: [B, S, Kv, Hd], visible: [B, T, S] Bool → [B, T, H·Hd]
func attend(q, K, V, visible *Node) *Node {
	b, t, h, hd := q.Shape().Dimensions[0], q.Shape().Dimensions[1], q.Shape().Dimensions[2], q.Shape().Dimensions[3]
	kvh, s := K.Shape().Dimensions[2], K.Shape().Dimensions[1]
	groups := h / kvh
	// Batch-major layouts ([B·Kv, rows, Hd]) so both products are plain batched matmuls
	// (the go backend's fast kernel); the G query heads of a KV head share its rows.
	qg := TransposeAllAxes(Reshape(q, b, t, kvh, groups, hd), 0, 2, 1, 3, 4) // [B, Kv, T, G, Hd]
	qg = Reshape(qg, b*kvh, t*groups, hd)
	kb := Reshape(TransposeAllAxes(K, 0, 2, 1, 3), b*kvh, s, hd) // [B·Kv, S, Hd]
	vb := Reshape(TransposeAllAxes(V, 0, 2, 1, 3), b*kvh, s, hd)
	scores := DotGeneral(qg, []int{2}, []int{0}, kb, []int{2}, []int{0}) // [B·Kv, T·G, S]
	scores = Reshape(scores, b, kvh, t, groups, s)
	bias := Where(visible, ScalarZero(q.Graph(), scores.DType()), Scalar(q.Graph(), scores.DType(), maskedScore))
	bias = Reshape(bias, b, 1, t, 1, s)
	probs := Reshape(Softmax(Add(scores, bias), -1), b*kvh, t*groups, s)
	out := DotGeneral(probs, []int{2}, []int{0}, vb, []int{1}, []int{0}) // [B·Kv, T·G, Hd]
	out = TransposeAllAxes(Reshape(out, b, kvh, t, groups, hd), 0, 2, 1, 3, 4)
	return Reshape(out, b, t, h*hd)
}

// causalVisible is the encoder's mask by absolute positions: key j is visible to
// query i iff it is valid, pos_j ≤ pos_i and, with a window W > 0, pos_j > pos_i − W.
//
// qpos: [B, T], kpos: [B, S], kvalid: [B, S] Bool → [B, T, S] Bool
func causalVisible(qpos, kpos, kvalid *Node, window int) *Node {
	b, t, s := qpos.Shape().Dimensions[0], qpos.Shape().Dimensions[1], kpos.Shape().Dimensions[1]
	q := Reshape(qpos, b, t, 1)
	k := Reshape(kpos, b, 1, s)
	vis := LessOrEqual(k, q)
	if window > 0 {
		vis = LogicalAnd(vis, GreaterThan(k, SubScalar(q, window)))
	}
	return LogicalAnd(vis, BroadcastToDims(Reshape(kvalid, b, 1, s), b, t, s))
}

// prefixVisible is the decoder's mask over the cached prefix: every valid prefix key,
// and with a window W > 0 (sliding layers) only the last W−1 cached tokens, i.e.
// pos_j > start − W where start is the canvas's first position (= number of cached
// tokens), as transformers' generate does.
//
// start: [B], kpos: [B, S], kvalid: [B, S] Bool → [B, T, S] Bool
func prefixVisible(start, kpos, kvalid *Node, t, window int) *Node {
	b, s := kpos.Shape().Dimensions[0], kpos.Shape().Dimensions[1]
	vis := kvalid
	if window > 0 {
		vis = LogicalAnd(vis, GreaterThan(kpos, SubScalar(Reshape(start, b, 1), window)))
	}
	return BroadcastToDims(Reshape(vis, b, 1, s), b, t, s)
}

// selfKeys is the causal encoder over its own tokens (no cache): it attends to the
// layer's new keys and records them so Encoder can return the KV cache.
type selfKeys struct {
	positions, valid *Node // [B, T]
	window           int
	kv               *KV
	masks            map[bool]*Node // by sliding
	sliding          []bool
}

func (s *selfKeys) keys(layer int, k, v *Node) (K, V, visible *Node) {
	s.kv.K[layer], s.kv.V[layer] = k, v
	sliding := s.sliding[layer]
	m, ok := s.masks[sliding]
	if !ok {
		w := 0
		if sliding {
			w = s.window
		}
		m = causalVisible(s.positions, s.positions, s.valid, w)
		s.masks[sliding] = m
	}
	return k, v, m
}

// prefixKeys is the decoder: canvas queries see the visible part of the cached prefix
// and the whole canvas (bidirectional). The prefix is read, never written.
type prefixKeys struct {
	prefix  *KV
	masks   map[bool]*Node // [B, T, S+C] by sliding
	start   *Node          // [B]
	valid   *Node          // [B, S]
	window  int
	sliding []bool
}

func (s *prefixKeys) keys(layer int, k, v *Node) (K, V, visible *Node) {
	if s.prefix == nil {
		b, t := k.Shape().Dimensions[0], k.Shape().Dimensions[1]
		return k, v, BroadcastToDims(Const(k.Graph(), true), b, t, t)
	}
	sliding := s.sliding[layer]
	m, ok := s.masks[sliding]
	if !ok {
		b, t := k.Shape().Dimensions[0], k.Shape().Dimensions[1]
		w := 0
		if sliding {
			w = s.window
		}
		pm := prefixVisible(s.start, s.prefix.Positions, s.valid, t, w)
		m = Concatenate([]*Node{pm, BroadcastToDims(Const(k.Graph(), true), b, t, t)}, -1)
		s.masks[sliding] = m
	}
	K = Concatenate([]*Node{toF32(s.prefix.K[layer]), k}, 1)
	V = Concatenate([]*Node{toF32(s.prefix.V[layer]), v}, 1)
	return K, V, m
}

// cacheKeys is the Runner's encoder. Each layer's new keys/values attend over the
// layer's cached slots (kvcache.go: a ring of the last W−1 positions on sliding
// layers, V only on full layers) and over the chunk itself, causally by absolute
// position and within the window on sliding layers; then the chunk is written into
// the cache: slot s takes the chunk row of the latest position p ≡ s (mod R) in
// [length, length+count), if there is one. simplego has no DynamicUpdateSlice, so the
// write is a Gather of the chunk rows plus a Where over the slots.
type cacheKeys struct {
	p      *Params
	k, v   []*Node // per layer (splitCache), [B, R_i, Kv, Hd]; replaced by the updated caches
	length *Node   // scalar int32: tokens cached before this chunk
	count  *Node   // scalar int32: valid tokens in this chunk (≤ chunk size)
	qpos   *Node   // [B, T]
	qvalid *Node   // [B, T] Bool: the chunk's real tokens (the rest is padding)
	masks  map[int]*Node
	writes map[int]cacheWrite // by slot count R
}

// cacheWrite says, for a cache of R slots, where the chunk's rows go.
type cacheWrite struct {
	idx *Node // [R, 1] int32: the chunk row each slot takes (clamped to [0, T−1])
	ok  *Node // [B, R] Bool: the slots this chunk writes
}

func (s *cacheKeys) write(b, t, r int) cacheWrite {
	if w, ok := s.writes[r]; ok {
		return w
	}
	g := s.length.Graph()
	pos, _ := ringPositions(g, Add(s.length, s.count), r) // [1, R] after the write
	rel := Reshape(Sub(pos, s.length), r)
	w := cacheWrite{
		idx: Reshape(Clip(rel, ScalarZero(g, dtypes.Int32), Scalar(g, dtypes.Int32, t-1)), r, 1),
		ok:  BroadcastToDims(Reshape(GreaterOrEqual(rel, ScalarZero(g, dtypes.Int32)), 1, r), b, r),
	}
	s.writes[r] = w
	return w
}

// writeRows returns cache with the slots w.ok replaced by the chunk's rows w.idx.
// cache: [B, R, Kv, Hd], chunk: [B, T, Kv, Hd] → [B, R, Kv, Hd]
func writeRows(cache, chunk *Node, w cacheWrite) *Node {
	chunk = ConvertDType(chunk, cache.DType())
	moved := TransposeAllAxes(Gather(TransposeAllAxes(chunk, 1, 0, 2, 3), w.idx), 1, 0, 2, 3)
	return Where(w.ok, moved, cache)
}

func (s *cacheKeys) keys(layer int, k, v *Node) (K, V, visible *Node) {
	pk, pv, m := s.p.cachedLayer(layer, s.k[layer], s.v[layer], s.length, k, s.masks,
		func(pos, valid *Node, b, t, r, win int) *Node {
			kpos := Concatenate([]*Node{BroadcastToDims(pos, b, r), s.qpos}, 1)
			kvalid := Concatenate([]*Node{BroadcastToDims(valid, b, r), s.qvalid}, 1)
			return causalVisible(s.qpos, kpos, kvalid, win)
		})
	w := s.write(k.Shape().Dimensions[0], k.Shape().Dimensions[1], pv.Shape().Dimensions[1])
	if s.k[layer] != nil {
		s.k[layer] = writeRows(s.k[layer], k, w)
	}
	s.v[layer] = writeRows(s.v[layer], v, w)
	return Concatenate([]*Node{pk, k}, 1), Concatenate([]*Node{pv, v}, 1), m
}
