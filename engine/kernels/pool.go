package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/darkroomlabs/darkroom/engine/clock"
)

// The worker pool: GOMAXPROCS−1 goroutines started on first use and kept, so a product
// costs a channel send per worker instead of a goroutine per part. A worker that has
// run a part looks for the next job for spinFor before it parks, and a caller whose
// parts are all claimed looks for their end as long before it parks: an AR token of
// the 26B hands out ~900 products, most a fraction of a millisecond long and a few
// microseconds apart, and waking a parked goroutine (a futex wake, the scheduler
// finding it a processor) takes tens of microseconds: long enough for the caller to
// claim the other parts too (it ran 83% of an AR token's parts on a busy machine when
// workers parked after every part).
var pool struct {
	once  sync.Once
	size  int
	tasks chan *job
	parks atomic.Int64 // times a worker parked on tasks (a test reads it)
}

// spinFor is how long a worker, or a caller waiting on its parts, keeps looking
// before it parks: longer than the gaps between an AR step's products, short enough
// that an idle engine's workers are parked a fraction of a millisecond after its last
// product.
const spinFor = 200 * time.Microsecond

// dotParts is the parts a memory-bound product of macs multiply-adds (dot products,
// each weight read once) is split into: one per dotMACs, and at most partsPerWorker
// per worker. More parts than workers, each claimed as the last is done, balance the
// work: a worker that starts late, or loses its core a while to another process,
// costs the caller the wait for one part, not for half the product.
func dotParts(macs int) int { return min(partsPerWorker*workers(), max(1, macs/dotMACs)) }

// partsPerWorker bounds dotParts: each part costs a claim and a scratch buffer, a
// microsecond or so, against the tens a part of a large product takes.
const partsPerWorker = 4

// workers is the number of parts worth splitting a product into: the pool plus the
// caller.
func workers() int {
	pool.once.Do(func() {
		pool.size = max(1, runtime.GOMAXPROCS(0))
		// One waiting job per worker: a worker still finishing the last product's part
		// takes the next one as soon as it is done, instead of the caller running every
		// part of it alone (a failed hand-off to a worker not yet back at its receive:
		// 8% of an AR step's parts with an unbuffered channel).
		pool.tasks = make(chan *job, pool.size-1)
		for range pool.size - 1 {
			go work()
		}
	})
	return pool.size
}

// work is a worker: it runs the jobs it takes from pool.tasks, looking for the next one
// for spinFor after each before it parks on the channel.
func work() {
	for {
		pool.parks.Add(1)
		j := <-pool.tasks
		for j != nil {
			j.run()
			j = nil
			spin(func() bool {
				select {
				case j = <-pool.tasks:
					return true
				default:
					return false
				}
			})
		}
	}
}

// spin calls found until it reports true or spinFor has passed, and reports which.
// Every spinYield calls it yields its processor, so the process's other goroutines
// (the garbage collector's, a server's) run within microseconds of becoming
// runnable, not at the scheduler's 10 ms preemption. spinFor is read on engine/clock:
// on Windows time.Now moves once a timer tick (up to 15.6 ms), and a spin timed by it
// lasted up to that tick, 78 times spinFor.
func spin(found func() bool) bool {
	t0 := clock.Now()
	for i := 1; ; i++ {
		if found() {
			return true
		}
		if i%spinYield == 0 {
			if clock.Since(t0) > spinFor {
				return false
			}
			runtime.Gosched()
		}
	}
}

// spinYield is the calls of found between spin's yields and clock reads: a few
// microseconds, while a yield goes through the scheduler's global queue and its lock.
const spinYield = 512

// job is one parallel call: its parts are claimed one at a time by whoever runs it —
// the caller and any worker it woke.
type job struct {
	f       func(part int)
	parts   int
	next    atomic.Int64 // the next part to claim
	pending atomic.Int64 // the parts not finished
	done    sync.WaitGroup
	// panicked holds the first part's panic, re-raised on the caller: a panic on a
	// worker goroutine would end the process, past any recover of the caller's.
	panicked atomic.Pointer[partPanic]
}

// partPanic is a part's recovered panic value.
type partPanic struct{ v any }

// run claims and runs the job's parts until none is left; a worker that gets the job
// after the others took every part returns at once.
func (j *job) run() {
	for {
		p := int(j.next.Add(1) - 1)
		if p >= j.parts {
			return
		}
		j.part(p)
	}
}

// part runs part p, recording its panic instead of letting it unwind the goroutine.
func (j *job) part(p int) {
	defer func() {
		if v := recover(); v != nil {
			j.panicked.CompareAndSwap(nil, &partPanic{v})
		}
		j.pending.Add(-1)
		j.done.Done()
	}()
	j.f(p)
}

// parallel runs f(0) … f(parts−1) (f(0) alone when parts < 2) and returns when all
// are done. The caller runs parts too and claims whatever the workers have not, so it
// waits only for parts already running: products started from several goroutines at
// once, or from inside a part, never wait on a busy worker and never deadlock. A
// part's panic, on whichever goroutine it ran, is raised again on the caller once
// every part is done, so the caller's recover (engine/model's try) sees it.
func parallel(parts int, f func(part int)) {
	if parts < 2 {
		f(0)
		return
	}
	workers()
	j := &job{f: f, parts: parts}
	j.pending.Store(int64(parts))
	j.done.Add(parts)
	for range min(parts, pool.size) - 1 {
		select {
		case pool.tasks <- j:
		default: // every worker has a job waiting: the caller runs this one's parts
		}
	}
	j.run()
	if !spin(func() bool { return j.pending.Load() == 0 }) {
		j.done.Wait()
	}
	if pp := j.panicked.Load(); pp != nil {
		panic(pp.v)
	}
}
