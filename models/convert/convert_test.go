package convert

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func tensorBytes(t *testing.T, x *tensors.Tensor) []byte {
	t.Helper()
	var out []byte
	if err := x.ConstBytes(func(b []byte) { out = append(out, b...) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQuantizeMatchesInMemory converts a tiny BF16 checkpoint tensor by tensor and
// checks the result loads with the engine's loader and equals quantizing the whole
// set in memory, for both profiles, in one file and in shards.
func TestQuantizeMatchesInMemory(t *testing.T) {
	cfg := config.Tiny()
	src := t.TempDir()
	set := weights.Random(cfg, 7)
	if err := weights.Save(set, cfg, src, weights.SaveOptions{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte(`{"x":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bf, err := weights.Load(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p      quant.Profile
		shards int64
	}{{quant.Int8Profile, 0}, {quant.Int4Profile, 0}, {quant.Int4Profile, 40 << 10}} {
		out := filepath.Join(t.TempDir(), "q")
		var calls int
		res, err := Quantize(context.Background(), Source{Dir: src}, out, Options{Profile: tc.p, ShardBytes: tc.shards,
			Progress: func(Progress) { calls++ }})
		if err != nil {
			t.Fatalf("%s: %v", tc.p, err)
		}
		if calls != res.Tensors || calls != len(weights.Specs(cfg)) {
			t.Errorf("%s: %d progress calls for %d tensors", tc.p, calls, res.Tensors)
		}
		if tc.shards > 0 && len(res.Files) < 4 {
			t.Errorf("%s: expected several shards, got files %v", tc.p, res.Files)
		}
		cfg2, err := config.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if cfg2.Quantization == nil || cfg2.Quantization.Profile != string(tc.p) {
			t.Errorf("%s: quantization_config %+v", tc.p, cfg2.Quantization)
		}
		got, err := weights.Load(out, cfg2)
		if err != nil {
			t.Fatalf("%s: engine cannot load the output: %v", tc.p, err)
		}
		want, err := bf.Quantize(cfg, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Quant) != len(want.Quant) || len(got.Quant) == 0 {
			t.Errorf("%s: %d quantized weights, want %d", tc.p, len(got.Quant), len(want.Quant))
		}
		for name, spec := range want.Quant {
			if got.Quant[name] != spec {
				t.Errorf("%s: %s stored as %v, want %v", tc.p, name, got.Quant[name], spec)
			}
		}
		for name, wt := range want.Tensors {
			gt, ok := got.Tensors[name]
			if !ok {
				t.Errorf("%s: missing %s", tc.p, name)
				continue
			}
			if !bytes.Equal(tensorBytes(t, gt), tensorBytes(t, wt)) {
				t.Errorf("%s: tensor %s differs from in-memory quantization", tc.p, name)
			}
		}
		if b, err := os.ReadFile(filepath.Join(out, "tokenizer.json")); err != nil || string(b) != `{"x":1}` {
			t.Errorf("%s: tokenizer not copied", tc.p)
		}
		if _, err := os.Stat(out + ".incomplete"); err == nil {
			t.Errorf("temporary folder left behind")
		}
		if res.OutBytes >= res.InBytes {
			t.Errorf("%s: output %d bytes ≥ input %d", tc.p, res.OutBytes, res.InBytes)
		}
	}
	// Refusals: an existing output, a quantized input, the bf16 profile.
	if _, err := Quantize(context.Background(), Source{Dir: src}, src, Options{Profile: quant.Int8Profile}); err == nil {
		t.Errorf("overwrote an existing folder")
	}
	if _, err := Quantize(context.Background(), Source{Dir: src}, filepath.Join(t.TempDir(), "x"), Options{Profile: quant.BF16Profile}); err == nil {
		t.Errorf("accepted the bf16 profile")
	}
	q := filepath.Join(t.TempDir(), "q8")
	if _, err := Quantize(context.Background(), Source{Dir: src}, q, Options{Profile: quant.Int8Profile}); err != nil {
		t.Fatal(err)
	}
	if _, err := Quantize(context.Background(), Source{Dir: q}, filepath.Join(t.TempDir(), "q4"), Options{Profile: quant.Int4Profile}); err == nil {
		t.Errorf("re-quantized a quantized model")
	}
}

func TestQuantizeFromFS(t *testing.T) {
	cfg := config.Tiny()
	src := t.TempDir()
	if err := weights.Save(weights.Random(cfg, 3), cfg, src, weights.SaveOptions{DType: "f32"}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "q")
	if _, err := Quantize(context.Background(), Source{FS: os.DirFS(src)}, out, Options{Profile: quant.Int4Profile}); err != nil {
		t.Fatal(err)
	}
	cfg2, err := config.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := weights.Load(out, cfg2); err != nil {
		t.Fatal(err)
	}
}

// TestQuantizeOutputFolderInPlainWords: an output folder that cannot be made is
// said in plain words, naming the folder and what to do — a file where a folder
// of its path should be said 'quantize: unlinkat FILE/q.incomplete: not a
// directory'; a folder Darkroom may not write in said 'mkdir ….incomplete:
// permission denied' (checked only where the test does not run as root, who may
// write anywhere).
func TestQuantizeOutputFolderInPlainWords(t *testing.T) {
	cfg := config.Tiny()
	src := t.TempDir()
	if err := weights.Save(weights.Random(cfg, 3), cfg, src, weights.SaveOptions{DType: "bf16"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Quantize(context.Background(), Source{Dir: src}, filepath.Join(file, "q"), Options{Profile: quant.Int8Profile})
	want := "quantize: cannot make the folder " + filepath.Join(file, "q") + ": " + file + " is a file, not a folder"
	if err == nil || err.Error() != want {
		t.Errorf("output under a file: %v\nwant %s", err, want)
	}
	if os.Geteuid() == 0 {
		return
	}
	ro := t.TempDir()
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	_, err = Quantize(context.Background(), Source{Dir: src}, filepath.Join(ro, "q"), Options{Profile: quant.Int8Profile})
	want = "quantize: cannot write in " + ro + " (permission denied): choose a folder you can write to"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("output in a read-only folder: %v\nwant %s", err, want)
	}
}
