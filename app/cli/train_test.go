package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/train"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

func TestTrainCommandErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"train"}, "no subcommand"},
		{[]string{"train", "bogus"}, `unknown subcommand "bogus"`},
		{[]string{"train", "run"}, "--run DIR is required"},
		{[]string{"train", "run", "--run", t.TempDir()}, "--corpus DIR is required"},
		{[]string{"train", "run", "--run", t.TempDir(), "--corpus", "x", "--kinds", "page"}, "want KIND=WEIGHT"},
		{[]string{"train", "run", "--run", t.TempDir(), "--resume"}, "--resume"},
		{[]string{"train", "run", "--run", t.TempDir(), "--heads", "6", "--kv-heads", "4"}, "--kv-heads 4 must divide --heads 6"},
		{[]string{"train", "export"}, "--run DIR is required"},
		{[]string{"train", "corpus"}, "--out DIR is required"},
		{[]string{"train", "corpus", "--out", t.TempDir(), "--tokenizer", t.TempDir(), "--vocab", "4096"}, "--vocab and --tokenizer exclude each other"},
		{[]string{"train", "corpus", "--out", t.TempDir(), "--dict", t.TempDir(), "--extra", "wordnet,gcide"}, `unknown extra source "gcide"`},
		{[]string{"train", "corpus", "--out", t.TempDir(), "--extra-max", "wordnet"}, `--extra-max: "wordnet": want NAME=N`},
		{[]string{"train", "init", "--out", t.TempDir()}, "give --config CONFIG.json and --out DIR"},
		{[]string{"train", "init", "--config", "x.json", "--out", t.TempDir(), "--profile", "fp8"}, `unknown quantization profile "fp8"`},
		{[]string{"train", "init", "--config", filepath.Join(t.TempDir(), "none.json"), "--out", t.TempDir()}, "--config: stat"},
		{[]string{"train", "grow", "--out", t.TempDir()}, "give --layers N and --out DIR"},
		{[]string{"train", "grow", "--model", "../../assets/mini", "--layers", "3", "--out", t.TempDir()}, "layers; give more than that, not 3"}, // the Mini's count: 12 since session 25
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := Run(c.args, &out, &errb); code != 1 {
			t.Errorf("%v: exit code %d, want 1", c.args, code)
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: stderr %q, want it to mention %q", c.args, errb.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	if code := Run([]string{"train", "run", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "-kinds") {
		t.Errorf("train run --help: code %d, output %q", code, out.String())
	}
}

func TestParseKinds(t *testing.T) {
	k, err := parseKinds("page=1, chat=0.15,desktop=0")
	if err != nil || k["page"] != 1 || k["chat"] != 0.15 || k["desktop"] != 0 {
		t.Fatalf("parseKinds = %v, %v", k, err)
	}
	for _, bad := range []string{"page", "page=x", "page=-1"} {
		if _, err := parseKinds(bad); err == nil {
			t.Errorf("parseKinds(%q): want an error", bad)
		}
	}
}

// TestTrainInitCommand: `train init` writes a checkpoint of the config it is given
// at the profile it is asked for, which the loader reads, and refuses to write
// over a directory that holds something.
func TestTrainInitCommand(t *testing.T) {
	cfg := config.Tiny()
	cfg.Text.VocabSize = 4096 // the built-in tokenizer's ids
	raw, err := cfg.MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "tiny.json")
	os.WriteFile(cfgPath, raw, 0o644)
	out := filepath.Join(t.TempDir(), "tiny-int4")
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"train", "init", "--config", cfgPath, "--profile", "int4", "--out", out, "--seed", "9", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("train init: exit %d: %s", code, stderr.String())
	}
	var res train.InitResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Dir != out || res.Profile != "int4" || res.Bytes <= 0 {
		t.Fatalf("result %s (%v)", stdout.String(), err)
	}
	got, err := config.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	set, err := weights.Load(out, got)
	if err != nil {
		t.Fatal(err)
	}
	if got.Quantization == nil || got.Quantization.Profile != "int4" || len(set.Quant) == 0 {
		t.Errorf("quantization %+v, %d quantized weights", got.Quantization, len(set.Quant))
	}
	stderr.Reset()
	if code := Run([]string{"train", "init", "--config", cfgPath, "--out", out}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "is not empty") {
		t.Errorf("second init into the same directory: exit %d, %q", code, stderr.String())
	}

	// A model larger than any disk here is refused before anything is written.
	huge := *cfg
	huge.Text.HiddenSize, huge.Text.MoEIntermediateSize, huge.Text.NumExperts = 1<<16, 1<<16, 1<<12
	raw, _ = huge.MarshalConfig()
	os.WriteFile(cfgPath, raw, 0o644)
	hugeOut := filepath.Join(t.TempDir(), "huge")
	stderr.Reset()
	if code := Run([]string{"train", "init", "--config", cfgPath, "--out", hugeOut}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "free space or choose another --out") {
		t.Errorf("a model larger than the disk: exit %d, %q", code, stderr.String())
	}
	if ents, _ := os.ReadDir(filepath.Dir(hugeOut)); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestInitConfig: `train init --config` takes a Library model's name for its
// published config, and --layers keeps its first layers in its own order (the 26B's
// first 6: 5 sliding, 1 full); a name that is neither a file nor a model, and a layer
// count the config lacks, are refused naming what to give.
func TestInitConfig(t *testing.T) {
	want := catalog.DiffusionGemma26B()
	got, err := initConfig(catalog.DiffusionGemmaID, 0)
	if err != nil || got.Text.NumHiddenLayers != want.Text.NumHiddenLayers || got.Text.HiddenSize != 2816 {
		t.Fatalf("initConfig(%s) = %+v, %v", catalog.DiffusionGemmaID, got, err)
	}
	six, err := initConfig(catalog.DiffusionGemmaID, 6)
	if err != nil {
		t.Fatal(err)
	}
	var full int
	for i := range six.Text.NumHiddenLayers {
		if !six.Text.IsSliding(i) {
			full++
		}
	}
	if six.Text.NumHiddenLayers != 6 || len(six.Text.LayerTypes) != 6 || full != 1 || six.Text.IsSliding(5) {
		t.Errorf("6 layers: %d, types %v", six.Text.NumHiddenLayers, six.Text.LayerTypes)
	}
	if _, err := initConfig("no-such-model", 0); err == nil || !strings.Contains(err.Error(), "no Library model of that name") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := initConfig(catalog.DiffusionGemmaID, 31); err == nil || !strings.Contains(err.Error(), "give 1 to 30") {
		t.Errorf("31 layers: %v", err)
	}
	dir := t.TempDir() // a file of that name wins over the Library
	cfg := config.Tiny()
	if err := cfg.Save(dir); err != nil {
		t.Fatal(err)
	}
	if got, err := initConfig(dir, 1); err != nil || got.Text.HiddenSize != cfg.Text.HiddenSize || got.Text.NumHiddenLayers != 1 {
		t.Errorf("a model directory, 1 layer: %+v, %v", got, err)
	}
}
