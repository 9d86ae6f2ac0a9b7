package model

import (
	"fmt"
	"math"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Scope is the context scope holding the model's weights, one variable per canonical
// weight name (engine/weights' table: HF names without the "model.decoder." prefix).
const Scope = "dg"

// Suffixes of a quantized weight's two variables (engine/quant layout): NAME.qweight
// holds the codes (Int8 for int8; Uint8 with two nibbles per byte for int4 and for
// NVFP4's FP4 E2M1 codes), NAME.qscale the scales: Float32 for int8/int4, Uint8 rows of
// FP8 block-scale codes plus the row's scale for NVFP4 (which is how the two 4-bit
// formats are told apart; engine/quant). Affine int4 has a third variable, NAME.qmin,
// with qscale's shape: its presence marks the format. GGUF blocks kept as stored
// (engine/quant's block formats) are two or three variables of their own dtypes;
// quant.LogicalShape and quant.SpecOf read any of them back.
const (
	QWeightSuffix = quant.WeightSuffix
	QScaleSuffix  = quant.ScaleSuffix
	QMinSuffix    = quant.MinSuffix
)

// Params reads the model's weights inside one graph: Get and GatherRows return
// Float32 nodes, whatever the storage (F32, BF16 converted in-graph, or int8/int4/NVFP4
// dequantized in-graph); Matrix and MatrixRows return a weight product's operand in
// the compute dtype (Compute) for WeightDot. It caches nodes per name so a weight used
// twice in a graph is read once.
//
// The same Params serves inference (variables loaded with LoadTensors) and training
// (engine/train creates trainable variables with the canonical names and shapes, and
// gradients flow through the ConvertDType/Gather nodes).
type Params struct {
	Cfg *config.Text
	g   *Graph
	ctx *context.Context // scope "dg"

	cache map[string]*Node

	// MoEBlock, if > 0, overrides the expert row-block size chosen by MoEBlockSize.
	MoEBlock int

	// MoERows collects, per MoE block built in this graph, the scalar Int32 count of
	// expert rows holding real assignments (padding to the block size included).
	MoERows []*Node

	// Compute is the dtype of the weight matrices' products (Matrix, WeightDot): zero or
	// Float32 computes them in float32, as every other operation; BFloat16 multiplies
	// bf16 operands — the stored bf16 weight itself, a quantized block dequantized
	// to bf16, the activations rounded to bf16 — accumulating in float32 inside the
	// dot (both GoMLX backends do; XLA on GPUs through cuBLAS/cuDNN bf16 GEMMs), and
	// widens the product to float32, as upstream's bf16 Linear layers do. Norms,
	// attention scores, softmaxes, the router and the residual stream stay float32.
	Compute dtypes.DType
}

// NewParams returns the weight reader for graph g. ctx is the model's root context;
// weights are looked up in ctx.In(Scope).
func NewParams(ctx *context.Context, g *Graph, cfg *config.Text) *Params {
	return &Params{Cfg: cfg, g: g, ctx: ctx.In(Scope), cache: map[string]*Node{}}
}

// Graph is the graph the params are read into.
func (p *Params) Graph() *Graph { return p.g }

func (p *Params) variable(name string) *context.Variable {
	return p.ctx.GetVariable(name)
}

// Has reports whether the weight exists, plain or quantized.
func (p *Params) Has(name string) bool {
	return p.variable(name) != nil || p.variable(name+QWeightSuffix) != nil
}

// Shape is the logical shape of a weight (quantized weights report their dequantized
// shape). ok is false when the weight is missing.
func (p *Params) Shape(name string) (dims []int, ok bool) {
	if v := p.variable(name); v != nil {
		return v.Shape().Dimensions, true
	}
	qw, qs := p.variable(name+QWeightSuffix), p.variable(name+QScaleSuffix)
	if qw == nil || qs == nil {
		return nil, false
	}
	var mins []shapes.Shape
	if qm := p.variable(name + QMinSuffix); qm != nil {
		mins = append(mins, qm.Shape())
	}
	return quant.LogicalShape(qw.Shape(), qs.Shape(), mins...), true
}

// StorageDType is the dtype a weight is stored in (Int8/Uint8 for quantized weights;
// Uint8 covers both int4 and NVFP4).
func (p *Params) StorageDType(name string) dtypes.DType {
	if v := p.variable(name); v != nil {
		return v.Shape().DType
	}
	if v := p.variable(name + QWeightSuffix); v != nil {
		return v.Shape().DType
	}
	return dtypes.InvalidDType
}

// Get returns the weight as a Float32 node with its logical (HF) shape. It panics
// (GoMLX style, recovered at the API boundary) when the weight is missing.
func (p *Params) Get(name string) *Node {
	if n, ok := p.cache[name]; ok {
		return n
	}
	var n *Node
	if v := p.variable(name); v != nil {
		n = toF32(v.ValueGraph(p.g))
	} else {
		qw, qs, qm := p.quantized(name)
		n = p.dequantize(qw.ValueGraph(p.g), qs.ValueGraph(p.g), p.minNode(qm, nil), name)
	}
	p.cache[name] = n
	return n
}

// GatherRows gathers slices along the weight's first axis before converting them to
// Float32, so only the selected rows are converted or dequantized (experts,
// embeddings). idx: [..., 1] integer → [..., rest of the weight's shape...].
func (p *Params) GatherRows(name string, idx *Node) *Node {
	return p.gatherAs(name, 1, idx, dtypes.Float32)
}

// GatherRowsSplit is GatherRows on the weight viewed with its first axis multiplied by
// split and its second divided by it ([E, 2F, …] → [2E, F, …] for split 2), so that
// idx addresses sub-blocks of rows.
func (p *Params) GatherRowsSplit(name string, split int, idx *Node) *Node {
	return p.gatherAs(name, split, idx, dtypes.Float32)
}

// gatherAs is GatherRowsSplit (split 1: GatherRows) converting the gathered rows to
// dt (Float32, or the compute dtype; see asDType).
func (p *Params) gatherAs(name string, split int, idx *Node, dt dtypes.DType) *Node {
	view := func(x *Node) *Node {
		if split == 1 {
			return x
		}
		d := append([]int{}, x.Shape().Dimensions...)
		d[0], d[1] = d[0]*split, d[1]/split
		return Reshape(x, d...)
	}
	if v := p.variable(name); v != nil {
		return asDType(Gather(view(v.ValueGraph(p.g)), idx), dt)
	}
	qw, qs, qm := p.quantized(name)
	gather := func(x *Node) *Node { return Gather(view(x), idx) }
	return asDType(p.dequantize(gather(qw.ValueGraph(p.g)), gather(qs.ValueGraph(p.g)), p.minNode(qm, gather), name), dt)
}

// computeDType is the dtype of the weight products: BFloat16 when Compute says so,
// else Float32.
func (p *Params) computeDType() dtypes.DType {
	if p.Compute == dtypes.BFloat16 {
		return dtypes.BFloat16
	}
	return dtypes.Float32
}

// Matrix is a weight as an operand of WeightDot, in the compute dtype (see Compute):
// Get in float32 compute; in bf16 compute the stored bf16 weight as is (no float32
// copy), a quantized one dequantized and rounded to bf16.
func (p *Params) Matrix(name string) *Node {
	dt := p.computeDType()
	if dt == dtypes.Float32 {
		return p.Get(name)
	}
	key := name + "@" + dt.String()
	if n, ok := p.cache[key]; ok {
		return n
	}
	var n *Node
	if v := p.variable(name); v != nil {
		n = asDType(v.ValueGraph(p.g), dt)
	} else {
		n = asDType(p.Get(name), dt)
	}
	p.cache[key] = n
	return n
}

// MatrixRows is GatherRowsSplit (split 1: GatherRows) for a matmul operand: the rows
// in the compute dtype, like Matrix.
func (p *Params) MatrixRows(name string, split int, idx *Node) *Node {
	return p.gatherAs(name, split, idx, p.computeDType())
}

// WeightDot is DotGeneral of activations lhs and a weight operand rhs from Matrix or
// MatrixRows: when rhs is bf16, lhs is rounded to bf16 and the bf16 product
// (float32 accumulation inside the dot) widened to float32; otherwise plain
// DotGeneral.
func WeightDot(lhs *Node, lhsContract, lhsBatch []int, rhs *Node, rhsContract, rhsBatch []int) *Node {
	if rhs.DType() != dtypes.BFloat16 || lhs.DType() == dtypes.BFloat16 {
		return DotGeneral(lhs, lhsContract, lhsBatch, rhs, rhsContract, rhsBatch)
	}
	out := DotGeneral(ConvertDType(lhs, dtypes.BFloat16), lhsContract, lhsBatch, rhs, rhsContract, rhsBatch)
	return ConvertDType(out, lhs.DType())
}

// quantized returns a quantized weight's variables; qm (NAME.qmin) is nil unless the
// format is affine int4.
func (p *Params) quantized(name string) (qw, qs, qm *context.Variable) {
	qw, qs = p.variable(name+QWeightSuffix), p.variable(name+QScaleSuffix)
	if qw == nil || qs == nil {
		panic(fmt.Errorf("weight %q: missing from context scope %q", name, Scope))
	}
	return qw, qs, p.variable(name + QMinSuffix)
}

// minNode reads an affine weight's qmin (through the same gather as its qscale), or
// returns nil when there is none.
func (p *Params) minNode(qm *context.Variable, gather func(*Node) *Node) *Node {
	if qm == nil {
		return nil
	}
	n := qm.ValueGraph(p.g)
	if gather != nil {
		n = gather(n)
	}
	return n
}

// dequantize rebuilds Float32 values from stored codes and scales (possibly
// row-gathered: the leading axes may differ from the weight's), with engine/quant's
// graph function; the format (int8, int4 with f32 or bf16 scales, affine int4 when qm
// is not nil, NVFP4) and group size are read back from the stored dtypes and shapes by
// quant.SpecOf.
func (p *Params) dequantize(qw, qs, qm *Node, name string) *Node {
	var mins []*Node
	var minShapes []shapes.Shape
	if qm != nil {
		mins, minShapes = []*Node{qm}, []shapes.Shape{qm.Shape()}
	}
	logical := quant.LogicalShape(qw.Shape(), qs.Shape(), minShapes...)
	spec, err := quant.SpecOf(logical, qw.Shape(), qs.Shape(), minShapes...)
	if err != nil {
		panic(fmt.Errorf("weight %q: %w", name, err))
	}
	return quant.DequantizeGraph(qw, qs, spec, logical, mins...)
}

// asDType converts x to dt: Float32 by toF32 (Float64 kept), otherwise a plain
// conversion (none when x is dt already).
func asDType(x *Node, dt dtypes.DType) *Node {
	if dt == dtypes.Float32 {
		return toF32(x)
	}
	if x.DType() == dt {
		return x
	}
	return ConvertDType(x, dt)
}

// toF32 converts stored weights (BF16, …) to the Float32 compute dtype. Float64 is
// kept as is, so tests can run the whole graph in float64 (exact gradient checks).
func toF32(x *Node) *Node {
	if x.DType() == dtypes.Float32 || x.DType() == dtypes.Float64 {
		return x
	}
	return ConvertDType(x, dtypes.Float32)
}

// EmbedScale is √hidden rounded to the embedding's dtype, as upstream does: 53.0 for
// D=2816 with bf16 weights, exact for f32. A quantized embedding no longer says what
// it was, so the config's dtype decides ("bfloat16" → rounded, otherwise exact).
func (p *Params) EmbedScale() float64 {
	return storedEmbedScale(p.Cfg, p.StorageDType(weights.EmbeddingName))
}

// storedEmbedScale is EmbedScale for an embedding stored as dt (the host model reads
// the dtype from its own weights).
func storedEmbedScale(cfg *config.Text, dt dtypes.DType) float64 {
	if dt == dtypes.Int8 || dt == dtypes.Uint8 {
		dt = dtypes.Float32
		if strings.EqualFold(cfg.DType, "bfloat16") {
			dt = dtypes.BFloat16
		}
	}
	return EmbedScale(cfg.HiddenSize, dt)
}

// EmbedScale is √hidden rounded to the given dtype (BFloat16 or Float32; float64
// otherwise).
func EmbedScale(hidden int, dtype dtypes.DType) float64 {
	s := math.Sqrt(float64(hidden))
	switch dtype {
	case dtypes.BFloat16:
		return float64(bfloat16.FromFloat32(float32(s)).Float32())
	case dtypes.Float32:
		return float64(float32(s))
	}
	return s
}

// LoadTensors puts weights (canonical name → tensor) into ctx.In(Scope) as variables,
// replacing variables of the same name. Tensors are used as is (not copied): the
// caller must not reuse them.
func LoadTensors(ctx *context.Context, weights map[string]*tensors.Tensor) error {
	scope := ctx.In(Scope).Checked(false)
	for name, t := range weights {
		if strings.Contains(name, "/") {
			return fmt.Errorf("load weight %q: names must not contain '/'", name)
		}
		if v := scope.GetVariable(name); v != nil {
			if err := v.SetValue(t); err != nil {
				return fmt.Errorf("load weight %q: %w", name, err)
			}
			continue
		}
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("load weight %q: %v", name, r)
				}
			}()
			scope.VariableWithValue(name, t)
		}()
		if err != nil {
			return err
		}
	}
	return nil
}
