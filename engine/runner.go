package engine

import (
	"cmp"
	"fmt"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/sampler"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// modelRunner adapts engine/model's Runner to the generation loop: the
// self-conditioning soft embedding travels as an opaque value and stays on the
// device; each one is freed once the next step has consumed it.
type modelRunner struct{ r *model.Runner }

// loadedWeights are a model's weights as Load read them: a checkpoint mapped in
// place, or a Set.
type loadedWeights struct {
	mapped *weights.Mapped
	set    *weights.Set
}

func (w loadedWeights) close() {
	if w.mapped != nil {
		_ = w.mapped.Close()
	}
}

// newModelRunner prepares the runner: on the pure-Go backend (unless opts.InGraph) a
// mapped checkpoint runs on the host straight from its mapping (model.NewHostRunner);
// on an accelerator with opts.DeviceLayers below the layer count, split between the
// two (newSplitRunner); otherwise the weights go into a fresh GoMLX context on b (a
// mapped checkpoint copied out, converted where it is a GGUF file, and unmapped:
// progress, if not nil, hears the stored bytes done of the total). release frees the
// KV cache (and the mapping).
func newModelRunner(b backends.Backend, cfg *config.Model, w loadedWeights, opts Options, progress func(done, total int64)) (runner, string, func(), error) {
	inGraph := opts.InGraph
	if k := opts.DeviceLayers; k > 0 && k < cfg.Text.NumHiddenLayers && (inGraph || !model.IsPureGo(b)) {
		return newSplitRunner(b, cfg, w, k, progress)
	}
	if w.mapped != nil && !inGraph && model.IsPureGo(b) {
		r, err := model.NewHostRunner(&cfg.Text, w.mapped)
		if err != nil {
			w.close()
			return nil, "", nil, fmt.Errorf("model: %w", err)
		}
		return modelRunner{r}, PathHost, func() {
			r.Close()
			w.close()
		}, nil
	}
	set := w.set
	if w.mapped != nil {
		var err error
		set, err = w.mapped.Set(progress)
		w.close()
		if err != nil {
			return nil, "", nil, err
		}
	}
	ctx := context.New()
	if err := model.LoadSet(ctx, set); err != nil {
		return nil, "", nil, fmt.Errorf("model weights: %w", err)
	}
	r, err := model.NewRunner(b, &cfg.Text, ctx)
	if err != nil {
		return nil, "", nil, fmt.Errorf("model: %w", err)
	}
	if inGraph {
		r.HostDecoder, r.HostHead = false, false
	}
	// An accelerator multiplies a bf16 model's weights in bf16 (float32
	// accumulation), as upstream runs it; the go backend stays float32.
	r.ComputeDType = model.ComputeDTypeFor(cmp.Or(cfg.Text.DType, cfg.DType), !model.IsPureGo(b))
	path := PathGraph
	if r.HostDecoder {
		path = PathHost
	}
	return modelRunner{r}, path, r.Close, nil
}

// newSplitRunner is newModelRunner for a model split after layer k−1
// (model.NewSplitRunner): the global tensors and the first k layers' go into a GoMLX
// context on b's device (converted as the graph path converts them: progress hears
// their stored bytes); the host reads its layers' as stored, from the mapping (which
// stays open until release) or, for weights Load read into a Set, from a host
// context of their own.
func newSplitRunner(b backends.Backend, cfg *config.Model, w loadedWeights, k int, progress func(done, total int64)) (runner, string, func(), error) {
	onDevice := func(s weights.Spec) bool { return s.Layer < k } // global tensors: Layer −1
	var host model.HostSource
	set := w.set
	if w.mapped != nil {
		var err error
		if set, err = w.mapped.SetOf(onDevice, progress); err != nil {
			w.close()
			return nil, "", nil, err
		}
		host = w.mapped
	} else {
		device, hostSet := weights.NewSet(), weights.NewSet()
		for _, s := range weights.Specs(cfg) {
			to := hostSet
			if onDevice(s) {
				to = device
			}
			for _, name := range []string{s.Name, s.Name + quant.WeightSuffix, s.Name + quant.ScaleSuffix, s.Name + quant.MinSuffix} {
				if t, ok := set.Tensors[name]; ok {
					to.Tensors[name] = t
				}
			}
			if q, ok := set.Quant[s.Name]; ok {
				to.Quant[s.Name] = q
			}
		}
		hostCtx := context.New()
		if err := model.LoadSet(hostCtx, hostSet); err != nil {
			return nil, "", nil, fmt.Errorf("model weights: %w", err)
		}
		set, host = device, model.ContextSource(hostCtx)
	}
	ctx := context.New()
	if err := model.LoadSet(ctx, set); err != nil {
		w.close()
		return nil, "", nil, fmt.Errorf("model weights: %w", err)
	}
	r, err := model.NewSplitRunner(b, &cfg.Text, ctx, host, k)
	if err != nil {
		w.close()
		return nil, "", nil, fmt.Errorf("model: %w", err)
	}
	r.ComputeDType = model.ComputeDTypeFor(cmp.Or(cfg.Text.DType, cfg.DType), !model.IsPureGo(b)) // as newModelRunner's graphs
	return modelRunner{r}, PathSplit, func() {
		r.Close()
		w.close()
	}, nil
}

func (m modelRunner) Reset() { m.r.Reset() }

func (m modelRunner) Keep(slot int) bool      { return m.r.Keep(slot) }
func (m modelRunner) Restore(slot, n int) int { return m.r.Restore(slot, n) }

func (m modelRunner) Encode(tokens []int) ([]float32, error) { return m.r.Encode(tokens) }

func (m modelRunner) Score(tokens []int, from int) ([]float32, error) { return m.r.Score(tokens, from) }

func (m modelRunner) Decode(canvas []int, soft any, temperature float64) ([]float32, any, error) {
	in, err := softTensor(soft)
	if err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	logits, next, err := m.r.Decode(canvas, in, temperature)
	if err != nil {
		return nil, nil, err
	}
	if in != nil {
		_ = in.FinalizeAll()
	}
	return logits, next, nil
}

func (m modelRunner) Reserve(tokens int) error { return m.r.Reserve(tokens) }

func (m modelRunner) TokensOnDevice() bool { return m.r.TokensOnDevice() }

func (m modelRunner) EncodeNext(tokens []int, plan sampler.TokenPlan) (int, error) {
	return m.r.EncodeNext(tokens, plan)
}

func (m modelRunner) StepsOnDevice() bool { return m.r.StepsOnDevice() }

func (m modelRunner) DecodeStep(canvas []int, soft any, plan sampler.Plan) (sampler.StepResult, any, stepLogits, error) {
	in, err := softTensor(soft)
	if err != nil {
		return sampler.StepResult{}, nil, nil, fmt.Errorf("decode step: %w", err)
	}
	res, next, logits, err := m.r.DecodeStep(canvas, in, plan)
	if err != nil {
		return res, nil, nil, err
	}
	if in != nil {
		_ = in.FinalizeAll()
	}
	return res, next, logits, nil
}

// softTensor is the self-conditioning input as the model takes it (nil: none).
func softTensor(soft any) (*tensors.Tensor, error) {
	if soft == nil {
		return nil, nil
	}
	t, ok := soft.(*tensors.Tensor)
	if !ok {
		return nil, fmt.Errorf("self-conditioning input is %T, want a tensor", soft)
	}
	return t, nil
}
