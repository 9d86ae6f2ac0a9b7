package server

import (
	"context"
	"math"
	"sync"
	"time"
)

// queue lets generations run one at a time, in turn, with at most limit API
// requests waiting behind the running one. Pages take turns too but are not
// counted: they cancel each other, so at most one waits.
type queue struct {
	limit int
	turn  chan struct{} // holds a value while a generation runs

	mu       sync.Mutex
	admitted int           // API requests running or waiting
	avg      time.Duration // moving average of a turn's length, for Retry-After
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, turn: make(chan struct{}, 1)}
}

// admit reserves a place for an API request, or reports false when limit
// requests already wait; leave gives the place back.
func (q *queue) admit() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.admitted > q.limit { // one running plus limit waiting
		return false
	}
	q.admitted++
	return true
}

func (q *queue) leave() {
	q.mu.Lock()
	q.admitted--
	q.mu.Unlock()
}

// wait blocks until it is the caller's turn or ctx ends. While it waits, tick
// (if set) is called every interval; an error from tick ends the wait. The
// returned release ends the turn.
func (q *queue) wait(ctx context.Context, interval time.Duration, tick func() error) (release func(), err error) {
	var ticks <-chan time.Time
	if tick != nil {
		t := time.NewTicker(interval)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case q.turn <- struct{}{}:
			began := time.Now()
			return func() {
				q.mu.Lock()
				d := time.Since(began)
				if q.avg == 0 {
					q.avg = d
				} else {
					q.avg = (3*q.avg + d) / 4
				}
				q.mu.Unlock()
				<-q.turn
			}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-ticks:
			if err := tick(); err != nil {
				return nil, err
			}
		}
	}
}

// retryAfter is a guess, in whole seconds (at least 1), of when a refused
// request would find a place: the time the queue takes to move by one.
func (q *queue) retryAfter() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return max(1, int(math.Ceil(q.avg.Seconds())))
}
