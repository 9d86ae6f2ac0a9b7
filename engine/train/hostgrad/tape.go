// Package hostgrad computes Darkroom's training objective (engine/train.Objective) and
// its gradient on the host in float32, with the same row-major kernels as engine/model's
// host path (the GEMM of engine/kernels).
//
// On the pure-Go backend GoMLX's DotGeneral and its gradient run at 1–4 GFLOP/s on this
// class of machine, so differentiating the graph is what limited Darkroom Mini's
// training; here the forward pass records, op by op, a closure that propagates the
// gradient back (a reverse-mode tape over float32 slices), and every product goes
// through the packed GEMM of kernels.MulNT — kernels.Gemm where an operand is read
// transposed (the backward passes: dx = dy·w, dw = dyᵀ·x, no transposed copies) or
// the product is added into a gradient. The model is not written here: it is engine/model/arch's
// layer recipe, the one the host inference path runs, over tapeOps (model.go) — this
// package owns the taped operations (tape.go, ops.go) and the objective around the
// recipe (objective.go: encoder with the AR loss, the no-grad self-conditioning pass,
// the decoder with the diffusion loss). An example's values, gradients and scratch
// come from an arena kept from one step to the next (arena.go), not the heap. The tests compare each op's backward pass with
// finite differences, and engine/train's tests the losses and every parameter's
// gradient with GoMLX's autodiff of the graph objective on a small configuration.
package hostgrad

import (
	"math"
	"sync/atomic"

	"github.com/darkroomlabs/darkroom/engine/kernels"
)

// T is a row-major float32 tensor on the tape: its values V and, once gradient has
// flowed into it, its gradient G (same length). Constants (buffers, the
// self-conditioning signal, anything computed without a tape) never get a gradient.
type T struct {
	V, G  []float32
	konst bool
	mem   *arena // where G is allocated (nil: the heap)
}

// needs reports whether gradient should flow into x.
func (x *T) needs() bool { return x != nil && !x.konst }

// grad returns x's gradient buffer, allocating it on first use.
func (x *T) grad() []float32 {
	if x.G == nil {
		x.G = x.mem.alloc(len(x.V))
	}
	return x.G
}

// Const wraps values that take no gradient.
func Const(v []float32) *T { return &T{V: v, konst: true} }

// Tape records the backward closures of the ops run on it, in order. A nil Tape, or
// one with Off set, records nothing: a forward-only pass. The values and gradients of
// the ops' outputs come from the tape's arena when it has one (Loss gives each
// example's tapes one), from the heap otherwise.
type Tape struct {
	back []func()
	Off  bool
	mem  *arena
}

// arena returns the tape's arena (nil: the heap).
func (tp *Tape) arena() *arena {
	if tp == nil {
		return nil
	}
	return tp.mem
}

// alloc returns n zeroed floats from the tape's arena.
func (tp *Tape) alloc(n int) []float32 { return tp.arena().alloc(n) }

// buf returns n floats from the tape's arena with whatever values they held: for a
// buffer the op writes whole before reading it.
func (tp *Tape) buf(n int) []float32 { return tp.arena().buf(n) }

// newT returns an output of n values, to be written whole, whose gradient comes from
// the same arena.
func (tp *Tape) newT(n int) *T { return &T{V: tp.buf(n), mem: tp.arena()} }

// newZeroT is newT for an output the op adds into.
func (tp *Tape) newZeroT(n int) *T { return &T{V: tp.alloc(n), mem: tp.arena()} }

func (tp *Tape) record(f func()) {
	if tp != nil && !tp.Off {
		tp.back = append(tp.back, f)
	}
}

// grads reports whether ops should prepare their backward pass.
func (tp *Tape) grads() bool { return tp != nil && !tp.Off }

// Backward runs the recorded closures in reverse order and clears the tape. The loss
// ops seed the gradient themselves (see CrossEntropy), so there is no output to seed.
func (tp *Tape) Backward() {
	for i := len(tp.back) - 1; i >= 0; i-- {
		tp.back[i]()
		tp.back[i] = nil
	}
	tp.back = tp.back[:0]
}

// view is x[lo:hi] sharing x's values and gradient (x's gradient is allocated so the
// view can write into it). Used for the experts' blocks of a stacked weight.
func view(x *T, lo, hi int) *T {
	if !x.needs() {
		return &T{V: x.V[lo:hi], konst: true}
	}
	return &T{V: x.V[lo:hi], G: x.grad()[lo:hi], mem: x.mem}
}

// addTo adds src into dst.
func addTo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}

// MatNT is x·wᵀ for x [m, k] and w [n, k] → [m, n] (a Linear layer with an HF [out, in]
// weight).
func (tp *Tape) MatNT(x, w *T, m, n, k int) *T {
	y := tp.newT(m * n)
	mulNT(y.V, x.V, w.V, m, n, k)
	tp.record(func() {
		if y.G == nil {
			return
		}
		if x.needs() { // dx += dy·w: [m, n]·[n, k]
			gemm(x.grad(), y.G, w.V, m, k, n, kernels.NN, true)
		}
		if w.needs() { // dw += dyᵀ·x: [n, m]·[m, k]
			gemm(w.grad(), y.G, x.V, n, k, m, kernels.TN, true)
		}
	})
	return y
}

// Embed gathers rows of table [V, d] for ids and multiplies them by scale → [len(ids), d].
func (tp *Tape) Embed(table *T, ids []int32, d int, scale float32) *T {
	y := tp.newT(len(ids) * d)
	for t, id := range ids {
		row := table.V[int(id)*d : int(id)*d+d]
		o := y.V[t*d : t*d+d]
		for j, v := range row {
			o[j] = v * scale
		}
	}
	tp.record(func() {
		if y.G == nil || !table.needs() {
			return
		}
		g := table.grad()
		for t, id := range ids {
			row := g[int(id)*d : int(id)*d+d]
			for j, v := range y.G[t*d : t*d+d] {
				row[j] += scale * v
			}
		}
	})
	return y
}

// RMS is RMSNorm over rows of width n: x·(mean(x²)+eps)^-½·w (w nil: no scale).
func (tp *Tape) RMS(x *T, n int, w *T, eps float32) *T {
	rows := len(x.V) / n
	y := tp.newT(len(x.V))
	inv := tp.buf(rows)
	for r := range rows {
		row := x.V[r*n : (r+1)*n]
		var ms float32
		for _, v := range row {
			ms += v * v
		}
		iv := float32(1 / math.Sqrt(float64(ms/float32(n)+eps)))
		inv[r] = iv
		o := y.V[r*n : (r+1)*n]
		if w == nil {
			for j, v := range row {
				o[j] = v * iv
			}
		} else {
			for j, v := range row {
				o[j] = v * iv * w.V[j]
			}
		}
	}
	tp.record(func() {
		if y.G == nil {
			return
		}
		var gx, gw []float32
		if x.needs() {
			gx = x.grad()
		}
		if w.needs() {
			gw = w.grad()
		}
		dyw := tp.buf(n)
		for r := range rows {
			row, dy, iv := x.V[r*n:(r+1)*n], y.G[r*n:(r+1)*n], inv[r]
			var dot float32 // Σ dy'·x̂, dy' = dy·w, x̂ = x·iv
			for j, v := range row {
				d := dy[j]
				if w != nil {
					if gw != nil {
						gw[j] += d * v * iv
					}
					d *= w.V[j]
				}
				dyw[j] = d
				dot += d * v * iv
			}
			if gx != nil {
				c := dot / float32(n)
				g := gx[r*n : (r+1)*n]
				for j, v := range row {
					g[j] += iv * (dyw[j] - v*iv*c)
				}
			}
		}
	})
	return y
}

// Add is a + b (same length).
func (tp *Tape) Add(a, b *T) *T {
	y := tp.newT(len(a.V))
	for i := range y.V {
		y.V[i] = a.V[i] + b.V[i]
	}
	tp.record(func() {
		if y.G == nil {
			return
		}
		if a.needs() {
			addTo(a.grad(), y.G)
		}
		if b.needs() {
			addTo(b.grad(), y.G)
		}
	})
	return y
}

// Scale is x·s for a constant s.
func (tp *Tape) Scale(x *T, s float32) *T {
	y := tp.newT(len(x.V))
	for i, v := range x.V {
		y.V[i] = v * s
	}
	tp.record(func() {
		if y.G == nil || !x.needs() {
			return
		}
		g := x.grad()
		for i, v := range y.G {
			g[i] += s * v
		}
	})
	return y
}

// Slice is the flat range x[lo:hi] (rows lo/width … hi/width of a row-major matrix).
func (tp *Tape) Slice(x *T, lo, hi int) *T {
	y := &T{V: x.V[lo:hi:hi], mem: tp.arena()} // read-only alias
	tp.record(func() {
		if y.G == nil || !x.needs() {
			return
		}
		addTo(x.grad()[lo:hi], y.G)
	})
	return y
}

// Concat is a followed by b (row-major matrices of the same width stacked).
func (tp *Tape) Concat(a, b *T) *T {
	y := tp.newT(len(a.V) + len(b.V))
	copy(y.V[copy(y.V, a.V):], b.V)
	tp.record(func() {
		if y.G == nil {
			return
		}
		if a.needs() {
			addTo(a.grad(), y.G[:len(a.V)])
		}
		if b.needs() {
			addTo(b.grad(), y.G[len(a.V):])
		}
	})
	return y
}

// geluTanh computes σ(2u) for u = √(2/π)·(x + 0.044715·x³) into sig: then
// gelu_tanh(x) = x·σ(2u), the form the host model uses (0.5·(1 + tanh u) = σ(2u)).
func geluSigmoid(sig, x []float32) {
	const k = 0.7978845608028654
	for j, v := range x {
		sig[j] = -2 * k * (v + 0.044715*v*v*v)
	}
	kernels.ExpShift(sig, sig, 0, 1)
	for j := range sig {
		sig[j] = 1 / (1 + sig[j])
	}
}

// geluGrad is d/dx of x·σ(2u): σ + x·σ·(1−σ)·2u′, u′ = √(2/π)·(1 + 3·0.044715·x²).
func geluGrad(x, sig float32) float32 {
	const k = 0.7978845608028654
	return sig + x*sig*(1-sig)*2*k*(1+3*0.044715*x*x)
}

// GeGLU is gelu_tanh(gate)·up, elementwise.
func (tp *Tape) GeGLU(gate, up *T) *T {
	n := len(gate.V)
	sig := tp.buf(n)
	geluSigmoid(sig, gate.V)
	y := tp.newT(n)
	for j, x := range gate.V {
		y.V[j] = x * sig[j] * up.V[j]
	}
	tp.record(func() {
		if y.G == nil {
			return
		}
		var gg, gu []float32
		if gate.needs() {
			gg = gate.grad()
		}
		if up.needs() {
			gu = up.grad()
		}
		for j, x := range gate.V {
			d := y.G[j]
			if gu != nil {
				gu[j] += d * x * sig[j]
			}
			if gg != nil {
				gg[j] += d * up.V[j] * geluGrad(x, sig[j])
			}
		}
	})
	return y
}

// GeGLUSplit is GeGLU over the halves of each row of g [m, 2f] (gate | up) → [m, f],
// the experts' fused gate_up projection.
func (tp *Tape) GeGLUSplit(g *T, m, f int) *T {
	sig := tp.buf(m * f)
	y := tp.newT(m * f)
	for a := range m {
		gate, up := g.V[a*2*f:a*2*f+f], g.V[a*2*f+f:(a+1)*2*f]
		s := sig[a*f : (a+1)*f]
		geluSigmoid(s, gate)
		o := y.V[a*f : (a+1)*f]
		for j, x := range gate {
			o[j] = x * s[j] * up[j]
		}
	}
	tp.record(func() {
		if y.G == nil || !g.needs() {
			return
		}
		gr := g.grad()
		for a := range m {
			gate, up := g.V[a*2*f:a*2*f+f], g.V[a*2*f+f:(a+1)*2*f]
			dg, du := gr[a*2*f:a*2*f+f], gr[a*2*f+f:(a+1)*2*f]
			s, dy := sig[a*f:(a+1)*f], y.G[a*f:(a+1)*f]
			for j, x := range gate {
				du[j] += dy[j] * x * s[j]
				dg[j] += dy[j] * up[j] * geluGrad(x, s[j])
			}
		}
	})
	return y
}

// RoPE rotates x [c, heads, hd] (rotate-half layout) by the angles whose cos/sin are
// [c, hd/2] → a new tensor.
func (tp *Tape) RoPE(x *T, c, heads, hd int, cos, sin []float32) *T {
	half := hd / 2
	y := tp.newZeroT(len(x.V))
	rot := func(dst, src []float32, sign float32) {
		for t := range c {
			cs, sn := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
			for h := range heads {
				s := src[(t*heads+h)*hd : (t*heads+h+1)*hd]
				d := dst[(t*heads+h)*hd : (t*heads+h+1)*hd]
				for j := range half {
					x1, x2 := s[j], s[j+half]
					d[j] += x1*cs[j] - sign*x2*sn[j]
					d[j+half] += x2*cs[j] + sign*x1*sn[j]
				}
			}
		}
	}
	rot(y.V, x.V, 1)
	tp.record(func() {
		if y.G == nil || !x.needs() {
			return
		}
		rot(x.grad(), y.G, -1) // the inverse rotation
	})
	return y
}

// softmaxRow normalises row in place (kernels.Softmax: the vector maximum, exponentials
// and scaling). Probabilities below 1e-30 (masked −Inf entries, which the clamped
// exponential maps to ~1e-38, included) are then flushed to exactly 0: products with
// such values are denormal floats, which run the GEMM kernels two orders of magnitude
// slower.
func softmaxRow(row []float32) {
	kernels.Softmax(row, row, 1)
	for j, v := range row {
		if v < 1e-30 {
			row[j] = 0
		}
	}
}

// flops counts the floating-point operations of the products (for benchmarks).
var flops atomic.Int64

// mulNT is kernels.MulNT (out = a·bᵀ, a [m, k], b [n, k]), counted.
func mulNT(out, a, b []float32, m, n, k int) {
	flops.Add(2 * int64(m) * int64(n) * int64(k))
	kernels.MulNT(out, a, b, m, n, k)
}

// gemm is kernels.Gemm (out [m, n] = op(a)·op(b) over k, or added to out), counted.
func gemm(out, a, b []float32, m, n, k int, layout kernels.Layout, accumulate bool) {
	flops.Add(2 * int64(m) * int64(n) * int64(k))
	kernels.Gemm(out, a, b, m, n, k, layout, accumulate)
}

// Flops returns the operations counted by the products so far.
func Flops() int64 { return flops.Load() }
