// Package fit estimates the memory a model needs under a quantization profile and
// judges it against a GPU's VRAM or the machine's RAM: fits / tight / won't fit,
// always with the parts that make up the number, so a user can see why.
//
// The estimate follows what Darkroom's engine actually allocates (the weights and KV
// parts are, to the byte, the buffers the graph path's runner holds on the device:
// model.Runner.DeviceMemory; the dequantization scratch the largest chunk of blocks
// its step graph builds; both tested on an int4 model at the 26B's widths):
//
//   - weights: every tensor of weights.Specs(cfg) as the profile stores it
//     (engine/quant, quant.Spec.Bytes: float tensors in the checkpoint dtype; int8
//     per-channel = 1 byte per weight + one f32 scale per row; int4 g32 = ½ byte + one
//     bf16 scale per 32; NVFP4 = ½ byte + one FP8 scale per 16 + 4 bytes per row);
//   - KV cache at the chosen context, f32, by the engine's rule (model.KVCacheBytes at
//     the capacity the cache grows to): sliding layers keep K and V of the last
//     sliding_window−1 positions and 256 more (model.RingSlots: a kept prompt's cache
//     can be cut back to a chunk boundary), full-attention layers (K = V) store V
//     only; on the host path (model.HostKVCacheBytes) by the token, and the copies of
//     it kept for the next prompts (model.HostKeptBytes; the graph path keeps its
//     copies in host memory, not the GPU's);
//   - canvas activations of one denoising step, f32: logits (canvas × vocab) and the
//     tempered logits the soft embedding reads chunk by chunk, attention scores over
//     the context, hidden states and the MoE row buffers, and the self-conditioning
//     embeddings kept across steps (model.StepBufferBytes);
//   - dequantization scratch: on a GPU the graphs dequantize (or convert) a weight
//     right before its product, one bounded block at a time (engine/model chunk.go),
//     in the dtype the product reads — bf16 for a bf16 model, whose products the
//     engine runs in bf16, else f32: the largest of a vocabulary chunk of the tied
//     embedding (output head, soft embedding), a group of expert row blocks (gate,
//     up, down) of the grouped MoE GEMM, and a whole weight not stored in its
//     product's dtype, at the engine's own chunk sizes, counted once — exactly the
//     blocks the step's graph builds (model.Runner.StepWeightOperands; XLA fuses a
//     dequantization's elementwise steps into one kernel writing the block, expected
//     from XLA's fusion, not measured here). On the go backend the
//     host path multiplies every weight as stored (engine/model's HostDecoder and
//     HostHead; the tied embedding too, with no f32 copy of it or of its transpose
//     unless both fit kernels.HeadPackBytes, 64 MiB — a small model's, packed once):
//     what it decodes lives in engine/kernels' per-worker panels, a few MB
//     (kernels.ScratchBytes for each of kernels.Workers);
//   - runtime overhead: backend context and allocator slack (on a GPU 4% of the
//     weights; on the go backend the weights are mapped from the file, held once in
//     the page cache, and need none).
//
// Split: a model too big for a GPU runs its first layers there and the rest on the
// CPU (engine.Options.DeviceLayers, as llama.cpp's --n-gpu-layers; models.Place
// finds how many), and Runtime.DeviceLayers makes the estimate one side's. The GPU's
// holds every tensor but the other layers', as a GPU holds it, the KV cache of its
// layers, and the step's activations, scratch and overhead as the whole model's (the
// head and the sampler run there); the CPU's holds the other layers' tensors as the
// host path holds them (mapped from the file, Pageable), their host KV cache, the
// activations of their passes, the kernels' scratch and the Go runtime. Each side
// sums the whole model's per-tensor and per-layer counts over its own tensors and
// layers, so the GPU's side of all the layers is the whole model's GPU estimate.
//
// Thresholds: on a GPU, fits ≤ 90% of VRAM, tight ≤ 100%; in RAM (CPU), fits ≤ 75%
// of the total, tight ≤ 95% (the OS and other programs need the rest).
//
// From the disk: on the CPU the weights are mapped from the model's files (pages the
// system reads as they are used, and may drop and read again), but for the tensors
// the engine converts at load onto its heap (the NVFP4 export's embedding, a GGUF's
// Q6_K: HostHeapBytes). A model whose total does not fit the RAM still runs where
// everything else does — its heap tensors, KV cache, activations, scratch and
// overhead within the 75% — and the page cache has room for at least half of the
// mapped weights beside it (up to the 95%): each token then reads from the disk what
// memory could not keep (models/speed's FromDisk prices it). That is the verdict
// FromDisk (Estimate.Pageable). The NVFP4 26B, AR, on this project's 2-core machine
// (its disk reads 1.5 GB/s: speed.MeasureDisk) under memory limits of 10, 12 and
// 16 GiB: 0.83, 0.31 and 0.20 s a token (`darkroom bench --mode ar`, 48 tokens, in a
// cgroup), against 0.14 s with its weights in memory; models/speed estimates 0.47,
// 0.38 and 0.20. 10 GiB is below FromDisk's line (won't fit): there the kernel
// spends more of each token evicting pages than the estimate counts.
package fit

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// Runtime is what the estimate assumes about a run. Zero values pick defaults.
type Runtime struct {
	Context      int  // tokens of context (prompt + output) the KV cache holds (4096)
	Canvas       int  // canvas length (config canvas_length, else 256)
	ComputeBytes int  // bytes per activation / KV element (4: f32 compute)
	GPU          bool // overhead of a GPU backend (CUDA/XLA context) instead of the CPU one
	// GGUF: the weights are a GGUF file's blocks, laid out as this says (a llama.cpp
	// mix's rule, or the file's own types: weights.GGUFLayout; zero: not a GGUF
	// file), which the CPU's host path holds as stored but for a Q6_K embedding, held
	// as int8 (GGUFWeightBytes), and a GPU's graphs hold as stored too, unpacked in
	// the graph (converted to int4 or int8 only where the CPU's mapping declines the
	// file too: GGUFDeviceWeightBytes); the profile prices only what the layout does
	// not know.
	GGUF weights.GGUFLayout
	// Workers is how many parts of a product the CPU's kernels run at once
	// (default kernels.Workers(): this process's GOMAXPROCS).
	Workers int
	// FileBytes, where the weights are a GGUF file whose tensors' types are not read
	// yet (a quantization of a repo offered by its name and size, before anything of
	// it downloads), is the file's size, taken as its tensors' bytes: a GPU holds them
	// as stored, the CPU maps them, and holds its embedding as int8 beside them as a
	// Q6_K one is held (every llama.cpp mix but Q8_0 gives it Q6_K: fileShare); 0: not
	// such a file. The header's few MB count as weights. A side of a split
	// (DeviceLayers) holds the share of the file a Q4_K_M's tensors of that side have.
	FileBytes int64
	// DeviceLayers, with 0 < DeviceLayers < the model's layer count, makes the estimate
	// one side's of a model split between a GPU and the CPU (engine.Options.DeviceLayers).
	// With GPU it is the device's: every tensor but those of layers DeviceLayers and
	// after, as a GPU holds them, the KV cache of the first DeviceLayers layers, and the
	// step's activations, scratch and overhead as for the whole model (the head and the
	// sampler run there). Without, the host's: the other layers' tensors as the CPU
	// holds them, their KV cache as the host path keeps it, the activations of their
	// passes (not the head's logits nor the self-conditioning embeddings: the
	// device's), the kernels' scratch and the Go runtime. 0, or the layer count or
	// more: the whole model.
	DeviceLayers int
}

// split reports whether rt is one side of a split of t's layers (DeviceLayers).
func (r Runtime) split(t *config.Text) bool {
	return r.DeviceLayers > 0 && r.DeviceLayers < t.NumHiddenLayers
}

// layers is the range [lo, hi) of t's layers the estimate's side holds: all of them,
// or the split's first DeviceLayers on the GPU, the rest on the host.
func (r Runtime) layers(t *config.Text) (lo, hi int) {
	switch {
	case !r.split(t):
		return 0, t.NumHiddenLayers
	case r.GPU:
		return 0, r.DeviceLayers
	}
	return r.DeviceLayers, t.NumHiddenLayers
}

// holds reports whether the estimate's side holds tensor s: every tensor, or for a
// split the GPU every one but those of layers DeviceLayers and after, the host those.
func (r Runtime) holds(t *config.Text, s weights.Spec) bool {
	if !r.split(t) {
		return true
	}
	onHost := s.Layer >= r.DeviceLayers
	return onHost != r.GPU
}

// layerSpan is what f counts for t's layers [lo, hi): f over t cut to its first hi
// layers (model.FrontConfig, as a split's device cuts it) less f over t cut to its
// first lo — the engine's own per-layer sums (model.KVCacheBytes,
// model.HostKVCacheBytes, …) over a range of the layers, each layer's share
// depending on its own type alone.
func layerSpan(t *config.Text, lo, hi int, f func(*config.Text) int64) int64 {
	return f(model.FrontConfig(t, hi)) - f(model.FrontConfig(t, lo))
}

func (r Runtime) withDefaults(cfg *config.Model) Runtime {
	if r.Context <= 0 {
		r.Context = 4096
	}
	if r.Canvas <= 0 {
		r.Canvas = cfg.CanvasLength
		if r.Canvas <= 0 {
			r.Canvas = 256
		}
	}
	if r.ComputeBytes <= 0 {
		r.ComputeBytes = 4
	}
	if r.Workers <= 0 {
		r.Workers = kernels.Workers()
	}
	return r
}

// Part is one component of an estimate.
type Part struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	Note  string `json:"note,omitempty"`
}

// Estimate is the memory a model needs under a profile, part by part.
type Estimate struct {
	Profile string `json:"profile"`
	Context int    `json:"context"`
	Parts   []Part `json:"parts"`
	Total   int64  `json:"total_bytes"`
	// Pageable is the part of Total the system may drop and read again from the
	// model's files: on the CPU, the weights the engine maps (all but
	// HostHeapBytes); 0 on a GPU, which holds every weight in its memory.
	Pageable int64 `json:"pageable_bytes,omitempty"`
}

// Resident is the part of the estimate that must stay in memory: Total less
// Pageable.
func (e *Estimate) Resident() int64 { return e.Total - e.Pageable }

// Part returns the bytes of the named part (0 if absent).
func (e *Estimate) Part(name string) int64 {
	for _, p := range e.Parts {
		if p.Name == name {
			return p.Bytes
		}
	}
	return 0
}

// Part names.
const (
	PartWeights     = "weights"
	PartKV          = "kv cache"
	PartActivations = "canvas activations"
	PartDequant     = "dequantization scratch"
	PartOverhead    = "runtime overhead"
)

// floatBytes is the storage size of a float weight in the checkpoint.
func floatBytes(cfg *config.Model) int64 { return int64(storedFloat(cfg).Size()) }

// WeightBytes is the size at rest of cfg's weights under profile p.
func WeightBytes(cfg *config.Model, p quant.Profile) int64 {
	return sumSpecs(cfg, func(s weights.Spec) int64 { return TensorBytes(cfg, p, s) })
}

// HostWeightBytes is WeightBytes as the CPU's host path holds the weights: NVIDIA's
// NVFP4 export's BF16 embedding in int8 (weights.HostEmbedding), the rest as stored.
func HostWeightBytes(cfg *config.Model, p quant.Profile) int64 {
	return sumSpecs(cfg, func(s weights.Spec) int64 { return hostTensorBytes(cfg, p, weights.GGUFLayout{}, s) })
}

// mixTypes says which types each mix gives the 26B's tensors (weights.GGUFType).
var mixTypes = map[gguf.Mix]string{
	gguf.Q3KM: "Q3_K_M (Q3_K, Q4_K, Q5_K and Q6_K, Q4_0/Q5_0/Q5_1 where rows are no 256-block)",
	gguf.Q4KM: "Q4_K_M (Q4_K and Q6_K, Q5_0/Q8_0 where rows are no 256-block)",
	gguf.Q5KM: "Q5_K_M (Q5_K and Q6_K, Q5_1/Q8_0 where rows are no 256-block)",
	gguf.Q6KM: "Q6_K (Q8_0 where rows are no 256-block)",
	gguf.Q80M: "Q8_0",
}

// ggufNote says what the weights of a GGUF file of cfg laid out as l are on the CPU
// (gpu false) or a GPU, of the tensors it holds (Runtime.holds).
func ggufNote(cfg *config.Model, l weights.GGUFLayout, gpu bool, holds func(weights.Spec) bool) string {
	what := "a GGUF file's blocks (" + l.Describe(cfg) + ")"
	if l.IsMix(cfg) {
		what = "a GGUF file's blocks in llama.cpp's " + mixTypes[l.Mix]
	}
	switch {
	case l.HostConverted(): // LoadGGUF's conversion, on the CPU and a GPU alike
		return what + ", converted at load to int4 or int8: its gate and up experts differ in type"
	case gpu: // every type Darkroom reads is kept (weights.GGUFKeptTypes)
		return what + ", held as stored and unpacked in the graph"
	}
	for _, s := range weights.Specs(cfg) {
		if _, held := l.HostHeld(cfg, s); held && holds(s) { // weights.HostHeld: the Q6_K embedding alone
			return what + " as stored, its Q6_K embedding held as int8"
		}
	}
	return what + " as stored"
}

// hostTensorBytes is tensor s as the CPU's host path holds it: a GGUF file's
// (GGUFHeldBytes), else as HostWeightBytes counts it.
func hostTensorBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, s weights.Spec) int64 {
	if l.IsGGUF() {
		return GGUFHeldBytes(cfg, p, l, s)
	}
	if held, ok := weights.HostEmbedding(p, s); ok {
		return held.Bytes(s.Shape)
	}
	return TensorBytes(cfg, p, s)
}

// HostHeapBytes is the part of the CPU's host path's weights (HostWeightBytes, or
// GGUFWeightBytes for a GGUF file) that the engine reads onto its heap at load, in
// the format it converts them to — NVIDIA's NVFP4 export's BF16 embedding held as
// int8 (weights.HostEmbedding), a GGUF file's Q6_K embedding held as int8
// (weights.HostHeld) — where the rest is mapped from the files. The norms and
// other vectors some formats read onto the heap too are left out: kilobytes.
func HostHeapBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout) int64 {
	return sumSpecs(cfg, func(s weights.Spec) int64 { return hostHeapTensorBytes(cfg, p, l, s) })
}

// hostHeapTensorBytes is tensor s's share of HostHeapBytes: its bytes as the host path
// holds it (hostTensorBytes) where it reads it onto its heap (HostOnHeap), else 0.
func hostHeapTensorBytes(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, s weights.Spec) int64 {
	if HostOnHeap(cfg, p, l, s) {
		return hostTensorBytes(cfg, p, l, s)
	}
	return 0
}

// HostOnHeap reports whether the CPU's host path reads tensor s onto its heap,
// converted (HostHeapBytes), rather than mapping it from the model's files.
func HostOnHeap(cfg *config.Model, p quant.Profile, l weights.GGUFLayout, s weights.Spec) bool {
	if l.IsGGUF() {
		if l.HostConverted() {
			return true
		}
		_, held := l.HostHeld(cfg, s)
		return held
	}
	_, ok := weights.HostEmbedding(p, s)
	return ok
}

// TensorBytes is the size at rest of one of cfg's tensors under profile p: the
// codes and scales as stored (NVFP4: 1-byte FP8 scales) when p quantizes it, else
// its elements in the checkpoint's float dtype.
func TensorBytes(cfg *config.Model, p quant.Profile, s weights.Spec) int64 {
	if spec, q := p.SpecFor(s.Name, s.Shape, s.Quantizable); q {
		return spec.Bytes(s.Shape)
	}
	return s.Elements() * floatBytes(cfg)
}

// KVBytes is the engine's KV cache when it holds ctx tokens, elemBytes per element
// (4: f32, 2: bf16), by the engine's own rule (model.KVCacheBytes): the cache grows
// to the next power of two ≥ ctx (model.CacheCapacity); sliding layers keep K and V
// of at most sliding_window−1 positions (what a future token can see) and
// model.RingSlack more (model.RingSlots); full-attention layers (K = V) store V only,
// for every position.
func KVBytes(cfg *config.Model, ctx, elemBytes int) int64 {
	dt := dtypes.Float32
	if elemBytes == 2 {
		dt = dtypes.BFloat16
	}
	return model.KVCacheBytes(&cfg.Text, model.CacheCapacity(ctx), dt)
}

// prefixScratch is the largest per-layer transient of attending over the cache in one
// denoising step, f32: a full layer's K recomputed from its cached V (capacity slots)
// and the K and V concatenated with the canvas's (capacity + canvas rows); a sliding
// layer's K and V over its ring's slots (model.RingSlots) + the canvas.
func prefixScratch(t *config.Text, capacity, canvas int) int64 {
	var most int64
	for i := range t.NumHiddenLayers {
		row := int64(t.KVHeads(i)) * int64(t.LayerHeadDim(i)) * 4
		n := int64(model.RingSlots(t, capacity))
		b := 2 * (n + int64(canvas)) * row
		if !t.IsSliding(i) {
			b = (int64(capacity) + 2*(int64(capacity)+int64(canvas))) * row
		}
		most = max(most, b)
	}
	return most
}

// Compute estimates cfg's memory under profile p for run rt.
func Compute(cfg *config.Model, p quant.Profile, rt Runtime) (*Estimate, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	rt = rt.withDefaults(cfg)
	t := &cfg.Text
	c, v, d := int64(rt.Canvas), int64(t.VocabSize), int64(t.HiddenSize)
	eb := int64(rt.ComputeBytes)
	e := &Estimate{Profile: string(p), Context: rt.Context}

	// The weights of the estimate's side: the whole model's, or a split's part.
	holds := func(s weights.Spec) bool { return rt.holds(t, s) }
	sum := func(f func(weights.Spec) int64) int64 {
		return sumSpecs(cfg, func(s weights.Spec) int64 {
			if !holds(s) {
				return 0
			}
			return f(s)
		})
	}
	stored := func(s weights.Spec) int64 { return TensorBytes(cfg, p, s) }
	var w int64
	note := weightNote(p)
	heap := func() int64 { // on the CPU: what it reads onto its heap
		return sum(func(s weights.Spec) int64 { return hostHeapTensorBytes(cfg, p, rt.GGUF, s) })
	}
	switch {
	case rt.FileBytes > 0 && rt.split(t) && rt.GPU:
		w, _ = fileShare(cfg, rt, sum)
		note = "these tensors' share of the file's size, as a Q4_K_M's: their blocks held as stored (their types are read when it downloads)"
	case rt.FileBytes > 0 && rt.GPU:
		w = rt.FileBytes
		note = "the file's size: its blocks held as stored (their types are read when it downloads)"
	case rt.FileBytes > 0:
		var onHeap int64
		w, onHeap = fileShare(cfg, rt, sum)
		heap = func() int64 { return onHeap }
		note = "the file's size, mapped, and its embedding held as int8 as a Q6_K one is (the types are read when it downloads)"
		if rt.split(t) {
			note = "these tensors' share of the file's size, as a Q4_K_M's, mapped (their types are read when it downloads)"
		}
	case rt.GGUF.IsGGUF() && rt.GPU:
		w = sum(func(s weights.Spec) int64 { return GGUFDeviceTensorBytes(cfg, p, rt.GGUF, s) })
		note = ggufNote(cfg, rt.GGUF, true, holds)
	case rt.GGUF.IsGGUF():
		w = sum(func(s weights.Spec) int64 { return GGUFHeldBytes(cfg, p, rt.GGUF, s) })
		note = ggufNote(cfg, rt.GGUF, false, holds)
	case rt.GPU:
		w = sum(stored)
	default:
		w = sum(func(s weights.Spec) int64 { return hostTensorBytes(cfg, p, weights.GGUFLayout{}, s) })
		if w != sum(stored) {
			note += "; on the CPU the embedding held as int8 (f32 scales)"
		}
	}
	lo, hi := rt.layers(t)
	if rt.split(t) {
		note += splitNote(t, rt, lo, hi)
	}
	e.Parts = append(e.Parts, Part{PartWeights, w, note})
	if !rt.GPU {
		e.Pageable = w - heap()
	}

	capacity := model.CacheCapacity(rt.Context)
	if rt.GPU {
		kv := layerSpan(t, lo, hi, func(t *config.Text) int64 {
			return KVBytes(&config.Model{Text: *t}, rt.Context, rt.ComputeBytes)
		})
		e.Parts = append(e.Parts, Part{PartKV, kv, fmt.Sprintf("%d tokens (cache capacity %d), f32; sliding layers keep the last %d positions (K, V), full layers V only (K = V)",
			rt.Context, capacity, model.RingSlots(t, capacity)) + layersNote(t, lo, hi)})
	} else {
		kv := layerSpan(t, lo, hi, func(t *config.Text) int64 {
			return model.HostKVCacheBytes(t, rt.Context) + model.HostKeptBytes(t, rt.Context)
		})
		e.Parts = append(e.Parts, Part{PartKV, kv, fmt.Sprintf("%d tokens, f32; sliding layers keep the last %d positions (K, V), twice (a copy kept for the next prompt), full layers V only (K = V)",
			rt.Context, model.RingSlots(t, rt.Context)) + layersNote(t, lo, hi)})
	}

	// One denoising step over the canvas.
	logits := c * v * eb * 2 // logits and the tempered probabilities
	maxHd := int64(max(t.HeadDim, t.GlobalHeadDim))
	scores := int64(t.NumAttentionHeads) * c * (int64(capacity) + c) * eb // a full layer's, the widest
	prefix := prefixScratch(t, capacity, int(c))
	hidden := c * d * eb * 8                                           // residual, norms, attention/MLP outputs
	qkv := c * int64(t.NumAttentionHeads) * maxHd * eb * 3             // q, k, v of the widest layer
	assign := c * int64(max(t.TopKExperts, 1))                         // routed rows
	bk := int64(model.MoEBlockSize(int(assign), max(t.NumExperts, 1))) // engine's grouped GEMM layout
	nb := int64(model.MoECapacityBlocks(int(assign), max(t.NumExperts, 1), int(bk)))
	moeRows := nb * bk * (d + 2*int64(t.MoEIntermediateSize)) * eb
	step := model.StepBufferBytes(t, int(c)) // the self-conditioning embeddings kept across steps
	head := fmt.Sprintf("logits %s (canvas × vocab, f32: the logits and the tempered logits), ", human(logits))
	selfCond := ", self-conditioning " + human(step)
	if rt.split(t) && !rt.GPU { // the head and the sampler run on the GPU
		logits, step, head, selfCond = 0, 0, "", ""
	}
	act := logits + scores + prefix + hidden + qkv + moeRows + step
	e.Parts = append(e.Parts, Part{PartActivations, act, fmt.Sprintf("canvas %d: %sattention %s, cached keys/values read %s, MoE rows %s%s",
		c, head, human(scores), human(prefix), human(moeRows), selfCond)})

	var scratch int64
	var what string
	if rt.GPU {
		scratch, what = graphScratch(cfg, p, int(nb))
	} else {
		// The host path decodes inside the kernels' panels: one set per worker, for
		// rows as wide as the widest matrix's input.
		cols := max(t.HiddenSize, t.IntermediateSize, t.MoEIntermediateSize, t.NumAttentionHeads*int(maxHd))
		per := kernels.ScratchBytes(cols)
		scratch = int64(rt.Workers) * per
		what = fmt.Sprintf("the go backend multiplies the weights as stored: %d kernel workers' packed panels and decoded rows (%s each)", rt.Workers, human(per))
	}
	e.Parts = append(e.Parts, Part{PartDequant, scratch, what})

	over := int64(300 << 20)
	note = "Go runtime and GC headroom (the weights are mapped from the file: no allocator slack)"
	if rt.GPU {
		over = int64(500<<20) + w/25
		note = "CUDA/XLA context + 4% of weights for allocator slack"
	}
	e.Parts = append(e.Parts, Part{PartOverhead, over, note})

	for _, p := range e.Parts {
		e.Total += p.Bytes
	}
	return e, nil
}

// fileShare is the weights' bytes of the estimate's side (sum: the sum over the
// tensors it holds) of a GGUF file of cfg known by its size alone (Runtime.FileBytes),
// priced as a Q4_K_M's: the share of the file its tensors have in a Q4_K_M, and on the
// CPU what it holds of them beyond mapping them — its Q6_K embedding converted onto
// the heap (onHeap) — for the bytes that adds. The whole file's share is its size.
func fileShare(cfg *config.Model, rt Runtime, sum func(func(weights.Spec) int64) int64) (w, onHeap int64) {
	l := weights.MixLayout(gguf.Q4KM)
	p := quant.Int4Profile
	file := func(s weights.Spec) int64 { return GGUFTensorBytes(cfg, p, l, s) }
	w = rt.FileBytes
	if rt.split(&cfg.Text) {
		w = int64(float64(rt.FileBytes) * float64(sum(file)) / float64(sumSpecs(cfg, file)))
	}
	if rt.GPU {
		return w, 0
	}
	extra := sum(func(s weights.Spec) int64 { return GGUFHeldBytes(cfg, p, l, s) - file(s) })
	onHeap = sum(func(s weights.Spec) int64 { return hostHeapTensorBytes(cfg, p, l, s) })
	return w + extra, onHeap
}

// splitNote says which tensors a side of a split (Runtime.DeviceLayers) holds: the
// layers [lo, hi) of t's, and on the GPU the rest of the model.
func splitNote(t *config.Text, rt Runtime, lo, hi int) string {
	if rt.GPU {
		return fmt.Sprintf("; the embedding, the self-conditioning MLP, the final norm and layers %d–%d of %d (the rest on the CPU)", lo, hi-1, t.NumHiddenLayers)
	}
	return fmt.Sprintf("; layers %d–%d of %d (the rest on the GPU)", lo, hi-1, t.NumHiddenLayers)
}

// layersNote says, for a side of a split, whose KV cache it holds: layers [lo, hi) of
// t's ("" for the whole model).
func layersNote(t *config.Text, lo, hi int) string {
	if lo == 0 && hi == t.NumHiddenLayers {
		return ""
	}
	return fmt.Sprintf("; layers %d–%d's", lo, hi-1)
}

// graphScratch is the graph path's dequantization scratch on a GPU: the largest set of
// weight blocks the denoising step's graph builds for the products of one chunk
// (model.Runner.StepWeightOperands lists them; the estimate is tested against that
// list), each block in the dtype its product reads — the engine's compute dtype for
// cfg (model.ComputeDTypeFor: bf16 for a bf16 model), float32 for the router:
//
//   - a weight used whole (attention, dense and self-conditioning MLPs, router) is a
//     block when it is not stored in that dtype already (quantized, or bf16 under
//     float32 compute);
//   - the tied embedding, when it is larger than model.DequantScratchBudget in float32,
//     is gathered model.HeadChunkRows rows at a time (output head, soft embedding),
//     otherwise it is a whole weight as above;
//   - the experts are gathered for model.MoEGroupBlocks of the nb row blocks at a time,
//     each block's gate, up and down together.
//
// The engine orders the chunks so that one chunk's blocks are consumed before the
// next's are made (engine/model chunk.go); XLA fuses a dequantization's elementwise
// steps into the kernel that writes the block (expected from XLA's fusion, not
// measured here), so the block is what is live.
func graphScratch(cfg *config.Model, p quant.Profile, nb int) (int64, string) {
	t := &cfg.Text
	compute := model.ComputeDTypeFor(modelDType(cfg), true)
	stored := storedFloat(cfg)
	converted := func(s weights.Spec, dt dtypes.DType) bool {
		_, q := p.SpecFor(s.Name, s.Shape, s.Quantizable)
		return q || stored != dt
	}
	d, f := int64(t.HiddenSize), int64(t.MoEIntermediateSize)
	var most int64
	var what string
	consider := func(b int64, why string) {
		if b > most {
			most, what = b, why
		}
	}
	for _, s := range weights.Specs(cfg) {
		if len(s.Shape) != 2 || s.Buffer || s.Name == weights.EmbeddingName {
			continue
		}
		dt := compute
		if strings.HasSuffix(s.Name, ".router.proj.weight") {
			dt = dtypes.Float32
		}
		if converted(s, dt) {
			consider(s.Elements()*int64(dt.Size()), fmt.Sprintf("%s in %s, whole", s.Name, dt))
		}
	}
	rows := model.HeadChunkRows(t.VocabSize, t.HiddenSize)
	emb := weights.Spec{Name: weights.EmbeddingName, Shape: []int{t.VocabSize, t.HiddenSize}, Quantizable: true}
	if rows < t.VocabSize || converted(emb, compute) {
		consider(int64(rows)*d*int64(compute.Size()), fmt.Sprintf("tied embedding in %s, %d of %d vocabulary rows at a time (output head, soft embedding)", compute, rows, t.VocabSize))
	}
	if t.NumExperts > 0 {
		group := min(model.MoEGroupBlocks(t.MoEIntermediateSize, t.HiddenSize), max(nb, 1))
		consider(int64(group)*3*f*d*int64(compute.Size()), fmt.Sprintf("expert gate/up/down in %s for %d of %d row blocks at a time (grouped MoE GEMM)", compute, group, nb))
	}
	if most == 0 {
		return 0, fmt.Sprintf("every product reads its weight as stored (%s)", compute)
	}
	return most, what + "; one chunk's blocks live at a time"
}

// modelDType is the checkpoint's dtype as config.json says it (the text config's,
// else the model's).
func modelDType(cfg *config.Model) string { return cmp.Or(cfg.Text.DType, cfg.DType) }

// storedFloat is the dtype of the checkpoint's float weights.
func storedFloat(cfg *config.Model) dtypes.DType {
	switch strings.ToLower(modelDType(cfg)) {
	case "float32", "f32":
		return dtypes.Float32
	case "float16", "f16":
		return dtypes.Float16
	}
	return dtypes.BFloat16 // what Google ships
}

func weightNote(p quant.Profile) string {
	switch p {
	case quant.Int8Profile:
		return "int8 per-channel (f32 scales); norms and router in the checkpoint dtype"
	case quant.Int4Profile:
		return "experts int4 g32 (bf16 scales), attention/MLP/embedding int8 (f32 scales)"
	case quant.NVFP4Profile:
		return "experts, attention and MLP NVFP4 (an FP8 scale per 16); embedding, router and norms bf16"
	}
	return "as stored (bf16)"
}

func checkConfig(cfg *config.Model) error {
	t := &cfg.Text
	if t.HiddenSize <= 0 || t.VocabSize <= 0 || t.NumHiddenLayers <= 0 || len(t.LayerTypes) < t.NumHiddenLayers {
		return fmt.Errorf("fit estimate: config lacks dimensions (hidden %d, vocab %d, layers %d, layer_types %d)",
			t.HiddenSize, t.VocabSize, t.NumHiddenLayers, len(t.LayerTypes))
	}
	return nil
}

// Verdict is the answer to "will it fit".
type Verdict string

const (
	Fits    Verdict = "fits"
	Tight   Verdict = "tight"
	WontFit Verdict = "won't fit"
	// FromDisk: too big for the RAM, but it runs reading part of its weights from
	// the disk for every token (the package comment; JudgeEstimate).
	FromDisk Verdict = "from disk"
)

// pageableShare is the least share of an estimate's mapped weights (Pageable) the
// page cache must have room for beside what stays in memory for FromDisk: below it
// each token reads most of what it multiplies from the disk, and the system has
// little memory left for other programs' files.
const pageableShare = 0.5

// Budget is memory an estimate is judged against.
type Budget struct {
	Kind  string `json:"kind"` // "gpu" or "ram"
	Name  string `json:"name"` // "NVIDIA GeForce RTX 4090", "RAM"
	Bytes int64  `json:"bytes"`
}

// Limits are the shares of a budget up to which an estimate fits and is tight
// (thresholds in the package comment), so a caller can say them in words.
func Limits(b Budget) (fitsAt, tightAt float64) {
	if b.Kind == "ram" {
		return 0.75, 0.95
	}
	return 0.90, 1.00
}

// Judge compares a total with a budget (thresholds in Limits).
func Judge(total int64, b Budget) Verdict {
	if b.Bytes <= 0 {
		return WontFit
	}
	fitsAt, tightAt := Limits(b)
	r := float64(total) / float64(b.Bytes)
	switch {
	case r <= fitsAt:
		return Fits
	case r <= tightAt:
		return Tight
	}
	return WontFit
}

// JudgeEstimate judges e against b: Judge on its total, but in RAM an estimate
// that does not fit is FromDisk where what must stay in memory (Resident) fits and
// room for half of its mapped weights is left up to the tight limit.
func JudgeEstimate(e *Estimate, b Budget) Verdict {
	v := Judge(e.Total, b)
	if v != WontFit || b.Kind != "ram" || e.Pageable <= 0 || b.Bytes <= 0 {
		return v
	}
	fitsAt, tightAt := Limits(b)
	resident := float64(e.Resident())
	if resident <= fitsAt*float64(b.Bytes) && tightAt*float64(b.Bytes)-resident >= pageableShare*float64(e.Pageable) {
		return FromDisk
	}
	return WontFit
}

func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f kB", float64(n)/1e3)
}
