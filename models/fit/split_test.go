package fit

import (
	"reflect"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/gomlx/gomlx/backends"
	gctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// TestSplitSides26B: the two sides of the 26B split between a GPU and the CPU
// (Runtime.DeviceLayers), for its Q4_K_M GGUF, the int4 profile and a GGUF known by
// its size. The GPU's side of all the layers (or of none: 0) is the whole model's
// GPU estimate, part for part. At every split k of the 30 layers:
//   - the GPU's weights are every tensor but those of layers k and after, as a GPU
//     holds them, the CPU's those, as the CPU holds them (counted here tensor by
//     tensor), so each side's and the other's tensors add up to the whole model's;
//   - the KV caches are, by hand, the GPU's layers' rings (1279 positions × 8 KV heads
//     × 256, K and V) and full layers' V (4096 × 2 × 512), f32, and the CPU's layers'
//     rows of each, three times (the cache and its KeptSlots copies);
//   - the GPU's side keeps the whole model's activations and scratch (the head and
//     the sampler run there), its overhead 500 MB and 4% of its own weights; the
//     CPU's side the CPU's activations less the head's logits and the
//     self-conditioning, all its weights mapped;
//   - the GPU's side grows with k, the CPU's shrinks;
//   - a file known by its size holds a Q4_K_M's share of it on each side: a Q4_K_M's
//     size gives the Q4_K_M's sides to the byte (but for rounding).
func TestSplitSides26B(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	tx := &cfg.Text
	layers := tx.NumHiddenLayers
	q4km := weights.MixLayout(gguf.Q4KM)
	p4 := quant.Int4Profile
	for _, c := range []struct {
		name           string
		rt             Runtime
		device, onHost func(weights.Spec) int64 // a tensor's bytes on a GPU, on the CPU
	}{
		{"Q4_K_M", Runtime{GGUF: q4km},
			func(s weights.Spec) int64 { return GGUFDeviceTensorBytes(cfg, p4, q4km, s) },
			func(s weights.Spec) int64 { return GGUFHeldBytes(cfg, p4, q4km, s) }},
		{"int4", Runtime{},
			func(s weights.Spec) int64 { return TensorBytes(cfg, p4, s) },
			func(s weights.Spec) int64 { return hostTensorBytes(cfg, p4, weights.GGUFLayout{}, s) }},
	} {
		side := func(gpu bool, k int) *Estimate {
			t.Helper()
			rt := c.rt
			rt.Context, rt.Workers, rt.GPU, rt.DeviceLayers = 4096, 2, gpu, k
			e, err := Compute(cfg, p4, rt)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		gpu, cpu := side(true, 0), side(false, 0)
		for _, k := range []int{layers, layers + 1} {
			if all := side(true, k); !reflect.DeepEqual(all, gpu) {
				t.Errorf("%s: the GPU's side of %d layers is not the whole model's GPU estimate: %+v, want %+v", c.name, k, all.Parts, gpu.Parts)
			}
			if all := side(false, k); !reflect.DeepEqual(all, cpu) {
				t.Errorf("%s: the CPU's side at %d layers on the GPU is not the whole model's CPU estimate", c.name, k)
			}
		}
		var prevDev, prevHost int64 = 0, cpu.Total + 1
		for k := 1; k < layers; k++ {
			dev, host := side(true, k), side(false, k)
			var devW, hostW, devRest, hostRest int64 // each side's tensors, and the other side's as this side would hold them
			sliding := 0
			for _, s := range weights.Specs(cfg) {
				if s.Layer >= k {
					hostW += c.onHost(s)
					devRest += c.device(s)
				} else {
					devW += c.device(s)
					hostRest += c.onHost(s)
				}
			}
			for i := range k {
				if tx.IsSliding(i) {
					sliding++
				}
			}
			full := k - sliding
			ring, fullV := int64(1279*8*256*2*4), int64(4096*2*512*4)
			wantDevKV := int64(sliding)*ring + int64(full)*fullV
			wantHostKV := (1 + model.KeptSlots) * (int64(25-sliding)*ring + int64(5-full)*fullV)
			switch {
			case dev.Part(PartWeights) != devW || host.Part(PartWeights) != hostW:
				t.Errorf("%s, %d layers on the GPU: weights %d there and %d on the CPU, want %d and %d", c.name, k,
					dev.Part(PartWeights), host.Part(PartWeights), devW, hostW)
			case devW+devRest != gpu.Part(PartWeights) || hostW+hostRest != cpu.Part(PartWeights):
				t.Errorf("%s, %d layers on the GPU: the sides' tensors do not add up to the whole model's", c.name, k)
			case dev.Part(PartKV) != wantDevKV || host.Part(PartKV) != wantHostKV:
				t.Errorf("%s, %d layers on the GPU (%d sliding): KV %d there and %d on the CPU, want %d and %d", c.name, k, sliding,
					dev.Part(PartKV), host.Part(PartKV), wantDevKV, wantHostKV)
			case dev.Part(PartActivations) != gpu.Part(PartActivations) || dev.Part(PartDequant) != gpu.Part(PartDequant) ||
				dev.Part(PartOverhead) != 500<<20+devW/25 || dev.Pageable != 0:
				t.Errorf("%s, %d layers on the GPU: its side's activations %d, scratch %d, overhead %d, pageable %d; want the whole model's %d, %d, and %d, 0",
					c.name, k, dev.Part(PartActivations), dev.Part(PartDequant), dev.Part(PartOverhead), dev.Pageable,
					gpu.Part(PartActivations), gpu.Part(PartDequant), 500<<20+devW/25)
			case host.Part(PartActivations) != cpu.Part(PartActivations)-256*int64(tx.VocabSize)*4*2-model.StepBufferBytes(tx, 256) ||
				host.Part(PartDequant) != cpu.Part(PartDequant) || host.Part(PartOverhead) != cpu.Part(PartOverhead) || host.Pageable != hostW:
				t.Errorf("%s, %d layers on the GPU: the CPU's side's activations %d, scratch %d, overhead %d, pageable %d of %d",
					c.name, k, host.Part(PartActivations), host.Part(PartDequant), host.Part(PartOverhead), host.Pageable, hostW)
			case dev.Total <= prevDev || host.Total >= prevHost:
				t.Errorf("%s, %d layers on the GPU: %d bytes there, %d on the CPU; at %d, %d and %d", c.name, k, dev.Total, host.Total, k-1, prevDev, prevHost)
			}
			prevDev, prevHost = dev.Total, host.Total

			if c.name != "Q4_K_M" {
				continue
			}
			size := GGUFFileBytes(cfg, p4, q4km)
			for _, gpu := range []bool{true, false} {
				rt := Runtime{Context: 4096, Workers: 2, GPU: gpu, DeviceLayers: k, FileBytes: size}
				bySize, err := Compute(cfg, p4, rt)
				if err != nil {
					t.Fatal(err)
				}
				byLayout := host
				if gpu {
					byLayout = dev
				}
				if d := bySize.Total - byLayout.Total; d < -1 || d > 1 || bySize.Pageable-byLayout.Pageable < -1 || bySize.Pageable-byLayout.Pageable > 1 {
					t.Errorf("%d layers on the GPU (GPU's side %v): by the file's size %d bytes (%d pageable), by its layout %d (%d)", k, gpu,
						bySize.Total, bySize.Pageable, byLayout.Total, byLayout.Pageable)
				}
			}
		}
	}
}

// TestSplitCountsTheDeviceBuffers: a model split after its first layer
// (model.NewSplitRunner: config.Tiny's three layers, float32 weights) holds on its
// device exactly the weights and the KV cache the GPU's side of the estimate counts
// (Runtime.DeviceLayers): every tensor but the other layers', and the first layer's
// cache at the context's capacity.
func TestSplitCountsTheDeviceBuffers(t *testing.T) {
	cfg := config.Tiny()
	cfg.Text.DType = "float32" // as weights.Random makes them
	const k, contextLen = 1, 300
	all := weights.Random(cfg, 5)
	device, host := weights.NewSet(), weights.NewSet()
	for _, s := range weights.Specs(cfg) {
		to := device
		if s.Layer >= k {
			to = host
		}
		to.Tensors[s.Name] = all.Tensors[s.Name]
	}
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	dctx, hctx := gctx.New(), gctx.New()
	if err := model.LoadSet(dctx, device); err != nil {
		t.Fatal(err)
	}
	if err := model.LoadSet(hctx, host); err != nil {
		t.Fatal(err)
	}
	r, err := model.NewSplitRunner(b, &cfg.Text, dctx, model.ContextSource(hctx), k)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Reserve(contextLen); err != nil {
		t.Fatal(err)
	}
	got := r.DeviceMemory()
	e, err := Compute(cfg, quant.BF16Profile, Runtime{Context: contextLen, GPU: true, DeviceLayers: k})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("split after layer %d: device weights %d B, KV %d B; estimate %d B, %d B", k-1, got.Weights, got.Cache, e.Part(PartWeights), e.Part(PartKV))
	if got.Weights != e.Part(PartWeights) || got.Weights != device.Bytes() || got.Cache != e.Part(PartKV) || got.Cache == 0 {
		t.Errorf("the device holds weights %d B (its set %d B) and a KV cache of %d B; the estimate counts %d B and %d B",
			got.Weights, device.Bytes(), got.Cache, e.Part(PartWeights), e.Part(PartKV))
	}
}
