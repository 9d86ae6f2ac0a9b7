package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/model/naive"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func toF64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestRunnerVsNaive drives a multi-canvas generation through the Runner (prompt in
// pieces, decoder steps with self-conditioning, canvas commits, AR tokens, a cache
// that must grow) and checks every output against the reference, then checks that a
// second generation reuses the compiled executables. It runs with the decoder's output
// head in the graph and on the host (HostHead).
func TestRunnerVsNaive(t *testing.T) {
	for _, mode := range []string{"graph", "graph+host-head", "host", "split-1", "split-2"} {
		t.Run(mode, func(t *testing.T) { testRunnerVsNaive(t, mode) })
	}
}

// splitRunner is a runner of the model w split after layer k−1 (NewSplitRunner), its
// device's context holding none of the host's layers' weights and the host's source
// none of the device's, so that neither part can read the other's.
func splitRunner(t testing.TB, cfg *config.Text, w map[string]*tensors.Tensor, k int) *Runner {
	t.Helper()
	device, host := map[string]*tensors.Tensor{}, map[string]*tensors.Tensor{}
	for name, x := range w {
		device[name] = x
		for i := k; i < cfg.NumHiddenLayers; i++ {
			if strings.HasPrefix(name, arch.LayerPrefix(i)) || strings.HasPrefix(name, "encoder."+arch.LayerPrefix(i)) {
				host[name] = x
				delete(device, name)
			}
		}
	}
	if len(host) == 0 {
		t.Fatal("no weights for the host's layers")
	}
	r, err := NewSplitRunner(newBackend(t), cfg, newContext(t, device), ContextSource(newContext(t, host)), k)
	if err != nil {
		t.Fatal(err)
	}
	if r.HostDecoder || r.HostHead || r.DeviceLayers() != k || r.TokensOnDevice() || !r.StepsOnDevice() {
		t.Fatalf("split runner: host decoder %v, host head %v, %d device layers, tokens on device %v, steps on device %v",
			r.HostDecoder, r.HostHead, r.DeviceLayers(), r.TokensOnDevice(), r.StepsOnDevice())
	}
	return r
}

func testRunnerVsNaive(t *testing.T, mode string) {
	cfg := tinyConfig()
	w, nm := randomModel(t, cfg, 11, dtypes.Float32)
	backend := newBackend(t)
	r, err := NewRunner(backend, cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if !r.HostHead || !r.HostDecoder {
		t.Fatal("the pure-Go backend should default to the host decoder and head")
	}
	r.HostHead, r.HostDecoder = mode != "graph", mode == "host"
	if k, ok := strings.CutPrefix(mode, "split-"); ok {
		r = splitRunner(t, cfg, w, int(k[0]-'0'))
	}
	r.MinCapacity, r.MaxChunk = 16, 8
	rng := rand.New(rand.NewPCG(5, 6))
	prompt := randTokens(rng, 10, cfg.VocabSize)
	const C = 8
	temps := []float64{0.8, 0.6}

	check := func(what string, got []float32, want []float64) {
		t.Helper()
		e := relErr(got, want)
		if e > 1e-4 {
			t.Errorf("%s: max relative error %.3e > 1e-4", what, e)
		}
	}

	generation := func() (graphs int) {
		r.Reset()
		cache := &naive.Cache{}
		want := nm.Encode(cache, prompt)
		// The prompt in pieces (7 + 3): the second piece attends to the first through the cache.
		if _, err := r.Encode(prompt[:7]); err != nil {
			t.Fatal(err)
		}
		last, err := r.Encode(prompt[7:])
		if err != nil {
			t.Fatal(err)
		}
		check("prompt last logits", last, want[len(want)-1])
		for canvasIdx := range 2 {
			canvas := randTokens(rng, C, cfg.VocabSize)
			var soft *tensors.Tensor
			var wantSoft [][]float64
			for step, temp := range temps {
				logits, next, err := r.Decode(canvas, soft, temp)
				if err != nil {
					t.Fatal(err)
				}
				wantLogits := nm.Decode(cache, canvas, wantSoft)
				check("decode canvas/step", logits, flat(wantLogits))
				if got := toF64(tensors.MustCopyFlatData[float32](next)); relErr(tensors.MustCopyFlatData[float32](next), flat(nm.SoftEmbedding(wantLogits, temp))) > 1e-4 {
					t.Errorf("canvas %d step %d: soft embedding differs (%d values)", canvasIdx, step, len(got))
				}
				soft, wantSoft = next, nm.SoftEmbedding(wantLogits, temp)
			}
			// Score the canvas (AR guidance): every row, nothing cached.
			before := r.Len()
			scored, err := r.Score(canvas, 0)
			if err != nil {
				t.Fatal(err)
			}
			scored = slices.Clone(scored) // the next Score reuses its buffer
			tail, err := r.Score(canvas, 5)
			if err != nil {
				t.Fatal(err)
			}
			if r.Len() != before {
				t.Fatalf("score cached tokens: %d → %d", before, r.Len())
			}
			// Commit the canvas (one encoder call), as the generation loop does;
			// its logits also show that Score left the cache as it was.
			last, err := r.Encode(canvas)
			if err != nil {
				t.Fatal(err)
			}
			wantCommit := nm.Encode(cache, canvas)
			check("score logits", scored, flat(wantCommit))
			check("score logits from row 5", tail, flat(wantCommit[5:]))
			check("commit last logits", last, wantCommit[len(wantCommit)-1])
		}
		// AR: two tokens one at a time.
		for _, tok := range randTokens(rng, 2, cfg.VocabSize) {
			last, err := r.Encode([]int{tok})
			if err != nil {
				t.Fatal(err)
			}
			check("ar token logits", last, nm.Encode(cache, []int{tok})[0])
		}
		if r.Len() != cache.Len() {
			t.Fatalf("runner has %d cached tokens, reference %d", r.Len(), cache.Len())
		}
		return r.CompiledGraphs()
	}

	first := generation()
	if r.Capacity() != 32 {
		t.Errorf("capacity %d after %d tokens with MinCapacity 16, want 32", r.Capacity(), r.Len())
	}
	second := generation() // the cache keeps capacity 32: the 3-token bucket is new there
	third := generation()
	t.Logf("compiled executables after each generation: %d, %d, %d", first, second, third)
	// encode buckets {8, 4, 1} × capacities {16, 32}, decode and score × {16, 32}, one grow;
	// a split model has its tails besides (logits of 1, 4 and 8 rows, the decoder's).
	most := 10
	if r.split() {
		most = 14
	}
	if first > most || second > most+1 || third != second {
		t.Errorf("compiled %d, %d, %d executables: want a handful, and none new once the capacity is stable", first, second, third)
	}
}

// TestRunnerPiecesEqualWhole: encoding a prompt in pieces gives the same last logits
// as encoding it at once.
func TestRunnerPiecesEqualWhole(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 12, dtypes.Float32)
	backend := newBackend(t)
	r, err := NewRunner(backend, cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	r.MaxChunk = 4 // the whole prompt goes in chunks too
	prompt := randTokens(rand.New(rand.NewPCG(1, 1)), 13, cfg.VocabSize)
	whole, err := r.Encode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	r.Reset()
	var pieces []float32
	for _, cut := range [][2]int{{0, 5}, {5, 6}, {6, 13}} {
		if pieces, err = r.Encode(prompt[cut[0]:cut[1]]); err != nil {
			t.Fatal(err)
		}
	}
	if e := relErr(pieces, toF64(whole)); e > 1e-5 {
		t.Errorf("pieces vs whole: max relative error %.3e", e)
	}
	if _, err := r.Encode([]int{cfg.VocabSize}); err == nil {
		t.Error("out-of-range token accepted")
	}
	if _, _, err := r.Decode([]int{1, 2}, nil, 0); err == nil {
		t.Error("zero temperature accepted")
	}
}

// TestRunnerErrors: bad configs and missing weights come back as errors naming the
// problem, never as panics.
func TestRunnerErrors(t *testing.T) {
	cfg := tinyConfig()
	bad := tinyConfig()
	bad.LayerTypes = bad.LayerTypes[:1]
	if _, err := NewRunner(newBackend(t), bad, newContext(t, nil)); err == nil {
		t.Error("config with too few layer_types accepted")
	}
	bad = tinyConfig()
	bad.RopeParameters.Full.Type = "yarn"
	if err := CheckConfig(bad); err == nil {
		t.Error("unknown rope type accepted")
	}
	w, _ := randomModel(t, cfg, 1, dtypes.Float32)
	delete(w, "layers.1.experts.down_proj")
	r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Encode([]int{1, 2, 3})
	if err == nil || !strings.Contains(err.Error(), "layers.1.experts.down_proj") {
		t.Errorf("missing weight: got error %v, want one naming layers.1.experts.down_proj", err)
	}
	if r.Len() != 0 {
		t.Errorf("failed encode left %d tokens cached", r.Len())
	}
}

// TestRunnerScoreRefusals: Score takes 1…MaxChunk valid ids and caches nothing.
func TestRunnerScoreRefusals(t *testing.T) {
	cfg := tinyConfig()
	w, _ := randomModel(t, cfg, 13, dtypes.Float32)
	for _, host := range []bool{false, true} {
		r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
		if err != nil {
			t.Fatal(err)
		}
		r.HostDecoder, r.HostHead, r.MaxChunk = host, host, 8
		for name, tokens := range map[string][]int{
			"empty": nil, "longer than a chunk": make([]int, 9), "id out of range": {1, cfg.VocabSize},
		} {
			if _, err := r.Score(tokens, 0); err == nil {
				t.Errorf("host %v, %s: no error", host, name)
			}
		}
		for _, from := range []int{-1, 3} {
			if _, err := r.Score([]int{1, 2, 3}, from); err == nil {
				t.Errorf("host %v, rows from %d of 3: no error", host, from)
			}
		}
		if r.Len() != 0 {
			t.Errorf("host %v: %d tokens cached after refusals", host, r.Len())
		}
	}
}

// TestRunnerScoreBuffer: Score's logits live in one buffer the Runner reuses (no
// (n−from)·V allocation per guidance round), so two Scores in a row give the right
// values when the first is copied out before the second, which overwrites it.
func TestRunnerScoreBuffer(t *testing.T) {
	cfg := tinyConfig()
	w, nm := randomModel(t, cfg, 14, dtypes.Float32)
	rng := rand.New(rand.NewPCG(3, 4))
	prompt := randTokens(rng, 6, cfg.VocabSize)
	a, b := randTokens(rng, 8, cfg.VocabSize), randTokens(rng, 7, cfg.VocabSize)
	want := func(tokens []int, from int) []float64 {
		cache := &naive.Cache{}
		nm.Encode(cache, prompt)
		return flat(nm.Encode(cache, tokens)[from:])
	}
	for _, mode := range []string{"graph", "host", "split"} {
		r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
		if err != nil {
			t.Fatal(err)
		}
		host := mode == "host"
		r.HostDecoder, r.HostHead = host, host
		if mode == "split" {
			r = splitRunner(t, cfg, w, 2)
		}
		r.MinCapacity, r.MaxChunk = 16, 8
		if _, err := r.Encode(prompt); err != nil {
			t.Fatal(err)
		}
		first, err := r.Score(a, 0)
		if err != nil {
			t.Fatal(err)
		}
		kept := slices.Clone(first)
		second, err := r.Score(b, 2)
		if err != nil {
			t.Fatal(err)
		}
		if &second[0] != &first[0] {
			t.Errorf("%s: the second Score allocated new logits instead of reusing the buffer", mode)
		}
		if e := relErr(kept, want(a, 0)); e > 1e-4 {
			t.Errorf("%s: first Score, copied out: max relative error %.3e", mode, e)
		}
		if e := relErr(second, want(b, 2)); e > 1e-4 {
			t.Errorf("%s: second Score: max relative error %.3e", mode, e)
		}
		if len(second) != (len(b)-2)*cfg.VocabSize {
			t.Errorf("%s: second Score: %d logits, want %d", mode, len(second), (len(b)-2)*cfg.VocabSize)
		}
	}
}

// TestHostScoreLeavesCache: the host Score reads the cache and writes nothing to it —
// its rows (a sliding ring that wrapped included), length and per-layer counts stay
// exactly as they were — and its logits are bit for bit those of encoding the tokens
// into a copy of the cache (how it was computed before), on an empty cache, after a
// prompt longer than the window, and with rows skipped.
func TestHostScoreLeavesCache(t *testing.T) {
	cfg := tinyConfig() // window 4: sliding rings of 3 slots
	w, _ := randomModel(t, cfg, 15, dtypes.Float32)
	r, err := NewRunner(newBackend(t), cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	r.HostDecoder, r.HostHead, r.MinCapacity, r.MaxChunk = true, true, 16, 8
	rng := rand.New(rand.NewPCG(7, 8))
	canvas := randTokens(rng, 8, cfg.VocabSize)
	ids := make([]int32, len(canvas))
	for i, tok := range canvas {
		ids[i] = int32(tok)
	}
	// viaCopy is Score the old way: encode into a clone of the cache, which is dropped.
	viaCopy := func(from int) []float32 {
		m := r.hostModel()
		cl := r.hcache.clone()
		hs := m.encodeHidden(&cl, m.embed(ids), r.length, r.weights.encoderScalar, true, 0)
		hn := arch.Output(&hostOps{h: m}, cfg, hs[from*cfg.HiddenSize:])
		if err := r.head.prepare(r.weights, m.embedScale); err != nil {
			t.Fatal(err)
		}
		return r.head.logits(hn, len(ids)-from, cfg.FinalLogitSoftcapping)
	}
	check := func(what string) {
		t.Helper()
		before := r.hcache.clone()
		for _, from := range []int{0, 3} {
			want := viaCopy(from)
			got, err := r.Score(canvas, from)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, rows from %d: Score's logits differ from encoding into a copy of the cache", what, from)
			}
		}
		c := &r.hcache
		if c.n != before.n || !slices.Equal(c.written, before.written) || len(c.v) != len(before.v) {
			t.Fatalf("%s: cache holds %d positions, written %v; was %d, %v", what, c.n, c.written, before.n, before.written)
		}
		for i := range c.v {
			if !slices.Equal(c.k[i], before.k[i]) || !slices.Equal(c.v[i], before.v[i]) {
				t.Errorf("%s: layer %d's cached rows changed", what, i)
			}
		}
	}
	check("empty cache")
	if r.hcache.v != nil {
		t.Error("Score on an empty cache allocated its layers")
	}
	prompt := r.hcache.ringRows(cfg, 0) + 10
	if _, err := r.Encode(randTokens(rng, prompt, cfg.VocabSize)); err != nil {
		t.Fatal(err)
	}
	if r.hcache.written[0] <= r.hcache.ringRows(cfg, 0) {
		t.Fatalf("layer 0's ring has not wrapped: %d positions written", r.hcache.written[0])
	}
	check("after a ring and 10 tokens")
	// The cache still extends as if no Score had run: commit the canvas and compare
	// with a runner that never scored.
	fresh, err := NewRunner(newBackend(t), cfg, newContext(t, w))
	if err != nil {
		t.Fatal(err)
	}
	fresh.HostDecoder, fresh.HostHead, fresh.MinCapacity, fresh.MaxChunk = true, true, 16, 8
	rng = rand.New(rand.NewPCG(7, 8))
	randTokens(rng, 8, cfg.VocabSize)
	if _, err := fresh.Encode(randTokens(rng, prompt, cfg.VocabSize)); err != nil {
		t.Fatal(err)
	}
	got, err := r.Encode(canvas)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Encode(canvas)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Error("committing the canvas after Scores gives other logits than without them")
	}
}
