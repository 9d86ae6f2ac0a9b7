package hostgrad

import (
	"math"

	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
)

// headRows copies KV head j of x [s, kvh, hd] → [s, hd].
func (tp *Tape) headRows(x []float32, s, kvh, hd, j int) []float32 {
	out := tp.buf(s * hd)
	for r := range s {
		copy(out[r*hd:(r+1)*hd], x[(r*kvh+j)*hd:(r*kvh+j+1)*hd])
	}
	return out
}

// addHeadRows adds g [s, hd] into KV head j of dst [s, kvh, hd].
func addHeadRows(dst, g []float32, s, kvh, hd, j int) {
	for r := range s {
		addTo(dst[(r*kvh+j)*hd:(r*kvh+j+1)*hd], g[r*hd:(r+1)*hd])
	}
}

var negInf = float32(math.Inf(-1))

// Attention is grouped-query attention with scale 1.0 (q and k are RMS-normed), as
// engine/model's attend: q [c, nh, hd] against keys K and values V [s, kvh, hd];
// query i sees the keys keys(i) returns, lo ≤ j < hi (keys nil: all) → [c, nh·hd].
// A query's probabilities outside its keys are exactly 0, and the backward pass skips
// them.
func (tp *Tape) Attention(q, K, V *T, c, s, nh, kvh, hd int, keys func(i int) (lo, hi int)) *T {
	groups := nh / kvh
	rows := groups * c
	span := func(r int) (lo, hi int) {
		if keys == nil {
			return 0, s
		}
		return keys(r % c)
	}
	out := tp.newT(c * nh * hd)
	type head struct{ p, qg, k, v []float32 }
	heads := make([]head, kvh)
	for j := range kvh {
		kj, vj := tp.headRows(K.V, s, kvh, hd, j), tp.headRows(V.V, s, kvh, hd, j)
		// The group's query heads as rows [G·C, Hd] (head-major), as the host model.
		qg := tp.buf(rows * hd)
		for g := range groups {
			hh := j*groups + g
			for t := range c {
				copy(qg[(g*c+t)*hd:(g*c+t+1)*hd], q.V[(t*nh+hh)*hd:(t*nh+hh+1)*hd])
			}
		}
		p := tp.buf(rows * s)
		mulNT(p, qg, kj, rows, s, hd)
		for r := range rows {
			row := p[r*s : (r+1)*s]
			lo, hi := span(r)
			for i := range row[:lo] {
				row[i] = negInf
			}
			for i := range row[hi:] {
				row[hi+i] = negInf
			}
			softmaxRow(row) // the whole row, so every sum runs in the one order
		}
		o := tp.buf(rows * hd)
		gemm(o, p, vj, rows, hd, s, kernels.NN, false)
		for g := range groups {
			hh := j*groups + g
			for t := range c {
				copy(out.V[(t*nh+hh)*hd:(t*nh+hh+1)*hd], o[(g*c+t)*hd:(g*c+t+1)*hd])
			}
		}
		if tp.grads() {
			heads[j] = head{p: p, qg: qg, k: kj, v: vj}
		}
	}
	tp.record(func() {
		if out.G == nil {
			return
		}
		for j, h := range heads {
			dO := tp.buf(rows * hd)
			for g := range groups {
				hh := j*groups + g
				for t := range c {
					copy(dO[(g*c+t)*hd:(g*c+t+1)*hd], out.G[(t*nh+hh)*hd:(t*nh+hh+1)*hd])
				}
			}
			if V.needs() { // dV = Pᵀ·dO: [s, rows]·[rows, hd]
				dv := tp.buf(s * hd)
				gemm(dv, h.p, dO, s, hd, rows, kernels.TN, false)
				addHeadRows(V.grad(), dv, s, kvh, hd, j)
			}
			// dS = P ∘ (dP − rowsum(dP ∘ P)), dP = dO·Vᵀ.
			ds := tp.buf(rows * s)
			mulNT(ds, dO, h.v, rows, s, hd)
			for r := range rows {
				lo, hi := span(r)
				pr, dr := h.p[r*s+lo:r*s+hi], ds[r*s+lo:r*s+hi]
				clear(ds[r*s : r*s+lo])
				clear(ds[r*s+hi : (r+1)*s])
				var dot float32
				for i, pv := range pr {
					dot += pv * dr[i]
				}
				for i, pv := range pr {
					dr[i] = pv * (dr[i] - dot)
				}
			}
			if q.needs() { // dQ = dS·K: [rows, s]·[s, hd]
				dq := tp.buf(rows * hd)
				gemm(dq, ds, h.k, rows, hd, s, kernels.NN, false)
				gq := q.grad()
				for g := range groups {
					hh := j*groups + g
					for t := range c {
						addTo(gq[(t*nh+hh)*hd:(t*nh+hh+1)*hd], dq[(g*c+t)*hd:(g*c+t+1)*hd])
					}
				}
			}
			if K.needs() { // dK = dSᵀ·Q: [s, rows]·[rows, hd]
				dk := tp.buf(s * hd)
				gemm(dk, ds, h.qg, s, hd, rows, kernels.TN, false)
				addHeadRows(K.grad(), dk, s, kvh, hd, j)
			}
		}
	})
	return out
}

// Route is the MoE router after its projection: per token, softmax over the e expert
// logits, the top k (ties to the lower index), renormalised over the chosen ones and
// multiplied by per_expert_scale (pes [e]). Returns the chosen experts [n][k] and their
// weights [n·k].
func (tp *Tape) Route(logits, pes *T, n, e, k int) ([][]int, *T) {
	idx := make([][]int, n)
	q := make([]float32, n*k) // renormalised probabilities of the chosen experts
	w := tp.newT(n * k)
	p := make([]float32, e)
	taken := make([]bool, e)
	for t := range n {
		copy(p, logits.V[t*e:(t+1)*e])
		softmaxRow(p)
		sel, tot := model.TopKExperts(p, k, taken)
		idx[t] = sel
		for s, ex := range sel {
			q[t*k+s] = p[ex] / tot
			w.V[t*k+s] = q[t*k+s] * pes.V[ex]
		}
	}
	tp.record(func() {
		if w.G == nil {
			return
		}
		var gl, gp []float32
		if logits.needs() {
			gl = logits.grad()
		}
		if pes.needs() {
			gp = pes.grad()
		}
		dq := make([]float32, k)
		for t, sel := range idx {
			var dot float32
			for s, ex := range sel {
				dw := w.G[t*k+s]
				if gp != nil {
					gp[ex] += dw * q[t*k+s]
				}
				dq[s] = dw * pes.V[ex]
				dot += q[t*k+s] * dq[s]
			}
			if gl != nil { // softmax over the chosen logits only (the full softmax's denominator cancels)
				for s, ex := range sel {
					gl[t*e+ex] += q[t*k+s] * (dq[s] - dot)
				}
			}
		}
	})
	return idx, w
}

// GatherRows is rows of x [·, d] → [len(rows), d].
func (tp *Tape) GatherRows(x *T, rows []int, d int) *T {
	y := tp.newT(len(rows) * d)
	for a, r := range rows {
		copy(y.V[a*d:(a+1)*d], x.V[r*d:(r+1)*d])
	}
	tp.record(func() {
		if y.G == nil || !x.needs() {
			return
		}
		g := x.grad()
		for a, r := range rows {
			addTo(g[r*d:(r+1)*d], y.G[a*d:(a+1)*d])
		}
	})
	return y
}

// Combine is the MoE output: out[t] = Σ_s w[t·k+s]·ys[ex][a] over token t's experts,
// where a is t's row among expert ex's rows. rows[ex] lists expert ex's tokens in
// ascending order (ys[ex] is nil for an expert without tokens) → [n, d].
func (tp *Tape) Combine(ys []*T, rows [][]int, slots [][]int, w *T, n, d, k int) *T {
	out := tp.newZeroT(n * d)
	for ex, y := range ys {
		for a, t := range rows[ex] {
			wa := w.V[t*k+slots[ex][a]]
			o := out.V[t*d : (t+1)*d]
			for j, v := range y.V[a*d : (a+1)*d] {
				o[j] += wa * v
			}
		}
	}
	tp.record(func() {
		if out.G == nil {
			return
		}
		for ex, y := range ys {
			if y == nil {
				continue
			}
			var gy []float32
			if y.needs() {
				gy = y.grad()
			}
			for a, t := range rows[ex] {
				s := t*k + slots[ex][a]
				dout := out.G[t*d : (t+1)*d]
				yr := y.V[a*d : (a+1)*d]
				if w.needs() {
					var dot float32
					for j, v := range dout {
						dot += v * yr[j]
					}
					w.grad()[s] += dot
				}
				if gy != nil {
					wa := w.V[s]
					g := gy[a*d : (a+1)*d]
					for j, v := range dout {
						g[j] += wa * v
					}
				}
			}
		}
	})
	return out
}

// softcapRows applies c·tanh(x/c) to logits in place (c ≤ 0: none) and returns the
// tanh values (nil when c ≤ 0), for the backward pass.
func (tp *Tape) softcapRows(logits []float32, c float32) []float32 {
	if c <= 0 {
		return nil
	}
	t := tp.buf(len(logits))
	kernels.ExpShift(t, logits, 0, 2/c) // e^(2x/c)
	for i, e := range t {
		th := 1 - 2/(e+1) // tanh(x/c); e is clamped, never Inf
		t[i] = th
		logits[i] = c * th
	}
	return t
}

// CrossEntropy is the weighted cross-entropy of the output head on rows h [n, d]
// (already final-normed) with the tied embedding emb [V, d] as the LM head, soft-capped
// logits (cap ≤ 0: none), against targets [n]: it returns weight·Σ_rows rowWeight·CE
// (rowWeights nil: every row 1) and, on a recording tape, seeds the gradient of that
// sum into h and emb.
func (tp *Tape) CrossEntropy(h, emb *T, n, d, v int, softcap float32, targets []int32, weight float32, rowWeights []float32) float64 {
	logits := tp.buf(n * v)
	mulNT(logits, h.V, emb.V, n, v, d)
	th := tp.softcapRows(logits, softcap)
	grads := tp.grads()
	var loss float64
	for r := range n {
		row := logits[r*v : (r+1)*v]
		m := row[0]
		for _, z := range row {
			if z > m {
				m = z
			}
		}
		zt := row[targets[r]]
		sum := kernels.ExpShift(row, row, m, 1) // row now holds e^(z−m)
		w := weight
		if rowWeights != nil {
			w *= rowWeights[r]
		}
		loss += float64(w) * (float64(m) + math.Log(float64(sum)) - float64(zt))
		if grads { // dz = w·(softmax − onehot), then through the soft-cap
			inv := w / sum
			for j := range row {
				row[j] *= inv
			}
			row[targets[r]] -= w
			if th != nil {
				t := th[r*v : (r+1)*v]
				for j, x := range t {
					row[j] *= 1 - x*x
				}
			}
		}
	}
	tp.record(func() {
		if h.needs() { // dh += dz·emb: [n, v]·[v, d]
			gemm(h.grad(), logits, emb.V, n, d, v, kernels.NN, true)
		}
		if emb.needs() { // demb += dzᵀ·h: [v, n]·[n, d]
			gemm(emb.grad(), logits, h.V, v, d, n, kernels.TN, true)
		}
	})
	return loss
}

// SoftEmbedding is the self-conditioning signal, without gradient (the objective
// stops it; nothing is recorded): softmax(soft-capped logits)·emb·scale for rows h
// [n, d] → Const [n, d].
func (tp *Tape) SoftEmbedding(h, emb []float32, n, d, v int, softcap, scale float32) *T {
	logits := tp.buf(n * v)
	mulNT(logits, h, emb, n, v, d)
	tp.softcapRows(logits, softcap)
	for r := range n {
		softmaxRow(logits[r*v : (r+1)*v])
	}
	out := tp.buf(n * d)
	gemm(out, logits, emb, n, d, v, kernels.NN, false)
	for i := range out {
		out[i] *= scale
	}
	return Const(out)
}
