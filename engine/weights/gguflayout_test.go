package weights_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// TestGGUFLayoutCounts holds a file's layout (weights.ReadGGUFLayout, and the mapped
// file's own) to the loader: a file of types no llama.cpp mix gives (the fixture's
// Q2_K, Q3_K, IQ4_NL, Q4_0 … beside Q4_K, Q6_K, Q8_0) has each tensor's type as
// written; its tensors' bytes as the graph path holds them (DeviceBytes: Q4_K, Q6_K,
// Q8_0 blocks as stored, the rest converted) sum to the set the graph path loads
// (Mapped.Set), which is what a GPU holds (TestGGUFOnTheGraphPath); as LoadGGUF
// converts them by default (ConvertedBytes) to its set's; and as the host path holds
// them — stored, but for what it converts (HostHeld) — to the mapped file's.
func TestGGUFLayoutCounts(t *testing.T) {
	cfg := ggufConfig()
	for _, split := range []bool{false, true} {
		fx := writeGGUF(t, t.TempDir(), cfg, split, nil)
		dir := filepath.Dir(fx.path)
		l, err := weights.ReadGGUFLayout(os.DirFS(dir), filepath.Base(fx.path), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !l.IsGGUF() || !l.Quantized() || l.IsMix(cfg) || l.HostConverted() {
			t.Errorf("split %v: GGUF %v, quantized %v, a mix %v (%q), converted on the host %v", split, l.IsGGUF(), l.Quantized(), l.IsMix(cfg), l.Mix, l.HostConverted())
		}
		for _, s := range weights.Specs(cfg) {
			if typ, ok := l.Type(cfg, s); !ok || typ != fx.types[s.Name] {
				t.Errorf("%s: type %v (%v), written %v", s.Name, typ, ok, fx.types[s.Name])
			}
		}
		var conv []gguf.Type
		for _, typ := range l.Types(cfg) {
			if _, kept := weights.GGUFKeptTypes[typ]; !kept {
				conv = append(conv, typ)
			}
		}
		if len(conv) != 0 {
			t.Errorf("split %v: converted on a device %v, want none: every type kept as stored", split, conv)
		}
		for _, s := range weights.Specs(cfg) {
			typ, _ := l.Type(cfg, s)
			d, _ := l.DeviceBytes(cfg, s)
			if b, _ := l.StoredBytes(cfg, s); !typ.IsFloat() && d != b {
				t.Errorf("split %v: %s (%s) takes %d B on a device, %d B in the file", split, s.Name, typ, d, b)
			}
		}
		desc := l.Describe(cfg)
		for _, typ := range []string{"Q2_K", "Q3_K", "IQ4_NL", "Q4_K", "Q6_K", "Q8_0"} {
			if !strings.Contains(desc, typ) {
				t.Errorf("described as %q: no %s", desc, typ)
			}
		}

		set, err := weights.LoadGGUF(fx.path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		m, ok, err := weights.Map(dir, cfg, nil)
		if err != nil || !ok {
			t.Fatalf("map: ok %v, %v", ok, err)
		}
		m2, _, err := weights.Map(dir, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		deviceSet, err := m2.Set(nil)
		if err != nil {
			t.Fatal(err)
		}
		m2.Close()
		for _, l := range []weights.GGUFLayout{l, m.GGUFLayout()} {
			var device, converted, host int64
			for _, s := range weights.Specs(cfg) {
				d, ok := l.DeviceBytes(cfg, s)
				c, okC := l.ConvertedBytes(cfg, s)
				b, okB := l.StoredBytes(cfg, s)
				if !ok || !okB || !okC {
					t.Fatalf("%s: no bytes", s.Name)
				}
				device += d
				converted += c
				if h, held := l.HostHeld(cfg, s); held {
					b = h
				}
				host += b
			}
			if device != deviceSet.Bytes() || converted != set.Bytes() || host != m.Bytes() {
				t.Errorf("split %v: on a device %d B (the graph path's set %d B), converted %d B (LoadGGUF's set %d B), on the host %d B (mapped %d B)",
					split, device, deviceSet.Bytes(), converted, set.Bytes(), host, m.Bytes())
			}
			if device >= converted {
				t.Errorf("split %v: the blocks kept on a device take %d B, converted %d B", split, device, converted)
			}
		}
		m.Close()
	}
}

// TestGGUFLayoutConverted: split gate and up experts of two types, which the host
// path cannot multiply as stored (Map declines the file, Load converts it), make the
// layout HostConverted.
func TestGGUFLayoutConverted(t *testing.T) {
	cfg := ggufConfig()
	fx := writeGGUF(t, t.TempDir(), cfg, true, func(ts []gguf.WriteTensor) []gguf.WriteTensor {
		for i, w := range ts {
			if !strings.HasSuffix(w.Name, "ffn_up_exps.weight") {
				continue
			}
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			vals := make([]float32, n)
			if err := gguf.Dequantize(w.Type, w.Data, vals); err != nil {
				t.Fatal(err)
			}
			raw, err := gguf.Quantize(gguf.Q8_0, vals)
			if err != nil {
				t.Fatal(err)
			}
			ts[i].Type, ts[i].Data = gguf.Q8_0, raw
		}
		return ts
	})
	dir := filepath.Dir(fx.path)
	if _, ok, err := weights.Map(dir, cfg, nil); ok || err != nil {
		t.Fatalf("map: ok %v, %v; want declined", ok, err)
	}
	l, err := weights.ReadGGUFLayout(os.DirFS(dir), filepath.Base(fx.path), cfg)
	if err != nil || !l.HostConverted() {
		t.Errorf("layout: converted on the host %v, %v", l.HostConverted(), err)
	}
	// Loaded converted throughout (LoadGGUF's defaults), on a GPU too.
	for _, s := range weights.Specs(cfg) {
		d, okD := l.DeviceBytes(cfg, s)
		c, okC := l.ConvertedBytes(cfg, s)
		if !okD || !okC || d != c {
			t.Errorf("%s: %d B on a device, %d B converted (%v, %v)", s.Name, d, c, okD, okC)
		}
	}
}

// TestGGUFKeptTypes: every block type Darkroom reads is one the graph path keeps
// as stored, so that a GPU holds any readable file's matrices in their own bits
// (GGUFLayout.DeviceBytes, the fit's note) but for a file the mapping declines.
func TestGGUFKeptTypes(t *testing.T) {
	for typ := gguf.Type(0); typ < 64; typ++ {
		if _, kept := weights.GGUFKeptTypes[typ]; typ.Supported() && !typ.IsFloat() && !kept {
			t.Errorf("%s is read but not kept as stored on a device", typ)
		}
	}
}
