package sampler

import (
	"fmt"
	"math"

	"github.com/darkroomlabs/darkroom/engine/model/gemm"
)

// AR guidance: after a canvas has developed, its words are revised with the
// model's own causal (AR) head. The bidirectional decoder guesses every position
// at once, so a word split into several tokens can come out assembled from pieces
// of different words ("compu" + "gram"); the causal encoder, reading the canvas
// left to right, knows which piece continues the one before it. Each round scores
// the canvas with the encoder (every position given the prompt and the canvas
// before it) and moves each position to
//
//	argmax_j  log p_dec(j) + λ · log p_AR(j | canvas before it)
//
// with p_dec the decoder's distribution from the canvas's last denoising step (a
// product of the two experts; λ weighs the causal one). Rounds repeat until
// nothing changes or the round budget is spent.
//
// Two rules keep a round consistent and the page's layout intact:
//   - a position whose left neighbour changed in this round keeps its token: its
//     AR row was computed for the old neighbour (the change reaches it next round);
//   - frozen ids (markup and end tokens, chosen by the caller) are never replaced
//     and never written: the decoder decides where tags and the end go, guidance
//     revises the text between them.

// Guide holds one canvas's decoder log-probabilities for AR guidance rounds.
type Guide struct {
	vocab  int
	lambda float64
	frozen []bool    // by id
	dec    []float32 // decoder logits [c·vocab]
	decZ   []float64 // log-partition of each decoder row
	buf    []float32 // scratch row
}

// NewGuide prepares guidance over the decoder logits dec [c·vocab] (the canvas's
// last denoising step) with weight lambda > 0 on the causal head. frozen, if not
// nil, has one entry per id: true ids are neither replaced nor written.
func NewGuide(dec []float32, vocab int, lambda float64, frozen []bool) (*Guide, error) {
	switch {
	case vocab < 1 || len(dec) == 0 || len(dec)%vocab != 0:
		return nil, fmt.Errorf("guide: %d decoder logits is not a whole number of rows of vocab %d", len(dec), vocab)
	case !(lambda > 0) || math.IsInf(lambda, 0):
		return nil, fmt.Errorf("guide: weight must be positive and finite, got %g", lambda)
	case frozen != nil && len(frozen) != vocab:
		return nil, fmt.Errorf("guide: frozen set has %d entries, vocab is %d", len(frozen), vocab)
	}
	g := &Guide{vocab: vocab, lambda: lambda, frozen: frozen, dec: dec, buf: make([]float32, vocab)}
	c := len(dec) / vocab
	g.decZ = make([]float64, c)
	for i := range c {
		g.decZ[i] = logPartition(dec[i*vocab:(i+1)*vocab], g.buf)
	}
	return g, nil
}

// Positions is the number of canvas positions the guide covers.
func (g *Guide) Positions() int { return len(g.decZ) }

// Round revises a (the current canvas, len Positions()) at positions from…to−1
// and returns the new canvas and how many positions changed. ar returns the causal
// head's logits [vocab] for position i (predicting a[i] from what precedes it);
// it is called only for positions the round may change.
func (g *Guide) Round(a []int, from, to int, ar func(i int) []float32) (out []int, changed int, err error) {
	if len(a) != len(g.decZ) {
		return nil, 0, fmt.Errorf("guide: canvas has %d positions, the decoder logits %d", len(a), len(g.decZ))
	}
	from, to = max(from, 0), min(to, len(a))
	out = make([]int, len(a))
	copy(out, a)
	v := g.vocab
	for i := from; i < to; i++ {
		if i > 0 && out[i-1] != a[i-1] || g.isFrozen(a[i]) {
			continue
		}
		row := ar(i)
		if len(row) != v {
			return nil, 0, fmt.Errorf("guide: position %d: %d causal logits, want %d", i, len(row), v)
		}
		arZ := logPartition(row, g.buf)
		dec := g.dec[i*v : (i+1)*v]
		best, bi := math.Inf(-1), a[i]
		for j := range v {
			if g.isFrozen(j) {
				continue
			}
			s := float64(dec[j]) - g.decZ[i] + g.lambda*(float64(row[j])-arZ)
			if s > best { // strict: ties keep the lowest id
				best, bi = s, j
			}
		}
		if bi != a[i] {
			out[i] = bi
			changed++
		}
	}
	return out, changed, nil
}

func (g *Guide) isFrozen(id int) bool { return g.frozen != nil && g.frozen[id] }

// logPartition is log Σ_j e^{row_j}, the exponentials from gemm.ExpShift (buf:
// scratch of len(row)).
func logPartition(row, buf []float32) float64 {
	m := row[Argmax(row)]
	s := gemm.ExpShift(buf[:len(row)], row, m, 1)
	return float64(m) + math.Log(float64(s))
}
