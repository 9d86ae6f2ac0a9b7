package model

import (
	"fmt"

	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// hostHead is the decoder's output end computed on the host in float32 instead of in
// the graph: the tied LM head, the soft-cap, and the next step's soft embedding
//
//	logits = c·tanh((h·Eᵀ)/c)                     [C, V]
//	soft   = softmax(logits/T) · E · √D           [C, D]
//
// where h is the final-normed hidden state the decoder returns. It is the same
// arithmetic as Logits and SoftEmbedding; it exists because these two products over
// the whole vocabulary are about half of a decoder step's FLOPs, and on the pure-Go
// backend package kernels does them an order of magnitude faster than DotGeneral.
//
// Its products are kernels.Head's over E, the tied embedding in its stored format:
// packed once per model when it is small (Darkroom Mini's), else multiplied as stored,
// so no float32 copy of a large E (nor of its transpose) is made. A denoising step
// (step) runs the fused head — the sampler's statistics taken from each block of
// logits while it is in cache, the logits never written whole — and gives, bit for
// bit, what run's logits followed by sampler.Tempered give.
type hostHead struct {
	k          *kernels.Head
	emb        kernels.Matrix // E as stored (run's p·E)
	version    any            // the embedding's (hostWeights), to notice a changed variable
	v, d       int
	embedScale float64
	probs      []float32 // run's scratch [C, V]
}

// prepare reads E from the weights (hostWeights keeps it, and notices a changed
// variable: the head is then rebuilt, E packed again).
func (h *hostHead) prepare(w *hostWeights, embedScale float64) error {
	name := weights.EmbeddingName
	e, err := w.load(name)
	if err != nil {
		return err
	}
	if len(e.dims) != 2 {
		return fmt.Errorf("weight %q: shape %v, want [vocab, hidden]", name, e.dims)
	}
	if e.mat.q == nil {
		return fmt.Errorf("weight %q is stored in parts apart; the output head needs it whole", name)
	}
	h.embedScale = embedScale
	if h.k != nil && h.version == e.version {
		return nil
	}
	k, err := kernels.NewHead(*e.mat.q)
	if err != nil {
		return fmt.Errorf("weight %q: %w", name, err)
	}
	h.k, h.emb, h.version, h.v, h.d = k, *e.mat.q, e.version, e.dims[0], e.dims[1]
	return nil
}

// logits is the soft-capped LM head alone over the final-normed rows hn [n·D] → [n·V].
func (h *hostHead) logits(hn []float32, n int, softcap float64) []float32 {
	return h.logitsInto(make([]float32, n*h.v), hn, n, softcap)
}

// logitsInto is logits written into out (at least n·V long), which it returns cut to n·V.
func (h *hostHead) logitsInto(out, hn []float32, n int, softcap float64) []float32 {
	out = out[:n*h.v]
	if err := h.k.Logits(out, hn, n, float32(softcap)); err != nil {
		panic(err)
	}
	return out
}

// run computes the logits [C·V] and the soft embedding [C·D] from the final-normed
// hidden state hn [C·D] (see hostHead): Decode's head, which returns the logits.
func (h *hostHead) run(hn []float32, c int, softcap, temperature float64) (logits, soft []float32) {
	vocab := h.v
	logits = h.logits(hn, c, softcap)
	if len(h.probs) < c*vocab {
		h.probs = make([]float32, c*vocab)
	}
	probs := h.probs[:c*vocab]
	parallelRows(c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			softmaxInto(probs[i*vocab:(i+1)*vocab], logits[i*vocab:(i+1)*vocab], temperature)
		}
	})
	soft = make([]float32, c*h.d)
	if err := h.emb.MulNN(soft, probs, c); err != nil {
		panic(err)
	}
	scale := float32(h.embedScale)
	for i := range soft {
		soft[i] *= scale
	}
	return logits, soft
}

// step is a denoising step's head over hn [C·D] for plan: each position's draw,
// argmax and entropy (sampler.Tempered's, from plan's draws at its temperature) and
// the next soft embedding [C·D], with no [C, V] array written (kernels.Head.Step).
func (h *hostHead) step(hn []float32, c int, softcap float64, plan sampler.Plan) (pos []sampler.Position, soft []float32) {
	pos, soft = make([]sampler.Position, c), make([]float32, c*h.d)
	err := h.k.Step(soft, pos, hn, c, kernels.HeadStep{Softcap: float32(softcap), InvTemperature: 1 / plan.Temperature,
		Draws: plan.Draws(c), SoftScale: float32(h.embedScale)})
	if err != nil {
		panic(err)
	}
	return pos, soft
}

// softmaxInto writes softmax(x/t) into dst (dst may be x): kernels.Softmax.
func softmaxInto(dst, x []float32, t float64) { kernels.Softmax(dst, x, float32(1/t)) }

// parallelRows splits [0, n) over the kernels' worker pool (kernels.ParallelRows).
func parallelRows(n int, fn func(lo, hi int)) { kernels.ParallelRows(n, fn) }
