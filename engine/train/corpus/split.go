package corpus

import (
	"hash/fnv"
	"math"
	"sort"
)

// titleHash is the hash the held-out split and the example order use.
func titleHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("darkroom-corpus\x00"))
	h.Write([]byte(s))
	// FNV's high bits mix poorly for short keys; finish with a 64-bit avalanche (splitmix64).
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// HeldOut chooses the held-out titles: those whose hash falls below fraction of
// the hash range; when that gives fewer than minCount (and there are at least
// twice as many titles), the minCount titles with the smallest hashes. The
// choice depends only on the titles, never on their order.
func HeldOut(titles []string, fraction float64, minCount int) map[string]bool {
	limit := uint64(math.MaxUint64)
	if fraction < 1 {
		limit = uint64(fraction * float64(math.MaxUint64))
	}
	out := map[string]bool{}
	for _, t := range titles {
		if titleHash(t) < limit {
			out[t] = true
		}
	}
	if len(out) >= minCount || len(titles) < 2*minCount {
		return out
	}
	sorted := append([]string(nil), titles...)
	sort.Slice(sorted, func(i, j int) bool {
		hi, hj := titleHash(sorted[i]), titleHash(sorted[j])
		if hi != hj {
			return hi < hj
		}
		return sorted[i] < sorted[j]
	})
	for _, t := range sorted[:minCount] {
		out[t] = true
	}
	return out
}
