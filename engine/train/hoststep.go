package train

import (
	"fmt"
	"math"
	"sort"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/train/hostgrad"
)

// Training engines (Options.Engine).
const (
	// EngineAuto picks EngineHost on the pure-Go backend and EngineGraph otherwise.
	EngineAuto = ""
	// EngineGraph differentiates the GoMLX graph of the objective (any backend; the
	// path for XLA and GPUs).
	EngineGraph = "graph"
	// EngineHost computes the objective and its gradient on the host in float32
	// (package hostgrad), an order of magnitude faster than the graph on the pure-Go
	// backend. Same objective, same optimizer, same checkpoints.
	EngineHost = "host"
)

// resolveEngine returns the engine a run uses.
func resolveEngine(e string, b backends.Backend) (string, error) {
	switch e {
	case EngineAuto:
		if b != nil && b.String() == simplego.BackendName {
			return EngineHost, nil
		}
		return EngineGraph, nil
	case EngineHost, EngineGraph:
		return e, nil
	}
	return "", fmt.Errorf("train: unknown engine %q (want %q or %q)", e, EngineHost, EngineGraph)
}

// hostState is the trainer's EngineHost state: the parameters and AdamW moments as
// float32 slices (copied from the context once, written back by sync before anything
// reads the context: checkpoints, export, evaluation through the graph).
type hostState struct {
	params   *hostgrad.Params
	m1, m2   map[string][]float32
	adamStep float32
	names    []string // trainable, sorted (the update order; fixed for determinism)
	dirty    bool     // the context is behind the host copy
}

// newHostState copies the model variables (scope "dg"), their moments and the step
// counter out of ctx.
func newHostState(ctx *context.Context, cfg *config.Model) (*hostState, error) {
	hs := &hostState{params: &hostgrad.Params{Cfg: cfg, Values: map[string][]float32{}, Dims: map[string][]int{},
		Trainable: map[string]bool{}}, m1: map[string][]float32{}, m2: map[string][]float32{}}
	for v := range ctx.In(model.Scope).IterVariablesInScope() {
		val, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("train: variable %s: %w", v.Name(), err)
		}
		if val.DType() != dtypes.Float32 {
			return nil, fmt.Errorf("train: variable %s is %s; the host engine trains float32", v.Name(), val.DType())
		}
		data, err := tensors.CopyFlatData[float32](val)
		if err != nil {
			return nil, fmt.Errorf("train: variable %s: %w", v.Name(), err)
		}
		hs.params.Values[v.Name()] = data
		hs.params.Dims[v.Name()] = val.Shape().Dimensions
		hs.params.Trainable[v.Name()] = v.Trainable
		if !v.Trainable {
			continue
		}
		hs.names = append(hs.names, v.Name())
		for _, m := range []struct {
			scope string
			dst   map[string][]float32
		}{{scopeMoment1, hs.m1}, {scopeMoment2, hs.m2}} {
			mv := momentVar(ctx, m.scope, v)
			if mv == nil {
				return nil, fmt.Errorf("train: no %s moment for %s", m.scope, v.Name())
			}
			t, err := mv.Value()
			if err != nil {
				return nil, err
			}
			if m.dst[v.Name()], err = tensors.CopyFlatData[float32](t); err != nil {
				return nil, err
			}
		}
	}
	sort.Strings(hs.names)
	sv := stateVar(ctx, "adam_step")
	if sv == nil {
		return nil, fmt.Errorf("train: no optimizer step counter")
	}
	t, err := sv.Value()
	if err != nil {
		return nil, err
	}
	hs.adamStep = float32(scalar(t))
	return hs, nil
}

// sync writes the host parameters, moments and step counter back into ctx.
func (hs *hostState) sync(ctx *context.Context) error {
	if !hs.dirty {
		return nil
	}
	set := func(v *context.Variable, data []float32, dims []int) error {
		return v.SetValue(tensors.FromFlatDataAndDimensions(append([]float32(nil), data...), dims...))
	}
	scope := ctx.In(model.Scope)
	for name, data := range hs.params.Values {
		v := scope.GetVariable(name)
		if v == nil {
			return fmt.Errorf("train: variable %s vanished from the context", name)
		}
		if err := set(v, data, hs.params.Dims[name]); err != nil {
			return err
		}
		if !hs.params.Trainable[name] {
			continue
		}
		if err := set(momentVar(ctx, scopeMoment1, v), hs.m1[name], hs.params.Dims[name]); err != nil {
			return err
		}
		if err := set(momentVar(ctx, scopeMoment2, v), hs.m2[name], hs.params.Dims[name]); err != nil {
			return err
		}
	}
	if err := stateVar(ctx, "adam_step").SetValue(tensors.FromScalar(hs.adamStep)); err != nil {
		return err
	}
	hs.dirty = false
	return nil
}

// examples turns a padded batch into the host objective's examples.
func (b *Batch) examples() []hostgrad.Example {
	t := b.P + b.C
	out := make([]hostgrad.Example, b.B)
	for i := range b.B {
		row := b.Tokens[i*t : (i+1)*t]
		var prefix []int32
		var weight []float32
		for j := range b.P {
			if b.Valid[i*t+j] {
				prefix = append(prefix, row[j])
				if b.Weight != nil {
					weight = append(weight, b.Weight[i*t+j])
				}
			}
		}
		if b.Weight != nil {
			weight = append(weight, b.Weight[i*t+b.P:(i+1)*t]...)
		}
		out[i] = hostgrad.Example{Prefix: prefix, Canvas: row[b.P:], Noisy: b.Noisy[i*b.C : (i+1)*b.C],
			SelfCond: i < b.SelfCondRows, Weight: weight,
			NoAR: b.ARRows != nil && b.ARRows[i] == 0, NoDiffusion: b.DiffusionRows != nil && b.DiffusionRows[i] == 0}
	}
	return out
}

// step is one training step on the host: loss and gradient, global-norm clipping and
// the AdamW update of adamw.go (same formulas, in float32). Returns the losses and the
// gradient norm before clipping.
func (hs *hostState) step(b *Batch, lr float64, o Options) (hostgrad.Losses, float64, error) {
	l, g, err := hostgrad.Loss(hs.params, b.examples(), true)
	if err != nil {
		return l, 0, err
	}
	var sq float64
	for _, name := range hs.names {
		for _, v := range g[name] {
			sq += float64(v) * float64(v)
		}
	}
	norm := math.Sqrt(sq)
	clip := float32(1)
	if o.ClipNorm > 0 {
		clip = float32(o.ClipNorm / math.Max(norm, o.ClipNorm))
	}
	hs.adamStep++
	b1, b2 := float32(o.Beta1), float32(o.Beta2)
	corr1 := 1 / (1 - float32(math.Pow(o.Beta1, float64(hs.adamStep))))
	corr2 := 1 / (1 - float32(math.Pow(o.Beta2, float64(hs.adamStep))))
	eps, wd, rate := float32(o.AdamEps), float32(o.WeightDecay), float32(lr)
	for _, name := range hs.names {
		w, gr, m1, m2 := hs.params.Values[name], g[name], hs.m1[name], hs.m2[name]
		for i := range w {
			gi := gr[i] * clip
			m := b1*m1[i] + (1-b1)*gi
			s := b2*m2[i] + (1-b2)*gi*gi
			m1[i], m2[i] = m, s
			dir := m * corr1 / (float32(math.Sqrt(float64(s*corr2))) + eps)
			if wd > 0 {
				dir += wd * w[i]
			}
			w[i] -= rate * dir
		}
	}
	hs.dirty = true
	return l, norm, nil
}

// eval is the objective on a batch without gradient.
func (hs *hostState) eval(b *Batch) (hostgrad.Losses, error) {
	l, _, err := hostgrad.Loss(hs.params, b.examples(), false)
	return l, err
}
