package kernels

import (
	"sync/atomic"
	"testing"
	"time"
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

// TestParallelPartPanics: a part's panic reaches the caller's recover, whichever
// goroutine ran the part — on a worker it used to end the whole process — and every
// other part still runs. The first part claimed waits for the second to start, so
// the panicking part runs on a worker whenever the caller claimed first.
func TestParallelPartPanics(t *testing.T) {
	if workers() < 2 {
		t.Skip("one processor: no worker to run a part")
	}
	for trial := range 20 {
		var claimed, ran atomic.Int32
		second := make(chan struct{})
		got := func() (v any) {
			defer func() { v = recover() }()
			parallel(3, func(p int) {
				defer ran.Add(1)
				switch claimed.Add(1) {
				case 1:
					select {
					case <-second:
					case <-time.After(time.Second):
					}
				case 2:
					close(second)
					panic("part failed")
				}
			})
			return nil
		}()
		if got != "part failed" {
			t.Fatalf("trial %d: recovered %v, want the part's panic", trial, got)
		}
		if n := ran.Load(); n != 3 {
			t.Fatalf("trial %d: %d parts ran, want all 3", trial, n)
		}
	}
}

// TestParts: Parts is the split the products make — one part below the pool's
// threshold, a part per worker above it, the dot products' lower threshold below
// dotRows rows.
func TestParts(t *testing.T) {
	w := workers()
	for _, c := range []struct{ m, n, k, want int }{
		{256, 64, 64, 1},                // 1 Mi MACs: one part
		{256, 4096, 64, min(w, 64)},     // 64 Mi
		{1, 512, 512, 1},                // 256 Ki dot-product MACs: one part
		{1, 4096, 2816, min(w, 44)},     // 11 Mi
		{dotRows, 512, 512, min(w, 1)},  // packed from dotRows rows: 1 Mi
		{dotRows, 1024, 512, min(w, 2)}, // 2 Mi
	} {
		if got := Parts(c.m, c.n, c.k); got != c.want {
			t.Errorf("Parts(%d, %d, %d) = %d, want %d", c.m, c.n, c.k, got, c.want)
		}
	}
}

// TestPoolWorkersSpin: products handed out back to back find the workers awake — they
// park on fewer than one in four, where a worker used to park after every part — and
// once the products stop, every worker parks within a few spinFor.
func TestPoolWorkersSpin(t *testing.T) {
	w := workers()
	if w < 2 {
		t.Skip("one processor: no worker")
	}
	const calls = 2000
	var sink atomic.Int64
	parallel(w, func(p int) { sink.Add(int64(p)) }) // the workers started and busy
	p0 := pool.parks.Load()
	for range calls {
		parallel(w, func(p int) { sink.Add(int64(p)) })
	}
	if parked := pool.parks.Load() - p0; parked >= calls/4 {
		t.Errorf("workers parked %d times in %d back-to-back products", parked, calls)
	}
	p1 := pool.parks.Load()
	deadline := time.Now().Add(time.Second)
	for pool.parks.Load()-p1 < int64(w-1) && time.Now().Before(deadline) {
		time.Sleep(spinFor)
	}
	if parked := pool.parks.Load() - p1; parked < int64(w-1) {
		t.Errorf("%d of %d workers parked in a second without products", parked, w-1)
	}
}

// TestDotParts: a memory-bound product is cut into one part per dotMACs, up to
// partsPerWorker parts a worker — more parts than workers, so a late worker holds the
// caller for one part — and a small one is not cut.
func TestDotParts(t *testing.T) {
	w := workers()
	for _, c := range []struct{ macs, want int }{
		{0, 1},
		{dotMACs - 1, 1},
		{3 * dotMACs, min(3, partsPerWorker*w)},
		{2816 * 4096, partsPerWorker * w}, // the 26B's q_proj, one token
	} {
		if got := dotParts(c.macs); got != c.want {
			t.Errorf("dotParts(%d) = %d, want %d (%d workers)", c.macs, got, c.want, w)
		}
	}
	if w > 1 && dotParts(2816*4096) <= w {
		t.Errorf("a large product has %d parts for %d workers: a late worker holds the caller for its whole share", dotParts(2816*4096), w)
	}
}
