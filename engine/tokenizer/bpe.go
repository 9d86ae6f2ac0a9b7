package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// bpe is the BPE model: characters start as symbols and the adjacent pair with
// the lowest merge rank is merged first (the leftmost on ties), until no pair
// has a merge. This is the order of Hugging Face tokenizers (rank, position)
// and of transformers.js (rank + position/len).
type bpe struct {
	vocab        map[string]int
	merges       *mergeTable    // pair (left<<32 | right) → rule
	bmpIDs       []int32        // single-character tokens of the BMP (-1: none)
	runeIDs      map[rune]int32 // single-character tokens above the BMP
	unk          int32          // -1 if none
	fuseUnk      bool
	byteFallback bool
	byteIDs      [256]int32 // `<0xHH>` ids, -1 where missing
	ignoreMerges bool
	cache        wordCache
}

type mergeRule struct {
	rank int32
	id   int32 // the merged token
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// symbol is one node of the doubly linked list of a word being merged.
type symbol struct {
	id         int32 // token id, or -1 for a character missing from the vocabulary
	prev, next int32 // neighbor indices, -1 at the ends
	start, end int32 // byte range in the word
	dead       bool
}

// candidate is a possible merge of symbols[pos] with its right neighbor.
type candidate struct {
	rank, pos   int32
	left, right int32 // the ids the merge was computed for (stale-entry check)
	id          int32
}

func (c candidate) less(o candidate) bool {
	if c.rank != o.rank {
		return c.rank < o.rank
	}
	return c.pos < o.pos
}

// candHeap is a binary min-heap of candidates (no container/heap interface
// boxing on the hot path).
type candHeap []candidate

func (h *candHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// init orders an unordered slice into a heap in O(n).
func (h candHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candHeap) pop() candidate {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	s.down(0)
	*h = s
	return top
}

func (s candHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s[r].less(s[l]) {
			m = r
		}
		if !s[m].less(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}

// encodeWord appends the ids of one pre-tokenized word.
func (m *bpe) encodeWord(ids []int, w string) []int {
	if w == "" {
		return ids
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[w]; ok {
			return append(ids, id)
		}
	}
	cacheable := len(w) < maxCachedWordLen
	if cacheable {
		if got, ok := m.cache.get(w); ok {
			for _, id := range got {
				ids = append(ids, int(id))
			}
			return ids
		}
	}
	out := m.merge(w)
	if cacheable {
		m.cache.put(w, out)
	}
	for _, id := range out {
		ids = append(ids, int(id))
	}
	return ids
}

// merge runs the BPE merge loop on w and maps the surviving symbols to ids
// (byte fallback or unk for symbols outside the vocabulary).
func (m *bpe) merge(w string) []int32 {
	syms := make([]symbol, 0, len(w))
	for i := 0; i < len(w); {
		r, sz := utf8.DecodeRuneInString(w[i:])
		id := int32(-1)
		switch {
		case r < 0x10000 && (r != utf8.RuneError || sz > 1):
			id = m.bmpIDs[r]
		case r >= 0x10000:
			if v, ok := m.runeIDs[r]; ok {
				id = v
			}
		}
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1, start: int32(i), end: int32(i + sz)})
		i += sz
	}
	syms[len(syms)-1].next = -1

	if len(syms) > 1 {
		h := make(candHeap, 0, len(syms))
		for i := 0; i+1 < len(syms); i++ {
			if c, ok := m.candidate(syms, int32(i)); ok {
				h = append(h, c)
			}
		}
		h.init()
		for len(h) > 0 {
			c := h.pop()
			s := &syms[c.pos]
			if s.dead || s.next < 0 || s.id != c.left || syms[s.next].id != c.right {
				continue // stale: a neighbor merged since this entry was pushed
			}
			r := &syms[s.next]
			s.id = c.id
			s.end = r.end
			s.next = r.next
			r.dead = true
			if s.next >= 0 {
				syms[s.next].prev = c.pos
			}
			if s.prev >= 0 {
				m.addCandidate(&h, syms, s.prev)
			}
			m.addCandidate(&h, syms, c.pos)
		}
	}

	out := make([]int32, 0, len(syms))
	for i := int32(0); i >= 0 && int(i) < len(syms); i = syms[i].next {
		s := syms[i]
		if s.id >= 0 {
			out = append(out, s.id)
			continue
		}
		out = m.fallback(out, w[s.start:s.end])
	}
	return out
}

func (m *bpe) addCandidate(h *candHeap, syms []symbol, pos int32) {
	if c, ok := m.candidate(syms, pos); ok {
		h.push(c)
	}
}

// candidate returns the merge of syms[pos] with its right neighbor, if any.
func (m *bpe) candidate(syms []symbol, pos int32) (candidate, bool) {
	s := syms[pos]
	if s.next < 0 || s.id < 0 {
		return candidate{}, false
	}
	right := syms[s.next].id
	if right < 0 {
		return candidate{}, false
	}
	rule, ok := m.merges.get(pairKey(s.id, right))
	return candidate{rank: rule.rank, pos: pos, left: s.id, right: right, id: rule.id}, ok
}

// fallback encodes a piece missing from the vocabulary: as `<0xHH>` byte tokens
// when the model has byte fallback and all its bytes exist, else as unk.
func (m *bpe) fallback(out []int32, piece string) []int32 {
	if m.byteFallback {
		ok := true
		for i := 0; i < len(piece); i++ {
			if m.byteIDs[piece[i]] < 0 {
				ok = false
				break
			}
		}
		if ok {
			for i := 0; i < len(piece); i++ {
				out = append(out, m.byteIDs[piece[i]])
			}
			return out
		}
	}
	if m.unk < 0 {
		return out // no unk token: the piece is dropped, as Hugging Face does
	}
	if m.fuseUnk && len(out) > 0 && out[len(out)-1] == m.unk {
		return out
	}
	return append(out, m.unk)
}

// byteToken is the vocabulary string of byte b's fallback token.
func byteToken(b byte) string { return fmt.Sprintf("<0x%02X>", b) }
