package weights

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Load reads the checkpoint in dir (model.safetensors or shards listed in
// model.safetensors.index.json) for cfg. Every expected tensor must be present with its
// expected shape (or as a quantized pair that fits it); unknown text tensors are an
// error, vision tensors and lm_head.weight are ignored. BF16 stays BF16, F16 becomes
// F32. On any error nothing is returned: no half-loaded Set. A directory holding one
// GGUF model file and no safetensors is read by LoadGGUF instead.
func Load(dir string, cfg *config.Model) (*Set, error) {
	if path, ok, err := FindGGUF(dir); err != nil {
		return nil, fmt.Errorf("load weights from %s: %w", dir, err)
	} else if ok { // a directory with one .gguf and no safetensors (see gguf.go)
		return LoadGGUF(path, cfg)
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("load weights from %s: %w", dir, err)
	}
	defer ck.Close()
	s, err := FromCheckpoint(ck, cfg)
	if err != nil {
		return nil, fmt.Errorf("load weights from %s: %w", dir, err)
	}
	return s, nil
}

// LoadFS is Load over a file system (the embedded model).
func LoadFS(fsys fs.FS, dir string, cfg *config.Model) (*Set, error) {
	ck, err := safetensors.OpenCheckpointFS(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("load weights: %w", err)
	}
	defer ck.Close()
	s, err := FromCheckpoint(ck, cfg)
	if err != nil {
		return nil, fmt.Errorf("load weights: %w", err)
	}
	return s, nil
}

// plan is where one canonical tensor comes from.
type plan struct {
	spec         Spec
	hf           string // stored name (quantized: without suffix)
	quant        bool
	qspec        quant.Spec
	file, qsfile *safetensors.File
	info, qsinfo safetensors.Info
	qmfile       *safetensors.File // affine int4's NAME.qmin, else nil
}

// FromCheckpoint loads cfg's tensors from an open checkpoint (see Load). It checks
// every header first and reads data only once all checks pass.
func FromCheckpoint(ck *safetensors.Checkpoint, cfg *config.Model) (*Set, error) {
	return collect(func(fn func(string, *tensors.Tensor, *quant.Spec) error) error {
		return EachFromCheckpoint(ck, cfg, fn)
	})
}

// Each streams the checkpoint in dir one tensor at a time, for callers that move
// weights elsewhere (device memory, context variables) and should not hold the whole
// Set on the host. All headers, names and shapes are checked before the first call;
// fn gets canonical names (a quantized weight NAME arrives as NAME.qweight, with its
// spec, then NAME.qscale, with nil, then for affine int4 NAME.qmin, with nil). fn's
// error stops the stream and is returned.
func Each(dir string, cfg *config.Model, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	if path, ok, err := FindGGUF(dir); err != nil {
		return fmt.Errorf("load weights from %s: %w", dir, err)
	} else if ok {
		return EachGGUF(path, cfg, fn)
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("load weights from %s: %w", dir, err)
	}
	defer ck.Close()
	if err := EachFromCheckpoint(ck, cfg, fn); err != nil {
		return fmt.Errorf("load weights from %s: %w", dir, err)
	}
	return nil
}

// EachFromCheckpoint is Each over an open checkpoint. A ModelOpt NVFP4 export is read
// by its own loader (nvfp4.go) into the same canonical names.
func EachFromCheckpoint(ck *safetensors.Checkpoint, cfg *config.Model, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	return eachFromCheckpoint(ck, cfg, nil, fn)
}

// eachFromCheckpoint is EachFromCheckpoint over the tensors keep accepts (nil: all):
// the whole checkpoint is checked against cfg, but only those are read.
func eachFromCheckpoint(ck *safetensors.Checkpoint, cfg *config.Model, keep func(Spec) bool, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	if IsModelOpt(ck) {
		return eachModelOpt(ck, cfg, keep, fn)
	}
	plans, err := planCheckpoint(ck, cfg)
	if err != nil {
		return err
	}
	for _, p := range plans {
		if keep != nil && !keep(p.spec) {
			continue
		}
		if err := p.emit(fn); err != nil {
			return err
		}
	}
	return nil
}

// emit reads the plan's tensors and hands them to fn under their canonical names: the
// weight, or its .qweight (with its spec), .qscale and, for affine int4, .qmin.
func (p plan) emit(fn func(string, *tensors.Tensor, *quant.Spec) error) error {
	if !p.quant {
		t, err := p.file.Tensor(p.hf)
		if err != nil {
			return err
		}
		return fn(p.spec.Name, t, nil)
	}
	qw, err := p.file.Tensor(p.hf + quant.WeightSuffix)
	if err != nil {
		return err
	}
	qspec := p.qspec
	if err := fn(p.spec.Name+quant.WeightSuffix, qw, &qspec); err != nil {
		return err
	}
	qs, err := p.qsfile.Tensor(p.hf + quant.ScaleSuffix)
	if err != nil {
		return err
	}
	if err := fn(p.spec.Name+quant.ScaleSuffix, qs, nil); err != nil {
		return err
	}
	if p.qmfile == nil {
		return nil
	}
	qm, err := p.qmfile.Tensor(p.hf + quant.MinSuffix)
	if err != nil {
		return err
	}
	return fn(p.spec.Name+quant.MinSuffix, qm, nil)
}

// planCheckpoint finds every tensor of cfg in ck and checks dtypes and shapes, and
// that ck holds no text tensor cfg does not know.
func planCheckpoint(ck *safetensors.Checkpoint, cfg *config.Model) ([]plan, error) {
	var plans []plan
	used := map[string]bool{}
	for _, sp := range Specs(cfg) {
		p, err := findTensor(ck, sp)
		if err != nil {
			return nil, err
		}
		used[p.hf] = true
		if p.quant {
			used[p.hf+quant.WeightSuffix], used[p.hf+quant.ScaleSuffix] = true, true
			used[p.hf+quant.MinSuffix] = p.qmfile != nil
		}
		plans = append(plans, p)
	}
	for _, n := range ck.Names() {
		if used[n] {
			continue
		}
		// Ignored (vision, lm_head) or a second copy of a known tensor (tied text
		// weights stored under both prefixes: the primary one is used) is fine.
		if _, _, ok := Classify(cfg, n); !ok {
			f, _, _ := ck.Lookup(n)
			return nil, fmt.Errorf("%s: unexpected tensor %s (does config.json match the checkpoint?)", f.Name, n)
		}
	}
	return plans, nil
}

func findTensor(ck *safetensors.Checkpoint, sp Spec) (plan, error) {
	p := plan{spec: sp}
	for _, hf := range []string{sp.HF, sp.Alt} {
		if hf == "" {
			continue
		}
		if f, info, ok := ck.Lookup(hf); ok {
			p.hf, p.file, p.info = hf, f, info
			if info.DType != safetensors.F32 && info.DType != safetensors.BF16 && info.DType != safetensors.F16 {
				return p, fmt.Errorf("%s: tensor %s has dtype %s, want F32, BF16 or F16", f.Name, hf, info.DType)
			}
			if !slices.Equal(info.Shape, sp.Shape) {
				return p, fmt.Errorf("%s: tensor %s has shape %v, want %v", f.Name, hf, fmtShape(info.Shape), fmtShape(sp.Shape))
			}
			return p, nil
		}
		if f, info, ok := ck.Lookup(hf + quant.WeightSuffix); ok {
			p.hf, p.quant, p.file, p.info = hf, true, f, info
			sf, sinfo, ok := ck.Lookup(hf + quant.ScaleSuffix)
			if !ok {
				return p, fmt.Errorf("%s: missing tensor %s%s (its %s is present)", ck.Name, hf, quant.ScaleSuffix, quant.WeightSuffix)
			}
			p.qsfile, p.qsinfo = sf, sinfo
			var minShape []shapes.Shape
			if mf, minfo, ok := ck.Lookup(hf + quant.MinSuffix); ok { // affine int4
				p.qmfile = mf
				minShape = append(minShape, shapes.Make(minfo.DType.GoMLX(), minfo.Shape...))
			}
			qs, err := quant.SpecOf(sp.Shape, shapes.Make(info.DType.GoMLX(), info.Shape...), shapes.Make(sinfo.DType.GoMLX(), sinfo.Shape...), minShape...)
			if err != nil {
				return p, fmt.Errorf("%s: tensor %s (quantized): %w", f.Name, hf, err)
			}
			p.qspec = qs
			return p, nil
		}
	}
	return p, fmt.Errorf("%s: missing tensor %s", ck.Name, sp.HF)
}

func fmtShape(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// SaveOptions controls Save.
type SaveOptions struct {
	// Shards splits the tensors over this many files (with model.safetensors.index.json)
	// when > 1; otherwise one model.safetensors.
	Shards int
	// DType converts float weights before writing: "bf16", "f32", or "" to keep each
	// tensor's dtype. Quantized tensors are written as they are.
	DType string
}

// Save writes set as a Hugging Face checkpoint in dir: config.json and
// generation_config.json from cfg (with quantization_config when set holds quantized
// weights), then the tensors under their HF names (model.decoder.* plus the encoder's
// layer scalars) in Specs order. Each file is written atomically.
func Save(set *Set, cfg *config.Model, dir string, opts SaveOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save weights: %w", err)
	}
	switch opts.DType {
	case "":
	case "bf16":
		c, err := set.Convert(dtypes.BFloat16)
		if err != nil {
			return fmt.Errorf("save weights: %w", err)
		}
		set = c
	case "f32":
		c, err := set.Convert(dtypes.Float32)
		if err != nil {
			return fmt.Errorf("save weights: %w", err)
		}
		set = c
	default:
		return fmt.Errorf("save weights: unknown dtype %q (want bf16 or f32)", opts.DType)
	}
	type item struct {
		hf string
		t  *tensors.Tensor
	}
	var items []item
	for _, sp := range Specs(cfg) {
		if qs, q := set.Quant[sp.Name]; q {
			for _, suf := range quant.Suffixes {
				if suf == quant.MinSuffix && !qs.HasMin() {
					continue
				}
				t, ok := set.Tensors[sp.Name+suf]
				if !ok {
					return fmt.Errorf("save weights: missing tensor %s%s", sp.Name, suf)
				}
				items = append(items, item{sp.HF + suf, t})
			}
			continue
		}
		t, ok := set.Tensors[sp.Name]
		if !ok {
			return fmt.Errorf("save weights: missing tensor %s", sp.Name)
		}
		if !slices.Equal(t.Shape().Dimensions, sp.Shape) {
			return fmt.Errorf("save weights: tensor %s has shape %v, want %v", sp.Name, fmtShape(t.Shape().Dimensions), fmtShape(sp.Shape))
		}
		items = append(items, item{sp.HF, t})
	}

	c := *cfg
	if len(set.Quant) > 0 && (c.Quantization == nil || c.Quantization.QuantMethod != config.QuantMethod) {
		// Darkroom's own tensors (a loaded ModelOpt model saved again is no longer in
		// ModelOpt's layout).
		prof := quant.Int8Profile
		for _, q := range set.Quant {
			if q.Bits == 4 && prof != quant.NVFP4Profile {
				prof = quant.Int4Profile
			}
			if q.Format == quant.FP4 {
				prof = quant.NVFP4Profile // a loaded ModelOpt model saved again
			}
		}
		c.Quantization = &config.Quantization{QuantMethod: config.QuantMethod, Profile: string(prof), GroupSize: prof.GroupSize()}
	}
	if opts.DType == "bf16" {
		c.DType, c.Text.DType = "bfloat16", "bfloat16"
	} else if opts.DType == "f32" {
		c.DType, c.Text.DType = "float32", "float32"
	}
	if err := c.Save(dir); err != nil {
		return fmt.Errorf("save weights: %w", err)
	}

	shards := max(opts.Shards, 1)
	if shards > len(items) {
		return fmt.Errorf("save weights: %d shards for %d tensors", shards, len(items))
	}
	var total int64
	for _, it := range items {
		total += int64(it.t.Memory())
	}
	meta := map[string]string{"format": "pt"}
	if shards == 1 {
		named := make([]safetensors.Named, len(items))
		for i, it := range items {
			named[i] = safetensors.Named{Name: it.hf, Tensor: it.t}
		}
		if err := safetensors.WriteFile(filepath.Join(dir, safetensors.SingleFile), meta, named); err != nil {
			return fmt.Errorf("save weights: %w", err)
		}
		os.Remove(filepath.Join(dir, safetensors.IndexFile)) // a stale index would shadow the new file
		return nil
	}
	// Greedy split by bytes: shard k takes items until the running total passes
	// k/shards of the whole, keeping at least one tensor for every remaining shard.
	idx := safetensors.Index{Metadata: map[string]any{"total_size": total}, WeightMap: map[string]string{}}
	start := 0
	var acc int64
	for k := 1; k <= shards; k++ {
		end := start + 1
		acc += int64(items[start].t.Memory())
		for end < len(items)-(shards-k) && (k == shards || acc+int64(items[end].t.Memory()) <= total*int64(k)/int64(shards)) {
			acc += int64(items[end].t.Memory())
			end++
		}
		if k == shards {
			end = len(items)
		}
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k, shards)
		var named []safetensors.Named
		for _, it := range items[start:end] {
			named = append(named, safetensors.Named{Name: it.hf, Tensor: it.t})
			idx.WeightMap[it.hf] = name
		}
		if err := safetensors.WriteFile(filepath.Join(dir, name), meta, named); err != nil {
			return fmt.Errorf("save weights: %w", err)
		}
		start = end
	}
	if err := safetensors.WriteIndex(dir, idx); err != nil {
		return fmt.Errorf("save weights: %w", err)
	}
	return nil
}
