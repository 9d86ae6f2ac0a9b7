package weights_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// The test writes a tiny ModelOpt NVFP4 checkpoint of enginetest's model with its own
// NVFP4 quantizer and FP8/FP4 encoders, written from the formats' definitions (not
// from the loader's code), and checks every loaded weight against a float64 dequant.

// fp8Value decodes float8_e4m3fn (bias 7, subnormals m·2⁻⁹, 0x7f/0xff NaN).
func fp8Value(b byte) float64 {
	e, m := int(b>>3&15), float64(b&7)
	if b&0x7f == 0x7f {
		return math.NaN()
	}
	v := m * math.Pow(2, -9)
	if e > 0 {
		v = math.Pow(2, float64(e-7)) * (1 + m/8)
	}
	if b&0x80 != 0 {
		return -v
	}
	return v
}

// fp8Encode returns the non-negative E4M3 code nearest to x ≥ 0 (saturating at 448).
func fp8Encode(x float64) byte {
	best, bestErr := byte(0), math.Inf(1)
	for c := 0; c < 0x7f; c++ {
		if d := math.Abs(fp8Value(byte(c)) - x); d < bestErr {
			best, bestErr = byte(c), d
		}
	}
	return best
}

var e2m1Mag = []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

func e2m1Value(c byte) float64 {
	if c&8 != 0 {
		return -e2m1Mag[c&7]
	}
	return e2m1Mag[c&7]
}

func e2m1Encode(x float64) byte {
	best, bestErr := byte(0), math.Inf(1)
	for i, m := range e2m1Mag {
		if d := math.Abs(m - math.Abs(x)); d < bestErr {
			best, bestErr = byte(i), d
		}
	}
	if x < 0 {
		best |= 8
	}
	return best
}

// nvfp4Module is one quantized Linear as ModelOpt stores it, and its exact dequant.
type nvfp4Module struct {
	weight, scale []byte // U8 [out, in/2], F8_E4M3 [out, in/16]
	scale2        float32
	deq           []float32
}

// quantizeNVFP4 follows ModelOpt's NVFP4QTensor.quantize: scale_2 = amax/(6·448), block
// scale = fp8(block amax/(6·scale_2)), codes = nearest E2M1 of w/(fp8·scale_2); the
// dequant is float32(e2m1 · float32(fp8 · scale_2)).
func quantizeNVFP4(w []float32, out, in int) nvfp4Module {
	var amax float64
	for _, v := range w {
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	m := nvfp4Module{scale2: float32(amax / (6 * 448)), weight: make([]byte, out*in/2), scale: make([]byte, out*in/16), deq: make([]float32, out*in)}
	for b := 0; b < out*in/16; b++ {
		var bmax float64
		for _, v := range w[16*b : 16*b+16] {
			bmax = math.Max(bmax, math.Abs(float64(v)))
		}
		m.scale[b] = fp8Encode(bmax / (6 * float64(m.scale2)))
		s := float32(fp8Value(m.scale[b]) * float64(m.scale2))
		for j := 0; j < 16; j++ {
			i := 16*b + j
			c := byte(0)
			if s > 0 {
				c = e2m1Encode(float64(w[i]) / float64(s))
			}
			if i%2 == 0 {
				m.weight[i/2] |= c
			} else {
				m.weight[i/2] |= c << 4
			}
			m.deq[i] = float32(e2m1Value(c) * float64(s))
		}
	}
	return m
}

type stEntry struct {
	name  string
	dtype safetensors.DType
	shape []int
	data  []byte
}

func f32Scalar(v float32) []byte {
	b := make([]byte, 4)
	bits := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
	return b
}

func floats(t *testing.T, x *tensors.Tensor) []float32 {
	t.Helper()
	v, err := tensors.CopyFlatData[float32](x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// modelOpt is a ModelOpt export of a float Set: the entries to write and, per
// canonical name, the exact values the loader must produce.
type modelOpt struct {
	entries []stEntry
	want    map[string][]float32
}

func (m *modelOpt) add(name string, dt safetensors.DType, shape []int, data []byte) {
	m.entries = append(m.entries, stEntry{name, dt, shape, data})
}

func (m *modelOpt) addModule(module string, w []float32, out, in int) []float32 {
	q := quantizeNVFP4(w, out, in)
	m.add(module+".weight", safetensors.U8, []int{out, in / 2}, q.weight)
	m.add(module+".weight_scale", safetensors.F8E4M3, []int{out, in / 16}, q.scale)
	m.add(module+".weight_scale_2", safetensors.F32, []int{}, f32Scalar(q.scale2))
	m.add(module+".input_scale", safetensors.F32, []int{}, f32Scalar(0.01))
	return q.deq
}

// exportModelOpt converts src as ModelOpt would for DiffusionGemma: projections and
// dense MLPs NVFP4, experts split per expert and NVFP4, the embedding, norms, router
// and self-conditioning MLP BF16 (the self-conditioning modules listed in
// exclude_modules), plus a vision tensor, KV-cache scales and a tied duplicate.
func exportModelOpt(t *testing.T, cfg *config.Model, src *weights.Set) *modelOpt {
	t.Helper()
	m := &modelOpt{want: map[string][]float32{}}
	for _, sp := range weights.Specs(cfg) {
		w := floats(t, must(src.Float32(sp.Name)))
		switch {
		case strings.HasSuffix(sp.Name, ".experts.gate_up_proj"), strings.HasSuffix(sp.Name, ".experts.down_proj"):
			e, rows, cols := sp.Shape[0], sp.Shape[1], sp.Shape[2]
			base := strings.TrimSuffix(sp.HF, sp.Name[strings.LastIndex(sp.Name, ".")+1:])
			var deq []float32
			for i := 0; i < e; i++ {
				ew := w[i*rows*cols : (i+1)*rows*cols]
				if strings.HasSuffix(sp.Name, "gate_up_proj") {
					f := rows / 2 // gate = the first F rows
					deq = append(deq, m.addModule(base+strconv.Itoa(i)+".gate_proj", ew[:f*cols], f, cols)...)
					deq = append(deq, m.addModule(base+strconv.Itoa(i)+".up_proj", ew[f*cols:], f, cols)...)
				} else {
					deq = append(deq, m.addModule(base+strconv.Itoa(i)+".down_proj", ew, rows, cols)...)
				}
			}
			m.want[sp.Name] = deq
		case sp.Quantizable && len(sp.Shape) == 2 && sp.Name != "embed_tokens.weight" && !strings.HasPrefix(sp.Name, "self_conditioning."):
			m.want[sp.Name] = m.addModule(strings.TrimSuffix(sp.HF, ".weight"), w, sp.Shape[0], sp.Shape[1])
		default:
			b := make([]bfloat16.BFloat16, len(w))
			back := make([]float32, len(w))
			for i, v := range w {
				b[i] = bfloat16.FromFloat32(v)
				back[i] = b[i].Float32()
			}
			_, _, raw, err := safetensors.Encode(tensors.FromFlatDataAndDimensions(b, sp.Shape...))
			if err != nil {
				t.Fatal(err)
			}
			m.add(sp.HF, safetensors.BF16, sp.Shape, raw)
			m.want[sp.Name] = back
		}
	}
	// A tied copy of layer 0's q_proj under the encoder prefix, KV-cache scales, the
	// vision tower (ignored even when quantized).
	var dup []stEntry
	for _, e := range m.entries {
		if strings.HasPrefix(e.name, weights.DecoderPrefix+"layers.0.self_attn.q_proj.") {
			d := e
			d.name = weights.EncoderPrefix + strings.TrimPrefix(e.name, weights.DecoderPrefix)
			dup = append(dup, d)
		}
	}
	m.entries = append(m.entries, dup...)
	m.add(weights.DecoderPrefix+"layers.0.self_attn.k_proj.k_scale", safetensors.F32, []int{}, f32Scalar(1))
	m.add(weights.DecoderPrefix+"layers.0.self_attn.v_proj.v_scale", safetensors.F32, []int{}, f32Scalar(1))
	m.add("model.encoder.vision_tower.encoder.layers.0.mlp.fc1.weight", safetensors.U8, []int{4, 8}, make([]byte, 32))
	return m
}

// must unwraps a (value, error) pair in test set-up; an error panics, which fails the
// test with its message.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

const hfQuantNVFP4 = `{"producer": {"name": "modelopt", "version": "0.35.0"},
 "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
  "exclude_modules": ["lm_head", "model.decoder.self_conditioning*", "model.encoder.vision_tower*", "model.decoder.layers.*.router*"]}}`

// writeModelOpt writes entries as model.safetensors in dir (which holds config.json),
// and hfQuant as hf_quant_config.json unless empty.
func writeModelOpt(t *testing.T, dir string, entries []stEntry, hfQuant string) {
	t.Helper()
	os.Remove(filepath.Join(dir, safetensors.SingleFile))
	var hs []safetensors.Header
	for _, e := range entries {
		hs = append(hs, safetensors.Header{Name: e.name, DType: e.dtype, Shape: e.shape})
	}
	w, err := safetensors.Create(filepath.Join(dir, safetensors.SingleFile), map[string]string{"format": "pt"}, hs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := w.Write(e.name, e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, weights.HFQuantConfigFile))
	if hfQuant != "" {
		if err := os.WriteFile(filepath.Join(dir, weights.HFQuantConfigFile), []byte(hfQuant), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyModelDir copies the non-weight files (config, tokenizer) of src into a new dir.
func copyModelDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".safetensors") || strings.HasSuffix(e.Name(), ".index.json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// tinyModelOpt writes enginetest's tiny model and its ModelOpt NVFP4 export.
func tinyModelOpt(t *testing.T) (floatDir, nvDir string, cfg *config.Model, m *modelOpt) {
	t.Helper()
	floatDir = enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 8, MaxSteps: 2})
	cfg = must(config.Load(floatDir))
	src := must(weights.Load(floatDir, cfg))
	m = exportModelOpt(t, cfg, src)
	nvDir = copyModelDir(t, floatDir)
	writeModelOpt(t, nvDir, m.entries, hfQuantNVFP4)
	return
}

// TestModelOptNVFP4Load: every weight of the loaded Set equals the exact float64
// dequant of what was written (NVFP4 weights stay NVFP4 in memory); the Set saves and
// reloads as Darkroom's own NVFP4 tensors; config.json's quantization_config serves
// when hf_quant_config.json is absent.
func TestModelOptNVFP4Load(t *testing.T) {
	_, nvDir, cfg, m := tinyModelOpt(t)
	check := func(t *testing.T, set *weights.Set) {
		t.Helper()
		nv := 0
		for _, sp := range weights.Specs(cfg) {
			if q, ok := set.Quant[sp.Name]; ok {
				if q.Format != quant.FP4 || q.GroupSize != 16 {
					t.Fatalf("%s: spec %v", sp.Name, q)
				}
				nv++
			}
			got := floats(t, must(set.Float32(sp.Name)))
			want := m.want[sp.Name]
			if len(got) != len(want) {
				t.Fatalf("%s: %d values, want %d", sp.Name, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s element %d: %v, want %v", sp.Name, i, got[i], want[i])
				}
			}
		}
		// 3 layers × (q, k, o, gate, up, down, experts ×2) + the 2 sliding layers' v_proj.
		if want := 3*8 + 2; nv != want {
			t.Errorf("%d NVFP4 weights, want %d", nv, want)
		}
	}
	set, err := weights.Load(nvDir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	check(t, set)
	qw := set.Tensors["layers.0.experts.gate_up_proj"+quant.WeightSuffix]
	qs := set.Tensors["layers.0.experts.gate_up_proj"+quant.ScaleSuffix]
	e, f2, d := cfg.Text.NumExperts, 2*cfg.Text.MoEIntermediateSize, cfg.Text.HiddenSize
	if !slices.Equal(qw.Shape().Dimensions, []int{e, f2, d / 2}) || !slices.Equal(qs.Shape().Dimensions, []int{e, f2, d/16 + quant.NVFP4ScaleBytes}) {
		t.Errorf("experts stored as %s and %s", qw.Shape(), qs.Shape())
	}

	// Saved by Darkroom and loaded again: self-describing NVFP4 tensors.
	out := t.TempDir()
	if err := weights.Save(set, cfg, out, weights.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	saved := must(config.Load(out))
	if saved.Quantization == nil || saved.Quantization.Profile != string(quant.NVFP4Profile) {
		t.Errorf("saved quantization_config %+v", saved.Quantization)
	}
	check(t, must(weights.Load(out, cfg)))

	// config.json's modelopt quantization_config instead of hf_quant_config.json.
	raw := must(os.ReadFile(filepath.Join(nvDir, config.ConfigFile)))
	var cj map[string]any
	if err := json.Unmarshal(raw, &cj); err != nil {
		t.Fatal(err)
	}
	cj["quantization_config"] = map[string]any{"quant_method": "modelopt", "quant_algo": "NVFP4",
		"ignore":        []string{"model.decoder.self_conditioning*"},
		"config_groups": map[string]any{"group_0": map[string]any{"weights": map[string]any{"num_bits": 4, "type": "float", "group_size": 16}}}}
	raw, _ = json.Marshal(cj)
	if err := os.WriteFile(filepath.Join(nvDir, config.ConfigFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	writeModelOpt(t, nvDir, m.entries, "")
	check(t, must(weights.Load(nvDir, cfg)))
}

// TestModelOptNVFP4Generate: the model's logits on the loaded NVFP4 weights equal
// (bit for bit) those on a float32 Set of their exact dequant, both with the host
// decoder (NVFP4 dequantized on the host) and in the graph (dequantized in-graph,
// experts gathered as codes); and engine.Load runs the NVFP4 checkpoint and generates
// what its float32 twin generates.
func TestModelOptNVFP4Generate(t *testing.T) {
	floatDir, nvDir, cfg, m := tinyModelOpt(t)
	deqDir := copyModelDir(t, floatDir)
	set := weights.NewSet()
	for _, sp := range weights.Specs(cfg) {
		set.Tensors[sp.Name] = tensors.FromFlatDataAndDimensions(m.want[sp.Name], sp.Shape...)
	}
	if err := weights.Save(set, cfg, deqDir, weights.SaveOptions{DType: "f32"}); err != nil {
		t.Fatal(err)
	}

	// ops_sequential as engine/backend uses: simplego v0.26 can deadlock running
	// several DotGenerals in parallel on a machine with few cores.
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	nvSet := must(weights.Load(nvDir, cfg))
	func() {
		// Bit for bit needs the float32 products on both sides (the printer's
		// NVFP4 products are integer where the CPU has AVX-512 VNNI).
		defer kernels.SetIntProducts(kernels.SetIntProducts(false))
		for _, host := range []bool{true, false} {
			got, want := runnerLogits(t, b, cfg, nvSet, host), runnerLogits(t, b, cfg, set, host)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("host %v: logit %d: NVFP4 %v, dequantized float32 %v", host, i, got[i], want[i])
				}
			}
		}
	}()

	run := func(dir string, inGraph bool) []int {
		e, err := engine.Load(context.Background(), engine.Dir(dir), engine.Options{Backend: "go", InGraph: inGraph})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		res, err := e.Generate(context.Background(), engine.Request{Prompt: "What is Unix?", Mode: engine.AR, Seed: 3,
			Sampling: engine.Sampling{MaxNewTokens: 4}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tokens) == 0 && res.StopReason != "eos" {
			t.Fatalf("%s: no tokens (%s)", dir, res.StopReason)
		}
		return res.Tokens
	}
	// The same tokens need the float32 products too: the canvas's NVFP4 products
	// (the prompt's encoder pass) are integer wherever the CPU has AVX2, and on this
	// tiny random model a's rounding flips a pick (with AVX2 alone it did).
	defer kernels.SetIntProducts(kernels.SetIntProducts(false))
	for _, inGraph := range []bool{false, true} {
		got, want := run(nvDir, inGraph), run(deqDir, inGraph)
		if !slices.Equal(got, want) {
			t.Errorf("in-graph %v: NVFP4 model generated %v, its dequantized float32 twin %v", inGraph, got, want)
		}
	}
}

// TestModelOptNVFP4Mapped: Map holds a ModelOpt export as stored — the experts one
// part per module, the codes views of the file — every weight's rows decode to the
// float64 dequant of what was written, and the host model's logits on the mapping
// equal (bit for bit, integer products on) those on the loaded Set, whose experts are
// stacked into one tensor.
func TestModelOptNVFP4Mapped(t *testing.T) {
	_, nvDir, cfg, m := tinyModelOpt(t)
	mapped, ok, err := weights.Map(nvDir, cfg, nil)
	if err != nil || !ok {
		t.Fatalf("map: ok %v, %v", ok, err)
	}
	defer mapped.Close()
	// The embedding is converted on its first Lookup (read onto the heap: FirstRead),
	// not by Map: a graph path's Set copies it out as stored.
	i := slices.IndexFunc(weights.Specs(cfg), func(sp weights.Spec) bool { return sp.Name == weights.EmbeddingName })
	embSpec := weights.Specs(cfg)[i]
	_, embHeld := weights.HostEmbedding(quant.NVFP4Profile, embSpec)
	if n, want := mapped.FirstRead(embSpec.Name), int64(2*embSpec.Elements()); embHeld && n != want {
		t.Errorf("embedding: FirstRead %d before its Lookup, want its %d BF16 bytes", n, want)
	}
	if set := must(mapped.Set(nil)); set.Tensors[embSpec.Name] == nil || set.Tensors[embSpec.Name].DType() != dtypes.BFloat16 {
		t.Errorf("Set's embedding %v, want it as stored (BF16)", set.Tensors[embSpec.Name])
	}
	parted := 0
	for _, sp := range weights.Specs(cfg) {
		s, _, ok, err := mapped.Lookup(sp.Name)
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, %v", sp.Name, ok, err)
		}
		want := m.want[sp.Name]
		if len(sp.Shape) < 2 {
			got := must(s.Float32())
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s element %d: %v, want %v", sp.Name, i, got[i], want[i])
				}
			}
			continue
		}
		if strings.Contains(sp.Name, ".experts.") {
			e, k := cfg.Text.NumExperts, 1
			if strings.HasSuffix(sp.Name, "gate_up_proj") {
				k = 2
			}
			if len(s.Parts) != e*k {
				t.Fatalf("%s: %d parts, want %d (one a module)", sp.Name, len(s.Parts), e*k)
			}
			parted++
		}
		held, isHeld := weights.HostEmbedding(quant.NVFP4Profile, sp)
		if isHeld && (s.Quant == nil || *s.Quant != held) {
			t.Fatalf("%s held as %v, want %s", sp.Name, s.Quant, held)
		}
		cols, at := sp.Shape[len(sp.Shape)-1], 0
		row := make([]float32, cols)
		for _, pm := range must(s.PartMatrices()) {
			for r := range pm.Rows {
				if err := pm.DecodeRow(row, r); err != nil {
					t.Fatal(err)
				}
				var step float32 // an int8 row's: its largest magnitude over 127
				for _, w := range want[at : at+cols] {
					step = max(step, float32(math.Abs(float64(w)))/127)
				}
				for j, v := range row {
					if w := want[at+j]; v != w && !(isHeld && math.Abs(float64(v-w)) <= float64(step)*0.5001) {
						t.Fatalf("%s row %d element %d: %v, want %v", sp.Name, at/cols, j, v, w)
					}
				}
				at += cols
			}
		}
		if at != len(want) {
			t.Fatalf("%s: parts hold %d values, want %d", sp.Name, at, len(want))
		}
	}
	if want := 2 * cfg.Text.NumHiddenLayers; parted != want {
		t.Errorf("%d expert weights in parts, want %d", parted, want)
	}
	if n := mapped.FirstRead(embSpec.Name); n != 0 {
		t.Errorf("embedding: FirstRead %d after its Lookup", n)
	}

	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	// The loaded Set, its embedding held as Map holds it on the host.
	set := must(weights.Load(nvDir, cfg))
	emb := weights.EmbeddingName
	if held, ok := weights.HostEmbedding(quant.NVFP4Profile, embSpec); ok {
		qw, qs, err := quant.Quantize(set.Tensors[emb], held)
		if err != nil {
			t.Fatal(err)
		}
		delete(set.Tensors, emb)
		set.Tensors[emb+quant.WeightSuffix], set.Tensors[emb+quant.ScaleSuffix], set.Quant[emb] = qw, qs, held
	}
	got, want := hostLogits(t, cfg, mapped), runnerLogits(t, b, cfg, set, true)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("logit %d: mapped %v, loaded %v", i, got[i], want[i])
		}
	}
}

// TestModelOptNVFP4Faults: malformed exports fail with an error naming the problem,
// loaded (Load) or mapped (Map) alike.
func TestModelOptNVFP4Faults(t *testing.T) {
	_, nvDir, cfg, m := tinyModelOpt(t)
	const q0 = weights.DecoderPrefix + "layers.0.self_attn.q_proj"
	edit := func(f func(e *stEntry) bool) []stEntry {
		var out []stEntry
		for _, e := range m.entries {
			e := e
			if f(&e) {
				out = append(out, e)
			}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		entries []stEntry
		hfQuant string
		want    []string
	}{
		{"wrong scale shape", edit(func(e *stEntry) bool {
			if e.name == q0+".weight_scale" {
				e.shape = []int{e.shape[0] / 2, e.shape[1] * 2}
			}
			return true
		}), hfQuantNVFP4, []string{q0 + ".weight_scale", "shape"}},
		{"missing weight_scale_2", edit(func(e *stEntry) bool { return e.name != q0+".weight_scale_2" }), hfQuantNVFP4,
			[]string{"missing tensor " + q0 + ".weight_scale_2"}},
		{"missing expert", edit(func(e *stEntry) bool { return !strings.Contains(e.name, "layers.1.experts.3.up_proj") }), hfQuantNVFP4,
			[]string{"layers.1.experts.3.up_proj.weight"}},
		{"scale dtype", edit(func(e *stEntry) bool {
			if e.name == q0+".weight_scale" {
				e.dtype = safetensors.U8
			}
			return true
		}), hfQuantNVFP4, []string{q0 + ".weight_scale", "dtype U8", "F8_E4M3"}},
		{"NaN block scale", edit(func(e *stEntry) bool {
			if e.name == q0+".weight_scale" {
				e.data = append([]byte{0x7f}, e.data[1:]...)
			}
			return true
		}), hfQuantNVFP4, []string{q0 + ".weight_scale", "NaN"}},
		{"unknown tensor", append(append([]stEntry{}, m.entries...), stEntry{q0 + ".pre_quant_scale", safetensors.F32, []int{}, f32Scalar(1)}),
			hfQuantNVFP4, []string{"unexpected tensor " + q0 + ".pre_quant_scale"}},
		{"unknown quant_algo", m.entries, strings.Replace(hfQuantNVFP4, `"NVFP4"`, `"NVFP4_AWQ"`, 1),
			[]string{"quant_algo \"NVFP4_AWQ\"", "not supported"}},
		{"group size", m.entries, strings.Replace(hfQuantNVFP4, `"group_size": 16`, `"group_size": 32`, 1),
			[]string{"group_size 32"}},
		{"quantized but excluded", m.entries, strings.Replace(hfQuantNVFP4, `"lm_head"`, `"model.decoder.layers.0.self_attn.*"`, 1),
			[]string{q0, "exclude_modules"}},
		{"no quant config", m.entries, "", []string{"hf_quant_config.json", "quantization_config"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeModelOpt(t, nvDir, c.entries, c.hfQuant)
			_, err := weights.Load(nvDir, cfg)
			if err == nil {
				t.Fatal("loaded")
			}
			mapped, ok, merr := weights.Map(nvDir, cfg, nil)
			if merr == nil {
				mapped.Close()
				t.Fatalf("mapped (ok %v)", ok)
			}
			for _, w := range c.want {
				for _, e := range []error{err, merr} {
					if !strings.Contains(e.Error(), w) {
						t.Errorf("error %q does not mention %q", e, w)
					}
				}
			}
		})
	}
}
