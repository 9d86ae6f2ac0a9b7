package hostgrad

import "testing"

// TestArenaReuse: after reset an arena hands out the same memory again, zeroed (the
// ops accumulate into fresh outputs and gradients), requests past a slab get a slab of
// their own, and a nil arena allocates from the heap.
func TestArenaReuse(t *testing.T) {
	a := new(arena)
	x, y := a.alloc(100), a.alloc(slabFloats+1)
	for i := range x {
		x[i] = 7
	}
	for i := range y {
		y[i] = 9
	}
	if cap(x) != 100 || len(y) != slabFloats+1 {
		t.Fatalf("alloc: len %d cap %d, len %d", len(x), cap(x), len(y))
	}
	held := a.size()
	a.reset()
	x2, y2 := a.alloc(100), a.alloc(slabFloats+1)
	if &x2[0] != &x[0] || &y2[0] != &y[0] {
		t.Errorf("after reset the arena did not hand out its slabs again")
	}
	for _, s := range [][]float32{x2, y2} {
		for i, v := range s {
			if v != 0 {
				t.Fatalf("reused buffer [%d] = %v, not zeroed", i, v)
			}
		}
	}
	if a.size() != held {
		t.Errorf("the same requests grew the arena from %d to %d floats", held, a.size())
	}
	var none *arena
	none.reset()
	if z := none.alloc(3); len(z) != 3 {
		t.Errorf("nil arena: %d floats", len(z))
	}
}
