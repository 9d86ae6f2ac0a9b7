package model

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// failingSource is a HostSource that fails the lookups of names holding fail while
// failing is set.
type failingSource struct {
	HostSource
	fail    string
	failing bool
}

func (s *failingSource) Lookup(name string) (weights.Stored, any, bool, error) {
	if s.failing && strings.Contains(name, s.fail) {
		return weights.Stored{}, nil, false, errors.New("disk read error")
	}
	return s.HostSource.Lookup(name)
}

// TestSplitEncodeFailureEmptiesBothCaches: where the host's layers fail part way
// through an encode whose device layers already wrote their cache, Encode fails
// naming the call, and the runner holds nothing (Len 0): neither part keeps rows the
// other lacks, and the same prompt encoded again gives a fresh runner's logits.
func TestSplitEncodeFailureEmptiesBothCaches(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 31, dtypes.Float32)
	prompt := randTokens(rand.New(rand.NewPCG(1, 2)), 20, cfg.VocabSize)
	fresh := splitRunner(t, cfg, w, 2)
	fresh.MaxChunk = 8
	want, err := fresh.Encode(prompt)
	if err != nil {
		t.Fatal(err)
	}

	r := splitRunner(t, cfg, w, 2)
	r.MaxChunk = 8
	src := &failingSource{HostSource: r.weights.src, fail: "layers.2.mlp"}
	r.weights.src = src
	if _, err := r.Encode(prompt[:12]); err != nil {
		t.Fatal(err)
	}
	src.failing = true
	if _, err := r.Encode(prompt[12:]); err == nil || !strings.Contains(err.Error(), "disk read error") || !strings.HasPrefix(err.Error(), "encode") {
		t.Fatalf("encode with the host's weights failing: %v", err)
	}
	if r.Len() != 0 || r.hcache.n != 0 {
		t.Fatalf("after the failed encode: %d cached, host cache %d", r.Len(), r.hcache.n)
	}
	src.failing = false
	got, err := r.Encode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Error("the prompt encoded again gives other logits than a fresh runner's")
	}
}

// TestSplitDeviceMemory: a split runner's device holds the weights of its layers and
// the global ones only, and the KV cache of its layers only (KVCacheBytes of
// FrontConfig); the host's layers' cache is in host memory, counted by CacheBytes
// beside the device's.
func TestSplitDeviceMemory(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 33, dtypes.Float32)
	var device int64
	for name, x := range w {
		if !strings.HasPrefix(name, "layers.2.") && !strings.HasPrefix(name, "encoder.layers.2.") {
			device += int64(x.Shape().Memory())
		}
	}
	r := splitRunner(t, cfg, w, 2)
	r.MinCapacity = 16
	if err := r.Reserve(40); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Encode(randTokens(rand.New(rand.NewPCG(3, 4)), 40, cfg.VocabSize)); err != nil {
		t.Fatal(err)
	}
	m := r.DeviceMemory()
	if m.Weights != device {
		t.Errorf("device weights %d bytes, want %d (none of the host's layer)", m.Weights, device)
	}
	if want := KVCacheBytes(FrontConfig(cfg, 2), r.Capacity(), dtypes.Float32); m.Cache != want || m.Cache == KVCacheBytes(cfg, r.Capacity(), dtypes.Float32) {
		t.Errorf("device cache %d bytes, want %d (the first two layers')", m.Cache, want)
	}
	if host := r.CacheBytes() - m.Cache; host != r.hcache.bytes() || host == 0 {
		t.Errorf("CacheBytes %d = device %d + host %d, host cache holds %d", r.CacheBytes(), m.Cache, host, r.hcache.bytes())
	}
	if _, err := NewSplitRunner(newBackend(t), cfg, newContext(t, w), ContextSource(newContext(t, w)), cfg.NumHiddenLayers); err == nil {
		t.Error("a split with every layer on the device was accepted")
	}
	if _, err := NewSplitRunner(newBackend(t), cfg, newContext(t, w), nil, 1); err == nil {
		t.Error("a split without the host's weights was accepted")
	}
}
