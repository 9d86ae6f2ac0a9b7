package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// hostModel is the model for one sequence (batch 1) computed on the host in float32:
// package arch's recipe over hostOps (hostops.go), every product in package kernels —
// the same arithmetic as the graph (and as the float64 reference in package naive,
// which the tests compare it with), arranged as row-major matrix products over the
// tokens. The pure-Go backend runs it an order of
// magnitude faster than the graph, whose DotGeneral is the bottleneck there. The
// weights stay in their stored format (hostWeights): float32 is for the activations.
// Its KV cache is a hostCache.
type hostModel struct {
	cfg        *config.Text
	w          *hostWeights
	embedScale float64
	// from is the first layer the host runs: 0, or where a model is split between a
	// device and the host (Runner.DeviceLayers), the first of the host's layers — it
	// then takes the device's hidden state in and hands its own back (decodeFrom,
	// encodeHidden), and never embeds a token or applies the final norm.
	from int

	// ropes are the rotation tables of this forward's positions (ropeTables), shared
	// by its layers that rotate alike; decode and encode take them from the cache
	// (hostCache.ropes), so later forwards at the same positions share them too.
	ropes map[ropeKey][2][]float32

	// scratch is the working memory of the cache's forwards (nil: allocate it).
	scratch *hostScratch
	// acts hold the forward's operation outputs (nil: allocate them).
	acts *activationArenas
}

// use readies h for a forward over cache: the cache's rotation tables, scratch and
// activation arenas, the arenas started for a new forward (what the last forward
// returned from them is overwritten from here on).
func (h *hostModel) use(cache *hostCache) {
	h.ropes, h.scratch, h.acts = cache.ropeMemo(), &cache.scratch, &cache.acts
	h.acts.begin()
}

// alloc is n float32s for an operation's output, from the forward's activation arenas
// (not zeroed: the caller writes every element) or, without them, newly allocated.
func (h *hostModel) alloc(n int) []float32 {
	if h.acts == nil {
		return make([]float32, n)
	}
	return h.acts.get(n)
}

// ropeKey names a table of rotations: the same RoPE and head width at the same
// positions give the same cos and sin.
type ropeKey struct {
	rope            config.Rope
	hd, start, rows int
}

// ropeTables is RopeTables for layer i at positions start…start+c−1, computed once per
// hostModel for all the layers with layer i's RoPE and head width.
func (h *hostModel) ropeTables(i, start, c int) (cos, sin []float32) {
	key := ropeKey{h.cfg.LayerRope(i), h.cfg.LayerHeadDim(i), start, c}
	if t, ok := h.ropes[key]; ok {
		return t[0], t[1]
	}
	cos, sin = RopeTables(start, c, mustInvFreq(h.cfg, i))
	if h.ropes == nil {
		h.ropes = map[ropeKey][2][]float32{}
	}
	h.ropes[key] = [2][]float32{cos, sin}
	return cos, sin
}

// hostCache is the host model's KV cache, by the graph Runner's rules (kvcache.go),
// in float32, rows [Kv, Hd] row-major per position:
//   - sliding layers: K (after k_norm and RoPE) and V (after v_norm) of the last
//     RingSlots positions (the window's, and RingSlack more, so the cache can be cut
//     back that far: Runner.Restore), position p in row p mod R;
//   - full (K=V) layers: V of every position (k[i] stays nil); hostModel.prefix
//     recomputes K = RoPE(V ⊙ k_norm.weight).
type hostCache struct {
	k, v    [][]float32
	n       int   // positions cached
	written []int // per layer: positions written (= n, except inside a failed encode)
	from    int   // the first layer cached (hostModel.from): the layers before it hold nothing

	// kept are copies of the cache at some length, one per slot (keep), for restore:
	// every layer's rows, so a copy outlives whatever the cache holds since.
	kept [KeptSlots]*hostCache

	// rot is the rotation that recomputing a full layer's K applies: for the full
	// layers' nonzero RoPE frequencies rot.pairs (the same on every full layer), cos
	// and sin of p·f per position p < rot.n, so they are not recomputed at every step
	// (at a few thousand cached tokens they would cost the Mini an AR token's time
	// again). Its values depend on the position only, so truncating keeps it.
	rot struct {
		pairs    []int
		cos, sin []float32
		n        int
	}

	// scratch is the forward passes' working memory (hostScratch), kept between them.
	scratch hostScratch
	// acts are the forward passes' operation outputs (activationArenas), kept between them.
	acts activationArenas

	// ropes are the new tokens' rotation tables of recent forwards (hostModel.ropes),
	// kept so a canvas's denoising steps, all at the same positions, compute them once;
	// at most maxRopes of them. Clones start without.
	ropes map[ropeKey][2][]float32
}

// hostScratch is the host forward's working memory that no result keeps — attention's
// keys, values, queries, scores and outputs, the experts' rows, GeGLU's
// exponentials — one buffer per use, grown as needed and reused by every layer and
// forward after (instead of allocating and zeroing them each time). Its buffers are
// not zeroed: each use writes every element it reads.
type hostScratch [numScratch][]float32

// The uses of hostScratch.
const (
	scratchAtt = iota
	scratchKeys
	scratchValues
	scratchValuesT
	scratchQueries
	scratchScores
	scratchScoresPart
	scratchHeadOut
	scratchExpertX
	scratchExpertGU
	scratchExpertH
	scratchExpertY
	scratchGelu
	numScratch
)

// get is buffer use of n values (a new one with a nil s: no scratch kept).
func (s *hostScratch) get(use, n int) []float32 {
	if s == nil {
		return make([]float32, n)
	}
	if cap(s[use]) < n {
		s[use] = make([]float32, n)
	}
	return s[use][:n]
}

// activationArenas hold a forward's operation outputs — the products, the norms that keep
// their input, the experts' sums — from two arenas in turn, so that a denoising step
// allocates (and the runtime zeroes, and the collector sweeps) none of its ~3 MB of
// activations: layer i takes its values from arena i mod 2, emptied when the layer
// starts, and what comes before the first layer (the embedding, the decoder's input
// block) from arena 1. A layer reads only its input, the layer before's output, and
// its own values; its input's arena is the one the layer after it empties, when that
// input is dead. A forward's result (the last layer's output) holds until the next
// forward over the same cache begins (begin); the Runner copies what it keeps.
type activationArenas struct {
	arenas [2]arena
	cur    *arena // nil: none begun (get allocates)
}

// begin starts a forward: the values before the first layer come from arena 1.
func (a *activationArenas) begin() { a.cur = &a.arenas[1]; a.cur.reset() }

// layer starts layer i: its values come from arena i mod 2, emptied.
func (a *activationArenas) layer(i int) { a.cur = &a.arenas[i%2]; a.cur.reset() }

// get is n float32s from the current arena (newly allocated before a begin).
func (a *activationArenas) get(n int) []float32 {
	if a.cur == nil {
		return make([]float32, n)
	}
	return a.cur.get(n)
}

// arena hands out consecutive slices of one buffer, until it is reset; what does not
// fit is allocated, and counted, so that the next reset makes the buffer big enough
// for all of it.
type arena struct {
	buf  []float32
	used int // values handed out of buf since the reset
	want int // values asked for since the reset
}

// reset empties the arena (every slice it handed out may be handed out again), first
// growing it to what was asked of it since the last reset, with a quarter to spare
// so that slowly growing forwards (an AR step's prefix, one row longer each token) do
// not grow it every time.
func (a *arena) reset() {
	if a.want > len(a.buf) {
		a.buf = make([]float32, a.want+a.want/4)
	}
	a.used, a.want = 0, 0
}

// get is n values, not zeroed, their capacity n (an append to one never reaches the
// next).
func (a *arena) get(n int) []float32 {
	a.want += n
	if a.used+n > len(a.buf) {
		return make([]float32, n)
	}
	s := a.buf[a.used : a.used+n : a.used+n]
	a.used += n
	return s
}

// maxRopes bounds hostCache.ropes: a canvas's steps and the guidance rounds between
// them use a few position ranges at a time.
const maxRopes = 8

// ropeMemo is the map of tables a forward over this cache shares (emptied when full).
func (c *hostCache) ropeMemo() map[ropeKey][2][]float32 {
	if c.ropes == nil || len(c.ropes) >= maxRopes {
		c.ropes = map[ropeKey][2][]float32{}
	}
	return c.ropes
}

// rotation extends the table of cos and sin to positions < n (inv: the full layers'
// frequencies) and returns it.
func (c *hostCache) rotation(inv []float32, n int) (pairs []int, cos, sin []float32) {
	r := &c.rot
	if r.pairs == nil {
		r.pairs = []int{}
		for j, f := range inv {
			if f != 0 {
				r.pairs = append(r.pairs, j)
			}
		}
	}
	for ; r.n < n; r.n++ {
		p := float32(r.n)
		for _, j := range r.pairs {
			a := float64(p * inv[j]) // float32 angle, as RopeTables computes it
			r.cos, r.sin = append(r.cos, float32(math.Cos(a))), append(r.sin, float32(math.Sin(a)))
		}
	}
	return r.pairs, r.cos, r.sin
}

// ringRows is layer i's row limit: a sliding layer's ring (RingSlots: the window's
// SlidingCacheSlots plus RingSlack) where the layer has a window, 0 (none) for a full
// layer.
func (c *hostCache) ringRows(cfg *config.Text, i int) int { return hostRingRows(cfg, i) }

// hostRingRows is hostCache.ringRows, for the memory estimates (HostKVCacheBytes).
func hostRingRows(cfg *config.Text, i int) int {
	if cfg.IsSliding(i) && cfg.SlidingWindow > 0 {
		return RingSlots(cfg, math.MaxInt)
	}
	return 0
}

// canTruncate reports whether every sliding layer's ring still holds the window before
// position n (ringHolds).
func (c *hostCache) canTruncate(cfg *config.Text, n int) bool {
	for i := c.from; i < len(c.v); i++ {
		if r := c.ringRows(cfg, i); r > 0 && !ringHolds(r, c.written[i], n) {
			return false
		}
	}
	return true
}

// slot is the row of layer i that holds position p.
func (c *hostCache) slot(cfg *config.Text, i, p int) int {
	if r := c.ringRows(cfg, i); r > 0 {
		return p % r
	}
	return p
}

// clone is a deep copy: writing to it leaves c as it is.
func (c *hostCache) clone() hostCache {
	var out hostCache
	c.copyRows(&out)
	out.rot.pairs, out.rot.n = slices.Clone(c.rot.pairs), c.rot.n
	out.rot.cos, out.rot.sin = slices.Clone(c.rot.cos), slices.Clone(c.rot.sin)
	return out
}

// truncate keeps the first n positions. It reports false, and empties the cache, when
// a sliding layer's ring has already overwritten positions that n needs
// (canTruncate).
func (c *hostCache) truncate(cfg *config.Text, n int) bool {
	ok := c.canTruncate(cfg, n)
	if !ok {
		n = 0
	}
	for i := range c.v {
		w := cfg.KVHeads(i) * cfg.LayerHeadDim(i)
		rows := min(n, c.written[i])
		if r := c.ringRows(cfg, i); r > 0 {
			rows = min(rows, r)
		}
		c.v[i] = c.v[i][:rows*w]
		if c.k[i] != nil {
			c.k[i] = c.k[i][:rows*w]
		}
		c.written[i] = min(n, c.written[i])
	}
	c.n = min(n, c.n)
	return ok
}

// write stores the rows k, v [T, Kv, Hd] of positions start…start+T−1 (start = the
// positions cached) in layer i; k is dropped on full layers.
func (c *hostCache) write(cfg *config.Text, i, start int, k, v []float32) {
	w := cfg.KVHeads(i) * cfg.LayerHeadDim(i)
	r := c.ringRows(cfg, i)
	c.written[i] = start + len(v)/w
	if r == 0 {
		c.v[i] = append(c.v[i], v...)
		return
	}
	for t := range len(v) / w {
		s := (start + t) % r
		c.k[i] = putRow(c.k[i], s, w, r, k[t*w:(t+1)*w])
		c.v[i] = putRow(c.v[i], s, w, r, v[t*w:(t+1)*w])
	}
}

// putRow writes row (w values) at slot s of a ring of r rows that is filled in order:
// appended while s is the next row, overwritten after; the buffer never grows past r
// rows.
func putRow(buf []float32, s, w, r int, row []float32) []float32 {
	if s*w < len(buf) {
		copy(buf[s*w:(s+1)*w], row)
		return buf
	}
	if len(buf)+w > cap(buf) {
		nb := make([]float32, len(buf), min(max(2*cap(buf), 64*w), r*w))
		copy(nb, buf)
		buf = nb
	}
	return append(buf, row...)
}

// KeptSlots is how many prompts' caches a host runner keeps (Runner.Keep): a chat's
// and one other (a page, the Desktop's screens) at once, so that one does not cost
// the other its cache.
const KeptSlots = 2

// copyRows makes dst's rows a copy of c's — every layer's K and V, written and n —
// in dst's own buffers, grown where they are short: writing to either leaves the
// other as it is. The rotation table, the kept copies and the scratch are not copied.
func (c *hostCache) copyRows(dst *hostCache) {
	dst.n, dst.written, dst.from = c.n, append(dst.written[:0], c.written...), c.from
	for len(dst.v) < len(c.v) {
		dst.k, dst.v = append(dst.k, nil), append(dst.v, nil)
	}
	dst.k, dst.v = dst.k[:len(c.v)], dst.v[:len(c.v)]
	for i := range c.v {
		dst.v[i] = append(dst.v[i][:0], c.v[i]...)
		if c.k[i] == nil {
			dst.k[i] = nil
			continue
		}
		dst.k[i] = append(dst.k[i][:0], c.k[i]...)
	}
}

// keep copies the cache as it is into slot (its rings, and its full layers' rows) so
// that restore can come back to any of the first c.n positions.
func (c *hostCache) keep(slot int) {
	if c.kept[slot] == nil {
		c.kept[slot] = &hostCache{}
	}
	c.copyRows(c.kept[slot])
}

// restore makes the cache the first n positions of what keep copied into slot, and
// reports whether it could: n at most what was kept, and the kept rings holding the
// window before n (canTruncate). Otherwise the cache is left as it is.
func (c *hostCache) restore(cfg *config.Text, slot, n int) bool {
	k := c.kept[slot]
	if k == nil || n > k.n || !k.canTruncate(cfg, n) {
		return false
	}
	k.copyRows(c)
	return c.truncate(cfg, n)
}

// bytes is the memory the cached rows take, the kept copies' and the rotation table
// (not ropes, the recent forwards' scratch, which KVCacheBytes does not count).
func (c *hostCache) bytes() int64 {
	n := int64(len(c.rot.cos)+len(c.rot.sin)) * 4
	for i := range c.v {
		n += int64(len(c.v[i])+len(c.k[i])) * 4
	}
	for _, k := range c.kept {
		if k != nil {
			for i := range k.v {
				n += int64(len(k.v[i])+len(k.k[i])) * 4
			}
		}
	}
	return n
}

// prefixRows are one layer's cached keys/values visible to the new tokens, per KV
// head, contiguous: k[j] and v[j] are [n, Hd]; lo is the first cached position.
type prefixRows struct {
	k, v  [][]float32
	n, lo int
}

// prefix splits layer i's cached positions [lo, length) per KV head; on full layers it
// recomputes K = RoPE(V ⊙ k_norm.weight) at those positions — the attention's own
// k_norm and RoPE arithmetic, so the same values bit for bit (up to the sign of zero).
func (h *hostModel) prefix(cache *hostCache, i, lo, length int) prefixRows {
	cfg := h.cfg
	kvh, hd := cfg.KVHeads(i), cfg.LayerHeadDim(i)
	n := length - lo
	out := prefixRows{k: make([][]float32, kvh), v: make([][]float32, kvh), n: n, lo: lo}
	full := !cachesK(cfg, i)
	var w, inv, cos, sin []float32
	var pairs []int
	if full && n > 0 {
		w = h.w.get(layerPrefix(i) + "self_attn.k_norm.weight")
		inv = mustInvFreq(cfg, i)
		pairs, cos, sin = cache.rotation(inv, length)
	}
	for j := range kvh {
		out.k[j], out.v[j] = h.alloc(n*hd), h.alloc(n*hd)
	}
	half, np := hd/2, len(pairs)
	for s := range n {
		base := cache.slot(cfg, i, lo+s) * kvh * hd
		for j := range kvh {
			row := base + j*hd
			vr := cache.v[i][row : row+hd]
			copy(out.v[j][s*hd:(s+1)*hd], vr)
			kr := out.k[j][s*hd : (s+1)*hd]
			if !full {
				copy(kr, cache.k[i][row:row+hd])
				continue
			}
			for e, x := range vr {
				kr[e] = x * w[e]
			}
			// RoPE as ropeRows does it; the pairs of frequency 0 (cos 1, sin 0) stay.
			cs, sn := cos[(lo+s)*np:(lo+s+1)*np], sin[(lo+s)*np:(lo+s+1)*np]
			for q, jj := range pairs {
				x1, x2 := kr[jj], kr[jj+half]
				kr[jj] = x1*cs[q] - x2*sn[q]
				kr[jj+half] = x2*cs[q] + x1*sn[q]
			}
		}
	}
	return out
}

// decode runs the bidirectional decoder (arch's recipe over hostOps) over canvas at
// positions start…start+C−1, after the first start cached positions, and returns the
// final-normed hidden state [C·D] (the LM head's input). soft nil = first step.
func (h *hostModel) decode(cache *hostCache, canvas []int32, soft []float32, start int) []float32 {
	h.use(cache)
	o := &hostOps{h: h, cache: cache, start: start}
	x := arch.DecoderInput(o, h.cfg, h.embed(canvas), soft, soft != nil)
	return arch.Output(o, h.cfg, arch.Layers(o, h.cfg, x, arch.DecoderScalar))
}

// decodeFrom is the decoder's layers from h.from on over x [C·D], the output of the
// layer before them (a split model's device part), for a canvas at positions
// start…start+C−1: the last layer's output [C·D], before the final norm.
func (h *hostModel) decodeFrom(cache *hostCache, x []float32, start int) []float32 {
	h.use(cache)
	o := &hostOps{h: h, cache: cache, start: start}
	return arch.LayerRange(o, h.cfg, h.from, h.cfg.NumHiddenLayers, x, arch.DecoderScalar)
}

// encode runs the causal encoder over tokens at positions start…start+T−1, writes
// their K/V to the cache (which must hold exactly start positions) and returns the
// final-normed hidden state of the last token [D].
func (h *hostModel) encode(cache *hostCache, tokens []int32, start int, encoderScalar func(int) string) []float32 {
	return h.encodePass(cache, tokens, start, encoderScalar, 0)
}

// encodePass is encode over tokens that a chunked encoder would take in chunks of sub
// tokens (0: one chunk), in one pass with every token's values bit for bit those of
// the chunks (hostOps.sub): each layer's attention a chunk at a time, its products
// over all the pass's rows at once.
func (h *hostModel) encodePass(cache *hostCache, tokens []int32, start int, encoderScalar func(int) string, sub int) []float32 {
	hs := h.encodeHidden(cache, h.embed(tokens), start, encoderScalar, true, sub)
	return arch.Output(&hostOps{h: h}, h.cfg, hs[(len(tokens)-1)*h.cfg.HiddenSize:])
}

// score is encode over one chunk that leaves the cache as it is: each layer attends
// to the cached rows and to the tokens' own K/V, which it does not write, so no ring
// slot is overwritten and nothing needs copying or truncating after. It returns the
// final-normed hidden states of tokens from… [(T−from)·D].
func (h *hostModel) score(cache *hostCache, tokens []int32, start int, encoderScalar func(int) string, from int) []float32 {
	hs := h.encodeHidden(cache, h.embed(tokens), start, encoderScalar, false, 0)
	return arch.Output(&hostOps{h: h}, h.cfg, hs[from*h.cfg.HiddenSize:])
}

// encodeHidden is encode's layers from h.from on (arch's recipe over hostOps) over x
// [T·D], the T tokens' embedding (or, from a split model's device part, the output of
// layer h.from−1): the last layer's output [T·D], before the final norm; the tokens'
// K/V go to the cache only if write (then in chunks of sub tokens: encodePass).
func (h *hostModel) encodeHidden(cache *hostCache, x []float32, start int, encoderScalar func(int) string, write bool, sub int) []float32 {
	nl, n := h.cfg.NumHiddenLayers, len(x)/h.cfg.HiddenSize
	if cache.v == nil && write {
		cache.k, cache.v, cache.written = make([][]float32, nl), make([][]float32, nl), make([]int, nl)
		cache.from = h.from
	}
	if cache.n != start {
		panic(fmt.Errorf("host cache holds %d positions, encoding at %d", cache.n, start))
	}
	h.use(cache)
	if !write && sub > 0 && n > sub {
		panic(fmt.Errorf("host encoder: %d tokens read-only in chunks of %d", n, sub))
	}
	o := &hostOps{h: h, cache: cache, start: start, causal: true, readOnly: !write, sub: sub}
	hs := arch.LayerRange(o, h.cfg, h.from, nl, x, encoderScalar)
	if write {
		cache.n = start + n
	}
	return hs
}

// embed is Params.Embed: rows of the tied embedding times √D (rounded as the graph),
// decoding only the rows of the tokens.
func (h *hostModel) embed(tokens []int32) []float32 {
	d := h.cfg.HiddenSize
	emb := h.w.matrix(weights.EmbeddingName) // only the rows of tokens are decoded
	x := h.alloc(len(tokens) * d)
	scale := float32(h.embedScale)
	for t, tok := range tokens {
		row := x[t*d : (t+1)*d]
		emb.row(row, int(tok))
		kernels.Scale(row, scale)
	}
	return x
}

func mustInvFreq(cfg *config.Text, i int) []float32 {
	inv, err := InvFreq32(cfg.LayerRope(i), cfg.LayerHeadDim(i))
	if err != nil {
		panic(fmt.Errorf("layer %d: %w", i, err))
	}
	return inv
}
