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

// TestParallelParts: every part runs exactly once, with products started from several
// goroutines at once and from inside parts (nested) — none waits on another for ever —
// and with more parts than workers.
func TestParallelParts(t *testing.T) {
	run := func(parts int) {
		seen := make([]atomic.Int32, parts)
		parallel(parts, func(p int) { seen[p].Add(1) })
		for p := range parts {
			if c := seen[p].Load(); c != 1 {
				t.Errorf("%d parts: part %d ran %d times", parts, p, c)
			}
		}
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			for i := range 200 {
				run(2 + (g+i)%7)
				parallel(workers(), func(int) { run(3) })
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	ran := 0
	parallel(0, func(p int) { ran++ })
	if ran != 1 {
		t.Errorf("parallel(0) ran f %d times, want once (f(0))", ran)
	}
}
