package tokenizer

// mergeTable is an open-addressing hash table from a token pair to its merge
// rule. The merge loop looks up every adjacent pair; one 16-byte slot per
// entry keeps a lookup to one cache miss (a Go map over Gemma's 515k merges
// is about twice as slow).
type mergeTable struct {
	slots []mergeSlot
	mask  uint64
	n     int
}

type mergeSlot struct {
	key  uint64 // pairKey+1; 0 marks an empty slot
	rule mergeRule
}

// newMergeTable sizes the table for n entries at a load factor ≤ 3/4.
func newMergeTable(n int) *mergeTable {
	size := 16
	for size*3 < n*4 {
		size <<= 1
	}
	return &mergeTable{slots: make([]mergeSlot, size), mask: uint64(size - 1)}
}

func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

// put inserts or replaces the rule of key.
func (t *mergeTable) put(key uint64, r mergeRule) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	k := key + 1
	for i := mix(k) & t.mask; ; i = (i + 1) & t.mask {
		switch t.slots[i].key {
		case 0:
			t.slots[i] = mergeSlot{k, r}
			t.n++
			return
		case k:
			t.slots[i].rule = r
			return
		}
	}
}

func (t *mergeTable) get(key uint64) (mergeRule, bool) {
	k := key + 1
	for i := mix(k) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == k {
			return s.rule, true
		}
		if s.key == 0 {
			return mergeRule{}, false
		}
	}
}

func (t *mergeTable) grow() {
	old := t.slots
	t.slots = make([]mergeSlot, len(old)*2)
	t.mask = uint64(len(t.slots) - 1)
	t.n = 0
	for _, s := range old {
		if s.key != 0 {
			t.put(s.key-1, s.rule)
		}
	}
}

// len is the number of distinct pairs.
func (t *mergeTable) len() int { return t.n }
