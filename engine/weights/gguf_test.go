package weights_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// ggufConfig is config.Tiny widened to hidden 256, so that the k-quants (256-value
// super-blocks) apply to every projection that reads the hidden state.
func ggufConfig() *config.Model {
	cfg := config.Tiny()
	cfg.Text.HiddenSize = 256
	return cfg
}

// ggufType picks the stored type of each canonical tensor: a mix like a Q4_K_M file
// (Q4_K projections, Q5_0/Q8_0 where rows are not 256 long, Q6_K embedding, F32
// norms) plus every other format the loader reads.
func ggufType(name string, shape []int) gguf.Type {
	cols := shape[len(shape)-1]
	switch {
	case len(shape) == 1 && strings.HasSuffix(name, "router.scale"):
		return gguf.F16
	case len(shape) == 1 && strings.HasSuffix(name, "per_expert_scale"):
		return gguf.BF16
	case len(shape) == 1 || strings.Contains(name, "router.proj"):
		return gguf.F32
	case name == "embed_tokens.weight":
		return gguf.Q6_K
	case strings.HasSuffix(name, "k_proj.weight"):
		return gguf.Q5_K
	case strings.HasSuffix(name, "v_proj.weight"):
		return gguf.Q8_0
	case name == "self_conditioning.gate_proj.weight":
		return gguf.Q4_0
	case name == "self_conditioning.up_proj.weight":
		return gguf.Q4_1
	case name == "self_conditioning.down_proj.weight":
		return gguf.Q5_1
	case strings.HasSuffix(name, "experts.down_proj"):
		return gguf.Q5_0
	case cols%gguf.QK_K == 0 && strings.Contains(name, ".mlp."):
		return gguf.Q3_K
	case cols%gguf.QK_K == 0 && strings.HasSuffix(name, "q_proj.weight"):
		return gguf.Q2_K
	case cols%gguf.QK_K == 0 && strings.HasSuffix(name, "o_proj.weight"):
		return gguf.IQ4_XS
	case strings.HasSuffix(name, "o_proj.weight"):
		return gguf.IQ4_NL
	case cols%gguf.QK_K == 0:
		return gguf.Q4_K
	}
	return gguf.Q8_0
}

type ggufFixture struct {
	path   string
	cfg    *config.Model
	src    *weights.Set
	stored map[string][]float32 // canonical name → the GGUF's own dequantization
	types  map[string]gguf.Type
}

// writeGGUF writes random weights for cfg as a diffusion-gemma GGUF in dir, with
// llama.cpp's names. split stores experts.gate_up_proj as ffn_gate_exps + ffn_up_exps;
// edit may change the tensor list before writing.
func writeGGUF(t *testing.T, dir string, cfg *config.Model, split bool, edit func([]gguf.WriteTensor) []gguf.WriteTensor) *ggufFixture {
	t.Helper()
	fx := &ggufFixture{path: filepath.Join(dir, "model-Q4_K_M.gguf"), cfg: cfg, src: weights.Random(cfg, 1),
		stored: map[string][]float32{}, types: map[string]gguf.Type{}}
	var ts []gguf.WriteTensor
	add := func(name string, shape []int, typ gguf.Type, vals []float32) []float32 {
		raw, err := gguf.Quantize(typ, vals)
		if err != nil {
			t.Fatalf("quantize %s: %v", name, err)
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Shape: shape, Type: typ, Data: raw})
		back := make([]float32, len(vals))
		if err := gguf.Dequantize(typ, raw, back); err != nil {
			t.Fatal(err)
		}
		return back
	}
	for _, sp := range weights.Specs(cfg) {
		vals := flatOf(t, fx.src, sp.Name)
		// Perturb norms and scales away from 1 so that a mix-up shows.
		if sp.Init == weights.InitOnes {
			for i := range vals {
				vals[i] = 1 + 0.01*float32((i*7+len(sp.Name))%13)
			}
		}
		typ := ggufType(sp.Name, sp.Shape)
		fx.types[sp.Name] = typ
		name := sp.GGUF
		if len(sp.GGUFSplit) == 2 && split {
			gate, up := sp.GGUFSplit[0], sp.GGUFSplit[1]
			e, f2, d := sp.Shape[0], sp.Shape[1]/2, sp.Shape[2]
			var g, u []float32
			for x := 0; x < e; x++ {
				g = append(g, vals[x*2*f2*d:(x*2+1)*f2*d]...)
				u = append(u, vals[(x*2+1)*f2*d:(x+1)*2*f2*d]...)
			}
			gb := add(gate, []int{e, f2, d}, typ, g)
			ub := add(up, []int{e, f2, d}, typ, u)
			var back []float32
			for x := 0; x < e; x++ {
				back = append(back, gb[x*f2*d:(x+1)*f2*d]...)
				back = append(back, ub[x*f2*d:(x+1)*f2*d]...)
			}
			fx.stored[sp.Name] = back
			continue
		}
		fx.stored[sp.Name] = add(name, sp.Shape, typ, vals)
	}
	// The full layers' proportional RoPE factors, as llama.cpp's converter writes them.
	rf := gguf.RopeFreqValues(cfg)
	add(gguf.RopeFreqs, []int{len(rf)}, gguf.F32, rf)
	if edit != nil {
		ts = edit(ts)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, gguf.Metadata(cfg, "tiny"), ts, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fx.path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

func flatOf(t *testing.T, s *weights.Set, name string) []float32 {
	t.Helper()
	f, err := s.Float32(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	f.ConstFlatData(func(a any) { out = append(out, a.([]float32)...) })
	return out
}

func relErr(got, want []float32) (rel, maxAbs float64) {
	var num, den float64
	for i := range got {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
		maxAbs = max(maxAbs, math.Abs(d))
	}
	if den == 0 {
		return math.Sqrt(num), maxAbs
	}
	return math.Sqrt(num / den), maxAbs
}

// TestLoadGGUF: every tensor of a Q4_K_M-like file loads as the GGUF's own
// dequantization — exactly for float, Q8_0, Q4_0 and (with ExactScales) Q4_1/Q4_K
// (affine int4), within bf16 rounding of the affine scales and minimums by default,
// and within the requantization error for the rest.
func TestLoadGGUF(t *testing.T) {
	for _, c := range []struct {
		split bool
		opts  weights.GGUFOptions
	}{{false, weights.GGUFOptions{}}, {true, weights.GGUFOptions{}}, {false, weights.GGUFOptions{ExactScales: true}}} {
		split := c.split
		dir := t.TempDir()
		fx := writeGGUF(t, dir, ggufConfig(), split, nil)
		set, err := weights.LoadGGUFWith(fx.path, fx.cfg, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range weights.Specs(fx.cfg) {
			got := flatOf(t, set, sp.Name)
			if len(got) != len(fx.stored[sp.Name]) {
				t.Fatalf("%s: %d values, want %d", sp.Name, len(got), len(fx.stored[sp.Name]))
			}
			typ := fx.types[sp.Name]
			vsGGUF, _ := relErr(got, fx.stored[sp.Name])
			vsSrc, _ := relErr(got, flatOf(t, fx.src, sp.Name))
			q, isQuant := set.Quant[sp.Name]
			switch {
			case typ.IsFloat() || typ == gguf.Q8_0 || typ == gguf.Q4_0 || !sp.Quantizable ||
				(c.opts.ExactScales && (typ == gguf.Q4_1 || typ == gguf.Q4_K)):
				// Float kept, Q8_0/Q4_0 transcoded, Q4_1/Q4_K as affine int4 with f32
				// scales, or dequantized: exactly the GGUF's values.
				if vsGGUF != 0 {
					t.Errorf("%s (%s → %v): differs from the GGUF's dequantization by %.3g", sp.Name, typ, q, vsGGUF)
				}
			case typ == gguf.Q4_1 || typ == gguf.Q4_K:
				// Affine int4 with bf16 scales and minimums (requantized int4 was 0.10).
				if vsGGUF > 0.01 {
					t.Errorf("%s (%s → %v): error vs the GGUF's dequantization %.4f, want ≤ 0.01", sp.Name, typ, q, vsGGUF)
				}
			default:
				if vsGGUF > 0.15 {
					t.Errorf("%s (%s → %v): requantization error %.3f", sp.Name, typ, q, vsGGUF)
				}
			}
			// The type's own error (gguf.Quantize's round-to-nearest): 2 and 3 bits lose more.
			srcBound := map[gguf.Type]float64{gguf.Q2_K: 0.45, gguf.Q3_K: 0.25}[typ]
			if !typ.IsFloat() && vsSrc > max(0.2, srcBound) {
				t.Errorf("%s (%s): error vs the source weights %.3f", sp.Name, typ, vsSrc)
			}
			wantQuant := sp.Quantizable && !typ.IsFloat()
			if isQuant != wantQuant {
				t.Errorf("%s (%s): quantized %v, want %v", sp.Name, typ, isQuant, wantQuant)
			}
			if isQuant {
				wantBits := 4
				if typ == gguf.Q8_0 || typ == gguf.Q6_K {
					wantBits = 8
				}
				if q.Bits != wantBits || q.GroupSize != 32 {
					t.Errorf("%s (%s): stored as %v, want int%d g32", sp.Name, typ, q, wantBits)
				}
				affine := typ == gguf.Q4_1 || typ == gguf.Q4_K
				bf16 := !c.opts.ExactScales && wantBits == 4 && typ != gguf.Q4_0
				if (q.Format == quant.Affine) != affine || q.BF16Scales != bf16 {
					t.Errorf("%s (%s): stored as %v, want affine %v, bf16 scales %v", sp.Name, typ, q, affine, bf16)
				}
				_, hasMin := set.Tensors[sp.Name+quant.MinSuffix]
				if hasMin != affine {
					t.Errorf("%s (%s): qmin present %v, want %v", sp.Name, typ, hasMin, affine)
				}
			}
			if !isQuant {
				if dt := set.Tensors[sp.Name].DType().String(); (typ == gguf.BF16) != (dt == "BFloat16") {
					t.Errorf("%s (%s): loaded as %s", sp.Name, typ, dt)
				}
			}
		}
		if t.Failed() {
			t.Fatalf("split experts %v, %+v", split, c.opts)
		}
	}
}

// TestGGUFConfig: the metadata gives back the configuration it was written from.
func TestGGUFConfig(t *testing.T) {
	cfg := ggufConfig()
	fx := writeGGUF(t, t.TempDir(), cfg, false, nil)
	f, err := gguf.Open(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := weights.CheckGGUFConfig(f, cfg); err != nil {
		t.Fatal(err)
	}
	g, w := got.Generation, cfg.Generation
	if g.TMin != w.TMin || g.TMax != w.TMax || g.MaxDenoisingSteps != w.MaxDenoisingSteps || g.EntropyBound != w.EntropyBound ||
		g.ConfidenceThreshold != w.ConfidenceThreshold || got.Text.RMSNormEps != cfg.Text.RMSNormEps {
		t.Errorf("generation %+v, want %+v (eps %v)", g, w, got.Text.RMSNormEps)
	}
	other := ggufConfig()
	other.Text.SlidingWindow++
	if err := weights.CheckGGUFConfig(f, other); err == nil || !strings.Contains(err.Error(), "sliding_window") {
		t.Errorf("mismatched config.json: %v", err)
	}
}

func TestLoadGGUFFaults(t *testing.T) {
	cfg := ggufConfig()
	drop := func(name string) func([]gguf.WriteTensor) []gguf.WriteTensor {
		return func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			var out []gguf.WriteTensor
			for _, x := range ts {
				if x.Name != name {
					out = append(out, x)
				}
			}
			return out
		}
	}
	retype := func(name string, typ gguf.Type, bytes int) func([]gguf.WriteTensor) []gguf.WriteTensor {
		return func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			for i := range ts {
				if ts[i].Name == name {
					ts[i].Type, ts[i].Data = typ, make([]byte, bytes)
				}
			}
			return ts
		}
	}
	cases := []struct {
		name string
		edit func([]gguf.WriteTensor) []gguf.WriteTensor
		want string
	}{
		{"missing tensor", drop("blk.1.attn_q.weight"), "missing tensor blk.1.attn_q.weight"},
		{"missing encoder scalar", drop("blk.0.enc_layer_output_scale.weight"), "missing tensor blk.0.enc_layer_output_scale.weight"},
		{"unknown tensor", func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			return append(ts, gguf.WriteTensor{Name: "blk.0.attn_gate.weight", Shape: []int{4}, Type: gguf.F32, Data: make([]byte, 16)})
		}, "unknown tensor blk.0.attn_gate.weight"},
		{"untied head", func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			return append(ts, gguf.WriteTensor{Name: "output.weight", Shape: []int{4}, Type: gguf.F32, Data: make([]byte, 16)})
		}, "output.weight"},
		{"v_proj on a full layer", func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			return append(ts, gguf.WriteTensor{Name: "blk.2.attn_v.weight", Shape: []int{32, 256}, Type: gguf.F32, Data: make([]byte, 32*256*4)})
		}, "unexpected tensor blk.2.attn_v.weight"},
		{"unsupported type", retype("blk.0.attn_q.weight", gguf.IQ2_XS, 64*74), "IQ2_XS"},
		{"wrong shape", func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			for i := range ts {
				if ts[i].Name == "output_norm.weight" {
					ts[i].Shape, ts[i].Data = []int{128}, ts[i].Data[:512]
				}
			}
			return ts
		}, "output_norm.weight (norm.weight) has shape [128]"},
	}
	for _, c := range cases {
		fx := writeGGUF(t, t.TempDir(), cfg, false, c.edit)
		set, err := weights.LoadGGUF(fx.path, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			continue
		}
		if set != nil {
			t.Errorf("%s: a Set came back with the error", c.name)
		}
		if !strings.Contains(err.Error(), fx.path) {
			t.Errorf("%s: error %q does not name the file", c.name, err)
		}
		// The host path's reader (weights.Map, which engine.Load uses) refuses it alike.
		if m, ok, err := weights.Map(filepath.Dir(fx.path), cfg, nil); err == nil || m != nil || ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Map = %v, %v, %v; want the error %q and nothing open", c.name, m, ok, err, c.want)
		}
	}

	// A file cut inside the tensor data: refused when opened.
	fx := writeGGUF(t, t.TempDir(), cfg, false, nil)
	b, _ := os.ReadFile(fx.path)
	os.WriteFile(fx.path, b[:len(b)-4096], 0o644)
	if _, err := weights.LoadGGUF(fx.path, cfg); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("truncated file: %v", err)
	}
	if _, _, err := weights.Map(filepath.Dir(fx.path), cfg, nil); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("truncated file, Map: %v", err)
	}
	// Bad magic.
	os.WriteFile(fx.path, append([]byte("GGML"), b[4:]...), 0o644)
	if _, err := weights.LoadGGUF(fx.path, cfg); err == nil || !strings.Contains(err.Error(), "not a GGUF file") {
		t.Errorf("bad magic: %v", err)
	}
	// Wrong architecture.
	var buf bytes.Buffer
	meta := gguf.Metadata(cfg, "tiny")
	meta[0].Value = gguf.Str("gemma4")
	gguf.Write(&buf, meta, nil, 0)
	os.WriteFile(fx.path, buf.Bytes(), 0o644)
	if _, err := weights.LoadGGUF(fx.path, cfg); err == nil || !strings.Contains(err.Error(), "autoregressive Gemma 4") {
		t.Errorf("gemma4 file: %v", err)
	}
}

func TestFindGGUF(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := weights.FindGGUF(dir); ok || err != nil {
		t.Fatalf("empty dir: %v %v", ok, err)
	}
	os.WriteFile(filepath.Join(dir, "mmproj-F16.gguf"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "m-Q4_K_M.gguf"), nil, 0o644)
	if p, ok, err := weights.FindGGUF(dir); !ok || err != nil || filepath.Base(p) != "m-Q4_K_M.gguf" {
		t.Fatalf("one model file: %q %v %v", p, ok, err)
	}
	os.WriteFile(filepath.Join(dir, "m-Q8_0.gguf"), nil, 0o644)
	if _, _, err := weights.FindGGUF(dir); err == nil || !strings.Contains(err.Error(), "several GGUF files") {
		t.Fatalf("two model files: %v", err)
	}
	os.WriteFile(filepath.Join(dir, safetensors.SingleFile), nil, 0o644)
	if _, ok, err := weights.FindGGUF(dir); ok || err != nil {
		t.Fatalf("safetensors present: %v %v", ok, err)
	}
}

// TestEngineLoadGGUF runs the whole path: a model directory with config.json,
// tokenizer.json and a GGUF (no safetensors) loads through engine.Load — on the host
// path, its blocks multiplied as stored — and generates what the GGUF's own
// dequantization generates from a float32 safetensors checkpoint; in graphs (the
// file converted) and without config.json the GGUF metadata stands in for it.
func TestEngineLoadGGUF(t *testing.T) {
	dir := enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 8, MaxSteps: 2})
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Text.HiddenSize = 256
	if err := cfg.Save(dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{safetensors.SingleFile, safetensors.IndexFile} {
		os.Remove(filepath.Join(dir, n))
	}
	fx := writeGGUF(t, dir, cfg, false, nil)

	// The same weights — the GGUF's own dequantization, which the host path multiplies
	// block by block, its Q6_K embedding as the host holds it (int8 in groups of 32,
	// weights.HostHeld) — as a float32 safetensors checkpoint. The products are held to
	// float32's (the integer ones, which round x, have their own tests): with them on,
	// this compared two roundings and passed by luck until a weight changed.
	defer kernels.SetIntProducts(kernels.SetIntProducts(false))
	set := weights.NewSet()
	for _, sp := range weights.Specs(cfg) {
		vals := fx.stored[sp.Name]
		if _, held := weights.HostHeld(fx.types[sp.Name], sp.Name); held {
			vals = int8G32(vals)
		}
		set.Tensors[sp.Name] = tensors.FromFlatDataAndDimensions(vals, sp.Shape...)
	}
	stDir := t.TempDir()
	if err := weights.Save(set, cfg, stDir, weights.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	os.WriteFile(filepath.Join(stDir, "tokenizer.json"), tok, 0o644)

	ctx := context.Background()
	generate := func(dir string, inGraph bool) *engine.Result {
		t.Helper()
		e, err := engine.Load(ctx, engine.Dir(dir), engine.Options{Backend: "go", InGraph: inGraph})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		sampling := e.GenerationDefaults()
		sampling.MaxNewTokens, sampling.MaxSteps = 8, 2
		res, err := e.Generate(ctx, engine.Request{Prompt: "What is Unix?", Seed: 1, Sampling: sampling})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	fromGGUF := generate(dir, false)
	fromST := generate(stDir, false)
	if len(fromGGUF.Tokens) == 0 || fmt.Sprint(fromGGUF.Tokens) != fmt.Sprint(fromST.Tokens) {
		t.Fatalf("GGUF generated %v, its dequantized weights from safetensors %v", fromGGUF.Tokens, fromST.Tokens)
	}
	t.Logf("host path: %d tokens %q", len(fromGGUF.Tokens), fromGGUF.Text)

	os.Remove(filepath.Join(dir, config.ConfigFile))
	inGraph := generate(dir, true)
	if len(inGraph.Tokens) == 0 {
		t.Fatalf("in-graph generation from the GGUF alone produced nothing: %+v", inGraph)
	}
	t.Logf("in graph, config from the GGUF metadata: %d tokens %q", len(inGraph.Tokens), inGraph.Text)
}

// TestGGUFConfig26B: metadata with the 26B model's values (the keys the real Q4_K_M
// file carries: per-layer head_count_kv and sliding_window_pattern, key_length
// 512/256, rope_freqs with 64 rotated pairs of 256) gives the catalog's config.
func TestGGUFConfig26B(t *testing.T) {
	want := catalog.DiffusionGemma26B()
	rf := make([]float32, 256)
	for i := range rf {
		rf[i] = 1e30
		if i < 64 {
			rf[i] = 1
		}
	}
	if got := gguf.RopeFreqValues(want); !slices.Equal(got, rf) {
		t.Fatalf("RopeFreqValues: %v, want %v", got, rf)
	}
	raw, _ := gguf.Quantize(gguf.F32, rf)
	var buf bytes.Buffer
	if err := gguf.Write(&buf, gguf.Metadata(want, "26b"), []gguf.WriteTensor{{Name: gguf.RopeFreqs, Shape: []int{256}, Type: gguf.F32, Data: raw}}, 0); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "26b.gguf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := weights.CheckGGUFConfig(f, want); err != nil {
		t.Fatal(err)
	}
	if r := got.Text.RopeParameters.Full; r.Type != "proportional" || r.PartialRotaryFactor != 0.25 || r.Theta != 1e6 {
		t.Errorf("full-layer rope %+v", r)
	}
	if got.Text.NumKeyValueHeads != 8 || got.Text.NumGlobalKVHeads != 2 || got.Text.HeadDim != 256 || got.Text.GlobalHeadDim != 512 {
		t.Errorf("attention dims %+v", got.Text)
	}
}
