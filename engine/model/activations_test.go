package model

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// TestArena: an arena's slices since a reset are disjoint, capped at their length (an
// append never writes into the next one), and what did not fit is allocated apart and
// makes the buffer big enough at the next reset.
func TestArena(t *testing.T) {
	var a arena
	in := func(s []float32) bool {
		if len(a.buf) == 0 {
			return false
		}
		p, lo := uintptr(unsafe.Pointer(&s[0])), uintptr(unsafe.Pointer(&a.buf[0]))
		return p >= lo && p < lo+uintptr(len(a.buf))*4
	}
	a.reset()
	if x := a.get(3); in(x) || len(x) != 3 {
		t.Fatalf("an empty arena handed out %d values of its buffer", len(x))
	}
	a.get(5)
	a.reset()
	if len(a.buf) < 8 {
		t.Fatalf("after 8 values were asked for, the buffer holds %d", len(a.buf))
	}
	x, y := a.get(3), a.get(5)
	if !in(x) || !in(y) || cap(x) != 3 || cap(y) != 5 {
		t.Fatalf("after the reset: from the buffer %v %v, capacities %d %d, want true true 3 5", in(x), in(y), cap(x), cap(y))
	}
	for i := range y {
		y[i] = 7
	}
	x = append(x, 1, 2, 3) // past its capacity: a new array
	for i := range x[:3] {
		x[i] = 1
	}
	for _, v := range y {
		if v != 7 {
			t.Fatalf("writing the first slice changed the second: %v", y)
		}
	}
	big := a.get(len(a.buf))
	if in(big) {
		t.Fatal("a slice past the buffer's end came from the buffer")
	}
	a.reset()
	if all := a.get(8 + len(big)); !in(all) {
		t.Errorf("after %d values were asked for, %d of them did not come from the buffer (%d values)", 8+len(big), len(all), len(a.buf))
	}
}

// TestDecodeStepReusesActivations: a warm denoising step on the host takes its layers'
// activations from the cache's arenas (activationArenas), so what it allocates is a
// few canvas-sized arrays — the soft embedding read from its tensor, the next one and
// its tensor, the hidden state its logits are kept from, the routing's and the
// sampler's small slices: 6.6 arrays of [256, 64] float32s on Darkroom Mini's dims —
// not the ~56 its products, norms and experts took each step before (3.7 MB).
func TestDecodeStepReusesActivations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under -race (raceEnabled)")
	}
	r, cfg := miniBenchRunner(t)
	rng := rand.New(rand.NewPCG(3, 3))
	prompt, canvas := randTokens(rng, 64, cfg.VocabSize), randTokens(rng, 256, cfg.VocabSize)
	if _, err := r.Encode(prompt); err != nil {
		t.Fatal(err)
	}
	plan := sampler.Plan{Temperature: 0.8, EntropyBound: 30}
	_, soft, _, err := r.DecodeStep(canvas, nil, plan)
	if err != nil {
		t.Fatal(err)
	}
	step := func() {
		if _, _, _, err := r.DecodeStep(canvas, soft, plan); err != nil {
			t.Fatal(err)
		}
	}
	step() // warm: the arenas and the scratch are grown
	const steps = 5
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range steps {
		step()
	}
	runtime.ReadMemStats(&m1)
	per := int64(m1.TotalAlloc-m0.TotalAlloc) / steps
	arrays := float64(per) / float64(len(canvas)*cfg.HiddenSize*4)
	t.Logf("a step allocates %d bytes: %.1f canvas-sized arrays", per, arrays)
	if arrays > 8 {
		t.Errorf("a warm step allocates %d bytes, %.1f arrays of [%d, %d] float32s; want at most 8", per, arrays, len(canvas), cfg.HiddenSize)
	}
}

// TestHostMatrixRowAllocatesNothing: decoding an embedding row, which a forward does
// once per token, allocates nothing — a hostMatrix passed by value used to be copied
// to the heap for its Matrix's pointer methods, 256 times a canvas step.
func TestHostMatrixRowAllocatesNothing(t *testing.T) {
	r, cfg := miniBenchRunner(t)
	emb := r.weights.matrix("embed_tokens.weight")
	row := make([]float32, cfg.HiddenSize)
	if n := testing.AllocsPerRun(100, func() { emb.row(row, 3) }); n != 0 {
		t.Errorf("decoding a row allocates %.0f times", n)
	}
}
