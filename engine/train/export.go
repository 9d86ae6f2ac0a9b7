package train

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// ParamsSet copies the model's parameters (scope "dg" of ctx) into a weights.Set,
// keyed by canonical name, checking every tensor of weights.Specs is there.
func ParamsSet(ctx *context.Context, cfg *config.Model) (*weights.Set, error) {
	set := weights.NewSet()
	scope := ctx.In(model.Scope)
	for _, s := range weights.Specs(cfg) {
		v := scope.GetVariable(s.Name)
		if v == nil {
			return nil, fmt.Errorf("export: parameter %s is missing", s.Name)
		}
		t, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("export: parameter %s: %w", s.Name, err)
		}
		set.Tensors[s.Name] = t
	}
	return set, nil
}

// ExportOptions controls Export.
type ExportOptions struct {
	DType        string // "f32" or "bf16"
	TokenizerDir string // directory holding tokenizer.json (+ tokenizer_config.json)
}

// Export writes a trained model in the Hugging Face layout to dir: config.json and
// generation_config.json (cfg, with its own EOS ids), model.safetensors under the
// real HF names (weights.Save), and the tokenizer files copied from
// opts.TokenizerDir.
func Export(ctx *context.Context, cfg *config.Model, dir string, opts ExportOptions) error {
	set, err := ParamsSet(ctx, cfg)
	if err != nil {
		return err
	}
	c := *cfg
	c.DType = map[string]string{"bf16": "bfloat16", "f32": "float32", "": "float32"}[opts.DType]
	if err := weights.Save(set, &c, dir, weights.SaveOptions{DType: opts.DType}); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := copyTokenizer(os.DirFS(opts.TokenizerDir), dir); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// ExportRun loads the newest checkpoint of runDir and exports it (see Export).
func ExportRun(runDir string, cfg *config.Model, outDir string, opts ExportOptions) (State, error) {
	p := LatestCheckpoint(filepath.Join(runDir, "checkpoints"))
	if p == "" {
		return State{}, fmt.Errorf("export: no checkpoint in %s", runDir)
	}
	ctx := context.New()
	if err := initParams(ctx, cfg, 0); err != nil {
		return State{}, err
	}
	st, err := LoadCheckpoint(p, ctx)
	if err != nil {
		return State{}, fmt.Errorf("export: %w", err)
	}
	return st, Export(ctx, cfg, outDir, opts)
}
