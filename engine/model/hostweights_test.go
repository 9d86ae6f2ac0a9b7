package model

import (
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/kernels"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// hostDense decodes a whole matrix weight of hw into float32, row by row (for tests).
func hostDense(t *testing.T, hw *hostWeights, name string) []float32 {
	t.Helper()
	var m hostMatrix
	if err := try("read "+name, func() { m = hw.matrix(name) }); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, m.rows*m.cols)
	for r := range m.rows {
		m.row(out[r*m.cols:(r+1)*m.cols], r)
	}
	return out
}

// formatConfig is tinyConfig with every matrix's input width a multiple of 32, so each
// stored format (int4 and affine int4 g32, NVFP4 g16) applies to every matrix.
func formatConfig() *config.Text {
	c := tinyConfig()
	c.HiddenSize, c.IntermediateSize, c.MoEIntermediateSize = 64, 32, 32
	c.HeadDim, c.GlobalHeadDim = 16, 32
	return c
}

// storeAs replaces every matrix weight of w (rank ≥ 2) by its stored form in format
// (a quant spec, or "bf16") and returns the float32 weights that form holds: the
// dequantized values, which the float32 host path is run on as the reference. NVFP4,
// which Darkroom loads but does not make, is random codes and scales.
func storeAs(t *testing.T, w map[string]*tensors.Tensor, format string, spec quant.Spec, rng *rand.Rand) (ref map[string]*tensors.Tensor, quantized int) {
	t.Helper()
	ref = map[string]*tensors.Tensor{}
	for _, name := range slices.Sorted(maps.Keys(w)) {
		x := w[name]
		dims := x.Shape().Dimensions
		if len(dims) < 2 {
			ref[name] = x
			continue
		}
		vals := tensors.MustCopyFlatData[float32](x)
		switch {
		case format == "bf16":
			b := make([]bfloat16.BFloat16, len(vals))
			f := make([]float32, len(vals))
			for i, v := range vals {
				b[i] = bfloat16.FromFloat32(v)
				f[i] = b[i].Float32()
			}
			w[name] = tensors.FromFlatDataAndDimensions(b, dims...)
			ref[name] = tensors.FromFlatDataAndDimensions(f, dims...)
			quantized++
			continue
		case spec.Check(dims) != nil:
			t.Fatalf("%s %v does not fit %s", name, dims, spec)
		}
		var qw, qs, qm *tensors.Tensor
		var err error
		switch {
		case spec.Format == quant.FP4:
			qw, qs = randomNVFP4(t, rng, dims)
		case spec.HasMin():
			qw, qs, qm, err = quant.QuantizeAffine(x, spec)
		default:
			qw, qs, err = quant.Quantize(x, spec)
		}
		if err != nil {
			t.Fatalf("quantize %s: %v", name, err)
		}
		var mins []*tensors.Tensor
		delete(w, name)
		w[name+QWeightSuffix], w[name+QScaleSuffix] = qw, qs
		if qm != nil {
			w[name+QMinSuffix] = qm
			mins = append(mins, qm)
		}
		d, err := quant.Dequantize(qw, qs, spec, dims, mins...)
		if err != nil {
			t.Fatal(err)
		}
		ref[name] = d
		quantized++
	}
	return ref, quantized
}

// randomNVFP4 is an NVFP4 weight of the logical shape dims: random E2M1 codes, FP8
// block scales in 2^-3…2^3 and a small weight_scale_2 per row.
func randomNVFP4(t *testing.T, rng *rand.Rand, dims []int) (qw, qs *tensors.Tensor) {
	t.Helper()
	k := dims[len(dims)-1]
	rows := 1
	for _, d := range dims[:len(dims)-1] {
		rows *= d
	}
	codes := make([]byte, rows*k/2)
	for i := range codes {
		codes[i] = byte(rng.IntN(256))
	}
	g := k / quant.NVFP4.GroupSize
	scales := make([]byte, rows*(g+quant.NVFP4ScaleBytes))
	fp8 := make([]byte, g)
	for r := range rows {
		for i := range fp8 {
			fp8[i] = byte(0x20 + rng.IntN(0x30))
		}
		s2 := float32(0.02 / math.Sqrt(float64(k)))
		if err := quant.PutNVFP4ScaleRow(scales[r*(g+quant.NVFP4ScaleBytes):(r+1)*(g+quant.NVFP4ScaleBytes)], fp8, s2); err != nil {
			t.Fatal(err)
		}
	}
	qd, sd := quant.NVFP4.Shapes(dims)
	return tensors.FromFlatDataAndDimensions(codes, qd...), tensors.FromFlatDataAndDimensions(scales, sd...)
}

// hostOutputs runs the host model and head over w with a fixed embedding scale: a
// prompt (encoder, 9 tokens over the sliding window), two decoder steps with
// self-conditioning (the LM head h·Eᵀ and the soft embedding probs·E), the canvas
// committed, and two AR tokens (one-row products: MulVec), returning every logit and
// soft embedding.
func hostOutputs(t *testing.T, cfg *config.Text, w map[string]*tensors.Tensor, embedScale float64) [][]float32 {
	t.Helper()
	ctx := newContext(t, w)
	return hostOutputsFrom(t, cfg, ctx, ContextSource(ctx), embedScale)
}

// hostOutputsFrom is hostOutputs reading the weights from src (ctx holds the same).
func hostOutputsFrom(t *testing.T, cfg *config.Text, ctx *context.Context, src HostSource, embedScale float64) [][]float32 {
	t.Helper()
	h := &hostModel{cfg: cfg, w: newHostWeights(src), embedScale: embedScale}
	scalar := NewParams(ctx, nil, cfg).encoderScalar
	rng := rand.New(rand.NewPCG(3, 4))
	toks := func(n int) []int32 {
		out := make([]int32, n)
		for i, v := range randTokens(rng, n, cfg.VocabSize) {
			out[i] = int32(v)
		}
		return out
	}
	var outs [][]float32
	err := try("host model", func() {
		var head hostHead
		if err := head.prepare(h.w, embedScale); err != nil {
			panic(err)
		}
		cache := &hostCache{}
		outs = append(outs, head.logits(h.encode(cache, toks(9), 0, scalar), 1, cfg.FinalLogitSoftcapping))
		canvas := toks(8)
		var soft []float32
		for _, temp := range []float64{0.8, 0.6} {
			logits, next := head.run(h.decode(cache, canvas, soft, cache.n), len(canvas), cfg.FinalLogitSoftcapping, temp)
			outs, soft = append(outs, logits, next), next
		}
		outs = append(outs, head.logits(h.encode(cache, canvas, cache.n, scalar), 1, cfg.FinalLogitSoftcapping))
		for range 2 {
			outs = append(outs, head.logits(h.encode(cache, toks(1), cache.n, scalar), 1, cfg.FinalLogitSoftcapping))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// TestHostStoredFormats: the host model on weights kept in each stored format (BF16,
// int8 per row, int4 g32 with BFloat16 or Float32 scales, affine int4, NVFP4) gives the
// same logits and soft embeddings, within float32 rounding, as the float32 host path on
// the dequantized weights — every matrix, the embedding and the experts included, is
// multiplied in its stored format.
func TestHostStoredFormats(t *testing.T) {
	defer kernels.SetIntProducts(kernels.SetIntProducts(false)) // the float32 path, within its rounding (the integer one: engine/kernels' TestMulNTInt and TestMulRowsInt)
	cfg := formatConfig()
	for _, c := range []struct {
		name string
		spec quant.Spec
	}{
		{"bf16", quant.Spec{}}, {"int8", quant.Int8}, {"int4", quant.Int4}, {"int4-f32", quant.Int4F32},
		{"int4-affine", quant.Int4Affine}, {"int4-affine-bf16", quant.Spec{Bits: 4, GroupSize: 32, Format: quant.Affine, BF16Scales: true}},
		{"nvfp4", quant.NVFP4},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, _ := randomModel(t, cfg, 17, dtypes.Float32)
			ref, n := storeAs(t, w, c.name, c.spec, rand.New(rand.NewPCG(1, 2)))
			if n < 20 {
				t.Fatalf("only %d matrices stored as %s", n, c.name)
			}
			embedScale := EmbedScale(cfg.HiddenSize, dtypes.Float32)
			got, want := hostOutputs(t, cfg, w, embedScale), hostOutputs(t, cfg, ref, embedScale)
			for i := range want {
				var diff, scale float64
				for j := range want[i] {
					diff = max(diff, math.Abs(float64(got[i][j]-want[i][j])))
					scale = max(scale, math.Abs(float64(want[i][j])))
				}
				if diff > 2e-5*scale || math.IsNaN(diff) {
					t.Errorf("output %d: max difference %.3g against the float32 path (scale %.3g)", i, diff, scale)
				}
			}
		})
	}
}

// partedSource holds every matrix of src but the embedding in parts stored apart
// (weights.Stored.Parts), each part's bytes a copy of its own: an expert weight one
// part per expert and projection (gate, up; down), as a ModelOpt export or a GGUF
// file's split experts are held; any other matrix two halves.
type partedSource struct{ src HostSource }

func (p partedSource) Lookup(name string) (weights.Stored, any, bool, error) {
	s, version, ok, err := p.src.Lookup(name)
	if err != nil || !ok || len(s.Shape) < 2 || name == "embed_tokens.weight" {
		return s, version, ok, err
	}
	m, err := s.Matrix()
	if err != nil {
		return s, nil, false, err
	}
	block := (m.Rows + 1) / 2
	if len(s.Shape) == 3 {
		block = s.Shape[1]
		if strings.HasSuffix(name, "gate_up_proj") {
			block /= 2
		}
	}
	whole := s
	whole.Data, whole.Scales, whole.Mins = nil, nil, nil
	for r := 0; r < m.Rows; r += block {
		sub, err := m.RowRange(r, min(r+block, m.Rows))
		if err != nil {
			return s, nil, false, err
		}
		part := s
		part.Shape = []int{sub.Rows, sub.Cols}
		part.Data, part.Scales, part.Mins = slices.Clone(sub.Data), slices.Clone(sub.Scales), slices.Clone(sub.Mins)
		whole.Parts = append(whole.Parts, part)
	}
	return whole, version, true, nil
}

// TestHostPartedWeights: the host model over weights held in parts stored apart
// gives exactly the outputs it gives over the same weights held whole — the experts
// (one product per expert's gate, up and down, each within a part) and the other
// matrices (products and rows taken part by part) — in each stored format.
func TestHostPartedWeights(t *testing.T) {
	cfg := formatConfig()
	for _, c := range []struct {
		name string
		spec quant.Spec
	}{{"f32", quant.Spec{}}, {"bf16", quant.Spec{}}, {"int4", quant.Int4}, {"nvfp4", quant.NVFP4}} {
		t.Run(c.name, func(t *testing.T) {
			w, _ := randomModel(t, cfg, 17, dtypes.Float32)
			if c.name != "f32" {
				storeAs(t, w, c.name, c.spec, rand.New(rand.NewPCG(1, 2)))
			}
			ctx := newContext(t, w)
			embedScale := EmbedScale(cfg.HiddenSize, dtypes.Float32)
			want := hostOutputsFrom(t, cfg, ctx, ContextSource(ctx), embedScale)
			got := hostOutputsFrom(t, cfg, ctx, partedSource{ContextSource(ctx)}, embedScale)
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("output %d: held in parts %v…, whole %v…", i, got[i][:4], want[i][:4])
				}
			}
			hw := newHostWeights(partedSource{ContextSource(ctx)})
			for _, name := range []string{"layers.0.self_attn.q_proj.weight", "layers.1.experts.gate_up_proj"} {
				if hw.matrix(name).parts == nil {
					t.Fatalf("%s is not held in parts", name)
				}
				if !slices.Equal(hostDense(t, hw, name), hostDense(t, newHostWeights(ContextSource(ctx)), name)) {
					t.Errorf("%s: rows held in parts differ from the whole's", name)
				}
			}
		})
	}
}

// TestHostWeightsCompact: the host path over an int4 model of a few tens of MB allocates
// nothing of its float32 size: after the first prompt and a decoder step, the heap
// holds the stored weights plus activations, the cache and the kernels' buffers
// (before, the host copies were the model in float32, five times the stored bytes).
func TestHostWeightsCompact(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 30 MB model")
	}
	cfg := &config.Model{Text: *formatConfig(), CanvasLength: 8}
	tc := &cfg.Text
	tc.VocabSize, tc.HiddenSize, tc.NumExperts, tc.MoEIntermediateSize, tc.NumHiddenLayers = 32768, 512, 8, 512, 2
	tc.LayerTypes = tc.LayerTypes[:2]
	tc.IntermediateSize = 512
	tc.HeadDim, tc.GlobalHeadDim = 64, 128
	set, err := weights.Random(cfg, 5).Quantize(cfg, quant.Int4Profile)
	if err != nil {
		t.Fatal(err)
	}
	stored, elems := set.Bytes(), int64(0)
	for _, sp := range weights.Specs(cfg) {
		n := int64(1)
		for _, d := range sp.Shape {
			n *= int64(d)
		}
		elems += n
	}
	ctx := newContext(t, set.Tensors)
	set = nil
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc

	r, err := NewRunner(newBackend(t), tc, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.HostDecoder {
		t.Fatal("the pure-Go backend should run the host path")
	}
	if _, err := r.Encode([]int{2, 10, 11, 12}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Decode([]int{5, 6, 7, 8, 9, 10, 11, 12}, nil, 1); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grown := int64(ms.HeapAlloc) - int64(before)
	runtime.KeepAlive(r)
	t.Logf("stored %.1f MB (float32 %.1f MB); heap before the runner %.1f MB, grown by %.1f MB after a prompt and a step",
		float64(stored)/1e6, float64(4*elems)/1e6, float64(before)/1e6, float64(grown)/1e6)
	// Activations, the KV cache and the kernels' packing buffers (a few MB) are all
	// that may grow; a float32 copy would be 4·elems.
	if limit := stored / 2; grown > limit {
		t.Errorf("the host path grew the heap by %d bytes, over half the stored weights (%d; float32 %d): weights were widened", grown, stored, 4*elems)
	}
	if int64(before) > stored+stored/4+8<<20 {
		t.Errorf("heap %d bytes after load, stored weights %d", before, stored)
	}
}

// TestContextSourceRefusesKeptBlocks: a weight held as GGUF blocks kept for the
// graph path (quant's block formats) is refused by the host's source with an error
// naming the graph path, not handed to kernels that would misread it.
func TestContextSourceRefusesKeptBlocks(t *testing.T) {
	ctx := context.New()
	w, s := quant.Q8F16.Shapes([]int{4, 64})
	err := LoadTensors(ctx, map[string]*tensors.Tensor{
		"w" + QWeightSuffix: tensors.FromShape(shapes.Make(quant.Q8F16.DType(), w...)),
		"w" + QScaleSuffix:  tensors.FromShape(shapes.Make(quant.Q8F16.ScaleDType(), s...)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := ContextSource(ctx).Lookup("w"); ok || err == nil || !strings.Contains(err.Error(), "graph path") {
		t.Errorf("Lookup: ok %v, %v; want a refusal naming the graph path", ok, err)
	}
}
