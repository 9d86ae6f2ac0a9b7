package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// TestHostPass: the host encoder reading a prompt in passes of several chunks
// (Runner.HostPass) gives bit for bit what it gives a chunk at a time — the logits,
// every cached key and value, and a decoder step after — in each stored format the
// integer and float products take, for prompts whose last chunk has fewer rows than
// kernels.DotRows and more, and whose sliding rings wrap. Chunks of 8 tokens over 16
// experts top-2 leave most experts one or two rows a chunk (expertRuns' products apart);
// a sliding window past attendDepth keys (the 26B's is 1,024) makes a chunk's
// attention sum in depth blocks counted from its own first visible key.
func TestHostPass(t *testing.T) {
	cfg := formatConfig()
	cfg.SlidingWindow = attendDepth + 40
	for _, c := range []struct {
		name string
		spec quant.Spec
	}{{"f32", quant.Spec{}}, {"bf16", quant.Spec{}}, {"int4", quant.Int4}, {"nvfp4", quant.NVFP4}} {
		t.Run(c.name, func(t *testing.T) {
			w, _ := randomModel(t, cfg, 29, dtypes.Float32)
			if c.name != "f32" {
				storeAs(t, w, c.name, c.spec, rand.New(rand.NewPCG(5, 6)))
			}
			src := ContextSource(newContext(t, w))
			rng := rand.New(rand.NewPCG(7, 8))
			for _, n := range []int{8*7 + 2, 8*5 + 5, 8 * 3, 8*80 + 3} {
				prompt := randTokens(rng, n, cfg.VocabSize)
				canvas := randTokens(rng, 8, cfg.VocabSize)
				run := func(pass int) (logits, step []float32, cache hostCache) {
					t.Helper()
					r, err := NewHostRunner(cfg, src)
					if err != nil {
						t.Fatal(err)
					}
					r.MaxChunk, r.HostPass = 8, pass
					if logits, err = r.Encode(prompt); err != nil {
						t.Fatal(err)
					}
					if step, _, err = r.Decode(canvas, nil, 0.8); err != nil {
						t.Fatal(err)
					}
					return logits, step, r.hcache
				}
				wantLogits, wantStep, want := run(1)
				for _, pass := range []int{3, 4} {
					logits, step, got := run(pass)
					if !slices.Equal(logits, wantLogits) {
						t.Fatalf("%d tokens in passes of %d chunks: other logits than a chunk at a time", n, pass)
					}
					for i := range cfg.NumHiddenLayers {
						if !slices.Equal(got.k[i], want.k[i]) || !slices.Equal(got.v[i], want.v[i]) {
							t.Fatalf("%d tokens in passes of %d chunks: layer %d's cache differs", n, pass, i)
						}
					}
					if !slices.Equal(step, wantStep) {
						t.Fatalf("%d tokens in passes of %d chunks: the decoder's step differs", n, pass)
					}
				}
			}
		})
	}
}

// TestExpertRuns: an expert's rows from chunks that route it at least kernels.DotRows
// rows come first, in order, as one run; each chunk's fewer follow as runs of their
// own; the weights move with their rows.
func TestExpertRuns(t *testing.T) {
	rows := []int{0, 1, 2, 3, 4, 9, 17, 18, 19, 20, 30}
	wts := []float32{0, 1, 2, 3, 4, 9, 17, 18, 19, 20, 30}
	bounds := expertRuns(rows, wts, 8)
	if want := []int{0, 1, 2, 3, 4, 17, 18, 19, 20, 9, 30}; !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	for a, r := range rows {
		if wts[a] != float32(r) {
			t.Fatalf("weight %v beside row %d", wts[a], r)
		}
	}
	if want := []int{0, 9, 10, 11}; !slices.Equal(bounds, want) {
		t.Fatalf("runs %v, want %v", bounds, want)
	}
	for _, c := range []struct {
		rows []int
		sub  int
	}{{[]int{0, 1, 2, 3, 4, 5, 6, 7}, 8}, {[]int{1, 9}, 0}, {[]int{1, 9}, 16}} {
		if b := expertRuns(slices.Clone(c.rows), make([]float32, len(c.rows)), c.sub); !slices.Equal(b, []int{0, len(c.rows)}) {
			t.Errorf("rows %v in chunks of %d: runs %v, want one", c.rows, c.sub, b)
		}
	}
	few := []int{1, 9, 17}
	if b := expertRuns(few, make([]float32, 3), 8); !slices.Equal(b, []int{0, 1, 2, 3}) || !slices.Equal(few, []int{1, 9, 17}) {
		t.Errorf("three chunks of one row: runs %v, rows %v", b, few)
	}
}
