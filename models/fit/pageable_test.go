package fit

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// TestHostHeapBytes holds HostHeapBytes (and a GGUF's weights on a GPU) to the engine itself: the bytes of the
// matrices a mapped checkpoint's first lookups read onto the heap
// (weights.Mapped.FirstRead), as held there, in an NVFP4 export (its BF16 embedding
// held as int8) and the GGUFs of each mix (a Q6_K embedding held as int8, the other
// Q6_K matrices mapped; nothing of a Q8_0), and none in Darkroom's own int4 — each
// written by `train init` at widths whose rows are whole GGUF blocks.
func TestHostHeapBytes(t *testing.T) {
	cfg := config.Tiny()
	cfg.Text.VocabSize, cfg.Text.HiddenSize, cfg.Text.IntermediateSize, cfg.Text.MoEIntermediateSize = 4096, 256, 512, 256
	for _, c := range []struct {
		name string
		opts train.InitOptions
		p    quant.Profile
	}{
		{"nvfp4", train.InitOptions{Profile: quant.NVFP4Profile}, quant.NVFP4Profile},
		{"q4_k_m", train.InitOptions{GGUF: gguf.Q4KM}, quant.Int4Profile},
		{"q5_k_m", train.InitOptions{GGUF: gguf.Q5KM}, quant.Int4Profile},
		{"q6_k", train.InitOptions{GGUF: gguf.Q6KM}, quant.Int8Profile},
		{"q8_0", train.InitOptions{GGUF: gguf.Q80M}, quant.Int8Profile},
		{"int4", train.InitOptions{Profile: quant.Int4Profile}, quant.Int4Profile},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if _, err := train.InitCheckpoint(context.Background(), cfg, dir, c.opts); err != nil {
				t.Fatal(err)
			}
			m, ok, err := weights.Map(dir, cfg, nil)
			if err != nil || !ok {
				t.Fatalf("map: ok %v, %v", ok, err)
			}
			defer m.Close()
			var heap int64 // what the matrices read onto the heap hold there, converted
			for _, s := range weights.Specs(cfg) {
				if len(s.Shape) < 2 || m.FirstRead(s.Name) == 0 {
					continue
				}
				st, _, ok, err := m.Lookup(s.Name)
				if err != nil || !ok {
					t.Fatalf("%s: ok %v, %v", s.Name, ok, err)
				}
				heap += st.Bytes()
			}
			mix, file := weights.MixLayout(c.opts.GGUF), m.GGUFLayout()
			if file.IsGGUF() != (c.opts.GGUF != "") {
				t.Fatalf("the mapped file's layout: GGUF %v", file.IsGGUF())
			}
			want := HostHeapBytes(cfg, c.p, mix)
			if heap != want || (c.name != "int4" && c.name != "q8_0") != (heap > 0) {
				t.Errorf("the engine reads %d bytes of matrices onto the heap, HostHeapBytes says %d", heap, want)
			}
			if got := HostHeapBytes(cfg, c.p, file); got != heap {
				t.Errorf("by the file's own types HostHeapBytes says %d, the engine reads %d", got, heap)
			}
			est, err := Compute(cfg, c.p, Runtime{GGUF: mix})
			if err != nil {
				t.Fatal(err)
			}
			if est.Pageable != est.Part(PartWeights)-heap {
				t.Errorf("pageable %d, want the weights' %d less the heap's %d", est.Pageable, est.Part(PartWeights), heap)
			}
			if c.opts.GGUF == "" {
				return
			}
			// On a GPU: the weights as the graph path loads them (the mapped file's Set:
			// Q4_K, Q5_K, Q6_K and Q8_0 blocks kept, the rest converted; engine/weights'
			// TestGGUFOnTheGraphPath holds a runner's device buffers to that set), by the
			// mix's rule and by the file's types.
			gm, _, err := weights.Map(dir, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			set, err := gm.Set(nil)
			gm.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range []weights.GGUFLayout{mix, file} {
				gpu, err := Compute(cfg, c.p, Runtime{GGUF: l, GPU: true})
				if err != nil {
					t.Fatal(err)
				}
				if gpu.Part(PartWeights) != set.Bytes() {
					t.Errorf("on a GPU the estimate counts %d B of weights, the graph path loads %d B", gpu.Part(PartWeights), set.Bytes())
				}
			}
		})
	}
}

// TestFromDisk: the NVFP4 26B on the CPU fits 32 GB of RAM, runs from the disk on
// 16 and 12 GB (what must stay in memory — heap, KV cache, activations — fits, and
// the page cache has room for half of the mapped weights), and won't fit 8 GB;
// on a GPU nothing is pageable, and a GPU budget never judges FromDisk.
func TestFromDisk(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	est, err := Compute(cfg, quant.NVFP4Profile, Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	if est.Pageable <= 0 || est.Resident() <= 0 || est.Resident() > 5*gb {
		t.Fatalf("pageable %.2f GB, resident %.2f GB", float64(est.Pageable)/gb, float64(est.Resident())/gb)
	}
	for _, c := range []struct {
		ram  int64
		want Verdict
	}{{32 * gb, Fits}, {16 * gb, FromDisk}, {12 * gb, FromDisk}, {8 * gb, WontFit}} {
		if got := JudgeEstimate(est, Budget{Kind: "ram", Name: "RAM", Bytes: c.ram}); got != c.want {
			t.Errorf("%d GB of RAM: %s, want %s (total %.2f GB, resident %.2f GB)", c.ram/gb, got, c.want,
				float64(est.Total)/gb, float64(est.Resident())/gb)
		}
	}
	gpu, err := Compute(cfg, quant.NVFP4Profile, Runtime{GPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if gpu.Pageable != 0 {
		t.Errorf("pageable on a GPU: %d", gpu.Pageable)
	}
	if got := JudgeEstimate(est, Budget{Kind: "gpu", Name: "GPU", Bytes: 12 * gb}); got != WontFit {
		t.Errorf("12 GB of VRAM: %s", got)
	}
}
