package weights

// ModelOpt NVFP4 checkpoints (nvidia/diffusiongemma-26B-A4B-it-NVFP4).
//
// Layout, as NVIDIA Model Optimizer's Hugging Face export writes it and vLLM reads it
// (sources: NVIDIA/Model-Optimizer modelopt/torch/quantization/qtensor/nvfp4_tensor.py,
// modelopt/torch/export/quant_utils.py, modelopt/torch/export/moe_utils.py,
// modelopt/torch/export/convert_hf_config.py; vllm-project/vllm
// vllm/model_executor/layers/quantization/modelopt.py (ModelOptNvFp4Config,
// ModelOptNvFp4LinearMethod), vllm/model_executor/models/gemma4.py (load_weights,
// expert_params_mapping) and diffusion_gemma.py):
//
//   - Every quantized Linear MODULE (HF module path, e.g.
//     model.decoder.layers.3.self_attn.q_proj) stores
//     MODULE.weight          U8      [out, in/2]   two FP4 E2M1 codes per byte; element
//     2j in the low nibble, 2j+1 in the high one (`packed = q[..., 1::2] << 4 |
//     q[..., 0::2]` in NVFP4QTensor.quantize);
//     MODULE.weight_scale    F8_E4M3 [out, in/16]  per-block scale;
//     MODULE.weight_scale_2  F32     scalar        per-tensor scale (amax / (6·448));
//     MODULE.input_scale     F32     scalar        activation scale for W4A4 kernels.
//     The weight is w = e2m1(code) · (float32(weight_scale) · weight_scale_2), with
//     the two scales multiplied in float32 first (NVFP4QTensor.dequantize).
//   - MoE experts, a fused [E, 2F, D] gate_up_proj and [E, D, F] down_proj in the BF16
//     checkpoint, are split per expert on export (moe_utils._export_fused_experts):
//     …experts.{e}.gate_proj (gate = the first F rows of gate_up_proj), …experts.{e}.up_proj,
//     …experts.{e}.down_proj, each a quantized Linear as above. vLLM maps exactly
//     these names onto its fused expert weights (gemma4.py expert_params_mapping).
//   - hf_quant_config.json: {"producer": {"name": "modelopt", …}, "quantization":
//     {"quant_algo": "NVFP4", "kv_cache_quant_algo": …, "group_size": 16,
//     "exclude_modules": [glob patterns of modules left unquantized]}}; newer exports
//     also put a "quantization_config" with "quant_method": "modelopt", "quant_algo",
//     "ignore" and "config_groups" into config.json (convert_hf_quant_config_format).
//   - Modules vLLM builds without a quant config must be stored unquantized: the MoE
//     router (GateLinear), the self-conditioning MLP (plain nn.Linear), embeddings;
//     norms, scalars and the vision tower are never quantized by this loader's reading.
//
// Loaded, an NVFP4 weight stays as downloaded (quant.NVFP4): NAME.qweight holds the
// packed codes, NAME.qscale one Uint8 row per output row with the FP8 block-scale codes
// and weight_scale_2 — about 0.565 bytes per weight, 15.4 GB for the 26B model's
// quantized weights (plus 1.5 GB of BF16 embedding, router and norms) — and is
// dequantized to exactly ModelOpt's values next to each matmul (in the graph) or
// multiplied as stored (the host model). For a graph (Load, a Set) per-expert modules
// are stacked into the engine's fused experts.gate_up_proj [E, 2F, D] (gate rows
// first) and experts.down_proj [E, D, F]; the host model maps the files instead
// (mapModelOpt: the codes left where they lie, the experts held one part per module,
// only the scale rows written).
//
// What this loader does not assume: which Linear modules are quantized is read from
// the tensors themselves (a U8 weight with its scales is NVFP4, a float weight is
// not), cross-checked against exclude_modules; every tensor is checked for dtype and
// shape, and anything it cannot place is an error naming the tensor. The activation
// scales (input_scale) and KV-cache scales (k_scale, v_scale) are for quantized
// activations and caches, which Darkroom does not use (it computes in float32): they
// are checked and ignored.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// HFQuantConfigFile is ModelOpt's quantization description next to config.json.
const HFQuantConfigFile = config.HFQuantConfigFile

// ModelOptModule is one quantized Linear module of a ModelOpt export: its path
// (MODULE: its tensors are MODULE.weight, .weight_scale, .weight_scale_2 and
// .input_scale) and how many rows of the engine's weight it holds.
type ModelOptModule struct {
	Name string
	Rows int
}

// ModelOptModules lists the modules ModelOpt's export stores weight sp in when it is
// quantized, in the order of sp's rows: a projection is one module (its HF name less
// ".weight"); a fused expert weight is split per expert — gate_up_proj [E, 2F, D]
// into experts.{e}.gate_proj and up_proj (F rows each, gate first), down_proj
// [E, D, F] into experts.{e}.down_proj — under its HF name's prefix.
func ModelOptModules(sp Spec) []ModelOptModule {
	fused, projs, rows, ok := expertProjs(sp)
	if !ok {
		return []ModelOptModule{{Name: strings.TrimSuffix(sp.HF, moWeight), Rows: sp.Shape[0]}}
	}
	base := strings.TrimSuffix(sp.HF, fused)
	var ms []ModelOptModule
	for e := range sp.Shape[0] {
		for _, pr := range projs {
			ms = append(ms, ModelOptModule{Name: fmt.Sprintf("%s%d.%s", base, e, pr), Rows: rows})
		}
	}
	return ms
}

// expertProjs is how ModelOpt splits a fused expert weight sp (ok false for any other
// weight): the fused tensor's last name part, the projections each expert's rows go
// to, in order, and each one's rows.
func expertProjs(sp Spec) (fused string, projs []string, rows int, ok bool) {
	switch {
	case strings.HasSuffix(sp.Name, ".experts.gate_up_proj"):
		return "gate_up_proj", []string{"gate_proj", "up_proj"}, sp.Shape[1] / 2, true
	case strings.HasSuffix(sp.Name, ".experts.down_proj"):
		return "down_proj", []string{"down_proj"}, sp.Shape[1], true
	}
	return "", nil, 0, false
}

// ModelOpt tensor name suffixes of a quantized Linear module.
const (
	moWeight      = ".weight"
	moScale       = ".weight_scale"
	moScale2      = ".weight_scale_2"
	moInputScale  = ".input_scale"
	moKScale      = ".k_scale"
	moVScale      = ".v_scale"
	moExpertsPart = "experts."
)

// ModelOptQuant is what a ModelOpt export says about its quantization.
type ModelOptQuant struct {
	Source      string   // the file it was read from
	QuantAlgo   string   // "NVFP4" or "W4A16_NVFP4"
	GroupSize   int      // FP4 values per block scale (16)
	Exclude     []string // glob patterns of modules left unquantized
	KVCacheAlgo string   // informational: Darkroom keeps its KV cache in float32
}

// IsModelOpt reports whether ck holds ModelOpt-quantized Linear weights (some
// MODULE.weight_scale_2 tensor).
func IsModelOpt(ck *safetensors.Checkpoint) bool {
	for _, n := range ck.Names() {
		if strings.HasSuffix(n, moScale2) {
			return true
		}
	}
	return false
}

// ReadModelOptQuant reads the checkpoint's ModelOpt quantization description from
// hf_quant_config.json, or from config.json's "quantization_config" when that says
// "quant_method": "modelopt". Only NVFP4 (W4A4) and W4A16_NVFP4, whose weights are
// stored the same way, are accepted.
func ReadModelOptQuant(ck *safetensors.Checkpoint) (*ModelOptQuant, error) {
	q, err := readModelOptQuant(ck)
	if err != nil {
		return nil, err
	}
	switch q.QuantAlgo {
	case "NVFP4", "W4A16_NVFP4":
	case "":
		return nil, fmt.Errorf("%s: quant_algo is missing", q.Source)
	default:
		return nil, fmt.Errorf("%s: quant_algo %q is not supported (Darkroom loads ModelOpt NVFP4 and W4A16_NVFP4)", q.Source, q.QuantAlgo)
	}
	if q.GroupSize == 0 {
		q.GroupSize = quant.NVFP4.GroupSize // vLLM's default too (ModelOptNvFp4Config._from_config)
	}
	if q.GroupSize != quant.NVFP4.GroupSize {
		return nil, fmt.Errorf("%s: group_size %d: NVFP4 uses blocks of %d", q.Source, q.GroupSize, quant.NVFP4.GroupSize)
	}
	for _, p := range q.Exclude {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%s: bad exclude pattern %q: %v", q.Source, p, err)
		}
	}
	return q, nil
}

func readModelOptQuant(ck *safetensors.Checkpoint) (*ModelOptQuant, error) {
	b, err := ck.ReadFile(HFQuantConfigFile)
	if err == nil {
		var raw struct {
			Producer struct {
				Name string `json:"name"`
			} `json:"producer"`
			Quantization *struct {
				QuantAlgo   string   `json:"quant_algo"`
				KVCacheAlgo *string  `json:"kv_cache_quant_algo"`
				GroupSize   int      `json:"group_size"`
				Exclude     []string `json:"exclude_modules"`
			} `json:"quantization"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("%s: malformed: %v", HFQuantConfigFile, err)
		}
		if raw.Producer.Name != "" && raw.Producer.Name != "modelopt" {
			return nil, fmt.Errorf("%s: producer %q, want modelopt", HFQuantConfigFile, raw.Producer.Name)
		}
		if raw.Quantization == nil {
			return nil, fmt.Errorf("%s: \"quantization\" is missing", HFQuantConfigFile)
		}
		q := &ModelOptQuant{Source: HFQuantConfigFile, QuantAlgo: raw.Quantization.QuantAlgo,
			GroupSize: raw.Quantization.GroupSize, Exclude: raw.Quantization.Exclude}
		if raw.Quantization.KVCacheAlgo != nil {
			q.KVCacheAlgo = *raw.Quantization.KVCacheAlgo
		}
		return q, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", HFQuantConfigFile, err)
	}
	b, err = ck.ReadFile(config.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("the checkpoint has ModelOpt scales (%s) but no %s, and %s cannot be read: %w",
			moScale2, HFQuantConfigFile, config.ConfigFile, err)
	}
	var raw struct {
		QC *struct {
			QuantMethod  string   `json:"quant_method"`
			QuantAlgo    string   `json:"quant_algo"`
			GroupSize    int      `json:"group_size"`
			Exclude      []string `json:"exclude_modules"`
			Ignore       []string `json:"ignore"`
			ConfigGroups map[string]struct {
				Weights struct {
					GroupSize int `json:"group_size"`
				} `json:"weights"`
			} `json:"config_groups"`
		} `json:"quantization_config"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: malformed: %v", config.ConfigFile, err)
	}
	src := config.ConfigFile + " quantization_config"
	if raw.QC == nil || raw.QC.QuantMethod != "modelopt" {
		return nil, fmt.Errorf("the checkpoint has ModelOpt scales (%s) but neither %s nor a modelopt quantization_config in %s says how it was quantized",
			moScale2, HFQuantConfigFile, config.ConfigFile)
	}
	q := &ModelOptQuant{Source: src, QuantAlgo: raw.QC.QuantAlgo, GroupSize: raw.QC.GroupSize,
		Exclude: append(append([]string{}, raw.QC.Exclude...), raw.QC.Ignore...)}
	for name, g := range raw.QC.ConfigGroups {
		if gs := g.Weights.GroupSize; gs != 0 {
			if q.GroupSize != 0 && q.GroupSize != gs {
				return nil, fmt.Errorf("%s: config_groups.%s has group_size %d, another group %d", src, name, gs, q.GroupSize)
			}
			q.GroupSize = gs
		}
	}
	return q, nil
}

// excluded reports whether module matches an exclude_modules pattern (glob with *).
func (q *ModelOptQuant) excluded(module string) bool {
	for _, p := range q.Exclude {
		if ok, _ := path.Match(p, module); ok {
			return true
		}
	}
	return false
}

// moPlan is where one canonical tensor comes from in a ModelOpt checkpoint.
type moPlan struct {
	spec Spec
	// plain: a tensor the ordinary loader reads (float, or Darkroom-quantized).
	plain *plan
	// linear: an NVFP4 Linear module (HF module path, without ".weight").
	linear string
	// experts: per-expert modules, for a fused [E, 2F, D] gate_up_proj (two modules per
	// expert: gate, up) or [E, D, F] down_proj (one); nvfp4 tells their storage.
	experts [][]string
	nvfp4   bool
}

// eachModelOpt is EachFromCheckpoint for a ModelOpt checkpoint: it checks the whole
// checkpoint first, then streams canonical tensors (NVFP4 weights as NAME.qweight with
// their spec, then NAME.qscale).
func eachModelOpt(ck *safetensors.Checkpoint, cfg *config.Model, keep func(Spec) bool, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	mq, err := ReadModelOptQuant(ck)
	if err != nil {
		return err
	}
	plans, err := planModelOpt(ck, cfg, mq)
	if err != nil {
		return err
	}
	spec := quant.NVFP4
	spec.GroupSize = mq.GroupSize
	for _, p := range plans {
		if keep != nil && !keep(p.spec) {
			continue
		}
		switch {
		case p.plain != nil:
			if err := p.plain.emit(fn); err != nil {
				return err
			}
		case p.linear != "":
			qw, qs, err := readNVFP4(ck, [][]string{{p.linear}}, p.spec.Shape, mq.GroupSize)
			if err != nil {
				return err
			}
			if err := emitNVFP4(p.spec.Name, qw, qs, spec, fn); err != nil {
				return err
			}
		case p.nvfp4:
			qw, qs, err := readNVFP4(ck, p.experts, p.spec.Shape, mq.GroupSize)
			if err != nil {
				return err
			}
			if err := emitNVFP4(p.spec.Name, qw, qs, spec, fn); err != nil {
				return err
			}
		default:
			t, err := readFloatExperts(ck, p.experts, p.spec.Shape)
			if err != nil {
				return err
			}
			if err := fn(p.spec.Name, t, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func emitNVFP4(name string, qw, qs *tensors.Tensor, spec quant.Spec, fn func(string, *tensors.Tensor, *quant.Spec) error) error {
	s := spec
	if err := fn(name+quant.WeightSuffix, qw, &s); err != nil {
		return err
	}
	return fn(name+quant.ScaleSuffix, qs, nil)
}

// planModelOpt places every tensor of cfg and checks every stored tensor's dtype and
// shape; nothing is read yet. Stored tensors it cannot place are errors.
func planModelOpt(ck *safetensors.Checkpoint, cfg *config.Model, mq *ModelOptQuant) ([]moPlan, error) {
	used := map[string]bool{}
	var plans []moPlan
	for _, sp := range Specs(cfg) {
		p, err := planOne(ck, sp, mq, cfg, used)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	for _, n := range ck.Names() {
		if used[n] {
			continue
		}
		if err := checkUnused(ck, cfg, n, used); err != nil {
			return nil, err
		}
	}
	return plans, nil
}

func planOne(ck *safetensors.Checkpoint, sp Spec, mq *ModelOptQuant, cfg *config.Model, used map[string]bool) (moPlan, error) {
	p := moPlan{spec: sp}
	// Fused experts split per expert on export.
	if _, _, _, ok := expertProjs(sp); ok {
		if _, _, fused := lookupAny(ck, sp.HF, sp.Alt, sp.HF+quant.WeightSuffix, sp.Alt+quant.WeightSuffix); !fused {
			return planExperts(ck, sp, mq, cfg, used)
		}
	}
	// An NVFP4 Linear: a U8 MODULE.weight.
	if len(sp.Shape) == 2 && strings.HasSuffix(sp.HF, moWeight) {
		for _, hf := range []string{sp.HF, sp.Alt} {
			if hf == "" {
				continue
			}
			f, info, ok := ck.Lookup(hf)
			if !ok || info.DType != safetensors.U8 {
				continue
			}
			module := strings.TrimSuffix(hf, moWeight)
			if mq.excluded(module) {
				return p, fmt.Errorf("%s: %s is stored as NVFP4 but matches exclude_modules in %s", f.Name, module, mq.Source)
			}
			if err := checkNVFP4Module(ck, module, sp.Shape, mq.GroupSize, used); err != nil {
				return p, err
			}
			p.linear = module
			return p, nil
		}
	}
	pl, err := findTensor(ck, sp)
	if err != nil {
		return p, err
	}
	used[pl.hf] = true
	if pl.quant {
		used[pl.hf+quant.WeightSuffix], used[pl.hf+quant.ScaleSuffix] = true, true
	}
	p.plain = &pl
	return p, nil
}

func lookupAny(ck *safetensors.Checkpoint, names ...string) (*safetensors.File, safetensors.Info, bool) {
	for _, n := range names {
		if n == "" || n == quant.WeightSuffix {
			continue
		}
		if f, info, ok := ck.Lookup(n); ok {
			return f, info, true
		}
	}
	return nil, safetensors.Info{}, false
}

// planExperts finds the per-expert modules of a fused expert weight under either HF
// prefix: for gate_up_proj [E, 2F, D], experts.{e}.gate_proj and up_proj ([F, D]
// each); for down_proj [E, D, F], experts.{e}.down_proj.
func planExperts(ck *safetensors.Checkpoint, sp Spec, mq *ModelOptQuant, cfg *config.Model, used map[string]bool) (moPlan, error) {
	p := moPlan{spec: sp}
	e, cols := sp.Shape[0], sp.Shape[2]
	fused, projs, rows, _ := expertProjs(sp)
	var base string
	for _, hf := range []string{sp.HF, sp.Alt} {
		if hf == "" {
			continue
		}
		b := strings.TrimSuffix(hf, fused)
		if _, _, ok := ck.Lookup(b + "0." + projs[0] + moWeight); ok {
			base = b
			break
		}
	}
	if base == "" {
		return p, fmt.Errorf("%s: missing tensor %s (nor per-expert %s0.%s%s)", ck.Name, sp.HF,
			strings.TrimSuffix(sp.HF, fused), projs[0], moWeight)
	}
	for i := 0; i < e; i++ {
		var mods []string
		for _, pr := range projs {
			module := fmt.Sprintf("%s%d.%s", base, i, pr)
			f, info, ok := ck.Lookup(module + moWeight)
			if !ok {
				return p, fmt.Errorf("%s: missing tensor %s%s (layer has %d experts)", ck.Name, module, moWeight, e)
			}
			nv := info.DType == safetensors.U8
			if i == 0 && pr == projs[0] {
				p.nvfp4 = nv
			} else if nv != p.nvfp4 {
				return p, fmt.Errorf("%s: %s%s is %s but %s0.%s%s is not: the experts of one weight mix NVFP4 and float storage",
					f.Name, module, moWeight, info.DType, base, projs[0], moWeight)
			}
			shape := []int{rows, cols}
			if nv {
				if mq.excluded(module) {
					return p, fmt.Errorf("%s: %s is stored as NVFP4 but matches exclude_modules in %s", f.Name, module, mq.Source)
				}
				if err := checkNVFP4Module(ck, module, shape, mq.GroupSize, used); err != nil {
					return p, err
				}
			} else {
				if info.DType != safetensors.F32 && info.DType != safetensors.BF16 && info.DType != safetensors.F16 {
					return p, fmt.Errorf("%s: tensor %s%s has dtype %s, want U8 (NVFP4), F32, BF16 or F16", f.Name, module, moWeight, info.DType)
				}
				if !slices.Equal(info.Shape, shape) {
					return p, fmt.Errorf("%s: tensor %s%s has shape %v, want %v", f.Name, module, moWeight, fmtShape(info.Shape), fmtShape(shape))
				}
				used[module+moWeight] = true
			}
			mods = append(mods, module)
		}
		p.experts = append(p.experts, mods)
	}
	// The expert count must be exactly cfg's: an extra expert is a config mismatch.
	if _, _, ok := ck.Lookup(fmt.Sprintf("%s%d.%s%s", base, e, projs[0], moWeight)); ok {
		return p, fmt.Errorf("%s: %s%d.%s%s exists but the config has %d experts", ck.Name, base, e, projs[0], moWeight, cfg.Text.NumExperts)
	}
	return p, nil
}

// checkNVFP4Module checks MODULE's NVFP4 tensors for a weight of logical shape
// [out, in] and marks them used.
func checkNVFP4Module(ck *safetensors.Checkpoint, module string, shape []int, group int, used map[string]bool) error {
	out, in := shape[0], shape[1]
	if in%group != 0 {
		return fmt.Errorf("%s: %s: input size %d is not a multiple of the NVFP4 block %d", ck.Name, module, in, group)
	}
	type want struct {
		suffix   string
		dtype    safetensors.DType
		shape    []int
		scalar   bool
		optional bool
	}
	for _, w := range []want{
		{suffix: moWeight, dtype: safetensors.U8, shape: []int{out, in / 2}},
		{suffix: moScale, dtype: safetensors.F8E4M3, shape: []int{out, in / group}},
		{suffix: moScale2, dtype: safetensors.F32, scalar: true},
		{suffix: moInputScale, dtype: safetensors.F32, scalar: true, optional: true},
	} {
		name := module + w.suffix
		f, info, ok := ck.Lookup(name)
		if !ok {
			if w.optional {
				continue
			}
			return fmt.Errorf("%s: missing tensor %s (%s is stored as NVFP4)", ck.Name, name, module)
		}
		if info.DType != w.dtype {
			return fmt.Errorf("%s: tensor %s has dtype %s, want %s", f.Name, name, info.DType, w.dtype)
		}
		if w.scalar {
			if info.NumElements() != 1 {
				return fmt.Errorf("%s: tensor %s has shape %v, want a scalar", f.Name, name, fmtShape(info.Shape))
			}
		} else if !slices.Equal(info.Shape, w.shape) {
			return fmt.Errorf("%s: tensor %s has shape %v, want %v (NVFP4 of %v)", f.Name, name, fmtShape(info.Shape), fmtShape(w.shape), fmtShape(shape))
		}
		used[name] = true
	}
	return nil
}

// checkUnused accepts a stored tensor no plan uses only if the model ignores it
// (vision, lm_head), it is a second copy of a known tensor under the other HF prefix,
// or it is a KV-cache scale of a known attention layer.
func checkUnused(ck *safetensors.Checkpoint, cfg *config.Model, n string, used map[string]bool) error {
	f, info, _ := ck.Lookup(n)
	if _, _, ok := Classify(cfg, n); ok {
		return nil // ignored (vision, lm_head) or a tied copy of a known tensor
	}
	for _, suf := range []string{moKScale, moVScale} {
		if !strings.HasSuffix(n, suf) {
			continue
		}
		proj := "k_proj"
		if suf == moVScale {
			proj = "v_proj"
		}
		module := strings.TrimSuffix(n, suf)
		// …self_attn.k_proj.k_scale (ModelOpt's postprocess_state_dict naming) of a layer
		// the config knows.
		if strings.HasSuffix(module, ".self_attn."+proj) && knownModule(cfg, strings.TrimSuffix(module, "."+proj)+".q_proj") {
			if info.DType != safetensors.F32 || info.NumElements() != 1 {
				return fmt.Errorf("%s: KV-cache scale %s is %s %v, want an F32 scalar", f.Name, n, info.DType, fmtShape(info.Shape))
			}
			return nil
		}
	}
	// A duplicate (tied) copy of a ModelOpt module the plan reads under the other
	// prefix: same module path with the prefixes swapped.
	for _, pair := range [][2]string{{DecoderPrefix, EncoderPrefix}, {EncoderPrefix, DecoderPrefix}} {
		if strings.HasPrefix(n, pair[0]) && used[pair[1]+strings.TrimPrefix(n, pair[0])] {
			return nil
		}
	}
	return fmt.Errorf("%s: unexpected tensor %s (%s %v; does config.json match the checkpoint?)", f.Name, n, info.DType, fmtShape(info.Shape))
}

// knownModule reports whether MODULE.weight is a tensor of cfg (either prefix).
func knownModule(cfg *config.Model, module string) bool {
	_, ignored, ok := Classify(cfg, module+moWeight)
	return ok && !ignored
}

// readNVFP4 reads NVFP4 modules into the stored form of one canonical weight of
// logical shape [rows, in] (one module) or [E, k·F, in] (E experts × k modules of
// [F, in] stacked along rows): qweight Uint8 [..., in/2], the codes as stored; qscale
// Uint8 [..., in/group + 4], each row the module's FP8 block-scale codes as stored and
// its weight_scale_2 (quant.PutNVFP4ScaleRows).
func readNVFP4(ck *safetensors.Checkpoint, modules [][]string, logical []int, group int) (qw, qs *tensors.Tensor, err error) {
	spec := quant.Spec{Bits: 4, GroupSize: group, Format: quant.FP4}
	qwShape, qsShape := spec.Shapes(logical)
	// The tensors are allocated once and the modules copied straight into them (an
	// expert weight is 143 MB of the 26B's 15 GB: a slice built first and copied
	// into the tensor doubled the copying of a load).
	qw = tensors.FromShape(shapes.Make(dtypes.Uint8, qwShape...))
	qs = tensors.FromShape(shapes.Make(dtypes.Uint8, qsShape...))
	var ferr error
	merr := qw.MutableBytes(func(codes []byte) {
		if err := qs.MutableBytes(func(scales []byte) {
			parts, err := nvfp4Parts(ck, modules, logical, spec, scales)
			if err != nil {
				ferr = err
				return
			}
			at := 0
			for _, p := range parts {
				at += copy(codes[at:], p.Data)
			}
			if at != len(codes) {
				ferr = fmt.Errorf("%s: NVFP4 tensors of %s hold %d code bytes, want %d", ck.Name, modules[0][0], at, len(codes))
			}
		}); err != nil {
			ferr = err
		}
	})
	if err := errors.Join(merr, ferr); err != nil {
		return nil, nil, err
	}
	return qw, qs, nil
}

// nvfp4Module is NVFP4 module m's stored codes and FP8 block scales (views of the
// file, groups to a row) and its weight_scale_2; planModelOpt has checked their
// dtypes and shapes.
func nvfp4Module(ck *safetensors.Checkpoint, m string, groups int) (codes, fp8 []byte, scale2 float32, err error) {
	f, _, _ := ck.Lookup(m + moWeight)
	if codes, err = f.Raw(m + moWeight); err != nil {
		return nil, nil, 0, err
	}
	s2t, err := ck.Tensor(m + moScale2)
	if err != nil {
		return nil, nil, 0, err
	}
	s2v, err := tensors.CopyFlatData[float32](s2t)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s%s: %w", m, moScale2, err)
	}
	sf, _, _ := ck.Lookup(m + moScale)
	if fp8, err = sf.Raw(m + moScale); err != nil {
		return nil, nil, 0, err
	}
	return codes, fp8[:len(fp8)/groups*groups], s2v[0], nil
}

// mapModelOpt is Map for a ModelOpt export: every weight as stored, a view of the
// files, except that each NVFP4 module's FP8 block scales and weight_scale_2 are
// written into Darkroom's NVFP4 scale rows on the heap (quant.PutNVFP4ScaleRows: an
// eighth of the codes' bytes), and the BF16 embedding is held in int8 there
// (HostEmbedding), converted on its first Lookup. A fused expert weight is held in parts (Stored.Parts),
// one per module in its rows' order — expert e's gate, up; down — as ModelOpt stores
// them, instead of stacked into one copy (the 26B's 15 GB of codes copied at every
// start took 25–53 s here, and held them twice, in the page cache and on the heap).
// ok is false for a checkpoint Map declines (an F16 tensor).
func mapModelOpt(ck *safetensors.Checkpoint, cfg *config.Model) (*Mapped, bool, error) {
	mq, err := ReadModelOptQuant(ck)
	if err != nil {
		return nil, false, err
	}
	plans, err := planModelOpt(ck, cfg, mq)
	if err != nil {
		return nil, false, err
	}
	spec := quant.NVFP4
	spec.GroupSize = mq.GroupSize
	m := &Mapped{ck: ck, cfg: cfg, tensors: make(map[string]Stored, len(plans))}
	for _, p := range plans {
		var s Stored
		switch {
		case p.plain != nil:
			var ok bool
			if s, ok, err = mapPlan(*p.plain); err != nil || !ok {
				return nil, false, err
			}
			if held, ok := HostEmbedding(quant.NVFP4Profile, p.spec); ok && s.DType == dtypes.BFloat16 {
				if m.held == nil {
					m.held = map[string]quant.Spec{}
				}
				m.held[s.Name] = held // converted on its first Lookup
			}
		case p.linear != "":
			if s, err = mapNVFP4(ck, p.spec.Name, [][]string{{p.linear}}, p.spec.Shape, spec); err != nil {
				return nil, false, err
			}
		case p.nvfp4:
			if s, err = mapNVFP4(ck, p.spec.Name, p.experts, p.spec.Shape, spec); err != nil {
				return nil, false, err
			}
		default:
			var ok bool
			if s, ok, err = mapFloatExperts(ck, p.spec.Name, p.experts, p.spec.Shape); err != nil || !ok {
				return nil, false, err
			}
		}
		if err := m.add(s); err != nil {
			return nil, false, err
		}
	}
	return m, true, nil
}

// HostEmbedding is the format the host model holds the token embedding of a checkpoint
// stored under profile p in, where that is not how it is stored: NVIDIA's NVFP4
// export keeps its embedding BF16 — 1.48 of the 3.23 GB the 26B's AR token reads, and
// the float path for the output head and the soft embedding, whose products are
// integer for the int4 profile's int8 embedding (two layers at the real widths: a
// canvas step 4.9 s against 2.5) — so where the kernels' integer products run
// (kernels.IntProducts; DARKROOM_INT_PRODUCTS=0 keeps it BF16) the host holds it as
// the int4 profile stores the same weights (quant.Int8: a Float32 scale per row),
// quantized at load (quant.QuantizeBF16Rows), as a GGUF's Q6_K is held in int8
// (HostHeld). The graph path, on a GPU, keeps it as stored.
func HostEmbedding(p quant.Profile, sp Spec) (quant.Spec, bool) {
	if p != quant.NVFP4Profile || sp.Name != EmbeddingName || !kernels.IntProducts() {
		return quant.Spec{}, false
	}
	return quant.Int4Profile.SpecFor(sp.Name, sp.Shape, sp.Quantizable)
}

// holdAs is the BF16 matrix s quantized to spec on the heap (HostEmbedding; mapModelOpt
// holds only a BF16 embedding so).
func holdAs(s Stored, spec quant.Spec) (Stored, error) {
	if s.DType != dtypes.BFloat16 || s.Quant != nil || len(s.Shape) != 2 {
		return s, fmt.Errorf("%s: %s %v is no BF16 matrix to hold as %s", s.where(), s.DType, fmtShape(s.Shape), spec)
	}
	rows, cols := s.Shape[0], s.Shape[1]
	q := make([]int8, rows*cols)
	_, qs := spec.Shapes(s.Shape)
	scales := make([]float32, qs[0]*qs[1])
	if err := quant.QuantizeBF16Rows(q, scales, s.Data, cols, spec); err != nil {
		return s, fmt.Errorf("%s: %w", s.where(), err)
	}
	s.DType, s.Quant = spec.DType(), &spec
	s.Data, s.Scales = unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), len(q)), f32Bytes(scales)
	return s, nil
}

// nvfp4Parts is the NVFP4 modules of one canonical weight of logical shape [rows, in]
// (one module) or [E, k·F, in] (E experts × k modules of [F, in] stacked along rows),
// in order: each a Stored whose codes are a view of the file and whose scale rows
// (quant.PutNVFP4ScaleRows: its FP8 block-scale codes and weight_scale_2) are written
// into scales, which the modules must fill exactly. Load copies the parts' codes into
// one tensor (readNVFP4); Map holds them as they are (mapNVFP4).
func nvfp4Parts(ck *safetensors.Checkpoint, modules [][]string, logical []int, spec quant.Spec, scales []byte) ([]Stored, error) {
	in := logical[len(logical)-1]
	groups := in / spec.GroupSize
	w := groups + quant.NVFP4ScaleBytes
	var parts []Stored
	row := 0
	for _, mods := range modules {
		for _, m := range mods {
			codes, fp8, scale2, err := nvfp4Module(ck, m, groups)
			if err != nil {
				return nil, err
			}
			n := len(fp8) / groups
			if (row+n)*w > len(scales) {
				return nil, fmt.Errorf("%s: NVFP4 tensors of %s hold more than %v", ck.Name, modules[0][0], fmtShape(logical))
			}
			ps := scales[row*w : (row+n)*w : (row+n)*w]
			f, _, _ := ck.Lookup(m + moWeight)
			if err := quant.PutNVFP4ScaleRows(ps, fp8, groups, scale2); err != nil {
				sf, _, _ := ck.Lookup(m + moScale)
				return nil, fmt.Errorf("%s: %s%s / %s: %w", sf.Name, m, moScale, moScale2, err)
			}
			q := spec
			parts = append(parts, Stored{Name: m + moWeight, File: f.Name, Shape: []int{n, in},
				DType: q.DType(), Quant: &q, Data: codes, Scales: ps})
			row += n
		}
	}
	if row*w != len(scales) {
		return nil, fmt.Errorf("%s: NVFP4 tensors of %s hold %d rows, want %d (%v)", ck.Name, modules[0][0], row, len(scales)/w, fmtShape(logical))
	}
	return parts, nil
}

// mapNVFP4 is canonical weight name (nvfp4Parts' shapes) held in parts, one per
// NVFP4 module of modules in order, its scale rows written into one allocation for
// all of them; one Linear module is held whole.
func mapNVFP4(ck *safetensors.Checkpoint, name string, modules [][]string, logical []int, spec quant.Spec) (Stored, error) {
	_, qs := spec.Shapes(logical)
	parts, err := nvfp4Parts(ck, modules, logical, spec, make([]byte, safetensors.Elements(qs)))
	if err != nil {
		return Stored{}, err
	}
	if len(parts) == 1 && len(logical) == 2 {
		whole := parts[0]
		whole.Name = name
		return whole, nil
	}
	return Stored{Name: name, Shape: logical, Parts: parts, File: parts[0].File, DType: parts[0].DType, Quant: parts[0].Quant}, nil
}

// mapFloatExperts is a fused expert weight stored unquantized, one module per expert
// and projection, held in parts as stored; ok is false when a part is F16 (widened,
// as Load reads it).
func mapFloatExperts(ck *safetensors.Checkpoint, name string, modules [][]string, logical []int) (Stored, bool, error) {
	s := Stored{Name: name, Shape: logical}
	for _, mods := range modules {
		for _, m := range mods {
			f, info, _ := ck.Lookup(m + moWeight)
			part := Stored{Name: m + moWeight, File: f.Name, Shape: info.Shape}
			switch info.DType {
			case safetensors.F32:
				part.DType = dtypes.Float32
			case safetensors.BF16:
				part.DType = dtypes.BFloat16
			default:
				return s, false, nil
			}
			var err error
			if part.Data, err = f.Raw(m + moWeight); err != nil {
				return s, false, err
			}
			s.Parts = append(s.Parts, part)
		}
	}
	s.File, s.DType = s.Parts[0].File, s.Parts[0].DType
	return s, true, nil
}

// readFloatExperts stacks unquantized per-expert weights into the fused [E, …]
// tensor: BFloat16 if every part is BF16, Float32 otherwise (F16 is read as F32).
func readFloatExperts(ck *safetensors.Checkpoint, modules [][]string, logical []int) (*tensors.Tensor, error) {
	allBF16 := true
	for _, mods := range modules {
		for _, m := range mods {
			_, info, _ := ck.Lookup(m + moWeight)
			allBF16 = allBF16 && info.DType == safetensors.BF16
		}
	}
	n := safetensors.Elements(logical)
	if allBF16 {
		out := make([]bfloat16.BFloat16, 0, n)
		for _, mods := range modules {
			for _, m := range mods {
				t, err := ck.Tensor(m + moWeight)
				if err != nil {
					return nil, err
				}
				v, err := tensors.CopyFlatData[bfloat16.BFloat16](t)
				if err != nil {
					return nil, fmt.Errorf("%s%s: %w", m, moWeight, err)
				}
				out = append(out, v...)
			}
		}
		return tensors.FromFlatDataAndDimensions(out, logical...), nil
	}
	out := make([]float32, 0, n)
	for _, mods := range modules {
		for _, m := range mods {
			t, err := ck.Tensor(m + moWeight)
			if err != nil {
				return nil, err
			}
			if t, err = toDType(t, dtypes.Float32); err != nil {
				return nil, fmt.Errorf("%s%s: %w", m, moWeight, err)
			}
			v, err := tensors.CopyFlatData[float32](t)
			if err != nil {
				return nil, fmt.Errorf("%s%s: %w", m, moWeight, err)
			}
			out = append(out, v...)
		}
	}
	return tensors.FromFlatDataAndDimensions(out, logical...), nil
}
