package model

import (
	"testing"

	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// TestReserveFixesTheCache: a cache reserved for the context is allocated at once
// at its final capacity and never grows (no grow graph) while a generation fills
// it; DeviceMemory counts it, the weights' variables and the step's zero input.
func TestReserveFixesTheCache(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 5, dtypes.BFloat16)
	r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	r.HostDecoder, r.HostHead, r.MinCapacity, r.MaxChunk = false, false, 8, 8
	if err := r.Reserve(40); err != nil {
		t.Fatal(err)
	}
	var weightBytes int64
	for _, x := range w {
		weightBytes += int64(x.Shape().Memory())
	}
	want := DeviceMemory{Weights: weightBytes, Cache: KVCacheBytes(cfg, 64, dtypes.Float32)}
	if got := r.DeviceMemory(); got != want || r.Capacity() != 64 {
		t.Fatalf("reserved for 40 tokens: %+v at capacity %d, want %+v at 64", got, r.Capacity(), want)
	}
	for range 5 {
		if _, err := r.Encode(make([]int, 8)); err != nil {
			t.Fatal(err)
		}
	}
	_, soft, logits, err := r.DecodeStep(make([]int, 4), nil, sampler.Plan{Temperature: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	logits.Free()
	_ = soft.FinalizeAll()
	want.Step = 4 * int64(cfg.HiddenSize) * 4
	if got := r.DeviceMemory(); got != want || r.Capacity() != 64 || r.CompiledGraphs() != 2 {
		t.Errorf("after 40 tokens and a step: %+v at capacity %d with %d graphs, want %+v at 64 with encode and step only",
			got, r.Capacity(), r.CompiledGraphs(), want)
	}
}
