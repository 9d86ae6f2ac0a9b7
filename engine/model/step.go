package model

import (
	"errors"
	"fmt"
	"slices"

	"github.com/darkroomlabs/darkroom/engine/sampler"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// StepsOnDevice reports whether DecodeStep runs on the device: the model is in graphs
// with the output head in them (neither HostDecoder nor HostHead). Otherwise it runs
// with the host's fused head.
func (r *Runner) StepsOnDevice() bool { return !r.HostDecoder && !r.HostHead }

// DecodeStep runs one whole denoising step: the decoder over canvas (placed after the
// cached tokens) with the self-conditioning input soft (nil: the canvas's first
// step), its logits, and the sampler's step over them (with plan's temperature,
// random keys, held tokens and bound). Only the step's ids, acceptance mask and
// entropies [C] come back (res's Draft, Accepted, Argmax, Entropy; sampler.Finish
// completes it) with nextSoft, the next step's soft embedding at plan.Temperature;
// the logits are kept back unless the caller reads them (AR guidance reads a
// canvas's last step's): it must Read or Free them. Same draws as
// sampler.Sampler.Step over Decode's logits.
//
// In graphs (StepsOnDevice) it is one executable (sampler.StepGraph after the head),
// nextSoft and the logits staying on the device. With the head on the host it is the
// fused head (hostHead.step, kernels.Head): the sampler's statistics are taken from
// each block of logits while it is in cache, no [C, V] array is written, and Read
// computes the logits again from the step's hidden state; the tokens are bit for bit
// those of Decode and Sampler.Step.
func (r *Runner) DecodeStep(canvas []int, soft *tensors.Tensor, plan sampler.Plan) (res sampler.StepResult, nextSoft *tensors.Tensor, logits *StepLogits, err error) {
	c := len(canvas)
	switch {
	case c == 0:
		return res, nil, nil, errors.New("decode step: empty canvas")
	case !(plan.Temperature > 0):
		return res, nil, nil, fmt.Errorf("decode step: temperature %g must be positive", plan.Temperature)
	case len(plan.Held) > c:
		return res, nil, nil, fmt.Errorf("decode step: %d held tokens on a canvas of %d", len(plan.Held), c)
	}
	if err := r.checkPositions("decode step", "canvas tokens", c); err != nil {
		return res, nil, nil, err
	}
	if !r.HostDecoder {
		if err := r.ensureCapacity(max(r.length, 1)); err != nil {
			return res, nil, nil, err
		}
	}
	ids, err := r.paddedIDs("decode step", canvas, c)
	if err != nil {
		return res, nil, nil, err
	}
	held := make([]int32, c)
	for i := range held {
		held[i] = -1
	}
	for i, id := range plan.Held {
		if id < 0 || id >= r.cfg.VocabSize {
			return res, nil, nil, fmt.Errorf("decode step: held token id %d out of range [0, %d)", id, r.cfg.VocabSize)
		}
		held[i] = int32(id)
	}
	soft, err = r.softInput("decode step", soft, c)
	if err != nil {
		return res, nil, nil, err
	}
	if !r.StepsOnDevice() {
		return r.stepOnHost(ids, soft, plan)
	}
	out, err := r.runStep(ids, soft, plan, held)
	if err != nil {
		return res, nil, nil, err
	}
	err = try("decode step: read the step", func() {
		res.Draft = intsOf(tensors.MustCopyFlatData[int32](out[0]))
		res.Accepted = tensors.MustCopyFlatData[bool](out[1])
		res.Entropy = tensors.MustCopyFlatData[float32](out[2])
		res.Argmax = intsOf(tensors.MustCopyFlatData[int32](out[3]))
	})
	for _, t := range out[:4] {
		_ = t.FinalizeAll()
	}
	if err != nil {
		_ = out[4].FinalizeAll()
		_ = out[5].FinalizeAll()
		return sampler.StepResult{}, nil, nil, err
	}
	return res, out[4], &StepLogits{t: out[5]}, nil
}

// runStep runs DecodeStep's executable — stepGraph, or a split model's front, host
// layers and tail (stepSplit) — over the canvas ids, the soft embedding, plan and the
// held ids, and returns stepGraph's outputs.
func (r *Runner) runStep(ids []int32, soft *tensors.Tensor, plan sampler.Plan, held []int32) ([]*tensors.Tensor, error) {
	c := len(ids)
	args := []any{plan.Temperature, tensors.FromFlatDataAndDimensions(plan.Keys[:], 4),
		tensors.FromFlatDataAndDimensions(held, c), plan.EntropyBound}
	if r.split() {
		return r.stepSplit(ids, soft, args)
	}
	if _, err := r.execOnce("decode step", &r.stepExec, r.stepGraph); err != nil {
		return nil, err
	}
	in := []any{tensors.FromFlatDataAndDimensions(ids, 1, c), soft, args[0], int32(r.length), args[1], args[2], args[3]}
	for _, t := range r.cache {
		in = append(in, t)
	}
	r.compiled[fmt.Sprintf("step/%d/%d", c, r.capacity)] = true
	var out []*tensors.Tensor
	err := try("decode step", func() { out = must(r.stepExec.Exec(in...)) })
	return out, err
}

// stepOnHost is DecodeStep with the head on the host: decodeHidden, the fused head
// (hostHead.step) and plan.Decide.
func (r *Runner) stepOnHost(ids []int32, soft *tensors.Tensor, plan sampler.Plan) (sampler.StepResult, *tensors.Tensor, *StepLogits, error) {
	c, softcap := len(ids), r.cfg.FinalLogitSoftcapping
	hn, err := r.decodeHidden("decode step", ids, soft)
	if err != nil {
		return sampler.StepResult{}, nil, nil, err
	}
	var pos []sampler.Position
	var next []float32
	err = try("decode step: output head", func() {
		if err := r.head.prepare(r.weights, r.weights.embedScale(r.cfg)); err != nil {
			panic(err)
		}
		pos, next = r.head.step(hn, c, softcap, plan)
	})
	if err != nil {
		return sampler.StepResult{}, nil, nil, err
	}
	hn = slices.Clone(hn) // the host model's scratch may hold it
	head := &r.head
	logits := &StepLogits{host: func() (l []float32, err error) {
		err = try("decode step: logits", func() { l = head.logits(hn, c, softcap) })
		return l, err
	}}
	return plan.Decide(pos, r.cfg.VocabSize), tensors.FromFlatDataAndDimensions(next, 1, c, r.cfg.HiddenSize), logits, nil
}

// StepLogits are a DecodeStep's float32, soft-capped logits [C·V] (as Decode returns
// them), kept back until read or freed: on the device in graphs, and not computed at
// all with the host head until Read asks (from the step's hidden state [C·D]).
type StepLogits struct {
	t    *tensors.Tensor
	host func() ([]float32, error)
}

// Read returns the logits (copied to the host, the device buffer freed; or computed
// by the host head).
func (l *StepLogits) Read() (logits []float32, err error) {
	if l.host != nil {
		return l.host()
	}
	err = try("decode step: read logits", func() { logits = tensors.MustCopyFlatData[float32](l.t) })
	l.Free()
	return logits, err
}

// Free frees the device buffer without reading it.
func (l *StepLogits) Free() {
	if l.t != nil {
		_ = l.t.FinalizeAll()
	}
}

// stepGraph: in = [canvas [1, C], soft [1, C, D], temperature f64, length, keys [4]
// Uint32, held [C] Int32, bound f64, cache…] → [draft [C], accepted [C], entropy [C],
// argmax [C], next soft [1, C, D], logits [1, C, V]]: decodeGraph with
// sampler.StepGraph on its logits.
func (r *Runner) stepGraph(ctx *context.Context, in []*Node) []*Node {
	p := r.params(ctx, in[0].Graph())
	return r.stepOutputs(p, r.runnerDecoder(p, in[0], in[1], in[3], in[7:]), in[2], in[4], in[5], in[6])
}

// stepOutputs are DecodeStep's outputs from the last layer's output h [1, C, D] (see
// stepGraph).
func (r *Runner) stepOutputs(p *Params, h, temperature, keys, held, bound *Node) []*Node {
	c, v := h.Shape().Dimensions[1], r.cfg.VocabSize
	logits := Logits(p, h) // [1, C, V]
	draft, accepted, entropy, argmax := sampler.StepGraph(Reshape(logits, c, v), temperature, keys, held, bound)
	return []*Node{draft, accepted, entropy, argmax, SoftEmbedding(p, logits, temperature), logits}
}

// counted wraps a graph function so that every graph it builds — one per
// compilation: an executable builds its graph once per new input shape and reuses it
// after — is counted in Compilations.
func (r *Runner) counted(fn func(*context.Context, []*Node) []*Node) func(*context.Context, []*Node) []*Node {
	return func(ctx *context.Context, in []*Node) []*Node {
		r.compiling()
		return fn(ctx, in)
	}
}

// compiling counts a graph being built and calls OnCompile.
func (r *Runner) compiling() {
	r.compilations++
	if r.OnCompile != nil {
		r.OnCompile()
	}
}

// Compilations is how many graphs the runner has built and compiled so far (every
// kind and shape, the cache's growth included). Executables are kept across steps
// and generations (Reset keeps them), so a second generation of the same shapes
// compiles nothing.
func (r *Runner) Compilations() int { return r.compilations }

func intsOf(x []int32) []int {
	out := make([]int, len(x))
	for i, v := range x {
		out[i] = int(v)
	}
	return out
}
