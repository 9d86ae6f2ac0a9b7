package weights

import (
	"github.com/darkroomlabs/darkroom/engine/mapfile"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
)

// saveQuantized writes cfg's random weights in profile p (bf16 for the rest) as a
// checkpoint of the given shards and returns the directory and the config as loaded.
func saveQuantized(t *testing.T, cfg *config.Model, p quant.Profile, shards int) (string, *config.Model, *Set) {
	t.Helper()
	q, err := Random(cfg, 3).Quantize(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Save(q, cfg, dir, SaveOptions{Shards: shards, DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	lc, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, lc, q
}

// TestMapHoldsTheStoredBytes: Map gives every tensor of a quantized, sharded
// checkpoint as the bytes Load reads into tensors (qweight, qscale, plain BF16), with
// its spec; missing names are not found; after Close nothing is.
func TestMapHoldsTheStoredBytes(t *testing.T) {
	cfg := config.Tiny()
	for _, p := range []quant.Profile{quant.Int8Profile, quant.Int4Profile} {
		t.Run(string(p), func(t *testing.T) {
			dir, lc, _ := saveQuantized(t, cfg, p, 2)
			want, err := Load(dir, lc)
			if err != nil {
				t.Fatal(err)
			}
			m, ok, err := Map(dir, lc, nil)
			if err != nil || !ok {
				t.Fatalf("Map = %v, %v", ok, err)
			}
			defer m.Close()
			if m.Bytes() != want.Bytes() {
				t.Errorf("mapped %d bytes, Load holds %d", m.Bytes(), want.Bytes())
			}
			raw := func(name string) []byte {
				_, _, b, err := safetensors.Encode(want.Tensors[name])
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			for _, sp := range Specs(lc) {
				s, _, ok, err := m.Lookup(sp.Name)
				if err != nil || !ok {
					t.Fatalf("Lookup(%s) = %v, %v", sp.Name, ok, err)
				}
				if !slices.Equal(s.Shape, sp.Shape) {
					t.Errorf("%s: shape %v, want %v", sp.Name, s.Shape, sp.Shape)
				}
				if qs, q := want.Quant[sp.Name]; q {
					if s.Quant == nil || *s.Quant != qs {
						t.Fatalf("%s: spec %v, want %v", sp.Name, s.Quant, qs)
					}
					if !slices.Equal(s.Data, raw(sp.Name+quant.WeightSuffix)) || !slices.Equal(s.Scales, raw(sp.Name+quant.ScaleSuffix)) {
						t.Errorf("%s: mapped bytes differ from the loaded ones", sp.Name)
					}
					continue
				}
				if s.Quant != nil || s.DType != want.Tensors[sp.Name].DType() || !slices.Equal(s.Data, raw(sp.Name)) {
					t.Errorf("%s: mapped %s bytes differ from the loaded %s", sp.Name, s.DType, want.Tensors[sp.Name].DType())
				}
			}
			if _, _, ok, _ := m.Lookup("layers.99.mlp.gate_proj.weight"); ok {
				t.Error("a weight the model does not have was found")
			}
			var reports [][2]int64
			set, err := m.Set(func(done, total int64) { reports = append(reports, [2]int64{done, total}) })
			if err != nil || set.Bytes() != want.Bytes() {
				t.Errorf("Set() = %v bytes, %v", set, err)
			}
			CheckProgress(t, reports, m.Bytes())
			m.Close()
			if _, _, _, err := m.Lookup(Specs(lc)[0].Name); err == nil {
				t.Error("Lookup after Close: no error")
			}
		})
	}
}

// TestMapDamaged: a quantized tensor with the wrong scale count, the wrong code count
// or a truncated file fails Map with the file and tensor named, and nothing is
// returned (nothing stays mapped).
func TestMapDamaged(t *testing.T) {
	cfg := config.Tiny()
	const target = "model.decoder.layers.1.experts.down_proj"
	shrink := func(suffix string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			rewriteShard(t, dir, safetensors.SingleFile, func(h map[string]any) string {
				e := h[target+suffix].(map[string]any)
				s := e["shape"].([]any)
				last := int(s[len(s)-1].(float64))
				s[len(s)-1] = float64(last - 1)
				// Keep the header consistent with the data: the entry ends earlier.
				rows := 1.0
				for _, d := range s[:len(s)-1] {
					rows *= d.(float64)
				}
				off := e["data_offsets"].([]any)
				elem := (off[1].(float64) - off[0].(float64)) / (rows * float64(last))
				off[1] = off[0].(float64) + rows*float64(last-1)*elem
				return target + suffix
			})
		}
	}
	for _, c := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   []string
	}{
		{"scale count", shrink(quant.ScaleSuffix), []string{safetensors.SingleFile, target}},
		{"code count", shrink(quant.WeightSuffix), []string{safetensors.SingleFile, target}},
		{"truncated", func(t *testing.T, dir string) {
			p := filepath.Join(dir, safetensors.SingleFile)
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()-3); err != nil {
				t.Fatal(err)
			}
		}, []string{safetensors.SingleFile, "tensor model.", "truncated"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, lc, _ := saveQuantized(t, cfg, quant.Int4Profile, 1)
			c.break_(t, dir)
			m, ok, err := Map(dir, lc, nil)
			if err == nil || m != nil || ok {
				t.Fatalf("Map = %v, %v, %v; want an error and nothing mapped", m, ok, err)
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestStoredMatrixDamaged: a stored matrix whose bytes do not match its format (one
// scale short, codes cut) is an error naming the file and tensor, before any product.
func TestStoredMatrixDamaged(t *testing.T) {
	dir, lc, _ := saveQuantized(t, config.Tiny(), quant.Int4Profile, 1)
	m, ok, err := Map(dir, lc, nil)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer m.Close()
	s, _, _, _ := m.Lookup("layers.0.experts.gate_up_proj")
	for what, cut := range map[string]func(*Stored){
		"scales": func(s *Stored) { s.Scales = s.Scales[:len(s.Scales)-2] },
		"codes":  func(s *Stored) { s.Data = s.Data[:len(s.Data)/2] },
	} {
		d := s
		cut(&d)
		if _, err := d.Matrix(); err == nil || !strings.Contains(err.Error(), safetensors.SingleFile) || !strings.Contains(err.Error(), "layers.0.experts.gate_up_proj") {
			t.Errorf("%s cut: Matrix error %v, want one naming the file and tensor", what, err)
		}
	}
}

// TestMapIsNotRead: mapping an int4 checkpoint of a few tens of MB puts none of it on
// the heap (Load holds all of it): the bytes stay in the file's mapping.
func TestMapIsNotRead(t *testing.T) {
	if mapfile.Off() {
		t.Skip("mapping is turned off (DARKROOM_NO_MMAP)")
	}
	if testing.Short() {
		t.Skip("writes a 30 MB checkpoint")
	}
	cfg := config.Tiny()
	cfg.Text.VocabSize, cfg.Text.HiddenSize, cfg.Text.MoEIntermediateSize, cfg.Text.IntermediateSize = 32768, 512, 512, 512
	cfg.Text.NumExperts, cfg.Text.NumHiddenLayers = 8, 2
	cfg.Text.LayerTypes = []config.LayerType{config.SlidingAttention, config.FullAttention}
	cfg.Text.HeadDim, cfg.Text.GlobalHeadDim = 64, 128
	dir, lc, q := saveQuantized(t, cfg, quant.Int4Profile, 1)
	stored := q.Bytes()
	q = nil
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	m, ok, err := Map(dir, lc, nil)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer m.Close()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grown := int64(ms.HeapAlloc) - int64(before)
	t.Logf("stored %.1f MB; the heap grew by %.2f MB mapping it", float64(stored)/1e6, float64(grown)/1e6)
	if grown > stored/20 {
		t.Errorf("mapping grew the heap by %d bytes for %d stored", grown, stored)
	}
}

// CheckProgress holds Mapped.Set's reports to rising counts that end at total, one a
// tensor at most (exported for the package's external tests).
func CheckProgress(t *testing.T, reports [][2]int64, total int64) {
	t.Helper()
	n := len(reports)
	if n < 2 || reports[n-1] != [2]int64{total, total} {
		t.Fatalf("progress %v: want rising counts ending at %d of %d", reports, total, total)
	}
	for i := 1; i < n; i++ {
		if reports[i][0] <= reports[i-1][0] || reports[i][1] != total {
			t.Fatalf("progress %v does not rise to one total", reports)
		}
	}
}
