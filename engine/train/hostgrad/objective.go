package hostgrad

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/gomlx/gomlx/pkg/core/dtypes"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
)

// Params are the model's weights as float32 host slices by canonical name (the
// variable names of engine/model's context scope), with their shapes and whether they
// are trained (the layer scalars are buffers).
type Params struct {
	Cfg       *config.Model
	Values    map[string][]float32
	Dims      map[string][]int
	Trainable map[string]bool
}

// Names returns the parameter names, sorted.
func (p *Params) Names() []string {
	names := make([]string, 0, len(p.Values))
	for n := range p.Values {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Example is one training example as the objective sees it (no padding): the clean
// prefix (prompt and earlier canvases) and canvas, the corrupted canvas, and whether
// the decoder's second pass gets the self-conditioning signal.
type Example struct {
	Prefix, Canvas, Noisy []int32
	SelfCond              bool
	// Weight, when not nil, scales the loss of predicting each token of [prefix;
	// canvas] (len(Prefix)+len(Canvas) values): the AR term of the pair that ends at
	// that token and, on the canvas, its diffusion term. The trainer raises it on the
	// tokens an answer copies from the prompt (Options.TitleWeight in engine/train).
	Weight []float32
}

// Losses are the objective's values: Total = Diffusion + AR, with Diffusion the mean
// cross-entropy over every canvas position of the batch and AR the mean next-token
// cross-entropy of the encoder over every consecutive pair of [prefix; canvas]
// (each term times its Example.Weight; the means still divide by the plain counts).
type Losses struct {
	Total, Diffusion, AR float64
}

// Grads are the gradients of Losses.Total by parameter name (trainable ones only).
type Grads map[string][]float32

// shards is how many groups the batch is split into, each with its own gradient
// buffers, run concurrently and summed in order: a fixed number so that the result
// does not depend on the machine's core count (a resumed run is bit-identical).
const shards = 4

// Loss computes the objective of Objective (engine/train) over the batch and, with
// withGrad, its gradient with respect to every trainable parameter.
func Loss(p *Params, batch []Example, withGrad bool) (l Losses, g Grads, err error) {
	if len(batch) == 0 {
		return l, nil, fmt.Errorf("hostgrad: empty batch")
	}
	c := len(batch[0].Canvas)
	pairs := 0
	for _, ex := range batch {
		if len(ex.Canvas) != c || len(ex.Noisy) != c {
			return l, nil, fmt.Errorf("hostgrad: canvas lengths differ in the batch")
		}
		if ex.Weight != nil && len(ex.Weight) != len(ex.Prefix)+c {
			return l, nil, fmt.Errorf("hostgrad: %d token weights for %d tokens", len(ex.Weight), len(ex.Prefix)+c)
		}
		pairs += len(ex.Prefix) + c - 1
	}
	wDiff := 1 / float32(len(batch)*c)
	wAR := 1 / float32(max(pairs, 1))

	n := min(shards, len(batch))
	type result struct {
		diff, ar float64
		grads    Grads
		err      error
	}
	res := make([]result, n)
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for s := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			defer func() {
				if r := recover(); r != nil {
					res[s].err = fmt.Errorf("hostgrad: %v", r)
				}
			}()
			net := newNet(p, withGrad)
			for i := s; i < len(batch); i += n {
				d, a := net.example(batch[i], wDiff, wAR)
				res[s].diff += d
				res[s].ar += a
			}
			if withGrad {
				res[s].grads = net.grads()
			}
		}()
	}
	wg.Wait()
	for s := range n {
		if res[s].err != nil {
			return l, nil, res[s].err
		}
		l.Diffusion += res[s].diff
		l.AR += res[s].ar
		if withGrad {
			if g == nil {
				g = res[s].grads
				continue
			}
			for name, v := range res[s].grads {
				addTo(g[name], v)
			}
		}
	}
	l.Total = l.Diffusion + l.AR
	return l, g, nil
}

// net is one shard's view of the parameters: shared values, its own gradients.
type net struct {
	cfg      *config.Text
	canvas   int
	w        map[string]*T
	withGrad bool
	eps      float32
	scale    float32 // embedding scale √D
}

func newNet(p *Params, withGrad bool) *net {
	n := &net{cfg: &p.Cfg.Text, canvas: p.Cfg.CanvasLength, w: map[string]*T{}, withGrad: withGrad,
		eps:   float32(p.Cfg.Text.RMSNormEps),
		scale: float32(model.EmbedScale(p.Cfg.Text.HiddenSize, dtypes.Float32))}
	for name, v := range p.Values {
		t := &T{V: v, konst: !withGrad || !p.Trainable[name]}
		if !t.konst {
			t.G = make([]float32, len(v))
		}
		n.w[name] = t
	}
	return n
}

func (n *net) grads() Grads {
	g := Grads{}
	for name, t := range n.w {
		if !t.konst {
			g[name] = t.G
		}
	}
	return g
}

// get returns the named parameter; a missing one panics with its name (recovered in Loss).
func (n *net) get(name string) *T {
	t, ok := n.w[name]
	if !ok {
		panic(fmt.Sprintf("missing parameter %q", name))
	}
	return t
}

func layerPrefix(i int) string { return fmt.Sprintf("layers.%d.", i) }

// encoderScalar is model.Params.encoderScalar: the encoder's own layer_scalar when
// stored, else the decoder's.
func (n *net) encoderScalar(i int) string {
	if name := fmt.Sprintf("encoder.layers.%d.layer_scalar", i); n.w[name] != nil {
		return name
	}
	return layerPrefix(i) + "layer_scalar"
}

// example runs the objective on one example and returns its weighted diffusion and
// AR losses; with gradients it records and runs the backward pass.
func (n *net) example(ex Example, wDiff, wAR float32) (diff, ar float64) {
	cfg := n.cfg
	d, v := cfg.HiddenSize, cfg.VocabSize
	tp := &Tape{Off: !n.withGrad}
	emb := n.get("embed_tokens.weight")
	softcap := float32(cfg.FinalLogitSoftcapping)
	tokens := append(append([]int32{}, ex.Prefix...), ex.Canvas...)
	l, c, t := len(ex.Prefix), len(ex.Canvas), len(tokens)

	// Encoder (causal, with gradient) over [prefix; clean canvas] → AR loss.
	hs := tp.Embed(emb, tokens, d, n.scale)
	ks, vs := make([]*T, cfg.NumHiddenLayers), make([]*T, cfg.NumHiddenLayers)
	for i := range cfg.NumHiddenLayers {
		window := 0
		if cfg.IsSliding(i) {
			window = cfg.SlidingWindow
		}
		causal := func(qi, kj int) bool { return kj <= qi && (window <= 0 || kj > qi-window) }
		hs, ks[i], vs[i] = n.layer(tp, i, hs, t, 0, nil, nil, 0, causal, n.encoderScalar(i))
	}
	if t > 1 {
		h := tp.RMS(tp.Slice(hs, 0, (t-1)*d), d, n.get("norm.weight"), n.eps)
		ar = tp.CrossEntropy(h, emb, t-1, d, v, softcap, tokens[1:], wAR, rowWeights(ex.Weight, 1))
	}

	// The prefix keys the decoder reads: all of them, or on sliding layers the last
	// sliding_window−1 (positions > L − W).
	prefixKV := func(tp *Tape, i int) (pk, pv *T, npre int) {
		if l == 0 {
			return nil, nil, 0
		}
		lo := 0
		if cfg.IsSliding(i) && cfg.SlidingWindow > 0 {
			lo = max(0, l-cfg.SlidingWindow+1)
		}
		w := cfg.KVHeads(i) * cfg.LayerHeadDim(i)
		return tp.Slice(ks[i], lo*w, l*w), tp.Slice(vs[i], lo*w, l*w), l - lo
	}
	decode := func(tp *Tape, soft *T) *T {
		x := tp.Embed(emb, ex.Noisy, d, n.scale)
		if soft != nil {
			nrm := tp.RMS(soft, d, n.get("self_conditioning.pre_norm.weight"), n.eps)
			x = tp.Add(x, n.mlp(tp, nrm, c, "self_conditioning"))
		}
		h := tp.RMS(x, d, nil, n.eps)
		for i := range cfg.NumHiddenLayers {
			pk, pv, npre := prefixKV(tp, i)
			h, _, _ = n.layer(tp, i, h, c, l, pk, pv, npre, nil, layerPrefix(i)+"layer_scalar")
		}
		return tp.RMS(h, d, n.get("norm.weight"), n.eps)
	}

	// Decoder pass 1 (no gradient) for the self-conditioning signal.
	var soft *T
	if ex.SelfCond {
		h1 := decode(&Tape{Off: true}, nil)
		soft = SoftEmbedding(h1.V, emb.V, c, d, v, softcap, n.scale)
	}
	// Decoder pass 2 over the noisy canvas → diffusion loss on every position.
	h2 := decode(tp, soft)
	diff = tp.CrossEntropy(h2, emb, c, d, v, softcap, ex.Canvas, wDiff, rowWeights(ex.Weight, l))
	if n.withGrad {
		tp.Backward()
	}
	return diff, ar
}

// rowWeights is w[from:], or nil when w is nil (every row weighs 1).
func rowWeights(w []float32, from int) []float32 {
	if w == nil {
		return nil
	}
	return w[from:]
}

// layer is model.Params.Layer over rows hs [rows, D] at positions start…: attention to
// the prefix keys pk/pv ([npre, Kv, Hd], nil for none) and the rows' own keys, masked
// by visible (nil: all visible). Returns the output and the rows' K and V.
func (n *net) layer(tp *Tape, i int, hs *T, rows, start int, pk, pv *T, npre int, visible func(int, int) bool, scalarName string) (out, k, v *T) {
	d := n.cfg.HiddenSize
	pre := layerPrefix(i)
	nw := func(s string) *T { return n.get(pre + s + ".weight") }
	a, k, v := n.attention(tp, i, tp.RMS(hs, d, nw("input_layernorm"), n.eps), rows, start, pk, pv, npre, visible)
	res := tp.Add(hs, tp.RMS(a, d, nw("post_attention_layernorm"), n.eps))
	dense := tp.RMS(n.mlp(tp, tp.RMS(res, d, nw("pre_feedforward_layernorm"), n.eps), rows, pre+"mlp"), d,
		nw("post_feedforward_layernorm_1"), n.eps)
	moe := tp.RMS(n.moe(tp, i, tp.RMS(res, d, nw("pre_feedforward_layernorm_2"), n.eps), res, rows), d,
		nw("post_feedforward_layernorm_2"), n.eps)
	out = tp.Add(res, tp.RMS(tp.Add(dense, moe), d, nw("post_feedforward_layernorm"), n.eps))
	return tp.Scale(out, n.get(scalarName).V[0]), k, v
}

// attention is model.Params.Attention: x [rows, D] → out [rows, D], and the rows' K
// (k_norm, RoPE) and V (v_norm) [rows, Kv, Hd]. Full layers use K=V (no v_proj).
func (n *net) attention(tp *Tape, i int, x *T, rows, start int, pk, pv *T, npre int, visible func(int, int) bool) (out, k, v *T) {
	cfg := n.cfg
	d := cfg.HiddenSize
	nh, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(i), cfg.LayerHeadDim(i)
	name := layerPrefix(i) + "self_attn."
	q := tp.MatNT(x, n.get(name+"q_proj.weight"), rows, nh*hd, d)
	kRaw := tp.MatNT(x, n.get(name+"k_proj.weight"), rows, kvh*hd, d)
	vRaw := kRaw
	if cfg.IsSliding(i) {
		vRaw = tp.MatNT(x, n.get(name+"v_proj.weight"), rows, kvh*hd, d)
	}
	inv, err := model.InvFreq32(cfg.LayerRope(i), hd)
	if err != nil {
		panic(fmt.Sprintf("layer %d: %v", i, err))
	}
	cos, sin := model.RopeTables(start, rows, inv)
	q = tp.RoPE(tp.RMS(q, hd, n.get(name+"q_norm.weight"), n.eps), rows, nh, hd, cos, sin)
	k = tp.RoPE(tp.RMS(kRaw, hd, n.get(name+"k_norm.weight"), n.eps), rows, kvh, hd, cos, sin)
	v = tp.RMS(vRaw, hd, nil, n.eps)
	keys, vals := k, v
	if pk != nil {
		keys, vals = tp.Concat(pk, k), tp.Concat(pv, v)
	}
	var vis func(int, int) bool
	if visible != nil { // key index j counts the prefix first
		vis = func(qi, j int) bool { return j < npre || visible(qi, j-npre) }
	}
	att := tp.Attention(q, keys, vals, rows, npre+rows, nh, kvh, hd, vis)
	return tp.MatNT(att, n.get(name+"o_proj.weight"), rows, d, nh*hd), k, v
}

// mlp is the GeGLU MLP under prefix: x [rows, D] → [rows, D].
func (n *net) mlp(tp *Tape, x *T, rows int, prefix string) *T {
	d, inter := n.cfg.HiddenSize, n.cfg.IntermediateSize
	gate := tp.MatNT(x, n.get(prefix+".gate_proj.weight"), rows, inter, d)
	up := tp.MatNT(x, n.get(prefix+".up_proj.weight"), rows, inter, d)
	return tp.MatNT(tp.GeGLU(gate, up), n.get(prefix+".down_proj.weight"), rows, d, inter)
}

// moe is model.Params.MoE: route on the residual r, run each expert on exactly its
// tokens' rows of x, combine. x, r: [rows, D] → [rows, D].
func (n *net) moe(tp *Tape, i int, x, r *T, rows int) *T {
	cfg := n.cfg
	d, e, k, f := cfg.HiddenSize, cfg.NumExperts, cfg.TopKExperts, cfg.MoEIntermediateSize
	name := layerPrefix(i)
	hr := tp.Scale(tp.RMS(r, d, n.get(name+"router.scale"), n.eps), float32(1/math.Sqrt(float64(d))))
	logits := tp.MatNT(hr, n.get(name+"router.proj.weight"), rows, e, d)
	idx, w := tp.Route(logits, n.get(name+"router.per_expert_scale"), rows, e, k)
	tokens, slots := make([][]int, e), make([][]int, e)
	for t, sel := range idx {
		for s, ex := range sel {
			tokens[ex] = append(tokens[ex], t)
			slots[ex] = append(slots[ex], s)
		}
	}
	gu, dn := n.get(name+"experts.gate_up_proj"), n.get(name+"experts.down_proj") // [E, 2F, D], [E, D, F]
	ys := make([]*T, e)
	for ex := range e {
		m := len(tokens[ex])
		if m == 0 {
			continue
		}
		xe := tp.GatherRows(x, tokens[ex], d)
		g := tp.MatNT(xe, view(gu, ex*2*f*d, (ex+1)*2*f*d), m, 2*f, d)
		ys[ex] = tp.MatNT(tp.GeGLUSplit(g, m, f), view(dn, ex*d*f, (ex+1)*d*f), m, d, f)
	}
	return tp.Combine(ys, tokens, slots, w, rows, d, k)
}
