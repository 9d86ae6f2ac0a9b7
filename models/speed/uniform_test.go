package speed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestUniform: the rates are valid, every shape runs at the GEMM rate given, and
// every format's AR product at the rates given.
func TestUniform(t *testing.T) {
	r := Uniform(150e9, 40e9, 20e9)
	if err := r.valid(); err != nil {
		t.Fatal(err)
	}
	for _, s := range [][3]int{{1, 1, 1}, {16, 64, 64}, {100, 1000, 3000}, {4096, 4096, 262144}} {
		if got := r.GEMMAt(s[0], s[1], s[2]); got != 150e9 {
			t.Errorf("GEMM at %v: %g", s, got)
		}
	}
	for _, f := range formats {
		if r.GEMV[f] != 40e9 || r.GEMVStream[f] != 10e9 {
			t.Errorf("%s: GEMV %g, streaming %g", f, r.GEMV[f], r.GEMVStream[f])
		}
	}
	if r.Key != Key() || r.MemRead != 20e9 || r.Sampler != UniformSampler {
		t.Errorf("key %q, memory %g, sampler %g", r.Key, r.MemRead, r.Sampler)
	}
}

// TestPrime: primed rates are what the default cache reads, without measuring;
// another machine's entry stays; invalid rates and an unwritable folder are errors.
func TestPrime(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	path, err := DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Cache{Path: path, Key: "another machine",
		Measure: func(context.Context) (*Rates, error) { return Uniform(1e9, 1e9, 1e9), nil }}).Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := Prime(Uniform(150e9, 40e9, 20e9)); err != nil {
		t.Fatal(err)
	}
	notMeasured := func(context.Context) (*Rates, error) {
		t.Error("primed rates measured again")
		return nil, errors.New("measured")
	}
	r, err := (&Cache{Path: path, Measure: notMeasured}).Get(context.Background())
	if err != nil || r.Peak() != 150e9 || r.MemRead != 20e9 {
		t.Fatalf("read back %+v, %v", r, err)
	}
	// Priming again replaces this machine's entry.
	if err := Prime(Uniform(2e9, 1e12, 2e9)); err != nil {
		t.Fatal(err)
	}
	if r, err := (&Cache{Path: path, Measure: notMeasured}).Get(context.Background()); err != nil || r.Peak() != 2e9 || r.MemRead != 2e9 {
		t.Fatalf("primed again, read back %+v, %v", r, err)
	}
	if _, ok := (&Cache{Path: path}).read().Rates["another machine"]; !ok {
		t.Error("priming dropped another machine's entry")
	}

	bad := Uniform(150e9, 40e9, 20e9)
	bad.MemRead = 0
	if err := Prime(bad); err == nil {
		t.Error("invalid rates primed")
	}
	// A cache folder that is a file: nothing can be written under it.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", file)
	if err := Prime(Uniform(150e9, 40e9, 20e9)); err == nil {
		t.Error("priming an unwritable folder succeeded")
	}
}
