package train

import (
	"io/fs"
	"reflect"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/config"
)

// TestMiniConfigSamplesAsTheShippedMini: a Darkroom Mini trained from scratch
// starts with the built-in one's sampler settings, its generation_config.json,
// but for the tokenizer's EOS and pad ids. MiniConfig had its own (guidance
// 0.5 over 16 rounds, 48 steps, no repetition penalty) that the shipped
// Mini had left sessions before.
func TestMiniConfigSamplesAsTheShippedMini(t *testing.T) {
	fsys, err := assets.Mini()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fs.ReadFile(fsys, config.GenerationConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.ParseGeneration(raw, config.DefaultGeneration())
	if err != nil {
		t.Fatal(err)
	}
	want.EOSTokenIDs, want.PadTokenID = []int{7, 9}, 5
	cfg, err := MiniConfig(DefaultMiniSize, 4096, []int{7, 9}, 5, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Generation, want) {
		t.Errorf("a new Mini samples with\n%+v\nthe shipped one with\n%+v", cfg.Generation, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the config is not valid: %v", err)
	}
}
