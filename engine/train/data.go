package train

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// Example is one tokenized training pair: the chat-formatted prompt (ending with
// the model-turn header, exactly what the engine sends) and the answer (the
// supervised region, closed with the end-of-turn token).
type Example struct {
	Title  string
	Kind   string
	Prompt []int
	Answer []int
	// Copied are the answer positions that repeat the title given in the prompt
	// (the page's <h1>, a chat answer's bold term): the tokens a model can only get
	// right by copying from the prompt. Options.TitleWeight weighs their loss.
	Copied []int
	// Loss is the record's (Record.Loss): "" both losses, LossDiffusion or LossAR.
	Loss string
	// Held is how many of the answer's first tokens are held (Record.Held): on
	// the first canvas they stay clean and their loss weighs 0.
	Held int
}

// titleCopies returns the positions of answer covered by an occurrence of one of
// the title's spellings (token sequences), in ascending order.
func titleCopies(answer []int, spellings ...[]int) []int {
	covered := make([]bool, len(answer))
	for _, sp := range spellings {
		if len(sp) == 0 {
			continue
		}
		for i := 0; i+len(sp) <= len(answer); i++ {
			if slices.Equal(answer[i:i+len(sp)], sp) {
				for j := range sp {
					covered[i+j] = true
				}
			}
		}
	}
	var out []int
	for i, c := range covered {
		if c {
			out = append(out, i)
		}
	}
	return out
}

// numCanvases is how many canvases of length c the answer occupies (≥ 1): the
// answer is padded with EOS up to the end of its last canvas.
func numCanvases(answerLen, c int) int {
	if answerLen <= 0 {
		return 1
	}
	return (answerLen + c - 1) / c
}

// canvasTokens returns canvas s of the answer: answer[s·c : (s+1)·c], padded with
// eos to length c (the EOS fill that teaches stopping).
func canvasTokens(answer []int, s, c, eos int) []int {
	out := make([]int, c)
	for i := range out {
		j := s*c + i
		if j < len(answer) {
			out[i] = answer[j]
		} else {
			out[i] = eos
		}
	}
	return out
}

// item is one training sample of a step: an example and the canvas scored.
type item struct {
	Example int
	Canvas  int
}

// prefixLen is the length of the clean prefix of an item: prompt + earlier canvases.
func (it item) prefixLen(ex []Example, c int) int { return len(ex[it.Example].Prompt) + it.Canvas*c }

// Batches plans the data order: per epoch, each example gets one canvas drawn
// uniformly among its canvases whose prefix fits the largest bucket; items are
// grouped by prefix bucket (so each batch has one static shape), shuffled within
// the bucket, cut into batches of size batch (a bucket's last partial batch is
// filled from the start of the same shuffled bucket), and batch order is
// shuffled. Everything is a pure function of (seed, epoch), so a resumed run
// sees exactly the same order.
type Batches struct {
	examples []Example
	buckets  []int // prefix lengths, ascending
	canvas   int
	batch    int
	seed     uint64

	epoch int
	plan  []plannedBatch
	// epochStart[e] is the global index of the first batch of epoch e (computed lazily).
	epochStart []int
}

type plannedBatch struct {
	Bucket int // prefix length P
	Items  []item
}

// NewBatches checks the inputs and returns the planner.
func NewBatches(examples []Example, buckets []int, canvas, batch int, seed uint64) (*Batches, error) {
	if len(examples) == 0 {
		return nil, fmt.Errorf("no training examples")
	}
	if batch <= 0 || canvas <= 0 || len(buckets) == 0 {
		return nil, fmt.Errorf("batch size, canvas length and prefix buckets must be positive")
	}
	b := append([]int(nil), buckets...)
	sort.Ints(b)
	return &Batches{examples: examples, buckets: b, canvas: canvas, batch: batch, seed: seed, epoch: -1,
		epochStart: []int{0}}, nil
}

// usableCanvases is how many leading canvases of example i fit a bucket (0 if
// even the prompt is too long).
func (b *Batches) usableCanvases(i int) int {
	ex := b.examples[i]
	n := numCanvases(len(ex.Answer), b.canvas)
	maxP := b.buckets[len(b.buckets)-1]
	for n > 0 && len(ex.Prompt)+(n-1)*b.canvas > maxP {
		n--
	}
	return n
}

func (b *Batches) planEpoch(epoch int) []plannedBatch {
	rng := rand.New(rand.NewPCG(b.seed, uint64(epoch)*0x9E3779B97F4A7C15+1))
	groups := make([][]item, len(b.buckets))
	for i := range b.examples {
		n := b.usableCanvases(i)
		if n == 0 {
			continue
		}
		it := item{Example: i, Canvas: rng.IntN(n)}
		p := it.prefixLen(b.examples, b.canvas)
		k := sort.SearchInts(b.buckets, p)
		groups[k] = append(groups[k], it)
	}
	var plan []plannedBatch
	for k, g := range groups {
		if len(g) == 0 {
			continue
		}
		rng.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
		for start := 0; start < len(g); start += b.batch {
			items := make([]item, b.batch)
			for j := range items {
				items[j] = g[(start+j)%len(g)]
			}
			plan = append(plan, plannedBatch{Bucket: b.buckets[k], Items: items})
		}
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return plan
}

// At returns the batch of global step `step` and its epoch.
func (b *Batches) At(step int) (plannedBatch, int) {
	// Extend epoch boundaries until step is covered.
	for e := 0; ; e++ {
		if e+1 >= len(b.epochStart) {
			n := len(b.planEpoch(e))
			if e == b.epoch {
				n = len(b.plan)
			}
			b.epochStart = append(b.epochStart, b.epochStart[e]+n)
		}
		if step < b.epochStart[e+1] {
			if b.epoch != e {
				b.plan = b.planEpoch(e)
				b.epoch = e
			}
			return b.plan[step-b.epochStart[e]], e
		}
	}
}

// StepsPerEpoch is the number of batches in epoch 0.
func (b *Batches) StepsPerEpoch() int {
	p, _ := b.At(0)
	_ = p
	return b.epochStart[1] - b.epochStart[0]
}

// Batch is one step's host tensors (flattened row-major), all static shapes:
// P = prefix bucket, C = canvas length, T = P + C.
type Batch struct {
	B, P, C int
	// Encoder input: left-padded clean prefix followed by the clean canvas.
	Tokens    []int32 // [B, T]
	Positions []int32 // [B, T]; prefix tokens 0..L-1, canvas L..L+C-1, padding 0
	Valid     []bool  // [B, T]; false on left padding
	// PrefixValid marks the keys the decoder may read: valid prefix positions only
	// (never the clean canvas it is asked to denoise).
	PrefixValid []bool // [B, T]
	// Decoder input.
	Noisy    []int32   // [B, C] the corrupted canvas x_t
	DecPos   []int32   // [B, C] absolute positions L..L+C-1
	SelfCond []float32 // [B] 1 where pass 2 gets the self-conditioning signal (rows [0, SelfCondRows))
	// SelfCondRows: the first rows (a random subset, as the batch order is random) get self-conditioning.
	SelfCondRows int
	NoiseLevels  []float32 // [B] t of each example (for logging and tests)
	// Weight is the loss weight of predicting each token (nil: all 1; see
	// Options.TitleWeight).
	Weight []float32 // [B, T]
	// DiffusionRows and ARRows are 1 for the rows whose diffusion (AR) loss counts
	// and 0 for the others (Example.Loss); nil when every row trains both. Each
	// loss's mean is over its counted rows.
	DiffusionRows, ARRows []float32 // [B]
	// RealTokens counts non-padding, non-EOS-fill positions (for tokens/s).
	RealTokens int
}

// NoiseConfig is the corruption of the official recipes.
type NoiseConfig struct {
	Vocab     int     // replacements are uniform over [0, Vocab), special ids included
	Eps       float64 // t ~ U(Eps, 1)
	SelfCondP float64 // share of each batch that gets self-conditioning (0.5)
}

// buildBatch assembles the tensors of a planned batch and draws its noise from
// an RNG seeded by (seed, step), so the same step always gets the same noise.
// With titleWeight > 1 it also fills Weight: titleWeight on the examples' Copied
// answer tokens, 1 elsewhere.
func buildBatch(ex []Example, pb plannedBatch, c, eos, pad int, nc NoiseConfig, seed uint64, step int, titleWeight float64) *Batch {
	bsz, p := len(pb.Items), pb.Bucket
	t := p + c
	bt := &Batch{B: bsz, P: p, C: c,
		Tokens: make([]int32, bsz*t), Positions: make([]int32, bsz*t), Valid: make([]bool, bsz*t),
		PrefixValid: make([]bool, bsz*t), Noisy: make([]int32, bsz*c), DecPos: make([]int32, bsz*c),
		SelfCond: make([]float32, bsz), NoiseLevels: make([]float32, bsz)}
	rng := rand.New(rand.NewPCG(seed^0xD1B54A32D192ED03, uint64(step)))
	for b, it := range pb.Items {
		e := ex[it.Example]
		prefix := append(append([]int(nil), e.Prompt...), e.Answer[:min(it.Canvas*c, len(e.Answer))]...)
		for len(prefix) < it.Canvas*c+len(e.Prompt) { // earlier canvases' EOS fill (cannot happen for s>0 unless truncated)
			prefix = append(prefix, eos)
		}
		l := len(prefix)
		row := bt.Tokens[b*t : (b+1)*t]
		for j := 0; j < p-l; j++ {
			row[j] = int32(pad)
		}
		for j, tok := range prefix {
			k := p - l + j
			row[k] = int32(tok)
			bt.Positions[b*t+k] = int32(j)
			bt.Valid[b*t+k] = true
			bt.PrefixValid[b*t+k] = true
		}
		canvas := canvasTokens(e.Answer, it.Canvas, c, eos)
		level := nc.Eps + (1-nc.Eps)*rng.Float64()
		bt.NoiseLevels[b] = float32(level)
		for j, tok := range canvas {
			k := p + j
			row[k] = int32(tok)
			bt.Positions[b*t+k] = int32(l + j)
			bt.Valid[b*t+k] = true
			bt.DecPos[b*c+j] = int32(l + j)
			noisy := tok
			if rng.Float64() < level {
				noisy = rng.IntN(nc.Vocab)
			}
			if it.Canvas == 0 && j < e.Held { // drawn all the same, so the rest of the batch's noise does not move
				noisy = tok
			}
			bt.Noisy[b*c+j] = int32(noisy)
		}
		if it.Canvas == 0 && e.Held > 0 { // held: clean above, not asked for here
			if bt.Weight == nil {
				bt.Weight = ones(bsz * t)
			}
			for j := range min(e.Held, c) {
				bt.Weight[b*t+p+j] = 0
			}
		}
		if e.Loss != "" && bt.ARRows == nil {
			bt.DiffusionRows, bt.ARRows = ones(bsz), ones(bsz)
		}
		switch e.Loss {
		case LossDiffusion:
			bt.ARRows[b] = 0
		case LossAR:
			bt.DiffusionRows[b] = 0
		}
		real := len(e.Answer) - it.Canvas*c
		bt.RealTokens += l + min(max(real, 0), c)
		if titleWeight > 1 && len(e.Copied) > 0 {
			if bt.Weight == nil {
				bt.Weight = ones(bsz * t)
			}
			// Answer position j is row index p − l + len(prompt) + j (earlier canvases
			// in the prefix, the scored canvas after it); later canvases are not in the row.
			for _, j := range e.Copied {
				if k := p - l + len(e.Prompt) + j; j < (it.Canvas+1)*c {
					bt.Weight[b*t+k] = float32(titleWeight)
				}
			}
		}
	}
	// Self-conditioning on a SelfCondP share of the batch (exactly half by
	// default): the first rows, a random subset since batches are shuffled.
	bt.SelfCondRows = SelfCondRows(nc.SelfCondP, bsz)
	for b := 0; b < bt.SelfCondRows; b++ {
		bt.SelfCond[b] = 1
	}
	return bt
}

// SelfCondRows is how many of a batch of b get self-conditioning with share p.
func SelfCondRows(p float64, b int) int { return min(b, int(p*float64(b)+0.5)) }

// SelectKinds builds the training mix: for each example of kind k it keeps
// floor(w_k) copies plus one more with probability frac(w_k) (deterministic in
// seed); kinds missing from weights are kept once. Training a tiny model on a
// CPU budget, the mix decides what the model gets good at.
func SelectKinds(ex []Example, weights map[string]float64, seed uint64) []Example {
	if len(weights) == 0 {
		return ex
	}
	rng := rand.New(rand.NewPCG(seed, 0xA5A5))
	var out []Example
	for _, e := range ex {
		w, ok := weights[e.Kind]
		if !ok {
			w = 1
		}
		n := int(w)
		if rng.Float64() < w-float64(n) {
			n++
		}
		for i := 0; i < n; i++ {
			out = append(out, e)
		}
	}
	return out
}
