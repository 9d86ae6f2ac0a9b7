package model

import (
	"errors"
	"fmt"
	"slices"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// A model split between a device and the host.
//
// A GPU too small for the whole model (a 12 GB card and the 26B's 17–19 GB) can still
// hold its first layers: as llama.cpp's --n-gpu-layers, a split Runner
// (NewSplitRunner) runs layers 0…k−1 in graphs on the device and k…L−1 on the host,
// and everything that is not a layer — the embedding, the decoder's self-conditioning
// input, the final norm, the output head and the sampler's step — on the device, so
// the host never touches the 262,144-row embedding (a third of a step's products on
// the CPU). The device holds the context's weights (the front's and the global ones),
// the KV cache of its k layers (CacheShapes of FrontConfig) and the step's buffers; the
// host holds its layers' weights as stored (a mapped checkpoint, HostSource) and their
// KV cache in host memory (hostCache, from layer k on).
//
// Every call runs a front executable over the device's layers, the host's layers
// over its output, and a tail executable over theirs: per call only the rows' hidden
// state [T, D] crosses, each way once — a canvas's 256 × 2,816 float32 is 2.9 MB, a
// fraction of a millisecond over PCIe. The front executables are the graph path's
// with FrontConfig in place of the model's config (encoderPass, runnerDecoder), the
// tails the outputs the whole graphs end with (Logits, decodeOutputs, stepOutputs),
// so a split model computes what the graph and host paths compute, in the same
// operations. EncodeNext is the graph path's only (TokensOnDevice is false): the AR
// loop picks its tokens on the host from Encode's logits.

// FrontConfig is cfg cut to its first k layers: the device's part of a model split
// after layer k−1, whose cache and layer stack the front graphs build.
func FrontConfig(cfg *config.Text, k int) *config.Text {
	front := *cfg
	front.NumHiddenLayers = k
	front.LayerTypes = slices.Clip(cfg.LayerTypes[:k])
	return &front
}

// NewSplitRunner prepares a runner for a model split after layer k−1 (0 < k < the
// number of layers): layers 0…k−1 and every weight outside the layers from ctx (scope
// "dg") on backend's device, in graphs; layers k… from host as stored, on the host
// (see above). ctx needs no weights of the host's layers, nor host those of the
// device's. The runner never runs on the host alone (HostDecoder and HostHead stay
// off, whatever the backend).
func NewSplitRunner(backend backends.Backend, cfg *config.Text, ctx *context.Context, host HostSource, k int) (*Runner, error) {
	if err := CheckConfig(cfg); err != nil {
		return nil, err
	}
	if k < 1 || k >= cfg.NumHiddenLayers {
		return nil, fmt.Errorf("split model: %d device layers of %d (want 1…%d)", k, cfg.NumHiddenLayers, cfg.NumHiddenLayers-1)
	}
	if host == nil {
		return nil, errors.New("split model: no weights for the host's layers")
	}
	r, err := NewRunner(backend, cfg, ctx)
	if err != nil {
		return nil, err
	}
	r.HostDecoder, r.HostHead = false, false
	r.deviceLayers, r.front = k, FrontConfig(cfg, k)
	r.weights = newHostWeights(host)
	r.weights.from = k
	return r, nil
}

// DeviceLayers is how many of the model's layers run on the device where it is split
// with the host (NewSplitRunner), 0 where it is not.
func (r *Runner) DeviceLayers() int {
	if !r.split() {
		return 0
	}
	return r.deviceLayers
}

// split reports whether the runner runs a split model.
func (r *Runner) split() bool { return r.deviceLayers > 0 && !r.HostDecoder }

// graphCfg is the config of the layers the graphs run and cache: the model's, or a
// split model's device part (FrontConfig).
func (r *Runner) graphCfg() *config.Text {
	if r.split() {
		return r.front
	}
	return r.cfg
}

// encodeSplit is Encode on a split model: per chunk of MaxChunk tokens the front
// (frontEncodeGraph: the device's layers, writing their cache), the host's layers over
// its hidden state (writing theirs), and for the last token the tail's logits. A
// failure part way leaves the two caches out of step: both are emptied (as a failed
// graph Encode loses its donated cache).
func (r *Runner) encodeSplit(tokens []int) (lastLogits []float32, err error) {
	if err := r.ensureCapacity(r.length + len(tokens)); err != nil {
		return nil, err
	}
	exec, err := r.execOnce("split model", &r.splitExecs.encode, r.frontEncodeGraph)
	if err != nil {
		return nil, err
	}
	d := r.cfg.HiddenSize
	var last []float32
	for start := 0; start < len(tokens); start += r.MaxChunk {
		chunk := tokens[start:min(start+r.MaxChunk, len(tokens))]
		at := r.length
		out, err := r.runEncode("encode", exec, chunk)
		if err == nil {
			var x []float32
			if x, err = r.hiddenRows("encode", out, len(chunk)); err == nil {
				err = try("encode", func() {
					hs := r.hostModel().encodeHidden(&r.hcache, x, at, r.weights.encoderScalar, true, 0)
					last = slices.Clone(hs[(len(chunk)-1)*d:])
				})
			}
		}
		if err != nil {
			r.length = 0
			r.hcache.truncate(r.cfg, 0)
			return nil, err
		}
	}
	return r.tailLogits("encode", last, 1, nil)
}

// scoreSplit is Score on a split model: the front and the host's layers read the
// caches and write neither; the tail gives the rows from… their logits.
func (r *Runner) scoreSplit(ids []int32, n, from int) (logits []float32, err error) {
	if err := r.ensureCapacity(r.length + n); err != nil {
		return nil, err
	}
	exec, err := r.execOnce("split model", &r.splitExecs.score, r.frontScoreGraph)
	if err != nil {
		return nil, err
	}
	out, err := r.runScore("score-front", exec, ids, n)
	if err != nil {
		return nil, err
	}
	x, err := r.hiddenRows("score", out, n)
	if err != nil {
		return nil, err
	}
	var hs []float32
	err = try("score", func() {
		hs = r.hostModel().encodeHidden(&r.hcache, x, r.length, r.weights.encoderScalar, false, 0)
	})
	if err != nil {
		return nil, err
	}
	rows := n - from
	return r.tailLogits("score", hs[from*r.cfg.HiddenSize:], rows, r.scoreBuffer(rows*r.cfg.VocabSize))
}

// tailLogits is the tail's logits (Logits: the final norm, the head, the soft-cap) of
// rows hidden states h [rows·D] from the host's last layer: [rows·V], in into where it
// is not nil (it holds as many). The rows are padded to a power of two, so the
// executables are few.
func (r *Runner) tailLogits(op string, h []float32, rows int, into []float32) (logits []float32, err error) {
	exec, err := r.execOnce("split model", &r.splitExecs.logits, r.tailLogitsGraph)
	if err != nil {
		return nil, err
	}
	d, nb := r.cfg.HiddenSize, nextPow2(rows)
	in := make([]float32, nb*d)
	copy(in, h[:rows*d])
	r.compiled[fmt.Sprintf("logits-tail/%d", nb)] = true
	var out []*tensors.Tensor
	if err := try(op+": output head", func() { out = must(exec.Exec(tensors.FromFlatDataAndDimensions(in, nb, d))) }); err != nil {
		return nil, err
	}
	err = try(op+": read logits", func() {
		if err := tensors.ConstFlatData(out[0], func(flat []float32) {
			logits = append(into[:0], flat[:rows*r.cfg.VocabSize]...)
		}); err != nil {
			panic(err)
		}
	})
	_ = out[0].FinalizeAll()
	return logits, err
}

// hiddenSplit is the decoder over a split model up to its tail's input: the front
// (frontDecodeGraph) over the canvas ids with the soft embedding soft, then the host's
// layers: the host's last layer's output [1, C, D], before the final norm, as a tensor
// for the tail.
func (r *Runner) hiddenSplit(op string, ids []int32, soft *tensors.Tensor) (*tensors.Tensor, error) {
	exec, err := r.execOnce("split model", &r.splitExecs.decode, r.frontDecodeGraph)
	if err != nil {
		return nil, err
	}
	c := len(ids)
	out, err := r.runDecoder(op, "decode-front", exec, ids, soft)
	if err != nil {
		return nil, err
	}
	x, err := r.hiddenRows(op, out, c)
	if err != nil {
		return nil, err
	}
	var h *tensors.Tensor
	err = try(op, func() {
		hs := r.hostModel().decodeFrom(&r.hcache, x, r.length)
		h = tensors.FromFlatDataAndDimensions(hs, 1, c, r.cfg.HiddenSize)
	})
	return h, err
}

// decodeSplit is Decode on a split model: hiddenSplit, then the tail's logits and
// next soft embedding (decodeOutputs), the latter staying on the device.
func (r *Runner) decodeSplit(ids []int32, soft *tensors.Tensor, temperature float64) (logits []float32, nextSoft *tensors.Tensor, err error) {
	h, err := r.hiddenSplit("decode", ids, soft)
	if err != nil {
		return nil, nil, err
	}
	exec, err := r.execOnce("split model", &r.splitExecs.decodeTail, r.tailDecodeGraph)
	if err != nil {
		return nil, nil, err
	}
	r.compiled[fmt.Sprintf("decode-tail/%d", len(ids))] = true
	var out []*tensors.Tensor
	if err := try("decode", func() { out = must(exec.Exec(h, float32(temperature))) }); err != nil {
		return nil, nil, err
	}
	return decodeResult(out)
}

// stepSplit is DecodeStep's executable on a split model: hiddenSplit, then the tail's
// step (stepOutputs) over args = [temperature, keys, held, bound]; the outputs are
// stepGraph's.
func (r *Runner) stepSplit(ids []int32, soft *tensors.Tensor, args []any) ([]*tensors.Tensor, error) {
	h, err := r.hiddenSplit("decode step", ids, soft)
	if err != nil {
		return nil, err
	}
	exec, err := r.execOnce("split model", &r.splitExecs.stepTail, r.tailStepGraph)
	if err != nil {
		return nil, err
	}
	r.compiled[fmt.Sprintf("step-tail/%d", len(ids))] = true
	var out []*tensors.Tensor
	err = try("decode step", func() { out = must(exec.Exec(append([]any{h}, args...)...)) })
	return out, err
}

// splitExecs are the split path's executables (NewSplitRunner), made on first use.
type splitExecs struct {
	encode, score, decode        *context.Exec // the fronts
	logits, decodeTail, stepTail *context.Exec // the tails
}

// frontEncodeGraph: in = [tokens [1, Tb], count, length, cache… (FrontConfig's)] →
// [hidden [1, Tb, D] (layer k−1's output), cache'…]: encodeGraph over the device's
// layers.
func (r *Runner) frontEncodeGraph(ctx *context.Context, in []*Node) []*Node {
	_, h, src := r.encoderPass(ctx, in[:3], in[3:])
	return append([]*Node{h}, joinCache(r.graphCfg(), src.k, src.v)...)
}

// frontScoreGraph: in = [tokens [1, Tb], count, length, cache…] → [hidden [1, Tb, D]]:
// frontEncodeGraph with its cache writes discarded.
func (r *Runner) frontScoreGraph(ctx *context.Context, in []*Node) []*Node {
	_, h, _ := r.encoderPass(ctx, in[:3], in[3:])
	return []*Node{h}
}

// frontDecodeGraph: in = [canvas [1, C], soft [1, C, D], length, cache…] → [hidden
// [1, C, D]]: the decoder's input and the device's layers.
func (r *Runner) frontDecodeGraph(ctx *context.Context, in []*Node) []*Node {
	p := r.params(ctx, in[0].Graph())
	return []*Node{r.runnerDecoder(p, in[0], in[1], in[2], in[3:])}
}

// tailLogitsGraph: in = [hidden [N, D]] → [logits [N, V]].
func (r *Runner) tailLogitsGraph(ctx *context.Context, in []*Node) []*Node {
	return []*Node{Logits(r.params(ctx, in[0].Graph()), in[0])}
}

// tailDecodeGraph: in = [hidden [1, C, D], temperature] → decodeOutputs.
func (r *Runner) tailDecodeGraph(ctx *context.Context, in []*Node) []*Node {
	return r.decodeOutputs(r.params(ctx, in[0].Graph()), in[0], in[1])
}

// tailStepGraph: in = [hidden [1, C, D], temperature f64, keys [4] Uint32, held [C]
// Int32, bound f64] → stepOutputs.
func (r *Runner) tailStepGraph(ctx *context.Context, in []*Node) []*Node {
	return r.stepOutputs(r.params(ctx, in[0].Graph()), in[0], in[1], in[2], in[3], in[4])
}
