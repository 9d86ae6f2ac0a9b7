package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// BuiltinFacts is what the built-in model's own files say about it: nothing here
// is typed by hand, so replacing the files (packaging/ship-mini.sh) changes it.
type BuiltinFacts struct {
	Params  int64         // logical parameters: the weight table of its config.json
	Bytes   int64         // every embedded file of the model, card included
	DType   string        // safetensors dtype of most of its weights' elements: "F32", "BF16", "I8"
	Profile quant.Profile // the one it ships in: bf16 (nothing quantized), or its quantization_config's
}

// MiniFacts reads the embedded Darkroom Mini's facts once (the safetensors
// header, not the weights). It wraps assets.ErrMiniNotBuilt for a binary built
// without the model.
var MiniFacts = sync.OnceValues(func() (BuiltinFacts, error) {
	fsys, err := assets.Mini()
	if err != nil {
		return BuiltinFacts{}, err
	}
	return builtinFacts(fsys)
})

// builtinFacts reads the facts of the model directory at the root of fsys: a
// single model.safetensors, as `darkroom train export` writes it.
func builtinFacts(fsys fs.FS) (BuiltinFacts, error) {
	var f BuiltinFacts
	cfg, err := config.LoadFS(fsys, ".")
	if err != nil {
		return f, err
	}
	for _, s := range weights.Specs(cfg) {
		f.Params += s.Elements()
	}
	f.Profile = quant.BF16Profile
	if q := cfg.Quantization; q != nil && q.StoredProfile() != "" {
		f.Profile = quant.Profile(q.StoredProfile())
	}
	infos, err := safetensorsIndex(fsys, safetensors.SingleFile)
	if err != nil {
		return f, err
	}
	elems := map[string]int64{}
	for _, in := range infos {
		elems[string(in.DType)] += in.NumElements()
	}
	for dt, n := range elems {
		if n > elems[f.DType] || (n == elems[f.DType] && dt < f.DType) {
			f.DType = dt
		}
	}
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "README.md" {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("size of the built-in model: %w", err)
	}
	return f, nil
}

// safetensorsIndex reads only the header of safetensors file name.
func safetensorsIndex(fsys fs.FS, name string) ([]safetensors.Info, error) {
	infos, err := safetensors.ReadInfosFS(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("built-in model: %w", err)
	}
	if len(infos) == 0 {
		return nil, errors.New("built-in model " + name + " holds no tensors")
	}
	return infos, nil
}

// miniEntry is the built-in model's catalog entry, its format, size, profile,
// licence and typical steps from its files and card (assets.MiniCard). A binary
// without the model still lists it (the Library says it is not built in yet).
func miniEntry() Entry {
	e := Entry{
		ID: MiniID, Name: "Darkroom Mini", Builtin: true,
		Description: "A small computing encyclopedia built into Darkroom: runs anywhere, instantly, " +
			"on the CPU. Not a general assistant.",
		Format:   "safetensors (built in)",
		Profiles: []quant.Profile{quant.BF16Profile},
		System:   assets.ChatSystem(),
	}
	if f, err := MiniFacts(); err == nil {
		e.Format = fmt.Sprintf("safetensors %s, %.1f M parameters (built in)", f.DType, float64(f.Params)/1e6)
		e.Size, e.Profiles = f.Bytes, []quant.Profile{f.Profile}
	}
	if c, err := assets.ReadMiniCard(); err == nil {
		e.License, e.Steps, e.GuidanceRounds = c.License, c.Steps, c.GuidanceRounds
		e.ChatMode, e.ChatModeWhy = c.ChatMode, c.ChatModeWhy
	}
	return e
}
