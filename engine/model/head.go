package model

import (
	"fmt"

	"github.com/darkroomlabs/darkroom/engine/kernels"
)

// hostHead is the decoder's output end computed on the host in float32 instead of in
// the graph: the tied LM head, the soft-cap, and the next step's soft embedding
//
//	logits = c·tanh((h·Eᵀ)/c)                     [C, V]
//	soft   = softmax(logits/T) · E · √D           [C, D]
//
// where h is the final-normed hidden state the decoder graph returns. It is the same
// arithmetic as Logits and SoftEmbedding; it exists because these two products over
// the whole vocabulary are about half of a decoder step's FLOPs, and on the pure-Go
// backend package kernels does them an order of magnitude faster than DotGeneral. The
// logits have to reach the host for the sampler anyway.
//
// E is the tied embedding in its stored format (a hostMatrix): the logits are h·Eᵀ and
// the soft embedding probs·E, both multiplied by package kernels against the stored
// rows, so no float32 copy of E (nor of its transpose) is made.
type hostHead struct {
	emb        hostMatrix
	v, d       int
	embedScale float64
	probs      []float32 // scratch [C, V]
}

// prepare reads E from the weights (hostWeights keeps it, and notices a changed
// variable).
func (h *hostHead) prepare(w *hostWeights, embedScale float64) error {
	name := "embed_tokens.weight"
	e, err := w.load(name)
	if err != nil {
		return err
	}
	if len(e.dims) != 2 {
		return fmt.Errorf("weight %q: shape %v, want [vocab, hidden]", name, e.dims)
	}
	h.emb, h.v, h.d, h.embedScale = e.mat, e.dims[0], e.dims[1], embedScale
	return nil
}

// logits is the soft-capped LM head alone over the final-normed rows hn [n·D] → [n·V].
func (h *hostHead) logits(hn []float32, n int, softcap float64) []float32 {
	out := h.emb.mulNT(hn, n)
	if softcap > 0 {
		parallelRows(n, func(lo, hi int) {
			rows := out[lo*h.v : hi*h.v]
			kernels.SoftCap(rows, float32(softcap))
		})
	}
	return out
}

// run computes the logits [C·V] and the soft embedding [C·D] from the final-normed
// hidden state hn [C·D] (see hostHead).
func (h *hostHead) run(hn []float32, c int, softcap, temperature float64) (logits, soft []float32) {
	vocab := h.v
	logits = h.emb.mulNT(hn, c)
	if len(h.probs) < c*vocab {
		h.probs = make([]float32, c*vocab)
	}
	probs := h.probs[:c*vocab]
	parallelRows(c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, pr := logits[i*vocab:(i+1)*vocab], probs[i*vocab:(i+1)*vocab]
			kernels.SoftCap(row, float32(softcap))
			softmaxInto(pr, row, temperature)
		}
	})
	soft = h.emb.mulNN(probs, c)
	scale := float32(h.embedScale)
	for i := range soft {
		soft[i] *= scale
	}
	return logits, soft
}

// softmaxInto writes softmax(x/t) into dst (dst may be x): kernels.Softmax.
func softmaxInto(dst, x []float32, t float64) { kernels.Softmax(dst, x, float32(1/t)) }

// parallelRows splits [0, n) over the kernels' worker pool (kernels.ParallelRows).
func parallelRows(n int, fn func(lo, hi int)) { kernels.ParallelRows(n, fn) }
