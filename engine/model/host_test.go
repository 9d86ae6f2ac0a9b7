package model

import (
	"math"
	"slices"
	"testing"
)

// TestGeluMul: the vector GeGLU product against gelu_tanh in float64.
func TestGeluMul(t *testing.T) {
	var gate, up []float32
	for x := -30.0; x < 30; x += 0.0117 {
		gate, up = append(gate, float32(x)), append(up, float32(1+x/100))
	}
	dst := make([]float32, len(gate))
	geluMulInto(dst, gate, up, make([]float32, len(gate)))
	for j, x := range gate {
		v := float64(x)
		want := 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))) * float64(up[j])
		if d := math.Abs(float64(dst[j]) - want); d > 1e-6*math.Max(1, math.Abs(want)) {
			t.Fatalf("gelu(%g)·%g = %g, want %g", x, up[j], dst[j], want)
		}
	}
}

// TestRopeTablesShared: a forward's layers with the same RoPE and head width get
// RopeTables' values computed once (the same slices); other layers and positions get
// their own.
func TestRopeTablesShared(t *testing.T) {
	cfg := benchConfig() // layers 0–2 sliding, 3 full
	h := &hostModel{cfg: cfg}
	cos0, sin0 := h.ropeTables(0, 5, 7)
	wantCos, wantSin := RopeTables(5, 7, mustInvFreq(cfg, 0))
	if !slices.Equal(cos0, wantCos) || !slices.Equal(sin0, wantSin) {
		t.Fatal("layer 0's tables differ from RopeTables")
	}
	if cos1, _ := h.ropeTables(1, 5, 7); &cos1[0] != &cos0[0] {
		t.Error("layer 1 (sliding, as layer 0) recomputed its tables")
	}
	cos3, _ := h.ropeTables(3, 5, 7)
	if want, _ := RopeTables(5, 7, mustInvFreq(cfg, 3)); !slices.Equal(cos3, want) {
		t.Error("the full layer's tables are not its own RoPE's")
	}
	if cos, _ := h.ropeTables(0, 6, 7); &cos[0] == &cos0[0] {
		t.Error("another start reused position 5's tables")
	}
}

// TestRopeTablesCached: forwards over one cache at the same positions share their
// tables (a canvas's denoising steps), a clone starts without them, and the cache keeps
// at most maxRopes position ranges.
func TestRopeTablesCached(t *testing.T) {
	cfg := benchConfig()
	var cache hostCache
	a := &hostModel{cfg: cfg, ropes: cache.ropeMemo()}
	cos, _ := a.ropeTables(0, 64, 256)
	b := &hostModel{cfg: cfg, ropes: cache.ropeMemo()}
	if again, _ := b.ropeTables(0, 64, 256); &again[0] != &cos[0] {
		t.Error("the next forward at the same positions recomputed the tables")
	}
	if cl := cache.clone(); cl.ropes != nil {
		t.Error("a clone shares the cache's tables")
	}
	for start := range 3 * maxRopes {
		h := &hostModel{cfg: cfg, ropes: cache.ropeMemo()}
		h.ropeTables(0, start, 4)
	}
	if len(cache.ropes) > maxRopes {
		t.Errorf("%d tables kept, want at most %d", len(cache.ropes), maxRopes)
	}
}
