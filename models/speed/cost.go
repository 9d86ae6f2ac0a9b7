package speed

import (
	"math"
	"strconv"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// work is one piece of a forward pass as the host model (engine/model's host.go
// and head.go) does it: count products [m, k]×[k, n] — of a stored weight [n, k]
// in format (MulNT, or MulVec's dot products below dotRows rows), of two
// activations (format "": the attention's scores and values), or the soft
// embedding's probabilities times E (soft, MulNN) — or count calls of a vector
// pass vec over elems elements each.
type work struct {
	what   string
	m      float64 // float: an expert's share of the rows need not be whole
	k, n   int
	count  float64
	format string
	bytes  float64 // one product's weight bytes as stored
	soft   bool

	vec   string
	elems float64

	// Or the fused head's work on logits logits (a denoising step's; packed: its
	// embedding is packed as float32 panels).
	logits float64
	packed bool

	// split is the rows a vector pass splits across the worker pool (ParallelRows;
	// below 2 it runs on the calling goroutine). A job is one parallel call around
	// the items of job (an AR step's experts, whole experts side by side on the
	// workers): its time, arithmetic and operations are theirs. inJob marks a product
	// that runs inside such a call (a job's, the packed head's blocks) and hands
	// nothing to the pool itself.
	split float64
	job   []work
	inJob bool
}

// handoffs is how many of w's calls hand parts to the worker pool: a product the
// pool splits (kernels.Parts), a vector pass or a job over rows (experts) split
// across it, the fused head's pass over a canvas's positions (split in micro-tile
// rows: a canvas of 256 has many; a test's canvas of a few rows may have one tile,
// which is counted all the same).
func (w work) handoffs() float64 {
	switch {
	case w.inJob || kernels.Workers() < 2:
		return 0
	case w.logits > 0:
		return w.count
	case w.vec != "" || w.job != nil:
		if w.split >= 2 {
			return w.count
		}
		return 0
	}
	if kernels.Parts(max(1, int(math.Round(w.m))), w.n, w.k) >= 2 {
		return w.count
	}
	return 0
}

func (w work) flops() float64 {
	if w.job != nil {
		var f float64
		for _, x := range w.job {
			f += x.flops()
		}
		return f
	}
	if w.vec != "" || w.logits > 0 {
		return 0
	}
	return 2 * w.m * float64(w.k) * float64(w.n) * w.count
}

// dotRows is engine/kernels's row count below which a product is dot products of
// the weights' rows, each read once for all rows (the AR step's path).
const dotRows = kernels.DotRows

// passes builds the work lists of one model under one profile.
type passes struct {
	t       *config.Text
	formats map[string]string  // by weight name: its stored format
	bpw     map[string]float64 // by weight name: bytes per weight as stored
}

func newPasses(cfg *config.Model, p quant.Profile) *passes {
	return newPassesOf(cfg, p, weights.GGUFLayout{})
}

// newPassesOf is newPasses with the weights under profile p, or in the types of a GGUF
// file laid out as l (storedAs).
func newPassesOf(cfg *config.Model, p quant.Profile, l weights.GGUFLayout) *passes {
	ps := &passes{t: &cfg.Text, formats: map[string]string{}, bpw: map[string]float64{}}
	for _, s := range weights.Specs(cfg) {
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		var b int64
		ps.formats[s.Name], b = storedAs(cfg, p, l, s, n)
		if n > 0 {
			ps.bpw[s.Name] = float64(b) / float64(n)
		}
	}
	return ps
}

// int8G32 is the format a GGUF's Q6_K embedding is priced in, int8 with a float32 scale
// per 32 inputs as the CPU holds them (weights.HostHeld; storedAs): at int8's rates
// (rateFormat) — its AR product and canvas MulNT run the same kernels at the same
// speed (BenchmarkPeersGEMV: int8 17.8 GB/s, int8 g32 17.7) — but for the soft
// embedding's MulNN, which takes the integer path only for one scale per row, and so
// is priced on the float path.
const int8G32 = "int8g32"

// rateFormat is the format whose measured rates price format f.
func rateFormat(f string) string {
	if f == int8G32 {
		return "int8"
	}
	return f
}

// linear is count products of weight name [n, k] over m rows.
func (p *passes) linear(what, name string, m float64, k, n int, count float64) work {
	return work{what: what, m: m, k: k, n: n, count: count, format: p.formats[name], bytes: p.bpw[name] * float64(n*k)}
}

func vec(what, kind string, elems, count float64) work {
	return work{what: what, vec: kind, elems: elems, count: count}
}

// touched is how many of e experts, each token picking k, the tokens' routing
// touches on average (independent uniform choices).
func touched(e, k, tokens int) float64 {
	if e <= 0 || k <= 0 {
		return 0
	}
	return float64(e) * (1 - math.Pow(1-float64(k)/float64(e), float64(tokens)))
}

// layers is every layer's work over tokens new positions after prefix cached ones
// (causal: the encoder's mask, whose products still run over every key and whose
// softmax runs over the visible ones).
func (p *passes) layers(tokens, prefix int, causal bool) []work {
	t := p.t
	n, d := float64(tokens), t.HiddenSize
	var out []work
	for i := range t.NumHiddenLayers {
		name := "layers." + strconv.Itoa(i) + "."
		h, kv, hd := t.NumAttentionHeads, t.KVHeads(i), t.LayerHeadDim(i)
		g := h / max(kv, 1)
		cached := prefix
		if t.IsSliding(i) && t.SlidingWindow > 0 {
			cached = min(prefix, t.SlidingWindow-1)
		}
		keys := cached + tokens
		visible := float64(keys)
		if causal { // query j sees the cached rows and j+1 new ones, at most the window
			var sum float64
			for j := range tokens {
				v := cached + j + 1
				if t.IsSliding(i) && t.SlidingWindow > 0 {
					v = min(v, t.SlidingWindow)
				}
				sum += float64(v)
			}
			visible = sum / n
		}
		out = append(out,
			vec("input norm", VecRMSNorm, n*float64(d), 1),
			p.linear("q", name+"self_attn.q_proj.weight", n, d, h*hd, 1),
			p.linear("k", name+"self_attn.k_proj.weight", n, d, kv*hd, 1))
		if t.IsSliding(i) {
			out = append(out, p.linear("v", name+"self_attn.v_proj.weight", n, d, kv*hd, 1))
		}
		out = append(out,
			vec("q, k, v norms", VecRMSNorm, n*float64(h*hd), 1),
			vec("q, k, v norms", VecRMSNorm, n*float64(kv*hd), 2),
			vec("RoPE", VecLoop, n*float64((h+kv)*hd), 1),
			// The cached rows copied out of the cache (a full layer's keys rebuilt
			// from its values: scaled and rotated), then into the heads' buffers.
			vec("cached rows", VecLoop, float64(cached*kv*hd), cachedPasses(t, i)),
			// Per K/V head: the keys copied and the values transposed behind the
			// cached ones, the group's queries gathered and its outputs scattered.
			vec("attention gather", VecLoop, float64(2*keys*hd)+2*float64(g)*n*float64(hd), float64(kv)),
			// Every K/V head's blocks of positions side by side on the pool, one
			// parallel call (engine/model's attend).
			work{what: "attention", count: 1, split: float64(kv * model.AttendBlocks(tokens, g, kv, causal)), job: []work{
				{what: "attention scores", m: float64(g) * n, k: hd, n: keys, count: float64(kv), inJob: true},
				vec("attention softmax", VecSoftmax, float64(g)*n*visible, float64(kv)),
				{what: "attention values", m: float64(g) * n, k: keys, n: hd, count: float64(kv), inJob: true}}},
			p.linear("o", name+"self_attn.o_proj.weight", n, h*hd, d, 1),
			vec("sandwich norms", VecRMSNorm, n*float64(d), 7), // post-attention, pre- and post-MLP, pre-MoE, router, post-MoE, post
			vec("residuals", VecLoop, n*float64(d), 5),         // the attention's and the block's residual adds, MLP + MoE, the router's scale, layer_scalar
			p.linear("dense gate, up", name+"mlp.gate_proj.weight", n, d, t.IntermediateSize, 2),
			vec("dense GeGLU", VecGelu, n*float64(t.IntermediateSize), 1),
			p.linear("dense down", name+"mlp.down_proj.weight", n, t.IntermediateSize, d, 1),
			p.linear("router", name+"router.proj.weight", n, d, t.NumExperts, 1),
			vec("router softmax", VecSoftmax, n*float64(t.NumExperts), 1),
			vec("router top-k", VecLoop, n*float64(t.NumExperts*t.TopKExperts), 1))
		if causal {
			out = append(out, vec("cache write", VecLoop, 2*n*float64(kv*hd), 1))
		}
		if e, k := t.NumExperts, t.TopKExperts; e > 0 && k > 0 {
			// Each touched expert multiplies its own rows: tokens·k rows in all.
			ex := touched(e, k, tokens)
			rows := n * float64(k) / ex
			f := t.MoEIntermediateSize
			experts := []work{
				p.linear("experts gate_up", name+"experts.gate_up_proj", rows, d, 2*f, ex),
				vec("experts GeGLU", VecGelu, n*float64(k*f), 1),
				p.linear("experts down", name+"experts.down_proj", rows, f, d, ex)}
			out = append(out, vec("experts gather, combine", VecLoop, n*float64(k*d), 2))
			if model.ExpertsInOneJob(tokens, rows, d, f) {
				// An AR step's experts, or any whose products the pool would not split,
				// run side by side as one parallel job, whole experts per worker
				// (engine/model's experts, which judge by the busiest expert's rows; these
				// are the average's): one hand-off for all of them.
				for i := range experts {
					experts[i].inJob = true
				}
				experts = []work{{what: "experts", count: 1, job: experts, split: ex}}
			}
			out = append(out, experts...)
		}
	}
	return out
}

// decoderStep is one denoising step over a canvas of tokens after prefix cached
// ones (selfCond: a step after the first, whose soft embedding feeds the
// self-conditioning MLP): the layers, the tied head with its soft-cap and softmax,
// the next step's soft embedding, and the sampler's pass over the logits.
func (p *passes) decoderStep(tokens, prefix int, selfCond bool) []work {
	t := p.t
	n, d, v := float64(tokens), t.HiddenSize, t.VocabSize
	out := []work{vec("embedding", VecLoop, n*float64(d), 1)}
	if selfCond {
		out = append(out,
			vec("self-conditioning norm", VecRMSNorm, n*float64(d), 1),
			p.linear("self-conditioning gate, up", "self_conditioning.gate_proj.weight", n, d, t.IntermediateSize, 2),
			vec("self-conditioning GeGLU", VecGelu, n*float64(t.IntermediateSize), 1),
			p.linear("self-conditioning down", "self_conditioning.down_proj.weight", n, t.IntermediateSize, d, 1),
			vec("self-conditioning add", VecLoop, n*float64(d), 1))
	}
	out = append(out, vec("input norm", VecRMSNorm, n*float64(d), 1))
	out = append(out, p.layers(tokens, prefix, false)...)
	// The fused head (kernels.Head): a small embedding packed once as float32
	// panels, a large one decoded inside the products.
	packed := kernels.HeadPacks(v, d)
	head := p.linear("LM head", weights.EmbeddingName, n, d, v, 1)
	soft := p.linear("soft embedding", weights.EmbeddingName, n, v, d, 1)
	soft.soft = true
	if packed { // both products run inside the head's blocks, one parallel call
		head.format, soft.format = "f32", "f32"
		head.inJob, soft.inJob = true, true
	}
	return append(out,
		vec("final norm", VecRMSNorm, n*float64(d), 1),
		head,
		work{what: "soft-cap, sampler, softmax", logits: n * float64(v), count: 1, packed: packed},
		soft)
}

// encoderPass is one causal encoder pass over tokens after prefix cached ones with
// logits (soft-capped) for its last rows tokens: the prompt, an AR token (1 of 1),
// a committed canvas, a guidance round's score.
func (p *passes) encoderPass(tokens, prefix, rows int) []work {
	t := p.t
	n, d, v := float64(tokens), t.HiddenSize, t.VocabSize
	out := []work{vec("embedding", VecLoop, n*float64(d), 1)}
	out = append(out, p.layers(tokens, prefix, true)...)
	return append(out,
		vec("final norm", VecRMSNorm, float64(rows*d), 1),
		p.linear("LM head", weights.EmbeddingName, float64(rows), d, v, 1),
		vec("soft-cap", VecSoftCap, float64(rows*v), 1))
}

// seconds is the time of ws at rates r: products at their shapes' rates, vector
// passes at their kinds' (a kind not measured costs nothing). inCache says the
// weights stay in the last-level cache from one pass to the next; otherwise a
// product of fewer than dotRows rows reads its weights from memory. streamed is
// the part of it spent waiting on those reads.
func (r *Rates) seconds(ws []work, inCache bool) (total, streamed float64) {
	c := r.cost(ws, inCache)
	return c.Kernels + c.WakeUps, c.streamed
}

// Terms is a pass's estimated time by what it pays for, each a measured rate times
// a count of the pass's work: Kernels at the kernels' fastest rates (Rates' GEMM,
// GEMV, Decode, Vec, HeadLogit…), WakeUps for its Handoffs calls that hand parts to
// the pool's workers (Rates.Wake each, at most the call's own time), Engine, the
// engine's typical cost per operation outside both (Rates.OpOverhead or
// StepOpOverhead, times Ops), and Events, the event the engine sends after it
// (an AR token's, a denoising step's), whose text — the answer so far, Decoded
// tokens of it — is decoded again each time (Rates.DecodeToken).
type Terms struct {
	Kernels  float64 `json:"kernels_s"`
	WakeUps  float64 `json:"wake_ups_s"`
	Handoffs float64 `json:"handoffs"`
	Engine   float64 `json:"engine_s"`
	Ops      float64 `json:"ops"`
	Events   float64 `json:"events_s"`
	Decoded  float64 `json:"decoded_tokens"`

	streamed float64 // the part of Kernels spent waiting on weights from memory
}

// Seconds is the pass's estimated time: the sum of its terms.
func (t Terms) Seconds() float64 { return t.Kernels + t.WakeUps + t.Engine + t.Events }

// withEvent is t with an event whose text is tokens long, at rates r.
func (t Terms) withEvent(r *Rates, tokens float64) Terms {
	t.Decoded, t.Events = tokens, tokens*r.DecodeToken
	return t
}

// cost is ws's Terms at rates r without the engine's per-operation cost (see seconds).
func (r *Rates) cost(ws []work, inCache bool) Terms {
	var c Terms
	for _, w := range ws {
		k, s := r.kernelSeconds(w, inCache)
		c.Kernels += k
		c.streamed += s
		c.WakeUps += r.wakeSeconds(w, k)
		c.Handoffs += w.handoffs()
	}
	return c
}

// kernelSeconds is w's time at the kernels' rates (see seconds).
func (r *Rates) kernelSeconds(w work, inCache bool) (total, streamed float64) {
	switch {
	case w.job != nil:
		for _, x := range w.job {
			k, s := r.kernelSeconds(x, inCache)
			total, streamed = total+k, streamed+s
		}
		return total, streamed
	case w.vec != "":
		return w.count * r.vecAt(w.vec, w.elems), 0
	case w.logits > 0:
		return w.count * r.headAt(w.logits, w.packed), 0
	case w.m < dotRows: // MulVec's way: each weight row read once, dotted with each row
		kern, mem := r.gemv(w.format, w.n, w.k, w.bytes, inCache || w.format == "", w.inJob)
		if mem > w.m*kern {
			streamed = w.count * mem
		}
		return w.count * max(w.m*kern, mem), streamed
	}
	// The integer products (kernels.IntProducts) where the path took the format when
	// the rates were measured (Rates.IntTakes), at IntGEMM's rate, packing included,
	// times the format's relative to int4's (Rates.IntRelative: MulNT's; the soft
	// embedding's MulNN of int8 is int4's rate).
	f := rateFormat(w.format)
	if intProduct(w) && r.IntTakes(f) {
		if rate := r.IntGEMMAt(int(math.Round(w.m)), w.k, w.n); rate > 0 {
			if rel := r.IntRelative[f]; rel > 0 && !w.soft {
				rate *= rel
			}
			return w.flops() / rate, 0
		}
	}
	rate := r.GEMMAt(int(math.Round(w.m)), w.k, w.n)
	if w.soft {
		rate = r.softEmbedAt(w.n, rate)
	}
	return w.flops()/rate + w.count*float64(w.n*w.k)*r.Decode[f], 0
}

// intProduct reports whether kernels.Matrix takes w's product on the integer path
// where its format does: MulNT of int4, NVFP4 and int8 weights (in groups of 32 too:
// int8G32) and of GGUF blocks (Rates.IntGGUF), and the soft embedding's MulNN of an
// int8 embedding with one scale per row (not int4's, nor int8G32's: a float product).
func intProduct(w work) bool {
	if w.soft {
		return w.format == "int8"
	}
	_, gguf := ggufTypeOf(w.format)
	return w.format == "int4" || w.format == "nvfp4" || w.format == "int8" || w.format == int8G32 || gguf
}

// wakeSeconds is what w's hand-offs to the pool's workers add to its kernel time
// kernel: each call that splits waits up to Rates.Wake for a worker to start the
// parts it cannot run itself, and no longer than running them itself would take
// (about the call's own time, its parts being the workers' shares).
func (r *Rates) wakeSeconds(w work, kernel float64) float64 {
	n := w.handoffs()
	if n == 0 || r.Wake <= 0 {
		return 0
	}
	return n * min(r.Wake, kernel/max(w.count, 1))
}

// gemv is one MulVec of a weight [rows, cols] of format f (""; activations,
// float32) taking b bytes: the kernel's time in cache, and, from memory, the time
// the kernel streams it at (0 in cache) — inside a job (an AR step's experts, whole
// ones per worker) at the job's streaming rate where one was measured.
func (r *Rates) gemv(f string, rows, cols int, b float64, inCache, inJob bool) (kern, mem float64) {
	if f == "" {
		f = "f32"
	}
	f = rateFormat(f)
	n := float64(rows * cols)
	if c := r.GEMVTimes[f]; len(c) > 0 {
		kern = c.At(n)
		// Rows beyond a square matrix's each cost a dot product's call; fewer save
		// at most half the time.
		kern = max(kern/2, kern+(float64(rows)-math.Sqrt(n))*r.GEMVRow[f])
	} else {
		kern = n / rate(r.GEMV, f)
	}
	if inCache {
		return kern, 0
	}
	if v := r.GEMVJob[f]; inJob && v > 0 {
		return kern, n / v
	}
	if v := r.GEMVStream[f]; v > 0 {
		return kern, n / v
	}
	return kern, b / r.MemRead
}

// headAt is the fused head's work on n logits beyond its products; without its
// rates, the soft-cap and softmax pass and the sampler's, one after the other.
func (r *Rates) headAt(n float64, packed bool) float64 {
	kind := "unpacked"
	if packed {
		kind = "packed"
	}
	if v, ok := r.HeadLogit[kind]; ok {
		return n * v
	}
	return r.vecAt(VecVocab, n) + r.vecAt(VecSampler, n)
}

// vecAt is one call of vector pass kind over n elements.
func (r *Rates) vecAt(kind string, n float64) float64 {
	if c := r.Vec[kind]; len(c) > 0 {
		return c.At(n)
	}
	if kind == VecSampler && r.Sampler > 0 {
		return n / r.Sampler
	}
	return 0
}

// softEmbedAt is the soft embedding's rate at output width n (log-interpolated
// between the widths timed, held at the ends), else gemm.
func (r *Rates) softEmbedAt(n int, gemm float64) float64 {
	if len(r.SoftEmbed) == 0 {
		return gemm
	}
	xs := make([]int, len(r.SoftEmbed))
	for i, s := range r.SoftEmbed {
		xs[i] = s.N
	}
	if len(xs) == 1 {
		return r.SoftEmbed[0].FLOPS
	}
	i, f := position(xs, n)
	return (1-f)*r.SoftEmbed[i].FLOPS + f*r.SoftEmbed[i+1].FLOPS
}

// seconds1 is one work item's time in cache.
func (r *Rates) seconds1(w work) float64 {
	s, _ := r.seconds([]work{w}, true)
	return s
}

// cacheFloats is the host KV cache's float32s at prefix tokens: K and V of each
// layer's rows (a sliding layer's ring at most sliding_window−1).
func (p *passes) cacheFloats(prefix int) int {
	t := p.t
	var n int
	for i := range t.NumHiddenLayers {
		rows := prefix
		if t.IsSliding(i) && t.SlidingWindow > 0 {
			rows = min(prefix, t.SlidingWindow-1)
		}
		n += 2 * rows * t.KVHeads(i) * t.LayerHeadDim(i)
	}
	return n
}

// calls is how many operations ws makes: each product and each pass call (a job's
// are its items').
func calls(ws []work) float64 {
	var n float64
	for _, w := range ws {
		if w.job != nil {
			n += calls(w.job)
			continue
		}
		n += max(1, math.Round(w.count))
	}
	return n
}

// encoderTerms is an encoder pass's time: its work, and the engine's overhead per
// operation.
func (r *Rates) encoderTerms(ws []work, inCache bool) Terms {
	c := r.cost(ws, inCache)
	c.Ops = calls(ws)
	c.Engine = c.Ops * r.OpOverhead
	return c
}

// encoderSeconds is encoderTerms' total, and the part of it waiting on memory.
func (r *Rates) encoderSeconds(ws []work, inCache bool) (total, streamed float64) {
	c := r.encoderTerms(ws, inCache)
	return c.Seconds(), c.streamed
}

// stepTerms is a denoising step's time: its work, and the engine's overhead per
// operation.
func (r *Rates) stepTerms(ws []work) Terms {
	c := r.cost(ws, true)
	c.Ops = calls(ws)
	c.Engine = c.Ops * r.StepOpOverhead
	return c
}

// stepSeconds is stepTerms' total.
func (r *Rates) stepSeconds(ws []work) float64 { return r.stepTerms(ws).Seconds() }

// cachedPasses is how many passes layer i's cached rows take to leave the cache:
// K and V copied; a full layer's K (= V) also scaled by k_norm's weight and rotated.
func cachedPasses(t *config.Text, i int) float64 {
	if t.IsSliding(i) {
		return 2
	}
	return 4
}
