package hostgrad

import "sync"

// An arena hands out the float32 buffers of one example's passes — every op's output,
// gradient and scratch — from slabs kept from one example and one step to the next,
// so a training step allocates (and the runtime zeroes, faults in and collects) none
// of them afresh: at Darkroom Mini 2's size that was ~2 GB a step. Everything handed
// out dies at reset, which Loss calls when an example's backward pass is done (the
// parameters and their gradients are not in the arena). A nil arena allocates from the
// heap. An arena is not safe for concurrent use; Loss gives each shard its own.
type arena struct {
	slabs [][]float32
	cur   int // the slab being handed out
	off   int // floats of it handed out
}

// slabFloats is the size of an arena's slabs (larger requests get a slab of their own).
const slabFloats = 1 << 22 // 16 MiB

// alloc returns n zeroed floats.
func (a *arena) alloc(n int) []float32 {
	if a == nil {
		return make([]float32, n)
	}
	out := a.buf(n)
	clear(out)
	return out
}

// buf returns n floats holding whatever an earlier example left there (zeros from the
// heap): for buffers written whole before they are read, which need no clearing.
func (a *arena) buf(n int) []float32 {
	if a == nil {
		return make([]float32, n)
	}
	for ; a.cur < len(a.slabs); a.cur, a.off = a.cur+1, 0 {
		if s := a.slabs[a.cur]; a.off+n <= len(s) {
			out := s[a.off : a.off+n : a.off+n]
			a.off += n
			return out
		}
	}
	a.slabs = append(a.slabs, make([]float32, max(n, slabFloats)))
	a.cur, a.off = len(a.slabs)-1, n
	return a.slabs[a.cur][:n:n]
}

// reset takes back everything alloc handed out.
func (a *arena) reset() {
	if a != nil {
		a.cur, a.off = 0, 0
	}
}

// size is the floats the arena holds.
func (a *arena) size() int {
	n := 0
	for _, s := range a.slabs {
		n += len(s)
	}
	return n
}

// arenas are the arenas not in use, kept between Loss calls: as many as shards ever
// ran at once (GOMAXPROCS for one Loss at a time), each the size of the largest
// example's passes.
var arenas struct {
	sync.Mutex
	free []*arena
}

// getArena returns an idle arena, or a new one.
func getArena() *arena {
	arenas.Lock()
	defer arenas.Unlock()
	if n := len(arenas.free); n > 0 {
		a := arenas.free[n-1]
		arenas.free = arenas.free[:n-1]
		return a
	}
	return new(arena)
}

// putArena returns a to the idle ones.
func putArena(a *arena) {
	arenas.Lock()
	defer arenas.Unlock()
	arenas.free = append(arenas.free, a)
}
