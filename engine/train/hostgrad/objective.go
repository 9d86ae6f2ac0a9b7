package hostgrad

import (
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/gomlx/gomlx/pkg/core/dtypes"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
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
	// NoAR and NoDiffusion leave the example out of the AR (diffusion) loss and of
	// its mean (engine/train's Record.Loss); an example without the diffusion loss
	// skips the decoder. Not both.
	NoAR, NoDiffusion bool
}

// Losses are the objective's values: Total = Diffusion + AR, with Diffusion the mean
// cross-entropy over every canvas position of the batch and AR the mean next-token
// cross-entropy of the encoder over every consecutive pair of [prefix; canvas]
// (each term times its Example.Weight; the means still divide by the plain counts),
// each over the examples that train it (Example.NoAR, NoDiffusion).
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
	pairs, diffRows := 0, 0
	for _, ex := range batch {
		if len(ex.Canvas) != c || len(ex.Noisy) != c {
			return l, nil, fmt.Errorf("hostgrad: canvas lengths differ in the batch")
		}
		if ex.Weight != nil && len(ex.Weight) != len(ex.Prefix)+c {
			return l, nil, fmt.Errorf("hostgrad: %d token weights for %d tokens", len(ex.Weight), len(ex.Prefix)+c)
		}
		if ex.NoAR && ex.NoDiffusion {
			return l, nil, fmt.Errorf("hostgrad: an example without either loss")
		}
		if !ex.NoAR {
			pairs += len(ex.Prefix) + c - 1
		}
		if !ex.NoDiffusion {
			diffRows++
		}
	}
	wDiff := 1 / float32(max(diffRows*c, 1))
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
			net.mem = getArena()
			defer putArena(net.mem)
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
	dims     map[string][]int
	withGrad bool
	eps      float32
	scale    float32 // embedding scale √D
	mem      *arena  // the current example's buffers, reset for each
}

func newNet(p *Params, withGrad bool) *net {
	n := &net{cfg: &p.Cfg.Text, canvas: p.Cfg.CanvasLength, w: map[string]*T{}, dims: p.Dims, withGrad: withGrad,
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

// encoderScalar is arch.EncoderScalar over these parameters.
func (n *net) encoderScalar(i int) string {
	return arch.EncoderScalar(func(name string) bool { return n.w[name] != nil }, i)
}

// example runs the objective on one example and returns its weighted diffusion and
// AR losses; with gradients it records and runs the backward pass.
func (n *net) example(ex Example, wDiff, wAR float32) (diff, ar float64) {
	cfg := n.cfg
	d, v := cfg.HiddenSize, cfg.VocabSize
	n.mem.reset()
	tp := &Tape{Off: !n.withGrad, mem: n.mem}
	emb := n.get("embed_tokens.weight")
	softcap := float32(cfg.FinalLogitSoftcapping)
	tokens := append(append([]int32{}, ex.Prefix...), ex.Canvas...)
	l, c, t := len(ex.Prefix), len(ex.Canvas), len(tokens)

	// Encoder (causal, with gradient) over [prefix; clean canvas] → AR loss.
	enc := &tapeOps{n: n, tp: tp, causal: true,
		ks: make([]*T, cfg.NumHiddenLayers), vs: make([]*T, cfg.NumHiddenLayers)}
	hs := arch.Layers(enc, cfg, tp.Embed(emb, tokens, d, n.scale), n.encoderScalar)
	if t > 1 && !ex.NoAR {
		h := arch.Output(enc, cfg, tp.Slice(hs, 0, (t-1)*d))
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
		return tp.Slice(enc.ks[i], lo*w, l*w), tp.Slice(enc.vs[i], lo*w, l*w), l - lo
	}
	decode := func(tp *Tape, soft *T) *T {
		o := &tapeOps{n: n, tp: tp, start: l, prefix: prefixKV}
		x := arch.DecoderInput(o, cfg, tp.Embed(emb, ex.Noisy, d, n.scale), soft, soft != nil)
		return arch.Output(o, cfg, arch.Layers(o, cfg, x, arch.DecoderScalar))
	}

	if ex.NoDiffusion {
		if n.withGrad {
			tp.Backward()
		}
		return 0, ar
	}

	// Decoder pass 1 (no gradient) for the self-conditioning signal.
	var soft *T
	if ex.SelfCond {
		h1 := decode(&Tape{Off: true, mem: n.mem}, nil)
		soft = tp.SoftEmbedding(h1.V, emb.V, c, d, v, softcap, n.scale)
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
