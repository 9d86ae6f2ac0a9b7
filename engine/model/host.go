package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
)

// hostModel is the model for one sequence (batch 1) computed on the host in float32,
// with every product in package kernels: the same arithmetic as the graph (and as the
// float64 reference in package naive, which the tests compare it with), arranged as
// row-major matrix products over the tokens. The pure-Go backend runs it an order of
// magnitude faster than the graph, whose DotGeneral is the bottleneck there. The
// weights stay in their stored format (hostWeights): float32 is for the activations.
// Its KV cache is a hostCache.
type hostModel struct {
	cfg        *config.Text
	w          *hostWeights
	embedScale float64

	// ropes are the rotation tables of this forward's positions (ropeTables), shared
	// by its layers that rotate alike; decode and encode take them from the cache
	// (hostCache.ropes), so later forwards at the same positions share them too.
	ropes map[ropeKey][2][]float32

	// scratch is the working memory of the cache's forwards (nil: allocate it).
	scratch *hostScratch
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
//     SlidingCacheSlots positions, position p in row p mod R;
//   - full (K=V) layers: V of every position (k[i] stays nil); hostModel.prefix
//     recomputes K = RoPE(V ⊙ k_norm.weight).
type hostCache struct {
	k, v    [][]float32
	n       int   // positions cached
	written []int // per layer: positions written (= n, except inside a failed encode)

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

	// ropes are the new tokens' rotation tables of recent forwards (hostModel.ropes),
	// kept so a canvas's denoising steps, all at the same positions, compute them once;
	// at most maxRopes of them. Clones start without.
	ropes map[ropeKey][2][]float32
}

// hostScratch is the host forward's working memory that no result keeps — attention's
// per-head keys, values, queries, scores and outputs, the experts' rows, GeGLU's
// exponentials — one buffer per use, grown as needed and reused by every layer and
// forward after (instead of allocating and zeroing them each time). Its buffers are
// not zeroed: each use writes every element it reads.
type hostScratch [numScratch][]float32

// The uses of hostScratch.
const (
	scratchAtt = iota
	scratchKeys
	scratchValuesT
	scratchQueries
	scratchScores
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

// ringRows is layer i's row limit: R for a sliding layer with a window, 0 (none) for
// a full layer.
func (c *hostCache) ringRows(cfg *config.Text, i int) int {
	if cfg.IsSliding(i) && cfg.SlidingWindow > 0 {
		return SlidingCacheSlots(cfg, cfg.SlidingWindow)
	}
	return 0
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
	out := hostCache{n: c.n, written: slices.Clone(c.written)}
	if c.v != nil {
		out.k, out.v = make([][]float32, len(c.k)), make([][]float32, len(c.v))
		for i := range c.v {
			out.k[i], out.v[i] = slices.Clone(c.k[i]), slices.Clone(c.v[i])
		}
	}
	out.rot.pairs, out.rot.n = slices.Clone(c.rot.pairs), c.rot.n
	out.rot.cos, out.rot.sin = slices.Clone(c.rot.cos), slices.Clone(c.rot.sin)
	return out
}

// truncate keeps the first n positions. It reports false, and empties the cache, when
// a sliding layer's ring has already overwritten positions that n needs (a position
// ≥ max(n, R) was written).
func (c *hostCache) truncate(cfg *config.Text, n int) bool {
	ok := true
	for i := range c.v {
		if r := c.ringRows(cfg, i); r > 0 && c.written[i] > max(n, r) {
			ok = false
		}
	}
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

// bytes is the memory the cached rows take, and the rotation table (not ropes, the
// recent forwards' scratch, which KVCacheBytes does not count).
func (c *hostCache) bytes() int64 {
	n := int64(len(c.rot.cos)+len(c.rot.sin)) * 4
	for i := range c.v {
		n += int64(len(c.v[i])+len(c.k[i])) * 4
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
		out.k[j], out.v[j] = make([]float32, n*hd), make([]float32, n*hd)
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

// decode runs the bidirectional decoder over canvas at positions start…start+C−1,
// after the first start cached positions, and returns the final-normed hidden state
// [C·D] (the LM head's input). soft nil = first step.
func (h *hostModel) decode(cache *hostCache, canvas []int32, soft []float32, start int) []float32 {
	cfg := h.cfg
	c, d := len(canvas), cfg.HiddenSize
	eps := float32(cfg.RMSNormEps)
	h.ropes, h.scratch = cache.ropeMemo(), &cache.scratch
	x := h.embed(canvas)
	if soft != nil {
		n := rmsRows(soft, d, h.w.get("self_conditioning.pre_norm.weight"), eps)
		addInto(x, h.mlp(n, c, "self_conditioning"))
	}
	hs := rmsRows(x, d, nil, eps)
	h.prefetchLayer(0)
	for i := range cfg.NumHiddenLayers {
		lo := 0
		if cfg.IsSliding(i) && cfg.SlidingWindow > 0 {
			lo = max(0, start-(cfg.SlidingWindow-1)) // the last W−1 cached tokens
		}
		h.prefetchLayer(i + 1)
		hs, _, _ = h.layer(i, hs, c, start, h.prefix(cache, i, lo, start), false, layerPrefix(i)+"layer_scalar")
	}
	return rmsRows(hs, d, h.w.get("norm.weight"), eps)
}

// encode runs the causal encoder over tokens at positions start…start+T−1, writes
// their K/V to the cache (which must hold exactly start positions) and returns the
// final-normed hidden state of the last token [D].
func (h *hostModel) encode(cache *hostCache, tokens []int32, start int, encoderScalar func(int) string) []float32 {
	return h.encodeFrom(cache, tokens, start, encoderScalar, len(tokens)-1)
}

// encodeFrom is encode returning the final-normed hidden states of tokens from…
// [(T−from)·D].
func (h *hostModel) encodeFrom(cache *hostCache, tokens []int32, start int, encoderScalar func(int) string, from int) []float32 {
	hs := h.encodeHidden(cache, tokens, start, encoderScalar)
	d := h.cfg.HiddenSize
	return rmsRows(hs[from*d:], d, h.w.get("norm.weight"), float32(h.cfg.RMSNormEps))
}

// encodeHidden is encode's layers: the last layer's output [T·D], before the final norm.
func (h *hostModel) encodeHidden(cache *hostCache, tokens []int32, start int, encoderScalar func(int) string) []float32 {
	cfg := h.cfg
	t := len(tokens)
	nl := cfg.NumHiddenLayers
	if cache.v == nil {
		cache.k, cache.v, cache.written = make([][]float32, nl), make([][]float32, nl), make([]int, nl)
	}
	if cache.n != start {
		panic(fmt.Errorf("host cache holds %d positions, encoding at %d", cache.n, start))
	}
	h.ropes, h.scratch = cache.ropeMemo(), &cache.scratch
	h.prefetchLayer(0)
	hs := h.embed(tokens)
	for i := range nl {
		lo := 0
		if cfg.IsSliding(i) && cfg.SlidingWindow > 0 {
			lo = max(0, start-(cfg.SlidingWindow-1)) // what the first new token can see
		}
		var k, v []float32
		h.prefetchLayer(i + 1)
		hs, k, v = h.layer(i, hs, t, start, h.prefix(cache, i, lo, start), true, encoderScalar(i))
		cache.write(cfg, i, start, k, v)
	}
	cache.n = start + t
	return hs
}

// embed is Params.Embed: rows of the tied embedding times √D (rounded as the graph),
// decoding only the rows of the tokens.
func (h *hostModel) embed(tokens []int32) []float32 {
	d := h.cfg.HiddenSize
	emb := h.w.matrix("embed_tokens.weight") // only the rows of tokens are decoded
	x := make([]float32, len(tokens)*d)
	scale := float32(h.embedScale)
	for t, tok := range tokens {
		row := x[t*d : (t+1)*d]
		emb.row(row, int(tok))
		for j := range row {
			row[j] *= scale
		}
	}
	return x
}

// layer is layer i over rows hs [T·D] at positions start…start+T−1 (see Params.Layer),
// attending to the visible cached rows and the new tokens (causally when causal). It
// also returns the new tokens' K and V [T, Kv, Hd].
func (h *hostModel) layer(i int, hs []float32, c, start int, pre prefixRows, causal bool, scalarName string) (out, k, v []float32) {
	cfg := h.cfg
	d := cfg.HiddenSize
	eps := float32(cfg.RMSNormEps)
	name := layerPrefix(i)
	nw := func(s string) []float32 { return h.w.get(name + s + ".weight") }
	// The sublayers' outputs are new slices, so their norms and the residual sums are
	// computed in place (x + y as y + x: the same sums).
	norm := func(x []float32, s string) []float32 { kernels.RMSNorm(x, x, nw(s), d, eps); return x }
	a, k, v := h.attention(i, rmsRows(hs, d, nw("input_layernorm"), eps), c, start, pre, causal)
	res := norm(a, "post_attention_layernorm")
	addInto(res, hs)
	dense := norm(h.mlp(rmsRows(res, d, nw("pre_feedforward_layernorm"), eps), c, name+"mlp"),
		"post_feedforward_layernorm_1")
	moe := norm(h.moe(i, rmsRows(res, d, nw("pre_feedforward_layernorm_2"), eps), res, c),
		"post_feedforward_layernorm_2")
	addInto(dense, moe)
	out = norm(dense, "post_feedforward_layernorm")
	addInto(out, res)
	scalar := h.w.get(scalarName)[0]
	for j := range out {
		out[j] *= scalar
	}
	return out, k, v
}

// attention is Params.Attention over c new tokens with the visible cached rows in
// front of their keys: bidirectional over the new tokens (decoder), or causal with the
// sliding window (encoder: key position p visible to query position q iff p ≤ q and,
// on sliding layers, p > q − W). x: [C·D] → out [C·D], and the new k, v [C, Kv, Hd].
func (h *hostModel) attention(i int, x []float32, c, start int, pre prefixRows, causal bool) (out, k, v []float32) {
	cfg := h.cfg
	nh, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(i), cfg.LayerHeadDim(i)
	groups := nh / kvh
	eps := float32(cfg.RMSNormEps)
	name := layerPrefix(i) + "self_attn."
	q := h.w.matrix(name+"q_proj.weight").mulNT(x, c)
	kRaw := h.w.matrix(name+"k_proj.weight").mulNT(x, c)
	vRaw := kRaw // full layers: K=V, before k_norm and RoPE
	if cfg.IsSliding(i) {
		vRaw = h.w.matrix(name+"v_proj.weight").mulNT(x, c)
	}
	cos, sin := h.ropeTables(i, start, c)
	// The projections are new slices: normed in place, except V on full layers, which
	// is kRaw (so normed into a copy before K's norm overwrites it).
	kernels.RMSNorm(q, q, h.w.get(name+"q_norm.weight"), hd, eps)
	ropeRows(q, c, nh, hd, cos, sin)
	if cfg.IsSliding(i) {
		v = vRaw
		kernels.RMSNorm(v, v, nil, hd, eps)
	} else {
		v = rmsRows(vRaw, hd, nil, eps)
	}
	k = kRaw
	kernels.RMSNorm(k, k, h.w.get(name+"k_norm.weight"), hd, eps)
	ropeRows(k, c, kvh, hd, cos, sin)

	window := 0
	if causal && cfg.IsSliding(i) {
		window = cfg.SlidingWindow
	}
	s := pre.n + c
	att := h.scratch.get(scratchAtt, c*nh*hd)
	// Per KV head, reused by the next: keys [S, Hd], values transposed [Hd, S] for
	// MulNT, the group's queries [G·C, Hd], their scores [G·C, S] and outputs [G·C, Hd]
	// (every element is written for each head).
	K, vt := h.scratch.get(scratchKeys, s*hd), h.scratch.get(scratchValuesT, hd*s)
	qg, o := h.scratch.get(scratchQueries, groups*c*hd), h.scratch.get(scratchHeadOut, groups*c*hd)
	scores := h.scratch.get(scratchScores, groups*c*s)
	for j := range kvh {
		copy(K, pre.k[j])
		for r := range pre.n {
			for e := range hd {
				vt[e*s+r] = pre.v[j][r*hd+e]
			}
		}
		for t := range c {
			copy(K[(pre.n+t)*hd:(pre.n+t+1)*hd], k[(t*kvh+j)*hd:(t*kvh+j+1)*hd])
			for e := range hd {
				vt[e*s+pre.n+t] = v[(t*kvh+j)*hd+e]
			}
		}
		// The group's query heads as rows [G·C, Hd] (head-major).
		for g := range groups {
			hh := j*groups + g
			for t := range c {
				copy(qg[(g*c+t)*hd:(g*c+t+1)*hd], q[(t*nh+hh)*hd:(t*nh+hh+1)*hd])
			}
		}
		kernels.MulNT(scores, qg, K, groups*c, s, hd) // scale 1.0
		parallelRows(groups*c, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				row := scores[r*s : (r+1)*s]
				if !causal {
					softmaxInto(row, row, 1)
					continue
				}
				// Key sk sits at position pre.lo+sk (the prefix holds positions
				// pre.lo…start−1, the chunk follows), so the keys query position qp
				// sees — kp ≤ qp and, on sliding layers, kp > qp−window — are one run
				// [klo, khi): softmax over it, exact zeros elsewhere. (Masking with −∞
				// and a softmax over the whole row gives the masked keys the clamped
				// exponential's ~1e-38, whose products are denormal floats: two
				// orders of magnitude slower arithmetic.)
				qp := start + r%c
				klo, khi := 0, min(s, qp-pre.lo+1)
				if window > 0 {
					klo = max(0, qp-window+1-pre.lo)
				}
				clear(row[:klo])
				clear(row[khi:])
				softmaxInto(row[klo:khi], row[klo:khi], 1)
			}
		})
		kernels.MulNT(o, scores, vt, groups*c, hd, s) // [G·C, Hd]
		for g := range groups {
			hh := j*groups + g
			for t := range c {
				copy(att[(t*nh+hh)*hd:(t*nh+hh+1)*hd], o[(g*c+t)*hd:(g*c+t+1)*hd])
			}
		}
	}
	return h.w.matrix(name+"o_proj.weight").mulNT(att, c), k, v
}

// mlp is the GeGLU MLP under prefix over rows x [n·D] → [n·D].
func (h *hostModel) mlp(x []float32, n int, prefix string) []float32 {
	gate := h.w.matrix(prefix+".gate_proj.weight").mulNT(x, n)
	up := h.w.matrix(prefix+".up_proj.weight").mulNT(x, n)
	geluMulInto(gate, gate, up, h.scratch.get(scratchGelu, len(gate)))
	return h.w.matrix(prefix+".down_proj.weight").mulNT(gate, n)
}

// moe is Params.MoE: route on the residual r, run each expert on its tokens' rows of
// x (exact and sparse: one product per expert over exactly its routed rows), combine.
// x, r: [n·D] → [n·D]
func (h *hostModel) moe(i int, x, r []float32, n int) []float32 {
	cfg := h.cfg
	d, e, k, f := cfg.HiddenSize, cfg.NumExperts, cfg.TopKExperts, cfg.MoEIntermediateSize
	eps := float32(cfg.RMSNormEps)
	name := layerPrefix(i)
	// Router: RMSNorm_noscale(r)·scale·D^-½, softmax over all experts, top-k (ties to
	// the lower index), renormalised, times per_expert_scale.
	hr := rmsRows(r, d, h.w.get(name+"router.scale"), eps)
	inv := float32(1 / math.Sqrt(float64(d)))
	for j := range hr {
		hr[j] *= inv
	}
	probs := h.w.matrix(name+"router.proj.weight").mulNT(hr, n)
	pes := h.w.get(name + "router.per_expert_scale")
	rows := make([][]int, e) // tokens per expert, ascending
	wts := make([][]float32, e)
	taken := make([]bool, e)
	for t := range n {
		p := probs[t*e : (t+1)*e]
		softmaxInto(p, p, 1)
		idx, tot := TopKExperts(p, k, taken)
		for _, ex := range idx {
			rows[ex] = append(rows[ex], t)
			wts[ex] = append(wts[ex], p[ex]/tot*pes[ex])
		}
	}
	// [E·2F, D] and [E·D, F] in their stored format: only the routed experts' rows are
	// read.
	gu := h.w.matrix(name + "experts.gate_up_proj")
	dn := h.w.matrix(name + "experts.down_proj")
	for ex := range e { // read ahead what the loop below multiplies (prefetch.go)
		if len(rows[ex]) > 0 {
			h.w.willNeed(gu.sub(ex*2*f, (ex+1)*2*f))
			h.w.willNeed(dn.sub(ex*d, (ex+1)*d))
		}
	}
	out := make([]float32, n*d)
	// Each expert's rows, reused by the next (m ≤ n rows each, every element written).
	mmax := 0
	for ex := range e {
		mmax = max(mmax, len(rows[ex]))
	}
	xs, gs := h.scratch.get(scratchExpertX, mmax*d), h.scratch.get(scratchExpertGU, mmax*2*f)
	hs, ys, tmp := h.scratch.get(scratchExpertH, mmax*f), h.scratch.get(scratchExpertY, mmax*d), h.scratch.get(scratchGelu, f)
	for ex := range e {
		m := len(rows[ex])
		if m == 0 {
			continue
		}
		xe := xs[:m*d]
		for a, t := range rows[ex] {
			copy(xe[a*d:(a+1)*d], x[t*d:(t+1)*d])
		}
		g := gs[:m*2*f] // [m, 2F]: gate | up
		gu.sub(ex*2*f, (ex+1)*2*f).mulNTInto(g, xe, m)
		hm := hs[:m*f]
		for a := range m {
			geluMulInto(hm[a*f:(a+1)*f], g[a*2*f:a*2*f+f], g[a*2*f+f:(a+1)*2*f], tmp)
		}
		y := ys[:m*d]
		dn.sub(ex*d, (ex+1)*d).mulNTInto(y, hm, m)
		for a, t := range rows[ex] {
			wa := wts[ex][a]
			o := out[t*d : (t+1)*d]
			for j, v := range y[a*d : (a+1)*d] {
				o[j] += wa * v
			}
		}
	}
	return out
}

// TopKExperts is the router's choice for one token on the host: the k largest of the
// expert probabilities p (ties to the lower index) and their sum. taken is scratch of
// len(p). The host model and engine/train/hostgrad both route with it.
func TopKExperts(p []float32, k int, taken []bool) (sel []int, sum float32) {
	clear(taken)
	sel = make([]int, 0, k)
	for range k {
		best := -1
		for ex, pr := range p {
			if !taken[ex] && (best < 0 || pr > p[best]) {
				best = ex
			}
		}
		taken[best] = true
		sel = append(sel, best)
		sum += p[best]
	}
	return sel, sum
}

// rmsRows is RMSNorm over rows of width n (w nil: no scale) → new slice
// (kernels.RMSNorm).
func rmsRows(x []float32, n int, w []float32, eps float32) []float32 {
	out := make([]float32, len(x))
	kernels.RMSNorm(out, x, w, n, eps)
	return out
}

func addInto(dst, x []float32) {
	for j, v := range x {
		dst[j] += v
	}
}

// geluMulInto writes dst[j] = gelu_tanh(gate[j])·up[j] (dst may be gate): the vector
// GeGLU product, kernels.GeluMul. tmp is scratch of the same length.
func geluMulInto(dst, gate, up, tmp []float32) { kernels.GeluMul(dst, gate, up, tmp) }

// RopeTables are cos/sin of (start+t)·inv_freq: [C, Hd/2] each, the angle rounded
// to float32 as the graph computes it (the host path and hostgrad's trainer share them).
func RopeTables(start, c int, inv []float32) (cos, sin []float32) {
	half := len(inv)
	cos, sin = make([]float32, c*half), make([]float32, c*half)
	for t := range c {
		pos := float32(start + t)
		for j, f := range inv {
			a := float64(pos * f) // float32 angle, as the graph computes it
			cos[t*half+j], sin[t*half+j] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return cos, sin
}

// ropeRows rotates x [C, heads, Hd] in place (rotate-half layout, see ApplyRoPE).
func ropeRows(x []float32, c, heads, hd int, cos, sin []float32) {
	half := hd / 2
	for t := range c {
		cs, sn := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for hh := range heads {
			v := x[(t*heads+hh)*hd : (t*heads+hh+1)*hd]
			for j := range half {
				x1, x2 := v[j], v[j+half]
				v[j] = x1*cs[j] - x2*sn[j]
				v[j+half] = x2*cs[j] + x1*sn[j]
			}
		}
	}
}

func mustInvFreq(cfg *config.Text, i int) []float32 {
	inv, err := InvFreq32(cfg.LayerRope(i), cfg.LayerHeadDim(i))
	if err != nil {
		panic(fmt.Errorf("layer %d: %w", i, err))
	}
	return inv
}
