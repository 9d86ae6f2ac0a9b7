package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/model/naive"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// longRun drives r and the float64 reference through a prompt several times longer
// than the sliding window, encoded in uneven pieces, then canvases (two decoder steps
// with self-conditioning, then a commit) and AR tokens, and returns the largest
// relative error of every output against the reference. It also checks, after each
// call, that the cache holds exactly KVCacheBytes.
//
// round, if not nil, is applied to the reference's cache after each Encode (see
// roundCacheBF16).
func longRun(t *testing.T, r *Runner, nm *naive.Model, cfg *config.Text, seed uint64, round func(*naive.Cache)) (maxErr float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	cache := &naive.Cache{}
	const C = 6 // canvas
	encode := func(tokens []int) [][]float64 {
		out := nm.Encode(cache, tokens)
		if round != nil {
			round(cache)
		}
		return out
	}
	check := func(what string, got []float32, want []float64) {
		t.Helper()
		maxErr = max(maxErr, relErr(got, want))
		if r.HostDecoder {
			// The host cache's rows, and its rotation table: 2 × 4 bytes per rotated
			// pair (the full layer's 2 of 8) per position seen.
			rot := int64(len(r.hcache.rot.cos)+len(r.hcache.rot.sin)) * 4
			if rot != int64(r.hcache.rot.n)*2*4*2 {
				t.Fatalf("%s: rotation table %d bytes for %d positions", what, rot, r.hcache.rot.n)
			}
			if got, want := r.CacheBytes()-rot, HostKVCacheBytes(cfg, r.Len()); got != want {
				t.Fatalf("%s: host cache holds %d bytes for %d tokens, HostKVCacheBytes says %d", what, got, r.Len(), want)
			}
		} else if got, want := r.CacheBytes(), KVCacheBytes(cfg, r.Capacity(), r.CacheDType); got != want {
			t.Fatalf("%s: cache holds %d bytes at capacity %d, KVCacheBytes says %d", what, got, r.Capacity(), want)
		}
	}
	prompt := randTokens(rng, 7*cfg.SlidingWindow+3, cfg.VocabSize)
	var last []float32
	var err error
	for start, k := 0, 0; start < len(prompt); k++ {
		n := []int{5, 1, 9, 2, 3}[k%5] // pieces shorter and longer than the window
		end := min(start+n, len(prompt))
		if last, err = r.Encode(prompt[start:end]); err != nil {
			t.Fatal(err)
		}
		want := encode(prompt[start:end])
		check(fmt.Sprintf("prompt piece ending at %d", end), last, want[len(want)-1])
		start = end
	}
	for range 2 {
		canvas := randTokens(rng, C, cfg.VocabSize)
		var soft *tensors.Tensor
		var wantSoft [][]float64
		for _, temp := range []float64{0.8, 0.6} {
			logits, next, err := r.Decode(canvas, soft, temp)
			if err != nil {
				t.Fatal(err)
			}
			wantLogits := nm.Decode(cache, canvas, wantSoft)
			check("decode", logits, flat(wantLogits))
			wantSoft = nm.SoftEmbedding(wantLogits, temp)
			check("soft embedding", tensors.MustCopyFlatData[float32](next), flat(wantSoft))
			soft = next
		}
		last, err := r.Encode(canvas)
		if err != nil {
			t.Fatal(err)
		}
		w := encode(canvas)
		check("commit", last, w[len(w)-1])
	}
	for _, tok := range randTokens(rng, 3, cfg.VocabSize) {
		last, err := r.Encode([]int{tok})
		if err != nil {
			t.Fatal(err)
		}
		check("ar token", last, encode([]int{tok})[0])
	}
	if r.Len() != cache.Len() {
		t.Fatalf("runner has %d cached tokens, reference %d", r.Len(), cache.Len())
	}
	return maxErr
}

// TestRunnerLongPrompt: a prompt seven times the sliding window, in pieces, then
// canvases and AR tokens, matches the float64 reference in every mode (graph, graph
// with the host head, host), with the sliding layers' rings wrapping many times and
// the full layers' caches growing; a second generation after Reset (the rings start
// over, their stale slots masked) matches too.
func TestRunnerLongPrompt(t *testing.T) {
	for _, mode := range []string{"graph", "graph+host-head", "host"} {
		t.Run(mode, func(t *testing.T) {
			cfg := tinyConfig()
			w, nm := randomModel(t, cfg, 21, dtypes.Float32)
			r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
			if err != nil {
				t.Fatal(err)
			}
			r.HostHead, r.HostDecoder = mode != "graph", mode == "host"
			r.MinCapacity, r.MaxChunk = 8, 4
			for gen := range 2 {
				r.Reset()
				if e := longRun(t, r, nm, cfg, uint64(gen), nil); e > 1e-4 {
					t.Errorf("generation %d: max relative error %.3e > 1e-4", gen, e)
				} else {
					t.Logf("generation %d: max relative error %.2e, %d tokens, capacity %d, cache %d bytes",
						gen, e, r.Len(), r.Capacity(), r.CacheBytes())
				}
			}
			if mode != "host" && r.CacheDType != dtypes.Float32 {
				t.Errorf("float32 model: cache dtype %s, want float32", r.CacheDType)
			}
		})
	}
}

// roundCacheBF16 makes the reference cache what a BFloat16 runner cache holds: V (and
// K on sliding layers) rounded to bf16, and on full layers K recomputed from the
// rounded V as RoPE(V ⊙ k_norm.weight).
func roundCacheBF16(nm *naive.Model) func(*naive.Cache) {
	cfg := nm.Cfg
	done := 0
	return func(c *naive.Cache) {
		for i := range cfg.NumHiddenLayers {
			hd := cfg.LayerHeadDim(i)
			inv, _ := InvFreq(cfg.LayerRope(i), hd)
			w := nm.W[layerPrefix(i)+"self_attn.k_norm.weight"].Data
			for pos := done; pos < c.Len(); pos++ {
				k, v := c.K[i][pos], c.V[i][pos]
				for e := range v {
					v[e] = float64(bfloat16.FromFloat64(v[e]).Float32())
					if cfg.IsSliding(i) {
						k[e] = float64(bfloat16.FromFloat64(k[e]).Float32())
						continue
					}
					k[e] = v[e] * w[e%hd]
				}
				if cfg.IsSliding(i) {
					continue
				}
				for h := 0; h < len(k); h += hd { // rotate-half RoPE per head
					half := hd / 2
					for j := range half {
						a := float64(pos) * inv[j]
						x1, x2 := k[h+j], k[h+j+half]
						k[h+j], k[h+j+half] = x1*math.Cos(a)-x2*math.Sin(a), x2*math.Cos(a)+x1*math.Sin(a)
					}
				}
			}
		}
		done = c.Len()
	}
}

// TestRunnerCacheBF16: a BF16 model through the graph runner with the cache stored in
// Float32 (the default) and in BFloat16 (opt-in), against the reference on the same
// BF16-rounded weights. Float32 holds the runner's 1e-4; BFloat16 is logged, next to
// what rounding the weights themselves to bf16 does, and checked against a reference
// whose cache is rounded the same way (a misplaced or misread row would be off by
// O(1); what remains is rounding f32 vs f64 values to bf16 differently).
func TestRunnerCacheBF16(t *testing.T) {
	cfg := tinyConfig()
	w, nm := randomModel(t, cfg, 22, dtypes.BFloat16)
	_, nm32 := randomModel(t, cfg, 22, dtypes.Float32)
	prompt := randTokens(rand.New(rand.NewPCG(8, 8)), 30, cfg.VocabSize)
	a, b := nm32.Encode(&naive.Cache{}, prompt), nm.Encode(&naive.Cache{}, prompt)
	var wErr float64
	for i := range a {
		g := make([]float32, len(a[i]))
		for j, x := range a[i] {
			g[j] = float32(x)
		}
		wErr = max(wErr, relErr(g, b[i]))
	}
	t.Logf("for scale: the same model with f32 vs bf16-rounded weights differs by %.3e", wErr)
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.BFloat16} {
		r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
		if err != nil {
			t.Fatal(err)
		}
		r.HostHead, r.HostDecoder = true, false
		r.MinCapacity, r.MaxChunk = 8, 4
		r.CacheDType = dt
		e := longRun(t, r, nm, cfg, 3, nil)
		t.Logf("cache %s: max relative error %.3e", dt, e)
		if dt == dtypes.Float32 {
			if e > 1e-4 {
				t.Errorf("float32 cache: max relative error %.3e > 1e-4", e)
			}
			continue
		}
		r.Reset()
		e = longRun(t, r, nm, cfg, 3, roundCacheBF16(nm))
		t.Logf("cache %s against the bf16-rounded reference cache: max relative error %.3e", dt, e)
		if e > 2e-2 {
			t.Errorf("bfloat16 cache vs the reference with the same rounding: max relative error %.3e > 2e-2", e)
		}
	}
}

// TestKVCacheBytes: the runner's graph cache at a context longer than the window
// holds exactly KVCacheBytes (sliding layers capped at window−1 + RingSlack slots,
// full layers V only), by hand for the tiny config, and the 26B's numbers.
func TestKVCacheBytes(t *testing.T) {
	cfg := tinyConfig() // layers: sliding (2×8), full (1×16), sliding; window 4
	for _, c := range []struct {
		tokens int
		dt     dtypes.DType
		want   int64
	}{
		// 2 sliding layers × K,V × slots × 2 heads × 8 + tokens × 1 head × 16 (V only);
		// a ring's slots min(tokens, 3 + 256)
		{2, dtypes.Float32, 4 * (2*2*2*2*8 + 2*16)},
		{3, dtypes.Float32, 4 * (2*2*3*2*8 + 3*16)},
		{64, dtypes.Float32, 4 * (2*2*64*2*8 + 64*16)},
		{64, dtypes.BFloat16, 2 * (2*2*64*2*8 + 64*16)},
		{512, dtypes.Float32, 4 * (2*2*259*2*8 + 512*16)},
	} {
		if got := KVCacheBytes(cfg, c.tokens, c.dt); got != c.want {
			t.Errorf("KVCacheBytes(%d, %s) = %d, want %d", c.tokens, c.dt, got, c.want)
		}
	}
	big := config26B(30)
	got := KVCacheBytes(big, 4096, dtypes.Float32)
	want := int64(4 * (25*(1023+256)*2*8*256 + 5*4096*2*512))
	if got != want {
		t.Errorf("26B at 4096: %d bytes, want %d", got, want)
	}
	t.Logf("26B KV cache at 4096 tokens: %.1f MB f32, %.1f MB bf16", float64(got)/1e6,
		float64(KVCacheBytes(big, 4096, dtypes.BFloat16))/1e6)

	w, _ := randomModel(t, cfg, 23, dtypes.Float32)
	r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	r.HostHead, r.HostDecoder = true, false
	r.MinCapacity, r.MaxChunk = 8, 8
	if _, err := r.Encode(randTokens(rand.New(rand.NewPCG(1, 2)), 40, cfg.VocabSize)); err != nil {
		t.Fatal(err)
	}
	if r.Capacity() != 64 {
		t.Fatalf("capacity %d after 40 tokens, want 64", r.Capacity())
	}
	if got := r.CacheBytes(); got != KVCacheBytes(cfg, 64, dtypes.Float32) || got != 4*(2*2*64*2*8+64*16) {
		t.Errorf("runner cache %d bytes at capacity 64, want KVCacheBytes %d", got, KVCacheBytes(cfg, 64, dtypes.Float32))
	}
}

// TestRunnerTruncate: Truncate works while the rings have not wrapped and refuses
// (with the cache intact) once they have; the cache then still matches the reference.
func TestRunnerTruncate(t *testing.T) {
	for _, host := range []bool{false, true} {
		t.Run(fmt.Sprint("host=", host), func(t *testing.T) {
			cfg := tinyConfig()
			w, nm := randomModel(t, cfg, 24, dtypes.Float32)
			r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
			if err != nil {
				t.Fatal(err)
			}
			r.HostHead, r.HostDecoder = true, host
			r.MinCapacity = 8
			rng := rand.New(rand.NewPCG(4, 4))
			a, b := randTokens(rng, 2, cfg.VocabSize), randTokens(rng, 5, cfg.VocabSize)
			if _, err := r.Encode(a); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Encode(randTokens(rng, 1, cfg.VocabSize)); err != nil {
				t.Fatal(err)
			}
			if err := r.Truncate(2); err != nil { // 3 cached ≤ window−1: nothing overwritten
				t.Fatal(err)
			}
			last, err := r.Encode(b) // now 7 > window−1
			if err != nil {
				t.Fatal(err)
			}
			cache := &naive.Cache{}
			nm.Encode(cache, a)
			want := nm.Encode(cache, b)
			if e := relErr(last, want[len(want)-1]); e > 1e-4 {
				t.Errorf("after truncate: max relative error %.3e", e)
			}
			if err := r.Truncate(5); err == nil {
				t.Error("truncating a wrapped ring accepted")
			}
			canvas := randTokens(rng, 4, cfg.VocabSize)
			logits, _, err := r.Decode(canvas, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(logits, flat(nm.Decode(cache, canvas, nil))); e > 1e-4 {
				t.Errorf("decode after the refused truncate: max relative error %.3e", e)
			}
		})
	}
}

// miniConfig is Darkroom Mini's shape (assets/mini/config.json).
func miniConfig() *config.Text {
	c := &config.Text{
		VocabSize: 4096, HiddenSize: 64, IntermediateSize: 128, MoEIntermediateSize: 64,
		NumExperts: 8, TopKExperts: 2, NumHiddenLayers: 3,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, NumGlobalKVHeads: 1, HeadDim: 32, GlobalHeadDim: 64,
		LayerTypes:    []config.LayerType{config.SlidingAttention, config.SlidingAttention, config.FullAttention},
		SlidingWindow: 128, RMSNormEps: 1e-6, FinalLogitSoftcapping: 30, MaxPositionEmbeddings: 8192,
	}
	c.RopeParameters.Sliding = config.Rope{Type: "default", Theta: 10000}
	c.RopeParameters.Full = config.Rope{Type: "proportional", Theta: 1e6, PartialRotaryFactor: 0.25}
	return c
}

// BenchmarkMiniFullKeys: on Darkroom Mini's shape (host path, the default on the
// go backend), a decoder step over a 256-token canvas after a prefix of n tokens, and
// the part of it that recomputes the full layer's K from its cached V (hostModel.prefix
// on that layer: copy V, multiply by k_norm's weight, rotate) — the price of caching V
// only. The "keys/step" metric is that part's share of the step.
func BenchmarkMiniFullKeys(b *testing.B) {
	cfg := miniConfig()
	ctx := newContext(b, func() map[string]*tensors.Tensor { w, _ := randomModel(b, cfg, 5, dtypes.Float32); return w }())
	r, err := NewRunner(newBackend(b), cfg, ctx)
	if err != nil {
		b.Fatal(err)
	}
	r.HostHead, r.HostDecoder = true, true
	rng := rand.New(rand.NewPCG(6, 6))
	canvas := randTokens(rng, 256, cfg.VocabSize)
	for _, n := range []int{64, 1024, 4096} {
		r.Reset()
		if _, err := r.Encode(randTokens(rng, n, cfg.VocabSize)); err != nil {
			b.Fatal(err)
		}
		_, soft, err := r.Decode(canvas, nil, 0.8)
		if err != nil {
			b.Fatal(err)
		}
		var stepNS float64
		b.Run(fmt.Sprintf("prefix=%d/step", n), func(b *testing.B) {
			for range b.N {
				if _, _, err := r.Decode(canvas, soft, 0.8); err != nil {
					b.Fatal(err)
				}
			}
			stepNS = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
		// What the old cache did on that layer instead: copy the cached K and V rows out.
		b.Run(fmt.Sprintf("prefix=%d/copy-kv", n), func(b *testing.B) {
			for range b.N {
				for i := range cfg.NumHiddenLayers {
					if !cfg.IsSliding(i) {
						src := r.hcache.v[i]
						k, v := make([]float32, len(src)), make([]float32, len(src))
						copy(k, src)
						copy(v, src)
					}
				}
			}
			if stepNS > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/stepNS, "keys/step")
			}
		})
		b.Run(fmt.Sprintf("prefix=%d/full-keys", n), func(b *testing.B) {
			m := r.hostModel()
			for range b.N {
				for i := range cfg.NumHiddenLayers {
					if !cfg.IsSliding(i) {
						m.prefix(&r.hcache, i, 0, r.Len())
					}
				}
			}
			if stepNS > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/stepNS, "keys/step")
			}
		})
	}
}

// TestFullKeysExact: the K that a full (K=V) layer recomputes from its cached V —
// hostModel.prefix on the host, Params.keysFromValues in the graph — is bit for bit
// the K the attention computed from k_proj(x) (the sign of zero aside).
func TestFullKeysExact(t *testing.T) {
	cfg := tinyConfig()
	const full, n, start = 1, 7, 1000 // layer 1 is the full one; positions far from 0
	w, _ := randomModel(t, cfg, 25, dtypes.Float32)
	ctx := newContext(t, w)
	r, err := NewRunner(newBackend(t), cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := r.hostModel()
	rng := rand.New(rand.NewPCG(9, 9))
	x := make([]float32, n*cfg.HiddenSize)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	seen := &attendSeen{hostOps: &hostOps{h: m, start: start}}
	arch.Attention(seen, cfg, full, x)
	k, v := seen.k, seen.v
	cache := &hostCache{k: make([][]float32, 3), v: make([][]float32, 3), written: make([]int, 3)}
	cache.v[full] = make([]float32, start*len(v)/n) // positions before start: zeros
	cache.write(cfg, full, start, k, v)
	got := m.prefix(cache, full, start, start+n).k[0] // one KV head: [n, Hd], as k
	if len(got) != len(k) {
		t.Fatalf("%d recomputed values, want %d", len(got), len(k))
	}
	for j := range k {
		if got[j] != k[j] {
			t.Fatalf("host: recomputed K[%d] = %v, attention's K = %v", j, got[j], k[j])
		}
	}

	// The graph: Attention's k = RoPE(k_norm(kRaw)) vs keysFromValues(v_norm(kRaw)).
	kRaw := make([]float32, len(k))
	for i := range kRaw {
		kRaw[i] = float32(rng.NormFloat64())
	}
	hd := cfg.LayerHeadDim(full)
	exec, err := context.NewExec(newBackend(t), ctx, func(ctx *context.Context, raw, pos *Node) (*Node, *Node) {
		p := NewParams(ctx, raw.Graph(), cfg)
		k := ApplyRoPE(RMSNorm(raw, p.Get("layers.1.self_attn.k_norm.weight"), cfg.RMSNormEps), pos, p.layerInvFreq(full))
		return k, p.keysFromValues(full, RMSNorm(raw, nil, cfg.RMSNormEps), pos)
	})
	if err != nil {
		t.Fatal(err)
	}
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(start + i)
	}
	out, err := exec.Exec(tensors.FromFlatDataAndDimensions(kRaw, 1, n, 1, hd), tensors.FromFlatDataAndDimensions(pos, 1, n))
	if err != nil {
		t.Fatal(err)
	}
	a, b := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
	for j := range a {
		if a[j] != b[j] {
			t.Fatalf("graph: recomputed K[%d] = %v, attention's K = %v", j, b[j], a[j])
		}
	}
}

// attendSeen is hostOps keeping the keys and values the recipe hands to Attend, and
// attending to nothing (it returns the queries).
type attendSeen struct {
	*hostOps
	k, v []float32
}

func (s *attendSeen) Attend(_ int, q, k, v []float32) []float32 {
	s.k, s.v = slices.Clone(k), slices.Clone(v)
	return q
}

// TestHostKeepRestore: Restore brings back a prefix of what Keep kept in a slot —
// rounded down to the encoder's chunks — after more tokens (far more than a ring
// holds) were cached, after a Reset, and after another prompt was encoded from empty
// and kept in the other slot; the rest of a prompt encoded after it gives bit for bit
// the logits of a fresh runner encoding all of it. It refuses (returning 0, the cache
// as it was) below one chunk, beyond what was kept, from an empty slot or one out of
// range, and where the kept rings no longer hold the window before the point. The
// host path and the graph path (its copies in host memory) alike, and a model split
// between them (NewSplitRunner: a sliding layer's ring on the device, one on the
// host).
func TestKeepRestore(t *testing.T) {
	for _, mode := range []string{"host", "graph", "split"} {
		t.Run(mode, func(t *testing.T) { testKeepRestore(t, mode) })
	}
}

func testKeepRestore(t *testing.T, mode string) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 23, dtypes.Float32)
	newHost := func() *Runner {
		if mode == "split" {
			r := splitRunner(t, cfg, w, 1)
			r.MaxChunk = 8
			return r
		}
		r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
		if err != nil {
			t.Fatal(err)
		}
		host := mode == "host"
		r.HostDecoder, r.HostHead, r.MaxChunk = host, host, 8
		return r
	}
	rng := rand.New(rand.NewPCG(9, 10))
	ring := RingSlots(cfg, math.MaxInt)
	prompt := randTokens(rng, ring+45, cfg.VocabSize) // the rings wrap
	more := randTokens(rng, ring+30, cfg.VocabSize)   // an answer longer than a ring
	next := randTokens(rng, 13, cfg.VocabSize)

	r := newHost()
	encode := func(r *Runner, tokens []int) []float32 {
		t.Helper()
		logits, err := r.Encode(tokens)
		if err != nil {
			t.Fatal(err)
		}
		return logits
	}
	encode(r, prompt)
	if !r.Keep(0) {
		t.Fatal("the runner did not keep")
	}
	encode(r, more)
	if got := r.Restore(0, 7); got != 0 || r.Len() != len(prompt)+len(more) {
		t.Fatalf("Restore(7) below one chunk of 8: %d, %d cached", got, r.Len())
	}
	if got := r.Restore(0, len(prompt)+8); got != 0 {
		t.Fatalf("Restore past what was kept: %d", got)
	}
	if got := r.Restore(0, len(prompt)-RingSlack-20); got != 0 || r.Len() != len(prompt)+len(more) {
		t.Fatalf("Restore to before the kept rings' window: %d, %d cached", got, r.Len())
	}
	if r.Restore(1, len(prompt)-1) != 0 || r.Restore(KeptSlots, len(prompt)-1) != 0 || r.Keep(-1) {
		t.Fatal("an empty slot or one out of range restored, or kept")
	}
	at := r.Restore(0, len(prompt)-1)
	if want := (len(prompt) - 1) / 8 * 8; at != want || r.Len() != at {
		t.Fatalf("Restore(%d) = %d, want %d (%d cached)", len(prompt)-1, at, want, r.Len())
	}
	full := append(slices.Clone(prompt), next...)
	got := encode(r, full[at:])
	want := encode(newHost(), full)
	if !slices.Equal(got, want) {
		t.Fatal("the prompt's rest after Restore gives other logits than a fresh pass over all of it")
	}
	// Once more from the same kept copy: the rows Restore left are still the kept ones.
	if again := r.Restore(0, len(prompt)-1); again != at || !slices.Equal(encode(r, full[at:]), want) {
		t.Fatalf("a second Restore: %d, or other logits", again)
	}
	// Another prompt from empty, kept in the other slot: each slot restores its own.
	other := randTokens(rng, 3*ring, cfg.VocabSize)
	r.Reset()
	encode(r, other)
	if !r.Keep(1) {
		t.Fatal("the second slot was not kept")
	}
	r.Reset()
	if again := r.Restore(0, len(prompt)-1); again != at || !slices.Equal(encode(r, full[at:]), want) {
		t.Fatalf("Restore after Reset and another prompt: %d, or other logits", again)
	}
	otherFull := append(slices.Clone(other), next...)
	if n := r.Restore(1, len(other)); n != len(other)/8*8 || !slices.Equal(encode(r, otherFull[n:]), encode(newHost(), otherFull)) {
		t.Fatalf("the second slot's Restore: %d, or other logits", n)
	}
}
