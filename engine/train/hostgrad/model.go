package hostgrad

import (
	"fmt"

	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
)

// tapeOps are arch.Ops on tape tensors: the recipe the host engine runs, each
// operation recording its backward pass on tp (nothing when tp is off). No operand is
// overwritten, consumed or not: the backward passes read them. One tapeOps is one
// forward over rows at positions start…: the causal encoder over its own rows, keeping
// every layer's K and V (ks, vs), or the bidirectional decoder reading the encoder's
// keys of the positions before start (prefix).
type tapeOps struct {
	n      *net
	tp     *Tape
	start  int
	causal bool
	ks, vs []*T // encoder: the layers' keys and values [rows, Kv·Hd]
	// prefix, in the decoder, is layer i's visible prefix keys and values and their
	// count (nil, nil, 0: none).
	prefix func(tp *Tape, i int) (pk, pv *T, npre int)
	// ropes are the rotation tables of this forward's rows, by sliding (a layer's
	// RoPE and head width follow from it).
	ropes map[bool][2][]float32
}

var _ arch.Ops[*T] = (*tapeOps)(nil)

func (o *tapeOps) StartLayer(int) {}

// Linear takes the weight's [out, in] from Params.Dims.
func (o *tapeOps) Linear(x *T, weight string) *T {
	w, dims := o.n.get(weight), o.n.dims[weight]
	if len(dims) != 2 {
		panic(fmt.Sprintf("parameter %q has shape %v, not a Linear weight [out, in]", weight, dims)) // recovered in Loss
	}
	out, in := dims[0], dims[1]
	return o.tp.MatNT(x, w, len(x.V)/in, out, in)
}

// LinearF32 is Linear: the tape's products are float32 already.
func (o *tapeOps) LinearF32(x *T, weight string) *T { return o.Linear(x, weight) }

func (o *tapeOps) Norm(x *T, width int, weight string) *T {
	var w *T
	if weight != "" {
		w = o.n.get(weight)
	}
	return o.tp.RMS(x, width, w, o.n.eps)
}

func (o *tapeOps) NormInPlace(x *T, width int, weight string) *T { return o.Norm(x, width, weight) }

func (o *tapeOps) Add(a, b *T) *T { return o.tp.Add(a, b) }

func (o *tapeOps) Scale(x *T, s float64) *T { return o.tp.Scale(x, float32(s)) }

func (o *tapeOps) ScaleBy(x *T, weight string) *T { return o.tp.Scale(x, o.n.get(weight).V[0]) }

func (o *tapeOps) GeGLU(gate, up *T) *T { return o.tp.GeGLU(gate, up) }

func (o *tapeOps) RoPE(layer int, x *T, heads int) *T {
	cfg := o.n.cfg
	hd := cfg.LayerHeadDim(layer)
	rows := len(x.V) / (heads * hd)
	sliding := cfg.IsSliding(layer)
	t, ok := o.ropes[sliding]
	if !ok {
		inv, err := model.InvFreq32(cfg.LayerRope(layer), hd)
		if err != nil {
			panic(fmt.Sprintf("layer %d: %v", layer, err)) // recovered in Loss
		}
		t[0], t[1] = model.RopeTables(o.start, rows, inv)
		if o.ropes == nil {
			o.ropes = map[bool][2][]float32{}
		}
		o.ropes[sliding] = t
	}
	return o.tp.RoPE(x, rows, heads, hd, t[0], t[1])
}

// Attend: in the encoder, row j sees rows i ≤ j (and, on sliding layers, i > j − W);
// in the decoder every row and the visible prefix.
func (o *tapeOps) Attend(layer int, q, k, v *T) *T {
	cfg := o.n.cfg
	nh, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(layer), cfg.LayerHeadDim(layer)
	rows := len(q.V) / (nh * hd)
	if o.causal {
		o.ks[layer], o.vs[layer] = k, v
		window := 0
		if cfg.IsSliding(layer) {
			window = cfg.SlidingWindow
		}
		causal := func(qi int) (lo, hi int) {
			if window > 0 {
				lo = max(0, qi-window+1)
			}
			return lo, qi + 1
		}
		return o.tp.Attention(q, k, v, rows, rows, nh, kvh, hd, causal)
	}
	keys, vals, npre := k, v, 0
	if o.prefix != nil {
		var pk, pv *T
		if pk, pv, npre = o.prefix(o.tp, layer); pk != nil {
			keys, vals = o.tp.Concat(pk, k), o.tp.Concat(pv, v)
		}
	}
	return o.tp.Attention(q, keys, vals, rows, npre+rows, nh, kvh, hd, nil)
}

// Experts runs each expert on exactly its rows of x (GatherRows), over its block of
// the stacked weights (a view sharing their gradient), and combines them with the
// routing weights.
func (o *tapeOps) Experts(layer int, x, logits *T) *T {
	cfg := o.n.cfg
	d, e, k, f := cfg.HiddenSize, cfg.NumExperts, cfg.TopKExperts, cfg.MoEIntermediateSize
	rows := len(x.V) / d
	name := arch.LayerPrefix(layer)
	idx, w := o.tp.Route(logits, o.n.get(name+"router.per_expert_scale"), rows, e, k)
	tokens, slots := make([][]int, e), make([][]int, e)
	for t, sel := range idx {
		for s, ex := range sel {
			tokens[ex] = append(tokens[ex], t)
			slots[ex] = append(slots[ex], s)
		}
	}
	gu, dn := o.n.get(name+"experts.gate_up_proj"), o.n.get(name+"experts.down_proj") // [E, 2F, D], [E, D, F]
	ys := make([]*T, e)
	for ex := range e {
		m := len(tokens[ex])
		if m == 0 {
			continue
		}
		xe := o.tp.GatherRows(x, tokens[ex], d)
		g := o.tp.MatNT(xe, view(gu, ex*2*f*d, (ex+1)*2*f*d), m, 2*f, d)
		ys[ex] = o.tp.MatNT(o.tp.GeGLUSplit(g, m, f), view(dn, ex*d*f, (ex+1)*d*f), m, d, f)
	}
	return o.tp.Combine(ys, tokens, slots, w, rows, d, k)
}
