package weights

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func flat32(t *testing.T, s *Set, name string) []float32 {
	t.Helper()
	f, err := s.Float32(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	f.ConstFlatData(func(a any) { out = append(out, a.([]float32)...) })
	return out
}

func TestSpecsTable(t *testing.T) {
	cfg := config.Tiny()
	specs := Specs(cfg)
	byName := map[string]Spec{}
	for _, s := range specs {
		if _, dup := byName[s.Name]; dup {
			t.Fatalf("duplicate spec %s", s.Name)
		}
		byName[s.Name] = s
	}
	tx := cfg.Text
	checks := map[string][]int{
		"embed_tokens.weight":                          {tx.VocabSize, tx.HiddenSize},
		"layers.0.self_attn.q_proj.weight":             {4 * 16, 64},
		"layers.0.self_attn.k_proj.weight":             {2 * 16, 64},
		"layers.0.self_attn.v_proj.weight":             {2 * 16, 64},
		"layers.2.self_attn.q_proj.weight":             {4 * 32, 64},
		"layers.2.self_attn.k_proj.weight":             {1 * 32, 64},
		"layers.2.self_attn.o_proj.weight":             {64, 4 * 32},
		"layers.2.self_attn.k_norm.weight":             {32},
		"layers.1.experts.gate_up_proj":                {16, 64, 64},
		"layers.1.experts.down_proj":                   {16, 64, 32},
		"layers.1.router.per_expert_scale":             {16},
		"encoder.layers.2.layer_scalar":                {1},
		"self_conditioning.down_proj.weight":           {64, 96},
		"layers.1.post_feedforward_layernorm_1.weight": {64},
	}
	for n, want := range checks {
		s, ok := byName[n]
		if !ok {
			t.Errorf("no spec %s", n)
			continue
		}
		if !slices.Equal(s.Shape, want) {
			t.Errorf("%s: shape %v, want %v", n, s.Shape, want)
		}
	}
	if _, ok := byName["layers.2.self_attn.v_proj.weight"]; ok {
		t.Error("full layer has v_proj")
	}
	if s := byName["encoder.layers.1.layer_scalar"]; s.HF != "model.encoder.language_model.layers.1.layer_scalar" {
		t.Errorf("encoder layer scalar HF name %s", s.HF)
	}
	if s := byName["layers.1.experts.down_proj"]; s.HF != "model.decoder.layers.1.experts.down_proj" || s.Alt != "model.encoder.language_model.layers.1.experts.down_proj" {
		t.Errorf("experts names %s / %s", s.HF, s.Alt)
	}
	// 2 global + 3 layers × 23 (sliding) / 22 (full) + 4 self-conditioning.
	if got, want := len(specs), 2+23+23+22+4; got != want {
		t.Errorf("%d specs, want %d", got, want)
	}
}

func TestRandomDeterministic(t *testing.T) {
	cfg := config.Tiny()
	a, b, c := Random(cfg, 7), Random(cfg, 7), Random(cfg, 8)
	x, y, z := flat32(t, a, "layers.0.mlp.up_proj.weight"), flat32(t, b, "layers.0.mlp.up_proj.weight"), flat32(t, c, "layers.0.mlp.up_proj.weight")
	same, diff := true, false
	var sum2 float64
	for i := range x {
		same = same && x[i] == y[i]
		diff = diff || x[i] != z[i]
		sum2 += float64(x[i]) * float64(x[i])
	}
	if !same || !diff {
		t.Fatalf("same seed equal: %v, different seed differs: %v", same, diff)
	}
	std := math.Sqrt(sum2 / float64(len(x)))
	if want := 1 / math.Sqrt(64); math.Abs(std-want) > 0.1*want {
		t.Errorf("std %.4f, want ≈ %.4f", std, want)
	}
	if v := flat32(t, a, "layers.1.layer_scalar"); v[0] != 1 {
		t.Errorf("layer_scalar %v", v)
	}
}

// TestShardedBF16RoundTrip: a checkpoint with the real naming (sharded, bf16,
// index.json, vision tensors, lm_head) loads and equals the saved values.
func TestShardedBF16RoundTrip(t *testing.T) {
	cfg := config.Tiny()
	src := Random(cfg, 1)
	dir := t.TempDir()
	if err := Save(src, cfg, dir, SaveOptions{Shards: 3, DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors.index.json",
		"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	// Add vision tensors and lm_head in an extra shard listed by the index.
	vision := filepath.Join(dir, "model-vision.safetensors")
	if err := safetensors.WriteFile(vision, nil, []safetensors.Named{
		{Name: "model.encoder.vision_tower.encoder.layers.0.mlp.fc1.weight", Tensor: tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4}, 2, 2)},
		{Name: "model.encoder.embed_vision.embedding_projection.weight", Tensor: tensors.FromFlatDataAndDimensions([]float32{1, 2}, 1, 2)},
		{Name: "lm_head.weight", Tensor: tensors.FromFlatDataAndDimensions([]float32{1, 2}, 1, 2)},
	}); err != nil {
		t.Fatal(err)
	}
	editIndex(t, dir, func(m map[string]string) {
		m["model.encoder.vision_tower.encoder.layers.0.mlp.fc1.weight"] = "model-vision.safetensors"
		m["model.encoder.embed_vision.embedding_projection.weight"] = "model-vision.safetensors"
		m["lm_head.weight"] = "model-vision.safetensors"
	})

	lc, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, lc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tensors) != len(Specs(cfg)) {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(Specs(cfg)))
	}
	for _, sp := range Specs(cfg) {
		tt := got.Tensors[sp.Name]
		if tt.DType() != dtypes.BFloat16 {
			t.Fatalf("%s: dtype %s, want BFloat16", sp.Name, tt.DType())
		}
		want := flat32(t, src, sp.Name)
		have := flat32(t, got, sp.Name)
		for i := range want {
			if bfloat16.FromFloat32(want[i]).Float32() != have[i] {
				t.Fatalf("%s[%d] = %v, want %v (bf16 of %v)", sp.Name, i, have[i], bfloat16.FromFloat32(want[i]).Float32(), want[i])
			}
		}
	}
}

func editIndex(t *testing.T, dir string, edit func(map[string]string)) {
	t.Helper()
	p := filepath.Join(dir, safetensors.IndexFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var idx safetensors.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	edit(idx.WeightMap)
	if err := safetensors.WriteIndex(dir, idx); err != nil {
		t.Fatal(err)
	}
}

func TestF32SingleFileAndEncoderPrefix(t *testing.T) {
	cfg := config.Tiny()
	src := Random(cfg, 3)
	dir := t.TempDir()
	// A checkpoint storing the text weights under model.encoder.language_model.* only,
	// with distinct encoder layer scalars, F16 for one tensor.
	var named []safetensors.Named
	for _, sp := range Specs(cfg) {
		name := sp.HF
		if strings.HasPrefix(name, DecoderPrefix) && sp.Alt != "" && !strings.HasSuffix(name, "layer_scalar") {
			name = sp.Alt
		}
		tt := src.Tensors[sp.Name]
		if strings.HasPrefix(sp.Name, "encoder.") {
			tt = tensors.FromFlatDataAndDimensions([]float32{0.5}, 1)
		}
		named = append(named, safetensors.Named{Name: name, Tensor: tt})
	}
	// norm.weight goes in as F16.
	var hs []safetensors.Header
	for _, nt := range named {
		dt, _ := safetensors.FromGoMLX(nt.Tensor.DType())
		if nt.Name == EncoderPrefix+"norm.weight" {
			dt = safetensors.F16
		}
		hs = append(hs, safetensors.Header{Name: nt.Name, DType: dt, Shape: nt.Tensor.Shape().Dimensions})
	}
	w, err := safetensors.Create(filepath.Join(dir, "model.safetensors"), nil, hs)
	if err != nil {
		t.Fatal(err)
	}
	for i, nt := range named {
		if hs[i].DType == safetensors.F16 {
			var raw []byte
			for _, v := range flat32(t, src, "norm.weight") {
				raw = binary.LittleEndian.AppendUint16(raw, safetensors.F32ToF16(v*0.5))
			}
			err = w.Write(nt.Name, raw)
		} else {
			err = w.WriteTensor(nt.Name, nt.Tensor)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if nw := got.Tensors["norm.weight"]; nw.DType() != dtypes.Float32 || flat32(t, got, "norm.weight")[3] != 0.5 {
		t.Errorf("F16 norm.weight: %s %v", nw.DType(), flat32(t, got, "norm.weight")[:4])
	}
	if v := flat32(t, got, "encoder.layers.0.layer_scalar"); v[0] != 0.5 {
		t.Errorf("encoder layer scalar %v, want 0.5", v)
	}
	if v := flat32(t, got, "layers.0.layer_scalar"); v[0] != 1 {
		t.Errorf("decoder layer scalar %v, want 1", v)
	}
	a, b := flat32(t, src, "layers.2.experts.gate_up_proj"), flat32(t, got, "layers.2.experts.gate_up_proj")
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("experts differ at %d", i)
		}
	}
	if got.Tensors["layers.0.mlp.up_proj.weight"].DType() != dtypes.Float32 {
		t.Error("F32 not kept")
	}
}

func TestEncoderScalarFallback(t *testing.T) {
	cfg := config.Tiny()
	dir := t.TempDir()
	src := Random(cfg, 3)
	var named []safetensors.Named
	for _, sp := range Specs(cfg) {
		if strings.HasPrefix(sp.Name, "encoder.") {
			continue // a checkpoint without the encoder's own scalars
		}
		named = append(named, safetensors.Named{Name: sp.HF, Tensor: src.Tensors[sp.Name]})
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), nil, named); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Tensors["encoder.layers.1.layer_scalar"]; !ok {
		t.Fatal("encoder layer scalar not filled from the decoder's")
	}
}

// TestLoadErrors: each broken checkpoint gives an error naming the file and the tensor,
// and no Set.
func TestLoadErrors(t *testing.T) {
	cfg := config.Tiny()
	src := Random(cfg, 2)
	shard2 := "model-00002-of-00003.safetensors"
	cases := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   []string
	}{
		{"wrong shape", func(t *testing.T, dir string) {
			rewriteShard(t, dir, shard2, func(h map[string]any) string {
				for _, k := range sortedKeys(h) {
					if e, ok := h[k].(map[string]any); ok && strings.HasSuffix(k, "_proj.weight") {
						s := e["shape"].([]any)
						if s[0] != s[1] {
							e["shape"] = []any{s[1], s[0]}
							return k
						}
					}
				}
				t.Fatal("no rectangular projection in shard 2")
				return ""
			})
		}, []string{shard2, "_proj.weight has shape [", "want ["}},
		{"missing tensor", func(t *testing.T, dir string) {
			editIndex(t, dir, func(m map[string]string) { delete(m, "model.decoder.layers.1.mlp.down_proj.weight") })
		}, []string{"model.safetensors.index.json", "missing tensor model.decoder.layers.1.mlp.down_proj.weight"}},
		{"truncated file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, shard2)
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()-10); err != nil {
				t.Fatal(err)
			}
		}, []string{shard2, "tensor model.", "truncated"}},
		{"malformed header", func(t *testing.T, dir string) {
			p := filepath.Join(dir, shard2)
			b, _ := os.ReadFile(p)
			b[8] = '['
			os.WriteFile(p, b, 0o644)
		}, []string{shard2, "malformed header"}},
		{"unexpected tensor", func(t *testing.T, dir string) {
			x := filepath.Join(dir, "extra.safetensors")
			safetensors.WriteFile(x, nil, []safetensors.Named{{Name: "model.decoder.layers.7.input_layernorm.weight", Tensor: tensors.FromFlatDataAndDimensions(make([]float32, 64), 64)}})
			editIndex(t, dir, func(m map[string]string) { m["model.decoder.layers.7.input_layernorm.weight"] = "extra.safetensors" })
		}, []string{"extra.safetensors", "unexpected tensor model.decoder.layers.7.input_layernorm.weight"}},
		{"missing shard", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, shard2))
		}, []string{shard2, "missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Save(src, cfg, dir, SaveOptions{Shards: 3, DType: "bf16"}); err != nil {
				t.Fatal(err)
			}
			c.break_(t, dir)
			set, err := Load(dir, cfg)
			if err == nil || set != nil {
				t.Fatalf("Load = %v, %v; want an error and no set", set, err)
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// rewriteShard edits a shard's JSON header in place (keeping data), returning nothing.
func rewriteShard(t *testing.T, dir, shard string, edit func(map[string]any) string) {
	t.Helper()
	p := filepath.Join(dir, shard)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	var h map[string]any
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	js, _ := json.Marshal(h)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	out = append(append(out, js...), b[8+n:]...)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestQuantizedCheckpoint(t *testing.T) {
	cfg := config.Tiny()
	src := Random(cfg, 4)
	for _, prof := range []quant.Profile{quant.Int8Profile, quant.Int4Profile} {
		t.Run(string(prof), func(t *testing.T) {
			q, err := src.Quantize(cfg, prof)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := Save(q, cfg, dir, SaveOptions{Shards: 2, DType: "bf16"}); err != nil {
				t.Fatal(err)
			}
			lc, err := config.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if lc.Quantization == nil || lc.Quantization.Profile != string(prof) {
				t.Fatalf("quantization_config %+v", lc.Quantization)
			}
			got, err := Load(dir, lc)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Quant) != len(q.Quant) || len(got.Quant) == 0 {
				t.Fatalf("%d quantized tensors loaded, %d saved", len(got.Quant), len(q.Quant))
			}
			wantExperts := quant.Int8
			if prof == quant.Int4Profile {
				wantExperts = quant.Int4
			}
			if s := got.Quant["layers.0.experts.gate_up_proj"]; s != wantExperts {
				t.Errorf("experts spec %v, want %v", s, wantExperts)
			}
			if s := got.Quant["layers.0.self_attn.q_proj.weight"]; s != quant.Int8 {
				t.Errorf("q_proj spec %v, want int8", s)
			}
			if _, ok := got.Quant["layers.0.router.proj.weight"]; ok {
				t.Error("router quantized")
			}
			var streamed, streamedQ int
			if err := Each(dir, lc, func(name string, tt *tensors.Tensor, qs *quant.Spec) error {
				streamed++
				if qs != nil {
					streamedQ++
					if *qs != got.Quant[strings.TrimSuffix(name, quant.WeightSuffix)] {
						t.Errorf("Each: %s spec %v", name, *qs)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if streamed != len(got.Tensors) || streamedQ != len(got.Quant) {
				t.Errorf("Each streamed %d tensors (%d quantized), Load has %d (%d)", streamed, streamedQ, len(got.Tensors), len(got.Quant))
			}
			a, b := flat32(t, q, "layers.1.experts.down_proj"), flat32(t, got, "layers.1.experts.down_proj")
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("dequantized values differ after save/load at %d: %v vs %v", i, a[i], b[i])
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	cfg := config.Tiny()
	for hf, want := range map[string]string{
		"model.decoder.layers.1.self_attn.q_proj.weight":                "layers.1.self_attn.q_proj.weight",
		"model.encoder.language_model.layers.1.self_attn.q_proj.weight": "layers.1.self_attn.q_proj.weight",
		"model.encoder.language_model.layers.1.layer_scalar":            "encoder.layers.1.layer_scalar",
		"model.decoder.layers.1.layer_scalar":                           "layers.1.layer_scalar",
		"model.decoder.layers.0.experts.gate_up_proj.qweight":           "layers.0.experts.gate_up_proj.qweight",
	} {
		got, ign, ok := Classify(cfg, hf)
		if got != want || ign || !ok {
			t.Errorf("Classify(%s) = %q %v %v, want %q", hf, got, ign, ok, want)
		}
		back, _ := HFName(cfg, got)
		if !strings.HasPrefix(hf, "model.encoder.language_model.layers.1.self") && back != hf {
			t.Errorf("HFName(%s) = %s, want %s", got, back, hf)
		}
	}
	if _, ign, _ := Classify(cfg, "model.encoder.vision_tower.x"); !ign {
		t.Error("vision not ignored")
	}
	if _, _, ok := Classify(cfg, "model.decoder.layers.2.self_attn.v_proj.weight"); ok {
		t.Error("v_proj on a full layer accepted")
	}
}

// TestQuantizeCheckpoint: the streaming converter's output loads and equals quantizing
// the loaded weights in memory; vision tensors and extra files survive.
func TestQuantizeCheckpoint(t *testing.T) {
	cfg := config.Tiny()
	src := t.TempDir()
	if err := Save(Random(cfg, 5), cfg, src, SaveOptions{Shards: 2, DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte(`{"x":1}`), 0o644)
	vis := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4}, 2, 2)
	safetensors.WriteFile(filepath.Join(src, "vision.safetensors"), nil, []safetensors.Named{{Name: "model.encoder.vision_tower.w", Tensor: vis}})
	editIndex(t, src, func(m map[string]string) { m["model.encoder.vision_tower.w"] = "vision.safetensors" })
	ref, err := Load(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, prof := range []quant.Profile{quant.Int8Profile, quant.Int4Profile} {
		t.Run(string(prof), func(t *testing.T) {
			dst := t.TempDir()
			var calls int
			var last, tot int64
			err := QuantizeCheckpoint(t.Context(), src, dst, prof, func(d, n int64) { calls, last, tot = calls+1, d, n })
			if err != nil {
				t.Fatal(err)
			}
			if calls == 0 || last != tot {
				t.Errorf("progress: %d calls, last %d of %d", calls, last, tot)
			}
			lc, err := config.Load(dst)
			if err != nil {
				t.Fatal(err)
			}
			if lc.Quantization == nil || lc.Quantization.Profile != string(prof) {
				t.Fatalf("quantization_config %+v", lc.Quantization)
			}
			got, err := Load(dst, lc)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Quantize(cfg, prof)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Quant) != len(want.Quant) {
				t.Fatalf("%d quantized, want %d", len(got.Quant), len(want.Quant))
			}
			for _, n := range []string{"layers.0.experts.gate_up_proj", "embed_tokens.weight", "layers.2.self_attn.o_proj.weight", "norm.weight"} {
				a, b := flat32(t, want, n), flat32(t, got, n)
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("%s[%d]: %v, want %v", n, i, b[i], a[i])
					}
				}
			}
			if b, err := os.ReadFile(filepath.Join(dst, "tokenizer.json")); err != nil || string(b) != `{"x":1}` {
				t.Errorf("tokenizer.json not copied: %v", err)
			}
			// Every file of the model is shared data, rw-r--r--, the copied ones too
			// (they were copied through CreateTemp's rw-------), and nothing but the
			// model is left in its folder.
			ents, _ := os.ReadDir(dst)
			for _, e := range ents {
				st, err := os.Stat(filepath.Join(dst, e.Name()))
				if err != nil || st.Mode().Perm() != 0o644 || strings.HasPrefix(e.Name(), ".") {
					t.Errorf("%s: mode %v, %v", e.Name(), st.Mode().Perm(), err)
				}
			}
			ck, err := safetensors.OpenCheckpoint(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			if _, _, ok := ck.Lookup("model.encoder.vision_tower.w"); !ok {
				t.Error("vision tensor dropped")
			}
			var srcBytes, dstBytes int64
			for _, d := range []string{src, dst} {
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					if strings.HasSuffix(e.Name(), ".safetensors") {
						st, _ := os.Stat(filepath.Join(d, e.Name()))
						if d == src {
							srcBytes += st.Size()
						} else {
							dstBytes += st.Size()
						}
					}
				}
			}
			t.Logf("%s: %d → %d bytes (%.2f×)", prof, srcBytes, dstBytes, float64(dstBytes)/float64(srcBytes))
			if dstBytes >= srcBytes {
				t.Errorf("quantized checkpoint not smaller: %d ≥ %d", dstBytes, srcBytes)
			}
			if err := QuantizeCheckpoint(t.Context(), dst, t.TempDir(), prof, nil); err == nil {
				t.Error("re-quantizing a quantized checkpoint accepted")
			}
		})
	}
}

func TestLoadFS(t *testing.T) {
	cfg := config.Tiny()
	dir := t.TempDir()
	src := Random(cfg, 6)
	if err := Save(src, cfg, filepath.Join(dir, "mini"), SaveOptions{DType: "f32"}); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	lc, err := config.LoadFS(fsys, "mini")
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadFS(fsys, "mini", lc)
	if err != nil {
		t.Fatal(err)
	}
	a, b := flat32(t, src, "embed_tokens.weight"), flat32(t, got, "embed_tokens.weight")
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("embed_tokens[%d] %v, want %v", i, b[i], a[i])
		}
	}
	if got.Bytes() != src.Bytes() {
		t.Errorf("Bytes %d, want %d", got.Bytes(), src.Bytes())
	}
	n := 0
	for range got.All() {
		n++
	}
	if n != len(Specs(cfg)) {
		t.Errorf("All yields %d, want %d", n, len(Specs(cfg)))
	}
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestReleasedModelSpecs: for the 26B-A4B config the table lists the 691 text tensors
// of the released checkpoint (1047 minus 356 vision tensors) and ≈25.2B parameters
// (the model card's count of the language model).
func TestReleasedModelSpecs(t *testing.T) {
	specs := Specs(released26B(t))
	var params int64
	for _, s := range specs {
		n := int64(1)
		for _, d := range s.Shape {
			n *= int64(d)
		}
		params += n
	}
	if len(specs) != 691 {
		t.Errorf("%d tensors, want 691", len(specs))
	}
	if params < 25.0e9 || params > 25.4e9 {
		t.Errorf("%d parameters, want ≈ 25.2e9", params)
	}
	t.Logf("26B-A4B: %d text tensors, %.3fB parameters", len(specs), float64(params)/1e9)
}
