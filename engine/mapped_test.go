package engine

import (
	"context"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/mapfile"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// TestQuantizedHostAndGraphAgree: an int4 checkpoint runs on the host straight from
// its mapping, and greedy AR decodes the same tokens there as in GoMLX graphs (which
// copy the weights out and dequantize in-graph).
func TestQuantizedHostAndGraphAgree(t *testing.T) {
	defer kernels.SetIntProducts(kernels.SetIntProducts(false)) // the graph multiplies in float32
	dir := filepath.Join(t.TempDir(), "int4")
	if err := weights.QuantizeCheckpoint(context.Background(), writeTinyModel(t), dir, quant.Int4Profile, nil); err != nil {
		t.Fatal(err)
	}
	gen := func(inGraph bool) ([]int, string) {
		e, err := Load(context.Background(), Dir(dir), Options{Backend: "go", InGraph: inGraph})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Mode: AR, Seed: 7,
			Sampling: Sampling{MaxNewTokens: 16}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Seed: 3,
			Sampling: Sampling{MaxNewTokens: 16}}); err != nil {
			t.Fatalf("diffusion (in graph: %v): %v", inGraph, err)
		}
		return res.Tokens, e.Path()
	}
	host, hostPath := gen(false)
	graph, graphPath := gen(true)
	if hostPath != PathHost || graphPath != PathGraph {
		t.Fatalf("paths = %q, %q; want %q, %q", hostPath, graphPath, PathHost, PathGraph)
	}
	if len(host) == 0 || !slices.Equal(host, graph) {
		t.Errorf("greedy AR, different tokens:\nhost  %v\ngraph %v", host, graph)
	}
}

// TestLoadKeepsWeightsOffTheHeap: loading an int4 model of a few tens of MB on the
// pure-Go backend and generating with it leaves the heap far below the stored weights
// (they stay in the file's mapping), let alone their float32 size.
func TestLoadKeepsWeightsOffTheHeap(t *testing.T) {
	if mapfile.Off() {
		t.Skip("mapping is turned off (DARKROOM_NO_MMAP)")
	}
	if testing.Short() {
		t.Skip("writes a 30 MB checkpoint")
	}
	dir := writeTinyModel(t) // for its tokenizer
	cfg := enginetest.Config(enginetest.Options{})
	tc := &cfg.Text
	tc.VocabSize, tc.HiddenSize, tc.MoEIntermediateSize, tc.IntermediateSize = 32768, 512, 512, 512
	tc.NumExperts, tc.NumHiddenLayers = 8, 2
	tc.LayerTypes = []config.LayerType{config.SlidingAttention, config.FullAttention}
	tc.HeadDim, tc.GlobalHeadDim = 64, 128
	q, err := weights.Random(cfg, 4).Quantize(cfg, quant.Int4Profile)
	if err != nil {
		t.Fatal(err)
	}
	stored := q.Bytes()
	if err := weights.Save(q, cfg, dir, weights.SaveOptions{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	q = nil
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc

	e, err := Load(context.Background(), Dir(dir), Options{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Path() != PathHost {
		t.Fatalf("path %q, want %q", e.Path(), PathHost)
	}
	if _, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Mode: AR, Sampling: Sampling{MaxNewTokens: 4}}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grown := int64(ms.HeapAlloc) - int64(before)
	t.Logf("stored %.1f MB; after Load and 4 AR tokens the heap grew by %.1f MB", float64(stored)/1e6, float64(grown)/1e6)
	if grown > stored/4+4<<20 { // activations, cache and the kernels' buffers: a few MB
		t.Errorf("the heap grew by %d bytes for %d bytes of stored weights", grown, stored)
	}
}
