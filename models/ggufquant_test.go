package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/hubtest"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// TestGGUFQuantOf reads the quantization from GGUF file names as publishers write
// them.
func TestGGUFQuantOf(t *testing.T) {
	for name, want := range map[string]string{
		"diffusiongemma-26B-A4B-it-Q4_K_M.gguf":           "Q4_K_M",
		"diffusiongemma-26B-A4B-it-UD-Q4_K_XL.gguf":       "UD-Q4_K_XL",
		"UD-Q2_K_XL/model-UD-Q2_K_XL-00001-of-00002.gguf": "UD-Q2_K_XL",
		"model.iq4_xs.gguf":                               "IQ4_XS",
		"BF16/diffusiongemma-BF16-00002-of-00003.gguf":    "BF16",
		"mmproj-F16.gguf":                                 "",
		"README.md":                                       "",
	} {
		got, ok := ggufQuantOf(name)
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q (%v), want %q", name, got, ok, want)
		}
	}
}

// TestPullGGUFQuant pulls quantizations of GGUF repos by their names after the repo
// (ollama's hf.co/{repo}:{quant}), which the catalog does not list: the repo's
// other files and the one GGUF named, into a model of its own; a name the repo has
// not, a split GGUF and a repo of several GGUFs named alone are refused before any
// download, saying which it has; a quantization of Unsloth's repo takes its
// tokenizer from the base repo, as the catalog's GGUF entries do.
func TestPullGGUFQuant(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	tok := &hubtest.File{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)}
	q3 := &hubtest.File{Name: "dg-Q3_K_M.gguf", Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 360<<10), LFS: true}
	others := []*hubtest.File{
		{Name: "dg-Q4_K_M.gguf", Data: make([]byte, 400<<10), LFS: true},
		{Name: "dg-UD-Q4_K_XL.gguf", Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 420<<10), LFS: true},
		{Name: "Q8_0/dg-Q8_0-00001-of-00002.gguf", Data: make([]byte, 500<<10), LFS: true},
		{Name: "Q8_0/dg-Q8_0-00002-of-00002.gguf", Data: make([]byte, 500<<10), LFS: true},
		{Name: "mmproj-F16.gguf", Data: make([]byte, 100<<10), LFS: true},
	}
	h.Add("acme/dg-GGUF", &hubtest.Repo{Files: append([]*hubtest.File{q3, tok, {Name: "config.json", Data: cfg}}, others...)})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), "acme/dg-GGUF:q3_k_m", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	src, err := m.Source("acme/dg-GGUF:q3_k_m") // named as typed: the download's name has the quantization in capitals
	if err != nil || src.Dir != m.store.ModelDir("acme/dg-GGUF:Q3_K_M") {
		t.Fatalf("source %v, %v", src, err)
	}
	checkModel(t, src.Dir, []*hubtest.File{q3, tok})
	for _, f := range others {
		if h.Sent(f.Name) != 0 {
			t.Errorf("%s was downloaded", f.Name)
		}
	}
	for name, want := range map[string]string{
		"acme/dg-GGUF:Q9_K": "has no Q9_K GGUF; it has Q3_K_M (368.6 kB), Q4_K_M (409.6 kB), UD-Q4_K_XL (430.1 kB); name one after the repo, as acme/dg-GGUF:Q3_K_M",
		"acme/dg-GGUF:Q8_0": "comes in 2 parts",
		"acme/dg-GGUF":      "the repo holds a GGUF file per quantization: Q3_K_M (368.6 kB)",
	} {
		if _, err := m.Pull(context.Background(), name, PullOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", name, err, want)
		}
	}
	// Named alone, the choice carries the model's dimensions from its smallest
	// quantization's header (read by ranges), by which each is placed on a PC.
	_, err = m.Pull(context.Background(), "acme/dg-GGUF", PullOptions{})
	var choice *QuantChoice
	if !errors.As(err, &choice) || choice.Config == nil || choice.Config.Text.HiddenSize != config.Tiny().Text.HiddenSize {
		t.Fatalf("the choice %+v (%v) has no dimensions from the header", choice, err)
	}
	if JudgeQuants(choice, hw.Info{RAMTotal: 8 << 30}); choice.Quants[0].Fit == nil || choice.Quants[0].Fit.Verdict != fit.Fits {
		t.Errorf("the Q3_K_M of a tiny model in 8 GB of RAM: %+v", choice.Quants[0].Fit)
	}
	// The dynamic quant by its plain name too.
	if tr, err := m.Pull(context.Background(), "acme/dg-GGUF:Q4_K_XL", PullOptions{}); err != nil || tr.Wait() != nil {
		t.Errorf("Q4_K_XL: %v", err)
	} else if _, err := os.Stat(filepath.Join(m.store.ModelDir("acme/dg-GGUF:Q4_K_XL"), "dg-UD-Q4_K_XL.gguf")); err != nil {
		t.Error(err)
	}

	// Unsloth's repo: a quantization the catalog does not list, its tokenizer and
	// config from Google's.
	e, _ := catalog.Find(catalog.GGUFID)
	uq := &hubtest.File{Name: "diffusiongemma-26B-A4B-it-Q3_K_M.gguf", Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 200<<10), LFS: true}
	h.Add(e.Repo, &hubtest.Repo{Files: []*hubtest.File{uq, {Name: catalog.GGUFFile("Q4_K_M"), Data: make([]byte, 300<<10), LFS: true}}})
	base := []*hubtest.File{{Name: "config.json", Data: cfg}, tok}
	h.Add(e.Companion.Repo, &hubtest.Repo{Files: base})
	tr, err = m.Pull(context.Background(), e.Repo+":Q3_K_M", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, m.store.ModelDir(e.Repo+":Q3_K_M"), []*hubtest.File{uq, base[0], base[1]})
}

// TestLocalGGUFEntry: a GGUF downloaded by its quantization's name, with no
// config.json, is listed as a GGUF (not "safetensors (bf16)"), with its dimensions
// from its metadata and its layout from its header — by which the Library prices it:
// before, it was estimated as a bf16 checkpoint, or not at all (dimensions unknown).
func TestLocalGGUFEntry(t *testing.T) {
	cfg := config.Tiny()
	cfg.Text.HiddenSize = 256 // whole 256-blocks: Q4_K, not only its fallbacks
	cfg.Text.VocabSize = 4096 // the built-in tokenizer's
	src := filepath.Join(t.TempDir(), "src")
	if _, err := train.InitCheckpoint(context.Background(), cfg, src, train.InitOptions{GGUF: gguf.Q4KM, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, train.InitGGUFFile(gguf.Q4KM)))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	defer h.Close()
	h.Add("acme/tiny-GGUF", &hubtest.Repo{Files: []*hubtest.File{
		{Name: "tiny-Q4_K_M.gguf", Data: data, LFS: true}, {Name: "tiny-Q8_0.gguf", Data: data, LFS: true},
		{Name: "tokenizer.json", Data: tok}}})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), "acme/tiny-GGUF:Q4_K_M", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	es, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var e Entry
	for _, x := range es {
		if x.ID == "acme/tiny-GGUF:Q4_K_M" {
			e = x
		}
	}
	got, err := EntryConfig(e.Entry)
	if err != nil || got == nil || got.Text.HiddenSize != 256 {
		t.Fatalf("its config: %v, %v", got, err)
	}
	if e.Format != "GGUF Q4_K_M" || e.GGUF.Mix != gguf.Q4KM || !e.GGUF.IsMix(got) || len(e.Profiles) != 1 || e.Profiles[0] != quant.Int4Profile ||
		!strings.Contains(e.Description, "Its GGUF blocks: Q4_K_M.") {
		t.Errorf("listed as %q, mix %q, profiles %v: %q", e.Format, e.GGUF.Mix, e.Profiles, e.Description)
	}
	pl, err := Place(got, e.Profiles[0], e.GGUF, hw.Info{RAMTotal: 16 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if w, want := pl.Estimate.Part(fit.PartWeights), fit.GGUFWeightBytes(got, quant.Int4Profile, weights.MixLayout(gguf.Q4KM)); w != want {
		t.Errorf("placed with %d B of weights, the Q4_K_M's %d", w, want)
	}
}

// ggufOf is a GGUF file of cfg in mix m as the Hub serves it (hubtest.GGUF), padded
// with zeros to at least n bytes (the download tests' sizes).
func ggufOf(t *testing.T, cfg *config.Model, m gguf.Mix, n int) []byte {
	t.Helper()
	b, err := hubtest.GGUF(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < n {
		b = append(b, make([]byte, n-len(b))...)
	}
	return b
}

// TestPullRefusesAGGUFItCannotLoad: a GGUF whose blocks Darkroom does not read (the
// IQ types of grids, as in Unsloth's smallest dynamic quants), or of another
// architecture, is refused from its header, read by ranges before the download —
// a few kilobytes of it fetched, not the file — with what the loader would have said
// after the whole download; nothing of it is left in the Library.
func TestPullRefusesAGGUFItCannotLoad(t *testing.T) {
	cfg := config.Tiny()
	cfg.Text.HiddenSize = 256 // rows of whole 256-blocks, as the IQ types need
	js, err := cfg.MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	iq := filepath.Join(t.TempDir(), "iq.gguf")
	writeGGUFTyped(t, iq, cfg, func(s weights.Spec) gguf.Type {
		if s.Quantizable && len(s.Shape) >= 2 && s.Shape[len(s.Shape)-1]%256 == 0 {
			return gguf.IQ2_XXS
		}
		if s.Quantizable && len(s.Shape) >= 2 {
			return gguf.Q8_0
		}
		return gguf.F32
	})
	iqData, err := os.ReadFile(iq)
	if err != nil {
		t.Fatal(err)
	}
	iqData = append(iqData, make([]byte, 8<<20)...) // the weights: more than the header's reads fetch
	var other bytes.Buffer
	if err := gguf.Write(&other, []gguf.KV{{Key: "general.architecture", Value: gguf.Str("gemma3")}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	defer h.Close()
	tok := &hubtest.File{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)}
	h.Add("acme/dg-GGUF", &hubtest.Repo{Files: []*hubtest.File{{Name: "config.json", Data: js}, tok,
		{Name: "dg-UD-IQ2_XXS.gguf", Data: iqData, LFS: true}}})
	h.Add("acme/g3-GGUF", &hubtest.Repo{Files: []*hubtest.File{tok, {Name: "g3-Q4_K_M.gguf", Data: append(other.Bytes(), make([]byte, 8<<20)...), LFS: true}}})
	m := newManager(t, h, t.TempDir(), "")
	for name, c := range map[string]struct{ file, says string }{
		"acme/dg-GGUF:IQ2_XXS": {"dg-UD-IQ2_XXS.gguf", "Darkroom cannot load dg-UD-IQ2_XXS.gguf (its header, read before downloading it, says so): "},
		"acme/g3-GGUF:Q4_K_M":  {"g3-Q4_K_M.gguf", "gemma3"},
	} {
		_, err := m.Pull(context.Background(), name, PullOptions{})
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want it refused, saying %q", name, err, c.says)
		}
		if sent := h.Sent(c.file); sent > 5<<20 {
			t.Errorf("%s: %d bytes of %s fetched", name, sent, c.file)
		}
	}
	if strings.Contains(fmt.Sprint(m.Pull(context.Background(), "acme/dg-GGUF:IQ2_XXS", PullOptions{})), "IQ2_XXS, which Darkroom cannot read") == false {
		t.Error("the refusal does not name the type")
	}
	es, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Local != nil {
			t.Errorf("%s is left in the Library (%s)", e.ID, e.State)
		}
	}
}

// TestPullGGUFOfAnotherPublisher: a GGUF repo of another publisher, without
// tokenizer.json (as most ship), of a model with the catalog's vocabulary takes the
// tokenizer from the catalog's base repo, as Unsloth's does — its header, read by
// ranges, says which model it is — and not that repo's config.json where its other
// dimensions differ (the loader reads its metadata's). It had been refused: "the GGUF
// comes without tokenizer.json".
func TestPullGGUFOfAnotherPublisher(t *testing.T) {
	cfg := config.Tiny()
	cfg.Text.VocabSize = catalog.DiffusionGemma26B().Text.VocabSize
	h := hubtest.New()
	defer h.Close()
	g := &hubtest.File{Name: "dg-small.Q4_K_M.gguf", Data: ggufOf(t, cfg, gguf.Q4KM, 0), LFS: true}
	h.Add("acme/dg-small-GGUF", &hubtest.Repo{Files: []*hubtest.File{g, {Name: "README.md", Data: []byte("# q\n")}}})
	e, _ := catalog.Find(catalog.GGUFID)
	big, err := catalog.DiffusionGemma26B().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	tok := &hubtest.File{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)}
	tc := &hubtest.File{Name: "tokenizer_config.json", Data: []byte(`{}`)}
	h.Add(e.Companion.Repo, &hubtest.Repo{Files: []*hubtest.File{{Name: "config.json", Data: big}, tok, tc}})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), "acme/dg-small-GGUF:Q4_K_M", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	dir := m.store.ModelDir("acme/dg-small-GGUF:Q4_K_M")
	checkModel(t, dir, []*hubtest.File{g, tok, tc})
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		t.Error("the 26B's config.json came with a smaller model's GGUF")
	}
	// Another vocabulary: no tokenizer to take.
	h.Add("acme/other-GGUF", &hubtest.Repo{Files: []*hubtest.File{{Name: "o-Q4_K_M.gguf", Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 0), LFS: true}}})
	if _, err := m.Pull(context.Background(), "acme/other-GGUF:Q4_K_M", PullOptions{}); err == nil || !strings.Contains(err.Error(), "without tokenizer.json") {
		t.Errorf("a GGUF of another vocabulary: %v", err)
	}
}

// TestPullGGUFHeaderStalls: a Hub that stalls the header's read before the download
// delays the pull by the check's time at most, and refuses nothing: the download goes
// on (and the loader checks the file).
func TestPullGGUFHeaderStalls(t *testing.T) {
	defer func(d time.Duration) { remoteCheckTime = d }(remoteCheckTime)
	remoteCheckTime = 300 * time.Millisecond
	h := hubtest.New()
	defer h.Close()
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	g := &hubtest.File{Name: "dg-Q4_K_M.gguf", Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 0), LFS: true}
	h.Add("acme/dg-GGUF", &hubtest.Repo{Files: []*hubtest.File{{Name: "config.json", Data: cfg},
		{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)}, g}})
	h.Fault = func(name string, n int, start int64) (int64, bool) {
		if name == g.Name && n == 0 {
			return 100, true // the header's first read: 100 bytes, then nothing
		}
		return -1, false
	}
	m := newManager(t, h, t.TempDir(), "")
	t0 := time.Now()
	tr, err := m.Pull(context.Background(), "acme/dg-GGUF:Q4_K_M", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the pull started after %v", d)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, m.store.ModelDir("acme/dg-GGUF:Q4_K_M"), []*hubtest.File{g})
}

// TestPullGGUFBesideProjector: a repo of one model GGUF and a vision projector
// (mmproj-*.gguf, which Darkroom does not load) pulled by the repo's name alone
// downloads the model's file and not the projector; it had been answered with a
// choice of one quantization, the projector counted among the model's files.
func TestPullGGUFBesideProjector(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	model := &hubtest.File{Name: "dg-Q4_K_M.gguf", Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 300<<10), LFS: true}
	tok := &hubtest.File{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)}
	conf := &hubtest.File{Name: "config.json", Data: cfg}
	proj := &hubtest.File{Name: "mmproj-F16.gguf", Data: make([]byte, 100<<10), LFS: true}
	h.Add("acme/one-GGUF", &hubtest.Repo{Files: []*hubtest.File{model, tok, conf, proj}})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), "acme/one-GGUF", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, m.store.ModelDir("acme/one-GGUF"), []*hubtest.File{model, tok, conf})
	if h.Sent(proj.Name) != 0 {
		t.Errorf("the vision projector was downloaded")
	}
	if _, err := os.Stat(filepath.Join(m.store.ModelDir("acme/one-GGUF"), proj.Name)); !os.IsNotExist(err) {
		t.Errorf("the projector is in the model's folder (%v)", err)
	}
}
