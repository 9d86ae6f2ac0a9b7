package arch

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// shape is a value of the shape-checking Ops: a [rows, cols] activation.
type shape struct{ rows, cols int }

// shapeOps run the recipe on shapes only, against the weight table: every weight the
// recipe names must be in engine/weights.Specs with the shape its operation needs,
// and every operand must have the shape the operation expects. The first problem is
// kept in err.
type shapeOps struct {
	cfg   *config.Text
	specs map[string][]int
	read  map[string]bool
	err   error
	layer int // from StartLayer
}

func (o *shapeOps) fail(format string, a ...any) {
	if o.err == nil {
		o.err = fmt.Errorf(format, a...)
	}
}

func (o *shapeOps) weight(name string, want ...int) {
	got, ok := o.specs[name]
	switch {
	case !ok:
		o.fail("weight %q is not in the weight table", name)
	case !slices.Equal(got, want):
		o.fail("weight %q is %v in the table, the recipe uses it as %v", name, got, want)
	}
	o.read[name] = true
}

func (o *shapeOps) StartLayer(i int) { o.layer = i }

func (o *shapeOps) Linear(x shape, w string) shape {
	dims := o.specs[w]
	if len(dims) != 2 {
		o.fail("Linear over %q of shape %v", w, dims)
		return x
	}
	o.weight(w, dims[0], x.cols)
	return shape{x.rows, dims[0]}
}

func (o *shapeOps) LinearF32(x shape, w string) shape { return o.Linear(x, w) }

func (o *shapeOps) Norm(x shape, width int, w string) shape {
	if width <= 0 || x.cols%width != 0 {
		o.fail("norm of width %d over %d columns", width, x.cols)
	}
	if w != "" {
		o.weight(w, width)
	}
	return x
}

func (o *shapeOps) NormInPlace(x shape, width int, w string) shape { return o.Norm(x, width, w) }

func (o *shapeOps) Add(a, b shape) shape {
	if a != b {
		o.fail("adding %v and %v", a, b)
	}
	return a
}

func (o *shapeOps) Scale(x shape, _ float64) shape { return x }

func (o *shapeOps) ScaleBy(x shape, w string) shape {
	o.weight(w, 1)
	return x
}

func (o *shapeOps) GeGLU(gate, up shape) shape { return o.Add(gate, up) }

func (o *shapeOps) RoPE(layer int, x shape, heads int) shape {
	if x.cols != heads*o.cfg.LayerHeadDim(layer) {
		o.fail("layer %d: RoPE of %d heads over %d columns", layer, heads, x.cols)
	}
	return x
}

func (o *shapeOps) Attend(layer int, q, k, v shape) shape {
	c := o.cfg
	if layer != o.layer {
		o.fail("attending in layer %d during layer %d", layer, o.layer)
	}
	if q.cols != c.NumAttentionHeads*c.LayerHeadDim(layer) || k != v ||
		k.cols != c.KVHeads(layer)*c.LayerHeadDim(layer) || q.rows != k.rows {
		o.fail("layer %d: attending q %v to k %v, v %v", layer, q, k, v)
	}
	return q
}

func (o *shapeOps) Experts(layer int, x, logits shape) shape {
	c := o.cfg
	pre := LayerPrefix(layer)
	if x.cols != c.HiddenSize || logits != (shape{x.rows, c.NumExperts}) {
		o.fail("layer %d: experts over x %v, logits %v", layer, x, logits)
	}
	o.weight(pre+"router.per_expert_scale", c.NumExperts)
	o.weight(pre+"experts.gate_up_proj", c.NumExperts, 2*c.MoEIntermediateSize, c.HiddenSize)
	o.weight(pre+"experts.down_proj", c.NumExperts, c.HiddenSize, c.MoEIntermediateSize)
	return x
}

// TestRecipeMatchesWeightTable: on configurations with sliding and full layers (K=V,
// their own head width and KV heads), the recipe's encoder, decoder (with and without
// self-conditioning) and final norm use every tensor of the weight table but the
// embedding (which each engine gathers itself), each with the table's shape, and
// nothing else.
func TestRecipeMatchesWeightTable(t *testing.T) {
	tiny := config.Tiny()
	real := *tiny
	real.Text.HiddenSize, real.Text.NumAttentionHeads, real.Text.NumKeyValueHeads = 96, 4, 2
	real.Text.NumGlobalKVHeads, real.Text.HeadDim, real.Text.GlobalHeadDim = 1, 16, 32
	real.Text.NumExperts, real.Text.TopKExperts, real.Text.MoEIntermediateSize = 6, 2, 40
	for name, cfg := range map[string]*config.Model{"tiny": tiny, "wide": &real} {
		t.Run(name, func(t *testing.T) {
			o := &shapeOps{cfg: &cfg.Text, specs: map[string][]int{}, read: map[string]bool{}}
			for _, s := range weights.Specs(cfg) {
				o.specs[s.Name] = s.Shape
			}
			has := func(n string) bool { _, ok := o.specs[n]; return ok }
			d, rows := cfg.Text.HiddenSize, 5
			x := shape{rows, d}
			if got := Output(o, &cfg.Text, Layers(o, &cfg.Text, x, func(i int) string { return EncoderScalar(has, i) })); got != x {
				t.Errorf("encoder: %v, want %v", got, x)
			}
			for _, soft := range []bool{false, true} {
				h := DecoderInput(o, &cfg.Text, x, x, soft)
				if got := Output(o, &cfg.Text, Layers(o, &cfg.Text, h, DecoderScalar)); got != x {
					t.Errorf("decoder: %v, want %v", got, x)
				}
			}
			if o.err != nil {
				t.Fatal(o.err)
			}
			for n := range o.specs {
				if !o.read[n] && n != "embed_tokens.weight" {
					t.Errorf("the recipe never uses %q", n)
				}
			}
			if !o.read["layers.0.self_attn.v_proj.weight"] || slices.ContainsFunc(keys(o.read), func(n string) bool {
				return strings.HasPrefix(n, fmt.Sprintf("layers.%d.self_attn.v_proj", fullLayer(&cfg.Text)))
			}) {
				t.Error("v_proj: sliding layers must use it, full (K=V) layers must not")
			}
		})
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func fullLayer(c *config.Text) int {
	for i := range c.NumHiddenLayers {
		if !c.IsSliding(i) {
			return i
		}
	}
	return -1
}
