package train

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// initParams creates the model's variables in scope "dg" (model.Scope: one
// variable per canonical name, shapes from weights.Specs) in f32, initialized as
// the spec says (ones for norms and scales, N(0, 1/fan_in) for projections) from
// a seeded RNG. Buffers (the layer scalars) are created non-trainable, as in HF.
func initParams(ctx *context.Context, cfg *config.Model, seed uint64) (err error) {
	defer recoverErr(&err, "init params")
	rng := rand.New(rand.NewPCG(seed, 0x5DEECE66D))
	scope := ctx.In(model.Scope).Checked(false)
	for _, s := range weights.Specs(cfg) {
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		data := make([]float32, n)
		if err := s.Fill(data, rng); err != nil {
			return fmt.Errorf("init params: %w", err)
		}
		v := scope.VariableWithValue(s.Name, tensors.FromFlatDataAndDimensions(data, s.Shape...))
		v.SetTrainable(!s.Buffer)
	}
	return nil
}

// initFrom replaces the freshly initialized parameters with the weights of the model
// in dir (float32; quantized or bf16 weights are widened), which must have every
// parameter of cfg with the same shape.
func initFrom(ctx *context.Context, cfg *config.Model, dir string) error {
	set, err := weights.Load(dir, cfg)
	if err != nil {
		return fmt.Errorf("init from %s: %w", dir, err)
	}
	scope := ctx.In(model.Scope)
	for _, s := range weights.Specs(cfg) {
		v := scope.GetVariable(s.Name)
		if v == nil {
			return fmt.Errorf("init from %s: no parameter %s", dir, s.Name)
		}
		t, err := set.Float32(s.Name)
		if err != nil {
			return fmt.Errorf("init from %s: %w", dir, err)
		}
		if !t.Shape().Equal(v.Shape()) {
			return fmt.Errorf("init from %s: %s is %s, the run's config wants %s", dir, s.Name, t.Shape(), v.Shape())
		}
		if err := v.SetValue(t); err != nil {
			return fmt.Errorf("init from %s: %s: %w", dir, s.Name, err)
		}
	}
	return nil
}
