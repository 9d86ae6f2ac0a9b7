// Package naive is a plain-Go float64 reference of the DiffusionGemma forward pass,
// written from the published architecture (Hugging Face transformers'
// modular_diffusion_gemma.py, vLLM's diffusion_gemma.py) with loops and no GoMLX.
// It is slow and batch-free on purpose: tests compare the GoMLX graph of
// engine/model against it.
package naive

import (
	"fmt"
	"math"

	"github.com/darkroomlabs/darkroom/engine/config"
)

// Tensor is a dense row-major float64 tensor.
type Tensor struct {
	Shape []int
	Data  []float64
}

// Model holds the weights by canonical name (HF names without "model.decoder.").
type Model struct {
	Cfg *config.Text
	W   map[string]Tensor
	// EmbedScale is √D as the checkpoint's dtype rounds it (53.0 for bf16 at D=2816).
	EmbedScale float64
}

// Cache is the encoder's K/V per layer and position: K[layer][pos] is [Kv·Hd] after
// k_norm and RoPE, V[layer][pos] after v_norm.
type Cache struct {
	K, V [][][]float64
}

// Len is the number of cached positions.
func (c *Cache) Len() int {
	if len(c.K) == 0 {
		return 0
	}
	return len(c.K[0])
}

func (m *Model) w(name string) []float64 {
	t, ok := m.W[name]
	if !ok {
		panic(fmt.Sprintf("naive: missing weight %q", name))
	}
	return t.Data
}

// linear: y = W x with W [out, in].
func linear(w []float64, x []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := 0; o < out; o++ {
		s := 0.0
		row := w[o*in : (o+1)*in]
		for i, xv := range x {
			s += row[i] * xv
		}
		y[o] = s
	}
	return y
}

// rmsnorm: x / sqrt(mean(x²)+eps) * w (w nil: no scale).
func rmsnorm(x, w []float64, eps float64) []float64 {
	ms := 0.0
	for _, v := range x {
		ms += v * v
	}
	ms /= float64(len(x))
	r := 1 / math.Sqrt(ms+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v * r
		if w != nil {
			y[i] *= w[i]
		}
	}
	return y
}

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func add(a, b []float64) []float64 {
	y := make([]float64, len(a))
	for i := range a {
		y[i] = a[i] + b[i]
	}
	return y
}

// mlp: down(gelu_tanh(gate x) * up x).
func (m *Model) mlp(prefix string, x []float64, inter int) []float64 {
	gate := linear(m.w(prefix+".gate_proj.weight"), x, inter)
	up := linear(m.w(prefix+".up_proj.weight"), x, inter)
	h := make([]float64, inter)
	for i := range h {
		h[i] = geluTanh(gate[i]) * up[i]
	}
	return linear(m.w(prefix+".down_proj.weight"), h, len(x))
}

// invFreq: rotate-half RoPE frequencies; "proportional" rotates the first
// int(factor·hd/2) pairs with exponent over the full head dim, the rest get 0.
func invFreq(r config.Rope, hd int) []float64 {
	half := hd / 2
	n := half
	if r.Type == "proportional" {
		f := r.PartialRotaryFactor
		if f == 0 {
			f = 1
		}
		n = int(math.Floor(f * float64(hd) / 2))
	}
	inv := make([]float64, half)
	for j := 0; j < n; j++ {
		inv[j] = math.Pow(r.Theta, -float64(2*j)/float64(hd))
	}
	return inv
}

// rope rotates one head vector at position pos.
func rope(x []float64, pos int, inv []float64) []float64 {
	half := len(x) / 2
	y := make([]float64, len(x))
	for j := 0; j < half; j++ {
		a := float64(pos) * inv[j]
		c, s := math.Cos(a), math.Sin(a)
		y[j] = x[j]*c - x[j+half]*s
		y[j+half] = x[j+half]*c + x[j]*s
	}
	return y
}

// qkv computes one token's q heads [H][Hd], and its k and v rows [Kv·Hd].
func (m *Model) qkv(i int, x []float64, pos int) (q [][]float64, k, v []float64) {
	c := m.Cfg
	pre := fmt.Sprintf("layers.%d.self_attn.", i)
	h, kvh, hd := c.NumAttentionHeads, c.KVHeads(i), c.LayerHeadDim(i)
	inv := invFreq(c.LayerRope(i), hd)
	qa := linear(m.w(pre+"q_proj.weight"), x, h*hd)
	ka := linear(m.w(pre+"k_proj.weight"), x, kvh*hd)
	va := ka // full layers: V is the k projection before k_norm
	if c.IsSliding(i) {
		va = linear(m.w(pre+"v_proj.weight"), x, kvh*hd)
	}
	q = make([][]float64, h)
	for hh := 0; hh < h; hh++ {
		q[hh] = rope(rmsnorm(qa[hh*hd:(hh+1)*hd], m.w(pre+"q_norm.weight"), c.RMSNormEps), pos, inv)
	}
	k = make([]float64, 0, kvh*hd)
	v = make([]float64, 0, kvh*hd)
	for j := 0; j < kvh; j++ {
		k = append(k, rope(rmsnorm(ka[j*hd:(j+1)*hd], m.w(pre+"k_norm.weight"), c.RMSNormEps), pos, inv)...)
		v = append(v, rmsnorm(va[j*hd:(j+1)*hd], nil, c.RMSNormEps)...)
	}
	return q, k, v
}

// attend: one query's heads over the given key/value rows, scale 1.0, softmax; then o_proj.
func (m *Model) attend(i int, q [][]float64, keys, vals [][]float64) []float64 {
	c := m.Cfg
	h, kvh, hd := c.NumAttentionHeads, c.KVHeads(i), c.LayerHeadDim(i)
	groups := h / kvh
	out := make([]float64, h*hd)
	for hh := 0; hh < h; hh++ {
		j := hh / groups
		scores := make([]float64, len(keys))
		mx := math.Inf(-1)
		for s, key := range keys {
			d := 0.0
			for e := 0; e < hd; e++ {
				d += q[hh][e] * key[j*hd+e]
			}
			scores[s] = d
			mx = math.Max(mx, d)
		}
		sum := 0.0
		for s := range scores {
			scores[s] = math.Exp(scores[s] - mx)
			sum += scores[s]
		}
		for s, val := range vals {
			p := scores[s] / sum
			for e := 0; e < hd; e++ {
				out[hh*hd+e] += p * val[j*hd+e]
			}
		}
	}
	return linear(m.w(fmt.Sprintf("layers.%d.self_attn.o_proj.weight", i)), out, c.HiddenSize)
}

// Route returns the top-k experts (ties to the lower index) and their weights for one
// token's residual r.
func (m *Model) Route(i int, r []float64) (idx []int, w []float64) {
	c := m.Cfg
	pre := fmt.Sprintf("layers.%d.router.", i)
	h := rmsnorm(r, nil, c.RMSNormEps)
	scale := m.w(pre + "scale")
	for d := range h {
		h[d] *= scale[d] / math.Sqrt(float64(c.HiddenSize))
	}
	logits := linear(m.w(pre+"proj.weight"), h, c.NumExperts)
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, l)
	}
	probs := make([]float64, len(logits))
	sum := 0.0
	for e, l := range logits {
		probs[e] = math.Exp(l - mx)
		sum += probs[e]
	}
	for e := range probs {
		probs[e] /= sum
	}
	taken := make([]bool, len(probs))
	tot := 0.0
	for range c.TopKExperts {
		best := -1
		for e, pr := range probs {
			if !taken[e] && (best < 0 || pr > probs[best]) {
				best = e
			}
		}
		taken[best] = true
		idx = append(idx, best)
		w = append(w, probs[best])
		tot += probs[best]
	}
	pes := m.w(pre + "per_expert_scale")
	for j := range w {
		w[j] = w[j] / tot * pes[idx[j]]
	}
	return idx, w
}

// Expert runs expert e of layer i on x: down(gelu_tanh(gate)·up), gate = first F rows.
func (m *Model) Expert(i, e int, x []float64) []float64 {
	c := m.Cfg
	d, f := c.HiddenSize, c.MoEIntermediateSize
	gu := m.w(fmt.Sprintf("layers.%d.experts.gate_up_proj", i))[e*2*f*d : (e+1)*2*f*d]
	dn := m.w(fmt.Sprintf("layers.%d.experts.down_proj", i))[e*d*f : (e+1)*d*f]
	gate := linear(gu[:f*d], x, f)
	up := linear(gu[f*d:], x, f)
	h := make([]float64, f)
	for j := range h {
		h[j] = geluTanh(gate[j]) * up[j]
	}
	return linear(dn, h, d)
}

// MoE is the per-token loop: Σ_k w_k · expert_{idx_k}(x), routed on r.
func (m *Model) MoE(i int, x, r []float64) []float64 {
	idx, w := m.Route(i, r)
	out := make([]float64, len(x))
	for j, e := range idx {
		y := m.Expert(i, e, x)
		for d := range out {
			out[d] += w[j] * y[d]
		}
	}
	return out
}

// ffn is the second half of a layer for one token (residual h after attention).
func (m *Model) ffn(i int, h []float64, scalar float64) []float64 {
	c := m.Cfg
	pre := fmt.Sprintf("layers.%d.", i)
	n := func(x []float64, name string) []float64 { return rmsnorm(x, m.w(pre+name+".weight"), c.RMSNormEps) }
	dense := n(m.mlp(pre+"mlp", n(h, "pre_feedforward_layernorm"), c.IntermediateSize), "post_feedforward_layernorm_1")
	moe := n(m.MoE(i, n(h, "pre_feedforward_layernorm_2"), h), "post_feedforward_layernorm_2")
	out := add(h, n(add(dense, moe), "post_feedforward_layernorm"))
	for d := range out {
		out[d] *= scalar
	}
	return out
}

func (m *Model) embed(tok int) []float64 {
	d := m.Cfg.HiddenSize
	row := m.w("embed_tokens.weight")[tok*d : (tok+1)*d]
	x := make([]float64, d)
	for j := range x {
		x[j] = row[j] * m.EmbedScale
	}
	return x
}

// Logits: final norm, tied head, soft-cap.
func (m *Model) Logits(h []float64) []float64 {
	c := m.Cfg
	x := rmsnorm(h, m.w("norm.weight"), c.RMSNormEps)
	l := linear(m.w("embed_tokens.weight"), x, c.VocabSize)
	if cap := c.FinalLogitSoftcapping; cap > 0 {
		for j := range l {
			l[j] = cap * math.Tanh(l[j]/cap)
		}
	}
	return l
}

func (m *Model) scalar(name, fallback string) float64 {
	if t, ok := m.W[name]; ok {
		return t.Data[0]
	}
	return m.w(fallback)[0]
}

// Encode runs the causal encoder over tokens at positions cache.Len()…, appends their
// K/V to the cache and returns each token's logits.
func (m *Model) Encode(cache *Cache, tokens []int) [][]float64 {
	c := m.Cfg
	nl := c.NumHiddenLayers
	if cache.K == nil {
		cache.K, cache.V = make([][][]float64, nl), make([][][]float64, nl)
	}
	start := cache.Len()
	hs := make([][]float64, len(tokens))
	for t, tok := range tokens {
		hs[t] = m.embed(tok)
	}
	for i := 0; i < nl; i++ {
		pre := fmt.Sprintf("layers.%d.", i)
		scalar := m.scalar(fmt.Sprintf("encoder.layers.%d.layer_scalar", i), pre+"layer_scalar")
		qs := make([][][]float64, len(tokens))
		for t := range tokens {
			x := rmsnorm(hs[t], m.w(pre+"input_layernorm.weight"), c.RMSNormEps)
			var k, v []float64
			qs[t], k, v = m.qkv(i, x, start+t)
			cache.K[i] = append(cache.K[i], k)
			cache.V[i] = append(cache.V[i], v)
		}
		for t := range tokens {
			pos := start + t
			var keys, vals [][]float64
			for j := 0; j <= pos; j++ { // causal
				if c.IsSliding(i) && c.SlidingWindow > 0 && j <= pos-c.SlidingWindow {
					continue // sliding window: i − W < j ≤ i
				}
				keys, vals = append(keys, cache.K[i][j]), append(vals, cache.V[i][j])
			}
			a := m.attend(i, qs[t], keys, vals)
			h := add(hs[t], rmsnorm(a, m.w(pre+"post_attention_layernorm.weight"), c.RMSNormEps))
			hs[t] = m.ffn(i, h, scalar)
		}
	}
	out := make([][]float64, len(tokens))
	for t := range tokens {
		out[t] = m.Logits(hs[t])
	}
	return out
}

// Decode runs the bidirectional decoder over the canvas placed right after the cached
// prefix and returns the canvas logits. soft nil = first step (zero self-conditioning).
func (m *Model) Decode(cache *Cache, canvas []int, soft [][]float64) [][]float64 {
	c := m.Cfg
	start := cache.Len()
	hs := make([][]float64, len(canvas))
	for t, tok := range canvas {
		x := m.embed(tok)
		if soft != nil {
			n := rmsnorm(soft[t], m.w("self_conditioning.pre_norm.weight"), c.RMSNormEps)
			x = add(x, m.mlp("self_conditioning", n, c.IntermediateSize))
		}
		hs[t] = rmsnorm(x, nil, c.RMSNormEps)
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		pre := fmt.Sprintf("layers.%d.", i)
		scalar := m.w(pre + "layer_scalar")[0]
		// Prefix keys: sliding layers see the last W−1 cached tokens, full layers all.
		var keys, vals [][]float64
		for j := 0; j < start; j++ {
			if c.IsSliding(i) && c.SlidingWindow > 0 && j < start-(c.SlidingWindow-1) {
				continue
			}
			keys, vals = append(keys, cache.K[i][j]), append(vals, cache.V[i][j])
		}
		qs := make([][][]float64, len(canvas))
		for t := range canvas {
			x := rmsnorm(hs[t], m.w(pre+"input_layernorm.weight"), c.RMSNormEps)
			var k, v []float64
			qs[t], k, v = m.qkv(i, x, start+t)
			keys, vals = append(keys, k), append(vals, v) // the whole canvas, bidirectional
		}
		for t := range canvas {
			a := m.attend(i, qs[t], keys, vals)
			h := add(hs[t], rmsnorm(a, m.w(pre+"post_attention_layernorm.weight"), c.RMSNormEps))
			hs[t] = m.ffn(i, h, scalar)
		}
	}
	out := make([][]float64, len(canvas))
	for t := range canvas {
		out[t] = m.Logits(hs[t])
	}
	return out
}

// SoftEmbedding: softmax(logits/T) @ embed_tokens · √D, per canvas position.
func (m *Model) SoftEmbedding(logits [][]float64, temperature float64) [][]float64 {
	c := m.Cfg
	d := c.HiddenSize
	emb := m.w("embed_tokens.weight")
	out := make([][]float64, len(logits))
	for t, l := range logits {
		mx := math.Inf(-1)
		for _, v := range l {
			mx = math.Max(mx, v/temperature)
		}
		p := make([]float64, len(l))
		sum := 0.0
		for j, v := range l {
			p[j] = math.Exp(v/temperature - mx)
			sum += p[j]
		}
		s := make([]float64, d)
		for j := range p {
			pj := p[j] / sum
			for e := 0; e < d; e++ {
				s[e] += pj * emb[j*d+e]
			}
		}
		for e := range s {
			s[e] *= m.EmbedScale
		}
		out[t] = s
	}
	return out
}
