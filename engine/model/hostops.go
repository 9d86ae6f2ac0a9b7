package model

import (
	"fmt"
	"math"

	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
)

// hostOps are arch.Ops on the host model's float32 rows, for one forward over c new
// tokens at positions start…start+c−1: every product in package kernels over the
// weights in their stored format (hostWeights), and every consumed operand (see
// arch.Ops) overwritten in place, so a layer allocates only its products' outputs.
// Attention reads the visible cached rows of the layer in front of the new tokens'
// keys: bidirectionally over the new tokens (the decoder), or causally with the
// sliding window, writing the new tokens' K/V to the cache (the encoder) unless
// readOnly (Score's encoder, which leaves the cache as it is).
//
// With sub > 0 the encoder's tokens are a pass over what a chunked encoder takes as
// consecutive chunks of sub tokens (the Runner's MaxChunk), and every value is what
// those chunks give, bit for bit, so that a pass may begin at any chunk the prompt
// cache restores to: attention runs a chunk at a time, each chunk's keys written to
// the cache before the next attends; a product takes all the pass's rows at once —
// each row's sums are the same whatever rows are beside it, from kernels.DotRows rows
// on — except rows a chunk has fewer than DotRows of (its last chunk's, or an
// expert's few), which take products of their own as the chunk did (runs). The gain
// is the experts': a chunk of a canvas's 256 tokens gives each of the 26B's experts
// about 16 rows, and their integer products pack each weight for those rows only.
type hostOps struct {
	h        *hostModel
	cache    *hostCache
	start    int
	causal   bool
	readOnly bool
	sub      int
}

var _ arch.Ops[[]float32] = (*hostOps)(nil)

// StartLayer reads the next layer's matrices ahead (and the first's before it), and
// takes the layer's values from its arena (activationArenas).
func (o *hostOps) StartLayer(i int) {
	if i == o.h.from {
		o.h.prefetchLayer(i)
	}
	o.h.prefetchLayer(i + 1)
	if o.h.acts != nil {
		o.h.acts.layer(i)
	}
}

func (o *hostOps) Linear(x []float32, weight string) []float32 {
	m := o.h.w.matrix(weight)
	n := len(x) / m.cols
	out := o.h.alloc(n * m.rows)
	for _, r := range o.runs(n) {
		m.mulNTInto(out[r[0]*m.rows:r[1]*m.rows], x[r[0]*m.cols:r[1]*m.cols], r[1]-r[0])
	}
	return out
}

// runs cuts a pass's n rows into the runs its products take apart (see hostOps.sub):
// all of them, or, where the last chunk has fewer than kernels.DotRows rows, the
// chunks before it and the last.
func (o *hostOps) runs(n int) [][2]int {
	if o.sub > 0 && n > o.sub {
		if tail := n % o.sub; tail > 0 && tail < kernels.DotRows {
			return [][2]int{{0, n - tail}, {n - tail, n}}
		}
	}
	return [][2]int{{0, n}}
}

// LinearF32 is Linear: the host's products are float32 already.
func (o *hostOps) LinearF32(x []float32, weight string) []float32 { return o.Linear(x, weight) }

// normWeight is the named norm weight, nil for "" (no scale).
func (o *hostOps) normWeight(name string) []float32 {
	if name == "" {
		return nil
	}
	return o.h.w.get(name)
}

func (o *hostOps) Norm(x []float32, width int, weight string) []float32 {
	out := o.h.alloc(len(x))
	kernels.RMSNorm(out, x, o.normWeight(weight), width, float32(o.h.cfg.RMSNormEps))
	return out
}

func (o *hostOps) NormInPlace(x []float32, width int, weight string) []float32 {
	kernels.RMSNorm(x, x, o.normWeight(weight), width, float32(o.h.cfg.RMSNormEps))
	return x
}

func (o *hostOps) Add(a, b []float32) []float32 {
	kernels.Add(a, b)
	return a
}

func (o *hostOps) Scale(x []float32, s float64) []float32 {
	kernels.Scale(x, float32(s))
	return x
}

func (o *hostOps) ScaleBy(x []float32, weight string) []float32 {
	kernels.Scale(x, o.h.w.get(weight)[0])
	return x
}

func (o *hostOps) GeGLU(gate, up []float32) []float32 {
	geluMulInto(gate, gate, up, o.h.scratch.get(scratchGelu, len(gate)))
	return gate
}

func (o *hostOps) RoPE(layer int, x []float32, heads int) []float32 {
	hd := o.h.cfg.LayerHeadDim(layer)
	c := len(x) / (heads * hd)
	cos, sin := o.h.ropeTables(layer, o.start, c)
	ropeRows(x, c, heads, hd, cos, sin)
	return x
}

// Attend reads layer's visible cached rows — on sliding layers with a window the last
// W−1 cached positions (what the first new token can see), else all of them — and, in
// the encoder, writes the new k and v to the cache after them (unless readOnly: the
// new tokens see each other's k and v from the arguments, never from the cache).
//
// A pass of several chunks (hostOps.sub) attends a chunk at a time, as the chunks
// would: each sees the cache as the chunks before it left it.
func (o *hostOps) Attend(layer int, q, k, v []float32) []float32 {
	cfg := o.h.cfg
	qw := cfg.NumAttentionHeads * cfg.LayerHeadDim(layer)
	kw := cfg.KVHeads(layer) * cfg.LayerHeadDim(layer)
	c := len(q) / qw
	chunk := func(start int, q, k, v []float32) []float32 {
		lo := 0
		if cfg.IsSliding(layer) && cfg.SlidingWindow > 0 {
			lo = max(0, start-(cfg.SlidingWindow-1))
		}
		out := o.h.attend(layer, q, k, v, start, o.h.prefix(o.cache, layer, lo, start), o.causal)
		if o.causal && !o.readOnly {
			o.cache.write(cfg, layer, start, k, v)
		}
		return out
	}
	if o.sub <= 0 || c <= o.sub {
		return chunk(o.start, q, k, v)
	}
	out := o.h.alloc(c * qw) // attend's result is scratch the next chunk's overwrites
	for t0 := 0; t0 < c; t0 += o.sub {
		t1 := min(c, t0+o.sub)
		copy(out[t0*qw:t1*qw], chunk(o.start+t0, q[t0*qw:t1*qw], k[t0*kw:t1*kw], v[t0*kw:t1*kw]))
	}
	return out
}

func (o *hostOps) Experts(layer int, x, logits []float32) []float32 {
	return o.h.experts(layer, x, logits, o.sub)
}

// attend is the attention core over c = len(q)/(H·Hd) new tokens with the visible
// cached rows pre in front of their keys: bidirectional over the new tokens (decoder),
// or causal with the sliding window (encoder: key position p visible to query position
// q iff p ≤ q and, on sliding layers, p > q − W). q [C, H·Hd], k, v [C, Kv·Hd] →
// [C, H·Hd] (a scratch buffer, valid until the next layer's attention).
//
// Per KV head, its G = H/Kv query heads' rows are taken position-major (row t·G+g), so
// that a run of positions is a run of rows: the queries are cut into blocks of
// attendBlockRows rows, and a block multiplies only the keys its rows can see — in the
// encoder the band between its first row's first key and its last row's last, not the
// causal mask's other half or the keys that slid out of the window. The blocks of every
// head run side by side on the pool. Every score and every output is the sum the
// whole-row products computed, in the same order, bit for bit: a score is one dot
// product over Hd whichever keys are beside it; an output sums its row's visible keys
// in order within the same 256-key depth blocks, counted from the first prefix key as
// MulNT split its contraction (the keys a row cannot see added exact zeros there).
func (h *hostModel) attend(i int, q, k, v []float32, start int, pre prefixRows, causal bool) []float32 {
	cfg := h.cfg
	nh, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(i), cfg.LayerHeadDim(i)
	groups := nh / kvh
	c := len(q) / (nh * hd)
	window := 0
	if causal && cfg.IsSliding(i) {
		window = cfg.SlidingWindow
	}
	s := pre.n + c
	// The keys key index sk (position pre.lo+sk) the query at position qp sees —
	// kp ≤ qp and, on sliding layers, kp > qp−window — are one run [lo, hi).
	visible := func(qp int) (lo, hi int) {
		if !causal {
			return 0, s
		}
		lo, hi = 0, min(s, qp-pre.lo+1)
		if window > 0 {
			lo = max(0, qp-window+1-pre.lo)
		}
		return lo, hi
	}
	att := h.scratch.get(scratchAtt, c*nh*hd)
	// Keys and values [S, Hd] per KV head: the prefix, then the new tokens'.
	keys, vals := h.scratch.get(scratchKeys, kvh*s*hd), h.scratch.get(scratchValues, kvh*s*hd)
	for j := range kvh {
		kj, vj := keys[j*s*hd:(j+1)*s*hd], vals[j*s*hd:(j+1)*s*hd]
		copy(kj, pre.k[j])
		copy(vj, pre.v[j])
		for t := range c {
			src := (t*kvh + j) * hd
			copy(kj[(pre.n+t)*hd:(pre.n+t+1)*hd], k[src:src+hd])
			copy(vj[(pre.n+t)*hd:(pre.n+t+1)*hd], v[src:src+hd])
		}
	}
	// Queries and outputs [C·G, Hd] per KV head, row t·G+g: q's and att's own rows when
	// there is one KV head, else gathered and scattered (a position's G heads are
	// contiguous in q).
	qs, outs := q, att
	if kvh > 1 {
		qs, outs = h.scratch.get(scratchQueries, c*nh*hd), h.scratch.get(scratchHeadOut, c*nh*hd)
		for j := range kvh {
			for t := range c {
				copy(qs[(j*c+t)*groups*hd:(j*c+t+1)*groups*hd], q[(t*nh+j*groups)*hd:(t*nh+(j+1)*groups)*hd])
			}
		}
	}
	// The blocks of positions, each ≥ kernels.DotRows rows unless all of them are
	// fewer (MulNT takes another path, with sums in another order, below that), and
	// their key runs.
	type block struct{ t0, t1, lo, hi, at int } // positions [t0, t1), keys [lo, hi), scores at
	var blocks []block
	scoresLen := 0
	for _, b := range attendBlocks(c, groups, kvh, causal) {
		t0, t1 := b[0], b[1]
		lo, _ := visible(start + t0)
		_, hi := visible(start + t1 - 1)
		if c*groups < kernels.DotRows {
			lo, hi = 0, s // the dot products below take all S keys (the runs of the rows span them)
		}
		blocks = append(blocks, block{t0, t1, lo, hi, scoresLen})
		scoresLen += (t1 - t0) * groups * (hi - lo)
	}
	scores := h.scratch.get(scratchScores, kvh*scoresLen)
	// tmp: a block's scores over part of its keys, when they cross a depth block; vt: the keys' values transposed for MulNT's dot products below DotRows rows.
	var tmp, vt []float32
	if c*groups < kernels.DotRows {
		vt = h.scratch.get(scratchValuesT, kvh*s*hd)
	} else if s > attendDepth {
		tmp = h.scratch.get(scratchScoresPart, kvh*scoresLen)
	}
	// The blocks' order on the pool, the costliest and the cheapest in turn, so that each
	// worker's contiguous share of them costs about the same.
	order := make([]int, 0, kvh*len(blocks))
	for a, b := 0, len(blocks)-1; a <= b; a, b = a+1, b-1 {
		order = append(order, len(blocks)-1-a)
		if a < b {
			order = append(order, len(blocks)-1-b)
		}
	}
	for j := 1; j < kvh; j++ {
		for _, b := range order[:len(blocks)] {
			order = append(order, j*len(blocks)+b)
		}
	}
	parallelRows(len(order), func(from, to int) {
		for _, it := range order[from:to] {
			j, b := it/len(blocks), blocks[it%len(blocks)]
			rows, w := (b.t1-b.t0)*groups, b.hi-b.lo
			qb := qs[(j*c+b.t0)*groups*hd:][:rows*hd]
			ob := outs[(j*c+b.t0)*groups*hd:][:rows*hd]
			kj, vj := keys[j*s*hd:(j+1)*s*hd], vals[j*s*hd:(j+1)*s*hd]
			sc := scores[j*scoresLen+b.at:][:rows*w]
			kernels.MulNT(sc, qb, kj[b.lo*hd:b.hi*hd], rows, w, hd) // scale 1.0
			for r := range rows {
				// softmax over the row's visible keys, exact zeros elsewhere. (Masking
				// with −∞ and a softmax over the whole row gives the masked keys the
				// clamped exponential's ~1e-38, whose products are denormal floats: two
				// orders of magnitude slower arithmetic.)
				lo, hi := visible(start + b.t0 + r/groups)
				row := sc[r*w : (r+1)*w]
				lo, hi = lo-b.lo, hi-b.lo
				clear(row[:lo])
				clear(row[hi:])
				softmaxInto(row[lo:hi], row[lo:hi], 1)
			}
			if vt != nil {
				// MulNT's dot products, as the whole rows had them: the one block's rows
				// see all S keys between them (w = S).
				vtj := vt[j*s*hd : (j+1)*s*hd]
				for sk := range s {
					for e := range hd {
						vtj[e*s+sk] = vj[sk*hd+e]
					}
				}
				kernels.MulNT(ob, sc, vtj, rows, hd, s)
				continue
			}
			// ob = sc·V over the keys: one product where they start on a depth block or
			// stay within one (Gemm then splits its contraction where MulNT did), else
			// the part in the first depth block and the rest after it, each from a
			// contiguous copy of its columns of the scores.
			d1 := (b.lo/attendDepth + 1) * attendDepth
			if b.lo%attendDepth == 0 || b.hi <= d1 {
				kernels.Gemm(ob, sc, vj[b.lo*hd:b.hi*hd], rows, hd, w, kernels.NN, false)
				continue
			}
			for part, r := range [2][2]int{{b.lo, d1}, {d1, b.hi}} {
				lo, hi := r[0], r[1]
				a := tmp[j*scoresLen+b.at:][:rows*(hi-lo)]
				for q := range rows {
					copy(a[q*(hi-lo):(q+1)*(hi-lo)], sc[q*w+lo-b.lo:q*w+hi-b.lo])
				}
				kernels.Gemm(ob, a, vj[lo*hd:hi*hd], rows, hd, hi-lo, kernels.NN, part > 0)
			}
		}
	})
	if kvh > 1 {
		for j := range kvh {
			for t := range c {
				copy(att[(t*nh+j*groups)*hd:(t*nh+(j+1)*groups)*hd], outs[(j*c+t)*groups*hd:(j*c+t+1)*groups*hd])
			}
		}
	}
	return att
}

// attendBlocks cuts attend's c positions (groups query heads each, kvh K/V heads)
// into its blocks [t0, t1): about attendBlockRows rows each, each ≥ kernels.DotRows
// rows unless all of them are fewer, a short tail joined to the block before it, and,
// bidirectionally (every row sees every key), no fewer than the pool's workers share
// among the K/V heads.
func attendBlocks(c, groups, kvh int, causal bool) [][2]int {
	per := max(1, attendBlockRows/groups, ceilDiv(kernels.DotRows, groups))
	if !causal {
		per = max(per, ceilDiv(c, max(1, kernels.Workers()/kvh)))
	}
	var blocks [][2]int
	for t0 := 0; t0 < c; {
		t1 := min(c, t0+per)
		if c-t1 < per && (c-t1)*groups < kernels.DotRows {
			t1 = c // a short tail joins this block
		}
		blocks = append(blocks, [2]int{t0, t1})
		t0 = t1
	}
	return blocks
}

// AttendBlocks is how many blocks of positions the host attention of one K/V head
// splits c positions of groups query heads into (kvh K/V heads; causal: the
// encoder), each one part of the layer's parallel call: for models/speed, which
// counts the calls that hand parts to the pool.
func AttendBlocks(c, groups, kvh int, causal bool) int {
	return len(attendBlocks(c, groups, kvh, causal))
}

// attendBlockRows is how many query rows (positions × the KV head's query heads) one
// block of attend multiplies at a time: in the encoder a block computes up to its rows'
// width of scores its first rows cannot see, so smaller blocks waste less, while each
// block packs its keys and values again and runs its products apart.
const attendBlockRows = 128

// attendDepth is the contraction block of package kernels' packed products (its
// blockK), in which MulNT summed a row of the old whole-row attention's values.
const attendDepth = kernels.DepthBlock

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// experts is arch.Ops.Experts on the host, exact and sparse: one product per expert
// over exactly its routed rows (below expertJobRows tokens, the experts side by side
// on the pool's workers) — in a pass of chunks of sub tokens (hostOps.sub), the rows
// of a chunk that routes fewer than kernels.DotRows to the expert apart (expertRuns).
// x [n, D], logits [n, E] (softmaxed in place) → [n, D]
func (h *hostModel) experts(i int, x, logits []float32, sub int) []float32 {
	cfg := h.cfg
	d, e, k, f := cfg.HiddenSize, cfg.NumExperts, cfg.TopKExperts, cfg.MoEIntermediateSize
	n := len(x) / d
	name := layerPrefix(i)
	pes := h.w.get(name + "router.per_expert_scale")
	rows := make([][]int, e) // tokens per expert, ascending
	wts := make([][]float32, e)
	taken := make([]bool, e)
	for t := range n {
		p := logits[t*e : (t+1)*e]
		softmaxInto(p, p, 1)
		idx, tot := TopKExperts(p, k, taken)
		for _, ex := range idx {
			rows[ex] = append(rows[ex], t)
			wts[ex] = append(wts[ex], p[ex]/tot*pes[ex])
		}
	}
	runs := make([][]int, e) // each expert's runs of rows taken apart: [0, …, len(rows[ex])]
	for ex := range e {
		runs[ex] = expertRuns(rows[ex], wts[ex], sub)
	}
	// [E·2F, D] and [E·D, F] in their stored format: only the routed experts' rows are
	// read.
	gu := h.w.matrix(name + "experts.gate_up_proj")
	dn := h.w.matrix(name + "experts.down_proj")
	down := func(ex int) hostMatrix { return dn.sub(ex*d, (ex+1)*d) }
	for ex := range e { // read ahead what the loop below multiplies (prefetch.go)
		if len(rows[ex]) > 0 {
			for _, m := range gu.subs(ex*2*f, (ex+1)*2*f) { // gate and up: one span, or two parts
				h.w.willNeed(m)
			}
			h.w.willNeed(down(ex))
		}
	}
	// one computes expert ex over its routed rows into y [m, D], with xe, g [m, 2F],
	// hm and tmp its scratch (every element written): run by run (expertRuns).
	var run func(ex int, rows []int, xe, g, hm, y, tmp []float32)
	one := func(ex int, xe, g, hm, y, tmp []float32) {
		r := runs[ex]
		for j := range len(r) - 1 {
			r0, r1 := r[j], r[j+1]
			run(ex, rows[ex][r0:r1], xe[r0*d:r1*d], g[r0*2*f:r1*2*f], hm[r0*f:r1*f], y[r0*d:r1*d], tmp)
		}
	}
	// run is one over the rows of one run.
	run = func(ex int, rows []int, xe, g, hm, y, tmp []float32) {
		m := len(rows)
		for a, t := range rows {
			copy(xe[a*d:(a+1)*d], x[t*d:(t+1)*d])
		}
		// [m, 2F], gate | up in each row, from one product; where gate and up are
		// stored apart (hostMatrix.parts: a ModelOpt export, a GGUF file's split
		// experts), two side by side on the pool, the gate's m rows then the up's.
		// One after the other, two products of F rows took a fifth longer than one of
		// 2F at an AR token's one row and a tenth at a canvas's 16; side by side they
		// take as long (go test ./engine/kernels -bench MulNTSplit).
		up, stride := f, 2*f // where row a's up values start past its gate's, and rows' stride
		if p := gu.subs(ex*2*f, (ex+1)*2*f); len(p) == 1 {
			p[0].mulNTInto(g[:2*m*f], xe, m)
		} else if len(p) == 2 && p[0].rows == f {
			parallelRows(2, func(lo, hi int) {
				for j := lo; j < hi; j++ {
					p[j].mulNTInto(g[j*m*f:(j+1)*m*f], xe, m)
				}
			})
			up, stride = m*f, f
		} else {
			panic(fmt.Errorf("layer %d expert %d: gate and up stored in %d parts", i, ex, len(p)))
		}
		for a := range m {
			r := a * stride
			geluMulInto(hm[a*f:(a+1)*f], g[r:r+f], g[up+r:up+r+f], tmp)
		}
		down(ex).mulNTInto(y, hm, m)
	}
	out := h.alloc(n * d)
	clear(out) // the experts' rows are added to it
	// add adds expert ex's rows y, weighted, to their tokens' outputs.
	add := func(ex int, y []float32) {
		for a, t := range rows[ex] {
			wa := wts[ex][a]
			o := out[t*d : (t+1)*d]
			for j, v := range y[a*d : (a+1)*d] {
				o[j] += wa * v
			}
		}
	}
	mmax := 0 // the busiest expert's rows
	for ex := range e {
		mmax = max(mmax, len(rows[ex]))
	}
	if expertsInOneJob(n, float64(mmax), d, f) {
		// The routed experts split among the pool's workers, each running whole
		// experts, their rows side by side in the scratch; the outputs added after, in
		// the experts' order, as below.
		var act []int
		at := []int{0} // act[a]'s first row
		for ex := range e {
			if len(rows[ex]) > 0 {
				act = append(act, ex)
				at = append(at, at[len(at)-1]+len(rows[ex]))
			}
		}
		r := at[len(act)]
		xs, gs := h.scratch.get(scratchExpertX, r*d), h.scratch.get(scratchExpertGU, r*2*f)
		hs, ys, tmp := h.scratch.get(scratchExpertH, r*f), h.scratch.get(scratchExpertY, r*d), h.scratch.get(scratchGelu, r*f)
		// (A part's panic, on whichever worker it ran, the pool raises again on the
		// caller, where the Runner recovers it.)
		parallelRows(len(act), func(lo, hi int) {
			for a := lo; a < hi; a++ {
				r0, r1 := at[a], at[a+1]
				one(act[a], xs[r0*d:r1*d], gs[r0*2*f:r1*2*f], hs[r0*f:r1*f], ys[r0*d:r1*d], tmp[r0*f:r0*f+f])
			}
		})
		for a, ex := range act {
			add(ex, ys[at[a]*d:at[a+1]*d])
		}
		return out
	}
	// Each expert's rows, reused by the next (m ≤ n rows each), its products split
	// across the pool.
	xs, gs := h.scratch.get(scratchExpertX, mmax*d), h.scratch.get(scratchExpertGU, mmax*2*f)
	hs, ys, tmp := h.scratch.get(scratchExpertH, mmax*f), h.scratch.get(scratchExpertY, mmax*d), h.scratch.get(scratchGelu, f)
	for ex := range e {
		m := len(rows[ex])
		if m == 0 {
			continue
		}
		one(ex, xs[:m*d], gs[:m*2*f], hs[:m*f], ys[:m*d], tmp)
		add(ex, ys[:m*d])
	}
	return out
}

// expertRuns orders an expert's routed rows (ascending tokens, with their weights
// wts alongside) for a pass of chunks of sub tokens (hostOps.sub) and returns where
// its runs begin and end: the rows of the chunks that route kernels.DotRows or more
// to it, one product, then each chunk's that route fewer, a product each, as the
// chunk's own pass multiplied them. Without chunks (sub 0), or when no chunk routes
// fewer, one run: [0, len(rows)].
func expertRuns(rows []int, wts []float32, sub int) []int {
	if sub <= 0 || len(rows) == 0 || rows[len(rows)-1] < sub {
		return []int{0, len(rows)}
	}
	var few [][2]int // the chunks' runs in rows with fewer than DotRows
	for a := 0; a < len(rows); {
		b := a
		for b < len(rows) && rows[b]/sub == rows[a]/sub {
			b++
		}
		if b-a < kernels.DotRows {
			few = append(few, [2]int{a, b})
		}
		a = b
	}
	if len(few) == 0 {
		return []int{0, len(rows)}
	}
	// The rows of the many first, in order, then each few's.
	sorted, sw := make([]int, 0, len(rows)), make([]float32, 0, len(rows))
	apart := make([]bool, len(rows))
	for _, r := range few {
		for a := r[0]; a < r[1]; a++ {
			apart[a] = true
		}
	}
	for a, t := range rows {
		if !apart[a] {
			sorted, sw = append(sorted, t), append(sw, wts[a])
		}
	}
	bounds := []int{0}
	if len(sorted) > 0 {
		bounds = append(bounds, len(sorted))
	}
	for _, r := range few {
		sorted, sw = append(sorted, rows[r[0]:r[1]]...), append(sw, wts[r[0]:r[1]]...)
		bounds = append(bounds, len(sorted))
	}
	copy(rows, sorted)
	copy(wts, sw)
	return bounds
}

// expertsInOneJob reports whether experts runs a layer's routed experts as one
// parallel job, whole experts per worker (rows: the busiest expert's), rather than one
// after another with each product split across the pool: below expertJobRows tokens,
// or when the busiest expert's gate_up product is under expertJobMACs.
func expertsInOneJob(tokens int, rows float64, d, f int) bool {
	return tokens < expertJobRows || rows*float64(2*f*d) < float64(expertJobMACs)
}

// ExpertsInOneJob is expertsInOneJob, for models/speed, which counts the calls that
// hand parts to the pool (it passes the average expert's rows).
func ExpertsInOneJob(tokens int, rows float64, d, f int) bool {
	return expertsInOneJob(tokens, rows, d, f)
}

// expertJobRows is the tokens below which experts runs the routed experts as one
// parallel job, whole experts per worker, instead of one after another with each
// product split across the pool: an AR step's experts are a few rows' dot products
// each, a few hundred µs, and a hand-off to the pool for each of them (two a
// routed expert: sixteen a layer of the 26B) left a processor idle for part of it.
var expertJobRows = 4 // a variable for the test that compares the two ways

// expertJobMACs is the multiply-adds of the busiest expert's gate_up product below
// which experts runs the routed experts as one parallel job whatever the tokens: the
// pool would not split products that small (kernels.ParallelMACs each part), so one
// after another they would run on one core — a small model's canvas (Darkroom Mini's
// experts: ~64 rows × 128 × 64).
var expertJobMACs = 2 * kernels.ParallelMACs // a variable for the test

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
