package weights_test

import (
	"encoding/json"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// quantizeExperts returns src with every expert weight stored as spec (symmetric or
// affine int4), the rest shared.
func quantizeExperts(t *testing.T, cfg *config.Model, src *weights.Set, spec quant.Spec) *weights.Set {
	t.Helper()
	out := weights.NewSet()
	for k, v := range src.Tensors {
		out.Tensors[k] = v
	}
	for _, sp := range weights.Specs(cfg) {
		if !strings.Contains(sp.Name, ".experts.") {
			continue
		}
		tt := src.Tensors[sp.Name]
		delete(out.Tensors, sp.Name)
		if spec.HasMin() {
			qw, qs, qm, err := quant.QuantizeAffine(tt, spec)
			if err != nil {
				t.Fatal(err)
			}
			out.Tensors[sp.Name+quant.WeightSuffix], out.Tensors[sp.Name+quant.ScaleSuffix], out.Tensors[sp.Name+quant.MinSuffix] = qw, qs, qm
		} else {
			qw, qs, err := quant.Quantize(tt, spec)
			if err != nil {
				t.Fatal(err)
			}
			out.Tensors[sp.Name+quant.WeightSuffix], out.Tensors[sp.Name+quant.ScaleSuffix] = qw, qs
		}
		out.Quant[sp.Name] = spec
	}
	return out
}

// dequantizedTwin is the Float32 Set of s's weights as s's format gives them.
func dequantizedTwin(t *testing.T, cfg *config.Model, s *weights.Set) *weights.Set {
	t.Helper()
	out := weights.NewSet()
	for _, sp := range weights.Specs(cfg) {
		f, err := s.Float32(sp.Name)
		if err != nil {
			t.Fatal(err)
		}
		out.Tensors[sp.Name] = f
	}
	return out
}

// runnerLogits runs the encoder on a prompt and two decoder steps (the second with
// self-conditioning) and returns every logit, on the host path or in the graph.
func runnerLogits(t *testing.T, b backends.Backend, cfg *config.Model, s *weights.Set, host bool) []float32 {
	t.Helper()
	ctx := mlctx.New()
	if err := model.LoadSet(ctx, s); err != nil {
		t.Fatal(err)
	}
	r, err := model.NewRunner(b, &cfg.Text, ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.HostDecoder, r.HostHead = host, host
	return passLogits(t, cfg, r)
}

// hostLogits is runnerLogits on the host model reading src (a mapped checkpoint).
func hostLogits(t *testing.T, cfg *config.Model, src model.HostSource) []float32 {
	t.Helper()
	r, err := model.NewHostRunner(&cfg.Text, src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return passLogits(t, cfg, r)
}

// passLogits is runnerLogits' passes on r.
func passLogits(t *testing.T, cfg *config.Model, r *model.Runner) []float32 {
	t.Helper()
	out, err := r.Encode([]int{2, 17, 40, 99, 5})
	if err != nil {
		t.Fatal(err)
	}
	canvas := make([]int, cfg.CanvasLength)
	for i := range canvas {
		canvas[i] = (i*37 + 11) % cfg.Text.VocabSize
	}
	l1, soft, err := r.Decode(canvas, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	l2, _, err := r.Decode(canvas, soft, 1)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(out, l1...), l2...)
}

// TestInt4Formats: int4 with BF16 scales (the int4 profile's new default), int4 with
// Float32 scales (the layout every earlier int4 checkpoint has), and affine int4 with
// Float32 and BF16 scales and minimums each save, load back as the same format, and
// give the runner's logits — host decoder and in-graph dequantization — bit for bit
// equal to a Float32 model of their dequantized weights.
func TestInt4Formats(t *testing.T) {
	defer kernels.SetIntProducts(kernels.SetIntProducts(false)) // bit for bit needs the float32 products on both sides
	cfg := ggufConfig()
	src := weights.Random(cfg, 4)
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	profile, err := src.Quantize(cfg, quant.Int4Profile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		set  *weights.Set
		want quant.Spec // of the experts
	}{
		{"int4 profile (bf16 scales)", profile, quant.Int4},
		{"int4 f32 scales", quantizeExperts(t, cfg, src, quant.Int4F32), quant.Int4F32},
		{"affine f32", quantizeExperts(t, cfg, src, quant.Int4Affine), quant.Int4Affine},
		{"affine bf16", quantizeExperts(t, cfg, src, quant.Spec{Bits: 4, GroupSize: 32, Format: quant.Affine, BF16Scales: true}),
			quant.Spec{Bits: 4, GroupSize: 32, Format: quant.Affine, BF16Scales: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := weights.Save(c.set, cfg, dir, weights.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			loaded, err := weights.Load(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			name := "layers.0.experts.gate_up_proj"
			if got := loaded.Quant[name]; got != c.want {
				t.Fatalf("%s loads as %v, want %v", name, got, c.want)
			}
			if qs := loaded.Tensors[name+quant.ScaleSuffix]; qs.DType() != c.want.ScaleDType() {
				t.Errorf("qscale stored as %s, want %s", qs.DType(), c.want.ScaleDType())
			}
			twin := dequantizedTwin(t, cfg, loaded)
			for _, host := range []bool{true, false} {
				got, want := runnerLogits(t, b, cfg, loaded, host), runnerLogits(t, b, cfg, twin, host)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("host %v: logit %d: %v, dequantized float32 twin %v", host, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// TestOldInt4Checkpoint: a checkpoint written the way every int4 checkpoint was before
// BF16 scales (F32 qscale, written here tensor by tensor with the safetensors writer,
// not by this package's Save) loads as Int4F32 and dequantizes to exactly
// (nibble − 8)·scale, computed here from the raw bytes.
func TestOldInt4Checkpoint(t *testing.T) {
	cfg := ggufConfig()
	src := weights.Random(cfg, 5)
	dir := t.TempDir()
	var named []safetensors.Named
	type raw struct {
		nibbles []byte
		scales  []float32
	}
	want := map[string]raw{}
	for _, sp := range weights.Specs(cfg) {
		tt := src.Tensors[sp.Name]
		if !strings.Contains(sp.Name, ".experts.") {
			named = append(named, safetensors.Named{Name: sp.HF, Tensor: tt})
			continue
		}
		qw, qs, err := quant.Quantize(tt, quant.Int4F32)
		if err != nil {
			t.Fatal(err)
		}
		if qs.DType() != dtypes.Float32 {
			t.Fatalf("Int4F32 scales are %s", qs.DType())
		}
		want[sp.Name] = raw{tensors.MustCopyFlatData[uint8](qw), tensors.MustCopyFlatData[float32](qs)}
		named = append(named, safetensors.Named{Name: sp.HF + ".qweight", Tensor: qw}, safetensors.Named{Name: sp.HF + ".qscale", Tensor: qs})
	}
	if err := safetensors.WriteFile(filepath.Join(dir, safetensors.SingleFile), map[string]string{"format": "pt"}, named); err != nil {
		t.Fatal(err)
	}
	c := *cfg
	c.Quantization = &config.Quantization{QuantMethod: config.QuantMethod, Profile: "int4", GroupSize: 32}
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	loaded, err := weights.Load(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if got := loaded.Quant[name]; got != quant.Int4F32 {
			t.Fatalf("%s loads as %v, want %v", name, got, quant.Int4F32)
		}
		got := flatOf(t, loaded, name)
		for i, v := range got {
			nib := w.nibbles[i/2] & 15
			if i%2 == 1 {
				nib = w.nibbles[i/2] >> 4
			}
			if e := float32(int(nib)-8) * w.scales[i/32]; v != e {
				t.Fatalf("%s element %d: %v, want %v", name, i, v, e)
			}
		}
	}
	// The config written above is what older Darkroom wrote; the file's header too.
	hdr, _ := os.ReadFile(filepath.Join(dir, safetensors.SingleFile))
	var n uint64
	for i := 7; i >= 0; i-- {
		n = n<<8 | uint64(hdr[i])
	}
	var h map[string]map[string]any
	if err := json.Unmarshal(hdr[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	if dt := h["model.decoder.layers.0.experts.gate_up_proj.qscale"]["dtype"]; dt != "F32" {
		t.Fatalf("old-layout qscale stored as %v", dt)
	}
}
