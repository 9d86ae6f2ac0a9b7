package sampler

import (
	"fmt"
	"math"
	"slices"
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
// product of the two experts; λ weighs the causal one). The log-partitions are
// the same for every j of a position, so the argmax is taken over the logits
// themselves: dec_j + λ·ar_j. Rounds repeat until nothing changes or the round
// budget is spent.
//
// Two rules keep a round consistent and the page's layout intact:
//   - a position whose left neighbour changed in this round keeps its token: its
//     AR row was computed for the old neighbour (the change reaches it next round);
//   - frozen ids (markup and end tokens, chosen by the caller) are never replaced
//     and never written: the decoder decides where tags and the end go, guidance
//     revises the text between them.
//
// Inside a word the causal head may weigh more (InWords): a position where the
// decoder wrote a piece that continues the word on its left (the left id ends in
// a letter or digit, its own id begins with one, with no space) is a question of
// spelling, which the causal head answers far better than the decoder; the first
// piece of every word — which word to write — keeps weight λ, so the decoder
// still chooses the words. One weight for all positions cannot do both: λ large
// enough to spell replaces the decoder's words with the corpus's commonest ones.

// Guide holds one canvas's decoder logits for AR guidance rounds.
type Guide struct {
	vocab  int
	lambda float64
	frozen []bool    // by id
	dec    []float32 // decoder logits [c·vocab]

	inWord       []bool  // by position: inside a word (InWords), or nil
	inWordWeight float64 // the causal head's weight there
	word         []int   // by id: its word, never written twice side by side (NoStutters), or nil
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
	return &Guide{vocab: vocab, lambda: lambda, frozen: frozen, dec: dec}, nil
}

// InWords sets the causal head's weight at the positions of canvas a (the
// developed canvas, before any round) that are inside a word: where a's id
// continues the word of the id on its left, i.e. endsWord[a[i−1]] and
// continues[a[i]] (tables by id; the caller decides from the ids' text), and
// where a's id repeats the id on its left ("language language"): the decoder,
// guessing every position at once, writes a word twice side by side where the
// causal head, reading left to right, rarely would. The
// positions are fixed for all rounds, so every round maximises the same
// objective. weight ≤ 0 (or nil tables) leaves every position at λ.
func (g *Guide) InWords(weight float64, a []int, endsWord, continues []bool) error {
	switch {
	case weight <= 0 || endsWord == nil || continues == nil:
		g.inWord = nil
		return nil
	case math.IsNaN(weight) || math.IsInf(weight, 0):
		return fmt.Errorf("guide: in-word weight must be finite, got %g", weight)
	case len(endsWord) != g.vocab || len(continues) != g.vocab:
		return fmt.Errorf("guide: word tables have %d and %d entries, vocab is %d", len(endsWord), len(continues), g.vocab)
	}
	if err := g.checkCanvas(a); err != nil {
		return err
	}
	if i := slices.IndexFunc(a, func(id int) bool { return id < 0 || id >= g.vocab }); i >= 0 {
		return fmt.Errorf("guide: canvas id %d at %d is outside the vocabulary", a[i], i)
	}
	inWord := make([]bool, len(a))
	for i := 1; i < len(a); i++ {
		inWord[i] = endsWord[a[i-1]] && continues[a[i]] || a[i] == a[i-1]
	}
	g.inWord, g.inWordWeight = inWord, weight
	return nil
}

// Space marks, in NoStutters' table, an id of spaces alone: a stutter is looked
// for across it ("of  of").
const Space = -2

// NoStutters keeps every round from leaving or writing, at a position, a piece
// that spells the same word as the piece on its left, spaces between them aside:
// word[id] ≥ 0 names the word an id spells (the caller gives ids that differ only
// by a leading space or by case one number), Space marks an id of spaces, and −1
// any other id without a letter. The decoder, guessing every
// position at once, writes a piece twice side by side ("Windows Windows",
// "necessarilyarily") where the page's own text almost never does, and a causal
// head reading a garbled canvas does not always outweigh a confident decoder.
// Digits, spaces and punctuation may still repeat ("00", ".."). A stutter a round
// leaves is one whose position it did not reach (its left neighbour changed); the
// next round does. word nil turns it off.
func (g *Guide) NoStutters(word []int) error {
	if word != nil && len(word) != g.vocab {
		return fmt.Errorf("guide: word table has %d entries, vocab is %d", len(word), g.vocab)
	}
	g.word = word
	return nil
}

// weight is the causal head's weight at position i.
func (g *Guide) weight(i int) float64 {
	if g.inWord != nil && g.inWord[i] {
		return g.inWordWeight
	}
	return g.lambda
}

// Positions is the number of canvas positions the guide covers.
func (g *Guide) Positions() int { return len(g.dec) / g.vocab }

// checkCanvas refuses a canvas whose length is not the decoder logits' rows.
func (g *Guide) checkCanvas(a []int) error {
	if len(a) != g.Positions() {
		return fmt.Errorf("guide: canvas has %d positions, the decoder logits %d", len(a), g.Positions())
	}
	return nil
}

// Round revises a (the current canvas, len Positions()) at positions from…to−1
// and returns the new canvas and how many positions changed. ar returns the causal
// head's logits [vocab] for position i (predicting a[i] from what precedes it);
// it is called only for positions the round may change.
func (g *Guide) Round(a []int, from, to int, ar func(i int) []float32) (out []int, changed int, err error) {
	if err := g.checkCanvas(a); err != nil {
		return nil, 0, err
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
		dec, lambda := g.dec[i*v:(i+1)*v], g.weight(i)
		best, bi := math.Inf(-1), a[i]
		stutter := -1 // the word this position may not spell: the one on its left, across spaces
		if g.word != nil {
			k := i - 1
			for k >= 0 && g.word[out[k]] == Space {
				k--
			}
			if k >= 0 {
				stutter = g.word[out[k]]
			}
		}
		for j := range v {
			if g.isFrozen(j) || stutter >= 0 && g.word[j] == stutter {
				continue
			}
			s := float64(dec[j]) + lambda*float64(row[j])
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
