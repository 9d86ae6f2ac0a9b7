package train

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// Scopes of the optimizer state inside the training context. The parameters
// themselves live in model scope "dg" (model.Scope); the moments mirror their
// names under these scopes, so a checkpoint is just "every variable".
const (
	scopeMoment1 = "adamw_m"
	scopeMoment2 = "adamw_v"
	scopeState   = "trainer"
)

// adamW holds the optimizer's hyper-parameters (decoupled weight decay, as the
// official recipes: β = (0.95, 0.99), ε = 1e-8, weight decay 1e-4).
type adamW struct {
	Beta1, Beta2, Eps, WeightDecay float64
}

// globalNorm returns √Σ‖g‖² over all gradients (a scalar f32).
func globalNorm(grads []*Node) *Node {
	var sum *Node
	for _, g := range grads {
		s := ReduceAllSum(Square(g))
		if sum == nil {
			sum = s
		} else {
			sum = Add(sum, s)
		}
	}
	return Sqrt(sum)
}

// clipByGlobalNorm scales every gradient by min(1, maxNorm/‖g‖) and returns the
// scaled gradients and the norm before clipping. maxNorm ≤ 0 disables clipping.
func clipByGlobalNorm(grads []*Node, maxNorm float64) ([]*Node, *Node) {
	norm := globalNorm(grads)
	if maxNorm <= 0 {
		return grads, norm
	}
	g := norm.Graph()
	scale := Div(Scalar(g, norm.DType(), maxNorm), Max(norm, Scalar(g, norm.DType(), maxNorm)))
	out := make([]*Node, len(grads))
	for i, gr := range grads {
		out[i] = Mul(gr, scale)
	}
	return out, norm
}

// update applies one AdamW step to vars given their gradients. lr is a scalar
// f32 node (the host computes the schedule and feeds it per step, so resuming
// needs only the step count). The bias-correction step count is a variable in
// scope "trainer" and is checkpointed with everything else.
func (o adamW) update(ctx *context.Context, vars []*context.Variable, grads []*Node, lr *Node) {
	g := lr.Graph()
	stepVar := stateVar(ctx, "adam_step")
	step := AddScalar(stepVar.ValueGraph(g), 1)
	stepVar.SetValueGraph(step)
	dt := lr.DType()
	b1 := Scalar(g, dt, o.Beta1)
	b2 := Scalar(g, dt, o.Beta2)
	corr1 := Reciprocal(OneMinus(Pow(b1, step)))
	corr2 := Reciprocal(OneMinus(Pow(b2, step)))
	for i, v := range vars {
		m1 := momentVar(ctx, scopeMoment1, v)
		m2 := momentVar(ctx, scopeMoment2, v)
		gr := grads[i]
		m := Add(MulScalar(m1.ValueGraph(g), o.Beta1), MulScalar(gr, 1-o.Beta1))
		s := Add(MulScalar(m2.ValueGraph(g), o.Beta2), MulScalar(Square(gr), 1-o.Beta2))
		m1.SetValueGraph(m)
		m2.SetValueGraph(s)
		w := v.ValueGraph(g)
		dir := Div(Mul(m, corr1), AddScalar(Sqrt(Mul(s, corr2)), o.Eps))
		if o.WeightDecay > 0 {
			dir = Add(dir, MulScalar(w, o.WeightDecay))
		}
		v.SetValueGraph(Sub(w, Mul(lr, dir)))
	}
}

// momentVar returns the moment variable of v under scope (created by initOptimizer).
func momentVar(ctx *context.Context, scope string, v *context.Variable) *context.Variable {
	return ctx.GetVariableByScopeAndName(context.ScopeSeparator+scope+v.Scope(), v.Name())
}

// stateVar returns the trainer's scalar state variable name (created by initOptimizer).
func stateVar(ctx *context.Context, name string) *context.Variable {
	return ctx.GetVariableByScopeAndName(context.ScopeSeparator+scopeState, name)
}

// initOptimizer creates, on the host, zero moments for every trainable variable
// and the step counter, so the training graph only reads and writes them.
func initOptimizer(ctx *context.Context, vars []*context.Variable) {
	for _, v := range vars {
		for _, scope := range []string{scopeMoment1, scopeMoment2} {
			c := ctx.InAbsPath(context.ScopeSeparator + scope + v.Scope()).Checked(false)
			c.VariableWithValue(v.Name(), tensors.FromShape(v.Shape())).SetTrainable(false)
		}
	}
	ctx.InAbsPath(context.ScopeSeparator+scopeState).Checked(false).
		VariableWithValue("adam_step", float32(0)).SetTrainable(false)
}
