package train

import (
	"math"
	"math/rand/v2"
)

// KNDiscount is the absolute discount of KneserNey at every order.
const KNDiscount = 0.75

// Word ids of KneserNey: the padding before a text's first word, the words
// outside the vocabulary, then the vocabulary.
const (
	knStart int32 = iota
	knUnk
	knFirstWord
	knMaxWords = 1<<21 - knFirstWord
)

// KneserNey is an interpolated Kneser-Ney trigram model of words (Chen &
// Goodman's form, one discount D = KNDiscount): the second "reads like
// English" measure. Words seen once in the texts it is fitted on map to
// <unk>, as do words outside them; each text is padded by two <s> at its
// start. With c the trigram counts and N1+ the number of distinct words
// completing a pattern (• for the free position):
//
//	p3(w|u,v) = max(c(uvw)−D, 0)/c(uv•) + D·N1+(uv•)/c(uv•)·p2(w|v)
//	p2(w|v)   = max(N1+(•vw)−D, 0)/N1+(•v•) + D·N1+(v•)/N1+(•v•)·p1(w)
//	p1(w)     = (N1+(••w)+1) / (N1+(•••)+V)
//
// where N1+(v•) counts the w with N1+(•vw) > 0, N1+(••w) the v with
// N1+(•vw) > 0, V is the vocabulary and <unk>, and an order whose context was
// never seen hands over to the next lower one. p1 is add-one smoothed, so
// every word has a probability; over the vocabulary and <unk> each sums to 1.
type KneserNey struct {
	vocab map[string]int32
	v     int // |vocabulary| + 1 (<unk>)
	c3    map[uint64]int32
	ctx2  map[uint64]knContext // (u, v): c(uv•), N1+(uv•)
	cc2   map[uint64]int32     // (v, w): N1+(•vw)
	ctx1  map[int32]knContext  // v: N1+(•v•), N1+(v•)
	cc1   map[int32]int32      // w: N1+(••w)
	cc1N  int                  // N1+(•••)
	out   knCounts             // counts taken out (Without); zero: none
}

// knCounts are the counts of KneserNey, as differences when they are what
// Without takes out.
type knCounts struct {
	c3   map[uint64]int32
	ctx2 map[uint64]knContext
	cc2  map[uint64]int32
	ctx1 map[int32]knContext
	cc1  map[int32]int32
	cc1N int
}

// knContext is what one context holds: the total count of what follows it
// and the number of distinct words that do.
type knContext struct{ total, distinct int32 }

func knKey2(a, b int32) uint64    { return uint64(a)<<32 | uint64(uint32(b)) }
func knKey3(a, b, c int32) uint64 { return uint64(a)<<42 | uint64(b)<<21 | uint64(c) }

// NewKneserNey fits the model on texts (words, as Words splits them).
func NewKneserNey(texts [][]string) *KneserNey {
	counts := map[string]int{}
	for _, ws := range texts {
		for _, w := range ws {
			counts[w]++
		}
	}
	m := &KneserNey{vocab: map[string]int32{}, c3: map[uint64]int32{}, ctx2: map[uint64]knContext{},
		cc2: map[uint64]int32{}, ctx1: map[int32]knContext{}, cc1: map[int32]int32{}}
	for _, ws := range texts {
		for _, w := range ws {
			// knKey3 packs three ids into 63 bits: past 2M distinct words the
			// later ones stay <unk>.
			if _, ok := m.vocab[w]; !ok && counts[w] > 1 && int32(len(m.vocab)) < knMaxWords {
				m.vocab[w] = knFirstWord + int32(len(m.vocab))
			}
		}
	}
	m.v = len(m.vocab) + 1
	for _, ws := range texts {
		ids := m.ids(ws)
		for i := 2; i < len(ids); i++ {
			u, v, w := ids[i-2], ids[i-1], ids[i]
			k3 := knKey3(u, v, w)
			m.c3[k3]++
			c := m.ctx2[knKey2(u, v)]
			c.total++
			if m.c3[k3] == 1 {
				c.distinct++
				k2 := knKey2(v, w)
				m.cc2[k2]++
				c1 := m.ctx1[v]
				c1.total++
				if m.cc2[k2] == 1 {
					c1.distinct++
					m.cc1[w]++
					m.cc1N++
				}
				m.ctx1[v] = c1
			}
			m.ctx2[knKey2(u, v)] = c
		}
	}
	return m
}

// ids maps words to the model's ids, after the two <s>.
func (m *KneserNey) ids(words []string) []int32 {
	ids := make([]int32, 0, len(words)+2)
	ids = append(ids, knStart, knStart)
	for _, w := range words {
		id, ok := m.vocab[w]
		if !ok {
			id = knUnk
		}
		ids = append(ids, id)
	}
	return ids
}

// Without is the model fitted on the same texts less text, one of them: the
// counts text added are taken out, so a page is not scored by a model that
// has seen it. Its words keep their places in the vocabulary (a word seen
// only in text, twice or more, stays a word with no counts: p1's add-one
// share), so the model is the one fitted without text when that leaves
// every word's count at two or more. Without(nil) is m.
func (m *KneserNey) Without(text []string) *KneserNey {
	if len(text) == 0 {
		return m
	}
	d := &knCounts{c3: map[uint64]int32{}, ctx2: map[uint64]knContext{}, cc2: map[uint64]int32{},
		ctx1: map[int32]knContext{}, cc1: map[int32]int32{}}
	ids := m.ids(text)
	for i := 2; i < len(ids); i++ {
		d.c3[knKey3(ids[i-2], ids[i-1], ids[i])]++
	}
	// Trigrams that text alone wrote leave their contexts' and
	// continuations' distinct counts...
	for k3, n := range d.c3 {
		n = min(n, m.c3[k3]) // text was fitted; a stranger takes out no more than there is
		d.c3[k3] = n
		u, v, w := int32(k3>>42), int32(k3>>21&(1<<21-1)), int32(k3&(1<<21-1))
		c := d.ctx2[knKey2(u, v)]
		c.total += n
		if n > 0 && n == m.c3[k3] {
			c.distinct++
			d.cc2[knKey2(v, w)]++
		}
		d.ctx2[knKey2(u, v)] = c
	}
	// ...and bigram continuations left with none leave the lowest order's.
	for k2, n := range d.cc2 {
		v, w := int32(k2>>32), int32(uint32(k2))
		c := d.ctx1[v]
		c.total += n
		if n == m.cc2[k2] {
			c.distinct++
			d.cc1[w]++
			d.cc1N++
		}
		d.ctx1[v] = c
	}
	without := *m
	without.out = *d
	return &without
}

// The counts, less what Without took out (none: m.out's maps are nil, and a
// nil map reads 0).

func (m *KneserNey) count3(k uint64) int32       { return m.c3[k] - m.out.c3[k] }
func (m *KneserNey) context2(k uint64) knContext { return m.ctx2[k].less(m.out.ctx2[k]) }
func (m *KneserNey) count2(k uint64) int32       { return m.cc2[k] - m.out.cc2[k] }
func (m *KneserNey) context1(v int32) knContext  { return m.ctx1[v].less(m.out.ctx1[v]) }
func (m *KneserNey) count1(w int32) (n int32, total int) {
	return m.cc1[w] - m.out.cc1[w], m.cc1N - m.out.cc1N
}

func (c knContext) less(o knContext) knContext {
	return knContext{total: c.total - o.total, distinct: c.distinct - o.distinct}
}

// Vocabulary is V: the words the model knows (seen more than once) and <unk>.
func (m *KneserNey) Vocabulary() int { return m.v }

func (m *KneserNey) p1(w int32) float64 {
	n, total := m.count1(w)
	return float64(n+1) / float64(total+m.v)
}

func (m *KneserNey) p2(v, w int32) float64 {
	c := m.context1(v)
	if c.total == 0 {
		return m.p1(w)
	}
	t := float64(c.total)
	return max(float64(m.count2(knKey2(v, w)))-KNDiscount, 0)/t + KNDiscount*float64(c.distinct)/t*m.p1(w)
}

func (m *KneserNey) p3(u, v, w int32) float64 {
	c := m.context2(knKey2(u, v))
	if c.total == 0 {
		return m.p2(v, w)
	}
	t := float64(c.total)
	return max(float64(m.count3(knKey3(u, v, w)))-KNDiscount, 0)/t + KNDiscount*float64(c.distinct)/t*m.p2(v, w)
}

// Prob is p(w | u, v), the probability that w follows the words u and v
// ("" for the padding before a text's start; words outside the vocabulary
// are <unk>).
func (m *KneserNey) Prob(u, v, w string) float64 {
	id := func(s string) int32 {
		if s == "" {
			return knStart
		}
		if i, ok := m.vocab[s]; ok {
			return i
		}
		return knUnk
	}
	return m.p3(id(u), id(v), id(w))
}

// Bits is the information content of words as one text, in bits: the sum of
// −log2 p(w|u,v) over its words, of which there are n.
func (m *KneserNey) Bits(words []string) (bits float64, n int) {
	ids := m.ids(words)
	for i := 2; i < len(ids); i++ {
		bits -= math.Log2(m.p3(ids[i-2], ids[i-1], ids[i]))
	}
	return bits, len(words)
}

// OrderScore pools KneserNey's scores of a set of texts: the bits of their
// words as written and of the same words shuffled within each text.
type OrderScore struct {
	Written, Shuffled float64 // bits
	Words             int
}

// Add scores one more text, shuffling a copy of its words with rng.
func (s *OrderScore) Add(m *KneserNey, words []string, rng *rand.Rand) {
	b, n := m.Bits(words)
	sh := append([]string(nil), words...)
	rng.Shuffle(len(sh), func(a, b int) { sh[a], sh[b] = sh[b], sh[a] })
	bs, _ := m.Bits(sh)
	s.Written, s.Shuffled, s.Words = s.Written+b, s.Shuffled+bs, s.Words+n
}

// BitsPerWord is the cross-entropy of the texts as written (0 for no words).
func (s OrderScore) BitsPerWord() float64 {
	if s.Words == 0 {
		return 0
	}
	return s.Written / float64(s.Words)
}

// OrderGain is the bits per word that the texts' order saves over the same
// words shuffled: how much their order looks like that of the texts the
// model was fitted on, whatever words they use (0 for no words).
func (s OrderScore) OrderGain() float64 {
	if s.Words == 0 {
		return 0
	}
	return (s.Shuffled - s.Written) / float64(s.Words)
}
