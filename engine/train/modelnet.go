package train

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
)

// modelNet is the Net of the real architecture: engine/model's batched graph
// functions over the variables of scope "dg" (the same code the engine runs).
type modelNet struct {
	ctx    *context.Context
	cfg    *config.Model
	params *model.Params
}

func newModelNet(ctx *context.Context, cfg *config.Model) Net {
	return &modelNet{ctx: ctx, cfg: cfg}
}

func (m *modelNet) p(g *Graph) *model.Params {
	if m.params == nil || m.params.Graph() != g {
		m.params = model.NewParams(m.ctx, g, &m.cfg.Text)
	}
	return m.params
}

func (m *modelNet) Encode(tokens, positions, valid *Node) (*Node, any) {
	return model.Encoder(m.p(tokens.Graph()), tokens, positions, valid)
}

func (m *modelNet) Decode(canvas, positions, soft *Node, kv any, prefixValid *Node) *Node {
	return model.Decoder(m.p(canvas.Graph()), canvas, positions, soft, kv.(*model.KV), prefixValid)
}

func (m *modelNet) Logits(hidden *Node) *Node {
	return model.Logits(m.p(hidden.Graph()), hidden)
}

func (m *modelNet) SoftEmbedding(logits *Node) *Node {
	return model.SoftEmbedding(m.p(logits.Graph()), logits, Scalar(logits.Graph(), dtypes.Float32, 1.0))
}

func (m *modelNet) HeadKV(kv any, n int) any {
	src := kv.(*model.KV)
	head := func(x *Node) *Node {
		if x == nil {
			return nil
		}
		return Slice(x, AxisRange(0, n))
	}
	out := &model.KV{K: make([]*Node, len(src.K)), V: make([]*Node, len(src.V)), Positions: head(src.Positions), Valid: head(src.Valid)}
	for i := range src.K {
		out.K[i], out.V[i] = head(src.K[i]), head(src.V[i])
	}
	return out
}
