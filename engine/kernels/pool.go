package kernels

import (
	"runtime"
	"sync"
)

// The worker pool: GOMAXPROCS−1 goroutines started on first use and kept, so a product
// costs a channel send per part instead of a goroutine (the caller runs one part).
var pool struct {
	once  sync.Once
	size  int
	tasks chan func()
}

// workers is the number of parts worth splitting a product into: the pool plus the
// caller.
func workers() int {
	pool.once.Do(func() {
		pool.size = max(1, runtime.GOMAXPROCS(0))
		pool.tasks = make(chan func())
		for range pool.size - 1 {
			go func() {
				for f := range pool.tasks {
					f()
				}
			}()
		}
	})
	return pool.size
}

// parallel runs f(0) … f(parts−1) and returns when all are done. A part goes to an idle
// worker, or runs on the calling goroutine when none is idle (so products started from
// several goroutines at once never wait for each other, and never deadlock).
func parallel(parts int, f func(part int)) {
	workers()
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Add(1)
		task := func() {
			defer wg.Done()
			f(p)
		}
		select {
		case pool.tasks <- task:
		default:
			task()
		}
	}
	f(0)
	wg.Wait()
}
