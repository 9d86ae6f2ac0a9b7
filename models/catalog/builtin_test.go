package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// TestMiniEntryIsItsFiles: the built-in model's entry says what assets/mini
// holds — its tensors' dtype and element count, its files' bytes, the one profile
// it ships in — and its card's licence and steps, counted here independently from
// the whole safetensors file and the directory on disk. Swapping the model
// (packaging/ship-mini.sh) changes the entry with no code edit.
func TestMiniEntryIsItsFiles(t *testing.T) {
	dir := filepath.Join("..", "..", "assets", "mini")
	sf, err := safetensors.Open(filepath.Join(dir, safetensors.SingleFile))
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	var elems int64
	dtypes := map[safetensors.DType]bool{}
	for _, n := range sf.Names() {
		in, _ := sf.Info(n)
		elems += in.NumElements()
		dtypes[in.DType] = true
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, f := range files {
		if info, err := f.Info(); err == nil && f.Name() != "README.md" {
			bytes += info.Size()
		}
	}
	facts, err := MiniFacts()
	if err != nil {
		t.Fatal(err)
	}
	if len(dtypes) != 1 || !dtypes[safetensors.DType(facts.DType)] {
		t.Errorf("facts say %s; the file holds %v", facts.DType, dtypes)
	}
	// An unquantized checkpoint stores each parameter once (the head is tied).
	if facts.Profile == quant.BF16Profile && facts.Params != elems {
		t.Errorf("facts say %d parameters; the file holds %d elements", facts.Params, elems)
	}
	if facts.Bytes != bytes {
		t.Errorf("facts say %d bytes; assets/mini holds %d", facts.Bytes, bytes)
	}
	card, err := assets.ReadMiniCard()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := Find(MiniID)
	wantFormat := fmt.Sprintf("safetensors %s, %.1f M parameters (built in)", facts.DType, float64(elems)/1e6)
	if e.Format != wantFormat || e.Size != bytes || !slices.Equal(e.Profiles, []quant.Profile{facts.Profile}) {
		t.Errorf("entry: format %q, size %d, profiles %v; want %q, %d, [%s]", e.Format, e.Size, e.Profiles,
			wantFormat, bytes, facts.Profile)
	}
	if e.License != card.License || e.Steps != card.Steps || e.GuidanceRounds != card.GuidanceRounds {
		t.Errorf("entry licence %q, steps %g/%g; card %+v", e.License, e.Steps, e.GuidanceRounds, card)
	}
}

// TestBuiltinFactsOfExports: the facts follow the files for each format an export
// can take — f32, bf16, and an int8 checkpoint — and a broken file is an error
// naming it, not facts made up.
func TestBuiltinFactsOfExports(t *testing.T) {
	cfg := enginetest.Config(enginetest.Options{})
	var params int64
	for _, s := range weights.Specs(cfg) {
		n := int64(1)
		for _, d := range s.Shape {
			n *= int64(d)
		}
		params += n
	}
	for _, c := range []struct {
		dtype, want string
	}{{"f32", "F32"}, {"bf16", "BF16"}} {
		dir := enginetest.WriteTinyModel(t, enginetest.Options{Save: weights.SaveOptions{DType: c.dtype}})
		f, err := builtinFacts(os.DirFS(dir))
		if err != nil {
			t.Fatalf("%s: %v", c.dtype, err)
		}
		if f.DType != c.want || f.Profile != quant.BF16Profile || f.Params != params || f.Bytes <= 0 {
			t.Errorf("%s export: %+v; want %s, bf16 profile, %d parameters", c.dtype, f, c.want, params)
		}
	}

	dir := filepath.Join(t.TempDir(), "int8")
	if err := weights.QuantizeCheckpoint(context.Background(), enginetest.WriteTinyModel(t, enginetest.Options{}), dir,
		quant.Int8Profile, nil); err != nil {
		t.Fatal(err)
	}
	f, err := builtinFacts(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if f.Profile != quant.Int8Profile || f.DType != "I8" || f.Params != params {
		t.Errorf("int8 checkpoint: %+v; want the int8 profile, I8, %d parameters", f, params)
	}

	path := filepath.Join(dir, safetensors.SingleFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{4, 12, len(b) - 8} {
		if err := os.WriteFile(path, b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := builtinFacts(os.DirFS(dir)); err == nil || !strings.Contains(err.Error(), safetensors.SingleFile) {
			t.Errorf("model.safetensors cut to %d bytes: err %v, want one naming the file", cut, err)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := builtinFacts(os.DirFS(dir)); err == nil {
		t.Error("no model.safetensors: no error")
	}
}
