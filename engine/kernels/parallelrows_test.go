package kernels

import (
	"sync/atomic"
	"testing"
)

// TestParallelRows: every row in [0, n) is visited exactly once, in non-empty ranges,
// also when called from inside a pool task (nested, as a product's row loop would be).
func TestParallelRows(t *testing.T) {
	check := func(n int) {
		seen := make([]atomic.Int32, max(n, 1))
		ParallelRows(n, func(lo, hi int) {
			if lo >= hi {
				t.Errorf("n=%d: empty range [%d, %d)", n, lo, hi)
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range n {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n=%d: row %d visited %d times", n, i, c)
			}
		}
	}
	for _, n := range []int{0, 1, 2, 3, 17, 256} {
		check(n)
	}
	parallel(workers(), func(int) { check(33) })
}
