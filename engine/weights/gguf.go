package weights

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// GGUF loading (llama.cpp's format; package engine/gguf reads it). Tensors are
// converted one at a time, in Specs order, into the engine's in-memory formats:
//
//   - F32 and F16 tensors become Float32, BF16 stays BFloat16;
//   - quantized weights the table marks Quantizable (projections, experts, the
//     embedding) become Darkroom int8, int4 or affine int4 with groups of 32 along the
//     input axis. Q8_0 → int8 and Q4_0 → int4 are exact (same numbers, Float32
//     scales). Q4_1 and Q4_K → affine int4 (w = q·scale + min, gguf.RequantizeAffine)
//     are exact with Float32 scales and minimums (GGUFOptions.ExactScales); by default
//     these are BFloat16 — 5 bits a weight instead of 6, for a relative RMS error of
//     about 0.006 next to the GGUF's own 0.09 (a tensor mixing Q4_0 parts with
//     Q4_1/Q4_K parts is affine too). Q6_K → int8 (Float32 scales) and Q5_0, Q5_1,
//     Q5_K → int4 are requantized (gguf.Requantize; the int4 scales BFloat16 unless
//     ExactScales, which changes the error by about 0.01%);
//   - quantized tensors that must stay float (norms, router, scales) are dequantized to
//     Float32;
//   - with GGUFOptions.KeepBlocks (the graph path's Set: DeviceGGUF) the matrices of
//     every block type Darkroom reads are not converted but kept in their own bits,
//     each block taken apart into quant's block formats (GGUFKeptTypes; the file's
//     numbers, the file's bytes) and unpacked in the graph; only split gate and up
//     experts of two types convert as above. The host path multiplies the blocks
//     themselves and never sees these formats.
//
// Rows are read and converted a chunk at a time straight into the result tensor, so
// peak memory is the loaded Set plus one chunk (and one tensor's float32 scales).

// GGUFInt4Types and GGUFInt8Types say which quantized GGUF types become int4 (affine
// for GGUFAffineTypes) or int8.
var (
	GGUFInt4Types   = []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q4_K, gguf.Q5_K}
	GGUFAffineTypes = []gguf.Type{gguf.Q4_1, gguf.Q4_K}
	GGUFInt8Types   = []gguf.Type{gguf.Q8_0, gguf.Q6_K}
)

// GGUFKeptTypes are the block types the graph path keeps as stored (KeepBlocks),
// each in its quant format (engine/quant's blocks.go; gguf.Split takes the blocks
// apart).
var GGUFKeptTypes = map[gguf.Type]quant.Spec{
	gguf.Q2_K: quant.KQ2, gguf.Q3_K: quant.KQ3, gguf.Q4_K: quant.KQ4, gguf.Q5_K: quant.KQ5, gguf.Q6_K: quant.KQ6,
	gguf.Q4_0: quant.BQ40, gguf.Q4_1: quant.BQ41, gguf.Q5_0: quant.BQ50, gguf.Q5_1: quant.BQ51,
	gguf.Q8_0: quant.Q8F16, gguf.IQ4_NL: quant.BIQ4NL, gguf.IQ4_XS: quant.BIQ4XS,
}

// GGUFOptions controls how GGUF tensors are converted.
type GGUFOptions struct {
	// ExactScales keeps every int4 scale (and affine minimum) Float32, so that Q4_1
	// and Q4_K load bit for bit as the GGUF's own dequantization, like Q8_0 and Q4_0:
	// 1 bit a weight more for those tensors (the 26B Q4_K_M: about 1.9 GB more).
	// Default: BFloat16 (see the package comment above for the error).
	ExactScales bool
	// KeepBlocks keeps the matrices of GGUFKeptTypes in their own bits instead of
	// converting them, for the graph path.
	KeepBlocks bool
	// Keep, if set, reads only the tensors it accepts (by their weight-table Spec;
	// the file is checked against the config whole all the same): a model split
	// between a device and the host reads onto the device the tensors it holds there.
	Keep func(Spec) bool
}

// DeviceGGUF is how the graph path loads a GGUF file (Mapped.Set) and what a GPU's
// estimates count (GGUFLayout.DeviceBytes): its blocks kept where the graph reads
// them as stored.
var DeviceGGUF = GGUFOptions{KeepBlocks: true}

// chunkElems is how many elements one conversion step reads.
const chunkElems = 1 << 22

// IsProjectorGGUF reports whether the GGUF file at path (a name or a path, any
// case) is a vision projector — llama.cpp's mmproj-*.gguf, published beside a
// multimodal model's GGUF files — rather than a language model: Darkroom neither
// loads nor downloads one.
func IsProjectorGGUF(path string) bool {
	return strings.HasPrefix(strings.ToLower(filepath.Base(filepath.FromSlash(path))), "mmproj")
}

// FindGGUF returns the GGUF model file in dir when the directory holds one and no
// safetensors checkpoint (which takes precedence). Several .gguf files are an error:
// the loader will not pick one quant for the user.
func FindGGUF(dir string) (path string, ok bool, err error) {
	for _, n := range []string{safetensors.SingleFile, safetensors.IndexFile} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return "", false, nil
		}
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if err != nil {
		return "", false, err
	}
	var models []string
	for _, m := range matches {
		if IsProjectorGGUF(m) {
			continue
		}
		models = append(models, m)
	}
	switch len(models) {
	case 0:
		return "", false, nil
	case 1:
		return models[0], true, nil
	}
	sort.Strings(models)
	for i := range models {
		models[i] = filepath.Base(models[i])
	}
	return "", false, fmt.Errorf("%s holds several GGUF files (%s); keep one quantization per model directory",
		dir, strings.Join(models, ", "))
}

// LoadGGUF reads the DiffusionGemma GGUF file at path for cfg (see Load): every tensor
// of cfg must be present with its shape, every tensor of the file must be known, and
// the file's metadata must agree with cfg. On any error nothing is returned.
func LoadGGUF(path string, cfg *config.Model) (*Set, error) {
	return LoadGGUFWith(path, cfg, GGUFOptions{})
}

// LoadGGUFWith is LoadGGUF with conversion options.
func LoadGGUFWith(path string, cfg *config.Model, opts GGUFOptions) (*Set, error) {
	return collect(func(fn func(string, *tensors.Tensor, *quant.Spec) error) error {
		return EachGGUFWith(path, cfg, opts, fn)
	})
}

// EachGGUF is Each for a GGUF file: every name, shape and type is checked before the
// first call to fn; then tensors arrive one at a time, converted.
func EachGGUF(path string, cfg *config.Model, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	return EachGGUFWith(path, cfg, GGUFOptions{}, fn)
}

// EachGGUFWith is EachGGUF with conversion options.
func EachGGUFWith(path string, cfg *config.Model, opts GGUFOptions, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("load weights: %w", err)
	}
	defer f.Close()
	if err := EachFromGGUFWith(f, cfg, opts, fn); err != nil {
		return fmt.Errorf("load weights: %w", err)
	}
	return nil
}

// ggufPlan is where one canonical tensor comes from in a GGUF file.
type ggufPlan struct {
	spec  Spec
	parts []gguf.TensorInfo // one, or the split gate and up experts
	quant *quant.Spec       // nil: float
	bf16  bool              // keep as BFloat16 (all parts BF16)
}

// EachFromGGUF is EachGGUF over an open file.
func EachFromGGUF(f *gguf.File, cfg *config.Model, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	return EachFromGGUFWith(f, cfg, GGUFOptions{}, fn)
}

// EachFromGGUFWith is EachFromGGUF with conversion options. An affine weight NAME
// arrives as NAME.qweight, NAME.qscale, then NAME.qmin.
func EachFromGGUFWith(f *gguf.File, cfg *config.Model, opts GGUFOptions, fn func(name string, t *tensors.Tensor, q *quant.Spec) error) error {
	plans, err := planGGUF(f, cfg, opts)
	if err != nil {
		return err
	}
	for _, p := range plans {
		if opts.Keep != nil && !opts.Keep(p.spec) {
			continue
		}
		if p.quant == nil {
			t, err := ggufFloat(f, p)
			if err != nil {
				return err
			}
			if err := fn(p.spec.Name, t, nil); err != nil {
				return err
			}
			continue
		}
		qw, qs, qm, err := ggufQuant(f, p)
		if err != nil {
			return err
		}
		spec := *p.quant
		if err := fn(p.spec.Name+quant.WeightSuffix, qw, &spec); err != nil {
			return err
		}
		if err := fn(p.spec.Name+quant.ScaleSuffix, qs, nil); err != nil {
			return err
		}
		if qm != nil {
			if err := fn(p.spec.Name+quant.MinSuffix, qm, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckGGUFConfig compares the dimensions cfg (config.json) gives with the ones the
// GGUF metadata gives; a mismatch means the two files are of different models.
func CheckGGUFConfig(f *gguf.File, cfg *config.Model) error {
	g, err := f.Config()
	if err != nil {
		return err
	}
	a, b := &cfg.Text, &g.Text
	type field struct {
		name   string
		cv, gv any
	}
	fields := []field{
		{"vocab_size", a.VocabSize, b.VocabSize}, {"hidden_size", a.HiddenSize, b.HiddenSize},
		{"intermediate_size", a.IntermediateSize, b.IntermediateSize},
		{"moe_intermediate_size", a.MoEIntermediateSize, b.MoEIntermediateSize},
		{"num_experts", a.NumExperts, b.NumExperts}, {"top_k_experts", a.TopKExperts, b.TopKExperts},
		{"num_hidden_layers", a.NumHiddenLayers, b.NumHiddenLayers},
		{"num_attention_heads", a.NumAttentionHeads, b.NumAttentionHeads},
		{"num_key_value_heads", a.NumKeyValueHeads, b.NumKeyValueHeads},
		{"num_global_key_value_heads", a.NumGlobalKVHeads, b.NumGlobalKVHeads},
		{"head_dim", a.HeadDim, b.HeadDim}, {"global_head_dim", a.GlobalHeadDim, b.GlobalHeadDim},
		{"sliding_window", a.SlidingWindow, b.SlidingWindow},
		{"layer_types", fmt.Sprint(a.LayerTypes), fmt.Sprint(b.LayerTypes)},
		{"rope_parameters", fmt.Sprint(a.RopeParameters), fmt.Sprint(b.RopeParameters)},
		{"final_logit_softcapping", a.FinalLogitSoftcapping, b.FinalLogitSoftcapping},
		{"canvas_length", cfg.CanvasLength, g.CanvasLength},
	}
	for _, fl := range fields {
		if fmt.Sprint(fl.cv) != fmt.Sprint(fl.gv) {
			return fmt.Errorf("%s: %s is %v in %s but %v in the GGUF metadata", f.Path, fl.name, fl.cv, config.ConfigFile, fl.gv)
		}
	}
	return nil
}

func planGGUF(f *gguf.File, cfg *config.Model, opts GGUFOptions) ([]ggufPlan, error) {
	if err := CheckGGUFConfig(f, cfg); err != nil {
		return nil, err
	}
	used := map[string]bool{}
	var plans []ggufPlan
	for _, sp := range Specs(cfg) {
		p := ggufPlan{spec: sp}
		name := sp.GGUF
		if t, ok := f.Lookup(name); ok {
			if !slices.Equal(t.Shape(), sp.Shape) {
				return nil, fmt.Errorf("%s: tensor %s (%s) has shape %v, want %v", f.Path, name, sp.Name, fmtShape(t.Shape()), fmtShape(sp.Shape))
			}
			p.parts = []gguf.TensorInfo{t}
		} else if len(sp.GGUFSplit) == 2 {
			gate, up := sp.GGUFSplit[0], sp.GGUFSplit[1]
			tg, okg := f.Lookup(gate)
			tu, oku := f.Lookup(up)
			if !okg || !oku {
				return nil, fmt.Errorf("%s: missing tensor %s (or %s and %s) for %s", f.Path, name, gate, up, sp.Name)
			}
			half := append([]int{}, sp.Shape...)
			half[1] /= 2
			for _, t := range []gguf.TensorInfo{tg, tu} {
				if !slices.Equal(t.Shape(), half) {
					return nil, fmt.Errorf("%s: tensor %s has shape %v, want %v (half of %s)", f.Path, t.Name, fmtShape(t.Shape()), fmtShape(half), sp.Name)
				}
			}
			p.parts = []gguf.TensorInfo{tg, tu}
		} else {
			return nil, fmt.Errorf("%s: missing tensor %s (%s)", f.Path, name, sp.Name)
		}
		if err := decideGGUF(&p, opts); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		for _, t := range p.parts {
			used[t.Name] = true
		}
		plans = append(plans, p)
	}
	for _, t := range f.Tensors {
		if used[t.Name] {
			continue
		}
		canon, ignored, ok := ClassifyGGUF(t.Name)
		switch {
		case ignored:
		case !ok:
			return nil, fmt.Errorf("%s: unknown tensor %s (not part of the diffusion-gemma layout Darkroom knows)", f.Path, t.Name)
		default:
			return nil, fmt.Errorf("%s: unexpected tensor %s (%s) for this config (does config.json match the file?)", f.Path, t.Name, canon)
		}
	}
	return plans, nil
}

// decideGGUF picks the in-memory format of p: int8 if a part is Q8_0/Q6_K; else
// affine int4 if a part is Q4_1/Q4_K and every part converts to affine exactly
// (Q4_0, Q4_1, Q4_K); else int4 (exact for Q4_0 alone, requantized otherwise).
func decideGGUF(p *ggufPlan, opts GGUFOptions) error {
	allBF16, anyQuant, want8 := true, false, false
	anyAffine, allAffine, allQ4_0 := false, true, true
	for _, t := range p.parts {
		if !t.Type.Supported() {
			return fmt.Errorf("tensor %s has type %s, which Darkroom cannot read (it reads %s)", t.Name, t.Type, gguf.SupportedNames())
		}
		allBF16 = allBF16 && t.Type == gguf.BF16
		if !t.Type.IsFloat() {
			anyQuant = true
			for _, q8 := range GGUFInt8Types {
				want8 = want8 || t.Type == q8
			}
		}
		aff := false
		for _, a := range GGUFAffineTypes {
			aff = aff || t.Type == a
		}
		anyAffine = anyAffine || aff
		allAffine = allAffine && (aff || t.Type == gguf.Q4_0)
		allQ4_0 = allQ4_0 && t.Type == gguf.Q4_0
	}
	if !anyQuant || !p.spec.Quantizable || len(p.spec.Shape) < 2 || p.spec.Shape[len(p.spec.Shape)-1]%gguf.Group != 0 {
		p.bf16 = allBF16
		return nil
	}
	if opts.KeepBlocks {
		if kept, ok := keptGGUF(p); ok {
			p.quant = &kept // the graph unpacks these blocks as stored
			return nil
		}
	}
	q := quant.Spec{Bits: 4, GroupSize: gguf.Group}
	switch {
	case want8:
		q.Bits = 8 // Q8_0 exact, Q6_K requantized; Float32 scales
	case anyAffine && allAffine:
		q.Format, q.BF16Scales = quant.Affine, !opts.ExactScales
	case !allQ4_0:
		q.BF16Scales = !opts.ExactScales // requantized: the scale's rounding hardly matters
	}
	if err := q.Check(p.spec.Shape); err != nil {
		return fmt.Errorf("tensor %s: %w", p.spec.Name, err)
	}
	p.quant = &q
	return nil
}

// keptGGUF is the format that keeps p's blocks as stored (GGUFKeptTypes), and
// false where p's parts differ in type or its type has none.
func keptGGUF(p *ggufPlan) (quant.Spec, bool) {
	t := p.parts[0].Type
	for _, part := range p.parts[1:] {
		if part.Type != t {
			return quant.Spec{}, false
		}
	}
	s, ok := GGUFKeptTypes[t]
	if !ok || s.Check(p.spec.Shape) != nil {
		return quant.Spec{}, false
	}
	return s, true
}

// segments lists the row ranges that make up p's rows in order: the tensor itself, or
// for split experts gate rows then up rows of each expert.
type segment struct {
	t          gguf.TensorInfo
	row0, rows int64
}

func (p ggufPlan) segments() []segment {
	if len(p.parts) == 1 {
		return []segment{{p.parts[0], 0, p.parts[0].Rows()}}
	}
	experts := int64(p.spec.Shape[0])
	per := p.parts[0].Rows() / experts
	var out []segment
	for e := int64(0); e < experts; e++ {
		for _, t := range p.parts {
			out = append(out, segment{t, e * per, per})
		}
	}
	return out
}

// eachChunk calls fn for consecutive row chunks of p (outRow counts rows of the
// result), each read into the same buffer: fn must not keep raw.
func eachChunk(f *gguf.File, p ggufPlan, fn func(t gguf.TensorInfo, raw []byte, outRow, rows int64) error) error {
	cols := int64(p.spec.Shape[len(p.spec.Shape)-1])
	chunk := max(1, chunkElems/cols)
	var outRow int64
	var buf []byte // one chunk's bytes, read again for the next: fn keeps none
	for _, s := range p.segments() {
		for r := s.row0; r < s.row0+s.rows; r += chunk {
			n := min(chunk, s.row0+s.rows-r)
			raw, err := f.ReadRawInto(buf, s.t, r, n)
			if err != nil {
				return err
			}
			buf = raw
			if err := fn(s.t, raw, outRow, n); err != nil {
				return fmt.Errorf("%s: tensor %s: %w", f.Path, s.t.Name, err)
			}
			outRow += n
		}
	}
	return nil
}

// ggufFloat reads p as a Float32 (or BFloat16) tensor of the spec's shape.
func ggufFloat(f *gguf.File, p ggufPlan) (*tensors.Tensor, error) {
	cols := int64(p.spec.Shape[len(p.spec.Shape)-1])
	var err error
	var out *tensors.Tensor
	if p.bf16 {
		out = tensors.FromShape(shapes.Make(dtypes.BFloat16, p.spec.Shape...))
		err2 := out.MutableFlatData(func(flat any) {
			dst := flat.([]bfloat16.BFloat16)
			err = eachChunk(f, p, func(_ gguf.TensorInfo, raw []byte, row, rows int64) error {
				d := dst[row*cols : (row+rows)*cols]
				for i := range d {
					d[i] = bfloat16.BFloat16(binary.LittleEndian.Uint16(raw[2*i:]))
				}
				return nil
			})
		})
		if err == nil {
			err = err2
		}
		return out, err
	}
	out = tensors.FromShape(shapes.Make(dtypes.Float32, p.spec.Shape...))
	err2 := out.MutableFlatData(func(flat any) {
		dst := flat.([]float32)
		err = eachChunk(f, p, func(t gguf.TensorInfo, raw []byte, row, rows int64) error {
			return gguf.Dequantize(t.Type, raw, dst[row*cols:(row+rows)*cols])
		})
	})
	if err == nil {
		err = err2
	}
	return out, err
}

// ggufQuant converts p into Darkroom int8/int4 (qweight, qscale) or affine int4
// (qweight, qscale, qmin; qm is nil otherwise). The scales (and minimums) are collected
// in float32 for the whole tensor (1/8 of its float32 size, 1/4 for affine) and stored
// as the spec's scale dtype at the end.
func ggufQuant(f *gguf.File, p ggufPlan) (qw, qs, qm *tensors.Tensor, err error) {
	spec := *p.quant
	if spec.Kept() {
		return ggufKept(f, p)
	}
	wShape, sShape := spec.Shapes(p.spec.Shape)
	qw = tensors.FromShape(shapes.Make(spec.DType(), wShape...))
	nGroups := int64(1)
	for _, d := range sShape {
		nGroups *= int64(d)
	}
	scales := make([]float32, nGroups)
	var mins []float32
	if spec.HasMin() {
		mins = make([]float32, nGroups)
	}
	err2 := qw.MutableBytes(func(qb []byte) { err = ggufRequant(f, p, qb, scales, mins) })
	if err == nil {
		err = err2
	}
	if err != nil {
		return nil, nil, nil, err
	}
	qs = storeScales(scales, spec.BF16Scales, sShape)
	if spec.HasMin() {
		qm = storeScales(mins, spec.BF16Scales, sShape)
	}
	return qw, qs, qm, nil
}

// ggufKept reads p's blocks into its kept format's tensors (qweight, qscale and,
// where the format has one, qmin), a chunk of rows at a time, each block taken apart
// as it is (gguf.Split).
func ggufKept(f *gguf.File, p ggufPlan) (qw, qs, qm *tensors.Tensor, err error) {
	spec := *p.quant
	wShape, sShape := spec.Shapes(p.spec.Shape)
	qw = tensors.FromShape(shapes.Make(spec.DType(), wShape...))
	qs = tensors.FromShape(shapes.Make(spec.ScaleDType(), sShape...))
	ts := []*tensors.Tensor{qw, qs}
	if spec.HasMin() {
		qm = tensors.FromShape(shapes.Make(spec.MinDType(), spec.MinShape(p.spec.Shape)...))
		ts = append(ts, qm)
	}
	err = withBytes(ts, true, nil, func(parts [][]byte) error { return splitInto(f, p, parts) })
	if err != nil {
		return nil, nil, nil, err
	}
	return qw, qs, qm, nil
}

// withBytes calls fn with the bytes of every tensor of ts (after those in held), each
// tensor's bytes used within its own MutableBytes (mutable) or ConstBytes call.
func withBytes(ts []*tensors.Tensor, mutable bool, held [][]byte, fn func([][]byte) error) error {
	if len(ts) == 0 {
		return fn(held)
	}
	var err error
	access := ts[0].ConstBytes
	if mutable {
		access = ts[0].MutableBytes
	}
	if err2 := access(func(b []byte) { err = withBytes(ts[1:], mutable, append(held, b), fn) }); err2 != nil {
		return err2
	}
	return err
}

// splitInto reads p's blocks into parts (its codes, scales and third part, sized for
// the whole tensor), a chunk of rows at a time.
func splitInto(f *gguf.File, p ggufPlan, parts [][]byte) error {
	rows := int64(1)
	for _, d := range p.spec.Shape[:len(p.spec.Shape)-1] {
		rows *= int64(d)
	}
	var perRow [3]int64
	for i := range parts {
		perRow[i] = int64(len(parts[i])) / rows
	}
	return eachChunk(f, p, func(t gguf.TensorInfo, raw []byte, row, n int64) error {
		var chunk [3][]byte
		for i := range parts {
			chunk[i] = parts[i][row*perRow[i] : (row+n)*perRow[i]]
		}
		return gguf.Split(t.Type, raw, chunk[0], chunk[1], chunk[2])
	})
}

// ggufRequant converts p's blocks into its Darkroom format p.quant, a chunk of rows at
// a time: the codes into q, the float32 scales (and, affine, minimums) into scales
// and mins, sized for the whole tensor.
func ggufRequant(f *gguf.File, p ggufPlan, q []byte, scales, mins []float32) error {
	spec := *p.quant
	cols := int64(p.spec.Shape[len(p.spec.Shape)-1])
	qPerRow := cols
	if spec.Bits == 4 {
		qPerRow = cols / 2
	}
	sPerRow := cols / int64(spec.GroupSize)
	var tmp []float32
	if !spec.HasMin() {
		tmp = make([]float32, min(max(1, chunkElems/cols), p.parts[0].Rows())*cols)
	}
	workers := runtime.GOMAXPROCS(0)
	return eachChunk(f, p, func(t gguf.TensorInfo, raw []byte, row, rows int64) error {
		q := q[row*qPerRow : (row+rows)*qPerRow]
		sc := scales[row*sPerRow : (row+rows)*sPerRow]
		if spec.HasMin() {
			return gguf.RequantizeAffineParallel(t.Type, raw, q, sc, mins[row*sPerRow:(row+rows)*sPerRow], workers)
		}
		return gguf.RequantizeParallel(t.Type, raw, spec.Bits, q, sc, tmp[:rows*cols], workers)
	})
}

// storeScales makes the qscale (or qmin) tensor: Float32 as is, or BFloat16 rounded to
// nearest.
func storeScales(v []float32, bf16 bool, dims []int) *tensors.Tensor {
	if !bf16 {
		return tensors.FromFlatDataAndDimensions(v, dims...)
	}
	b := make([]bfloat16.BFloat16, len(v))
	for i, x := range v {
		b[i] = quant.RoundBF16(x)
	}
	return tensors.FromFlatDataAndDimensions(b, dims...)
}

// GGUFConfig returns the configuration in the metadata of the GGUF model file in dir
// (see FindGGUF); ok is false when dir holds none. It lets a directory holding only a
// .gguf (and tokenizer.json) load without config.json.
func GGUFConfig(dir string) (cfg *config.Model, ok bool, err error) {
	path, ok, err := FindGGUF(dir)
	if err != nil || !ok {
		return nil, false, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	cfg, err = f.Config()
	if err != nil {
		return nil, false, err
	}
	return cfg, true, nil
}

// keptFloat32 decodes weight name, GGUF blocks kept as stored in format spec
// (GGUFKeptTypes; qm nil where the format has no third part), on the host: its parts
// joined back into the file's blocks (gguf.Join), row by row, and dequantized by
// engine/gguf, the host's one decoder of them.
func keptFloat32(name string, spec quant.Spec, qw, qs, qm *tensors.Tensor) (*tensors.Tensor, error) {
	var typ gguf.Type
	found := false
	for t, s := range GGUFKeptTypes {
		if s == spec {
			typ, found = t, true
		}
	}
	if !found || (spec.HasMin() != (qm != nil)) {
		return nil, fmt.Errorf("weights: %s tensor %s: no GGUF block type of its parts", spec, name)
	}
	ts := []*tensors.Tensor{qw, qs}
	var minShapes []shapes.Shape
	if qm != nil {
		ts, minShapes = append(ts, qm), append(minShapes, qm.Shape())
	}
	shape := quant.LogicalShape(qw.Shape(), qs.Shape(), minShapes...)
	cols := shape[len(shape)-1]
	out := tensors.FromShape(shapes.Make(dtypes.Float32, shape...))
	var err error
	err2 := out.MutableFlatData(func(flat any) {
		dst := flat.([]float32)
		rows := len(dst) / cols
		raw := make([]byte, cols/typ.BlockSize()*typ.BlockBytes())
		err = withBytes(ts, false, nil, func(parts [][]byte) error {
			var row [3][]byte
			for r := range rows {
				for i, p := range parts {
					w := len(p) / rows
					row[i] = p[r*w : (r+1)*w]
				}
				if err := gguf.Join(typ, raw, row[0], row[1], row[2]); err != nil {
					return err
				}
				if err := gguf.Dequantize(typ, raw, dst[r*cols:(r+1)*cols]); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err == nil {
		err = err2
	}
	if err != nil {
		return nil, fmt.Errorf("weights: %s tensor %s: %w", spec, name, err)
	}
	return out, nil
}
