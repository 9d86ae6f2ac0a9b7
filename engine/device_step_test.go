package engine

import (
	"context"
	"slices"
	"testing"
)

// hostSampled hides a runner's DecodeStep, so the generation loop takes the logits
// to the host sampler as it did before the step moved onto the device.
type hostSampled struct{ runner }

// TestDeviceStepSameTokens loads the tiny model on the graph path (pure-Go
// backend, InGraph) and generates with the same seed three ways: the denoising
// step on the device (the graph path's default: ids, acceptance and entropies come
// back), the same graphs with the logits taken to the host sampler, and the host
// path. All give the same tokens and step events, with AR guidance too (which
// reads each canvas's last step's logits from the device). It also counts the
// graph path's compilations: a bounded number for the first generation, none for
// a second.
func TestDeviceStepSameTokens(t *testing.T) {
	dir := writeTinyModel(t)
	type run struct {
		tokens  []int
		entropy [][]float32
		rounds  int // AR guidance rounds
	}
	plain := Sampling{MaxNewTokens: 32, EntropyBound: 2}
	guided := Sampling{MaxNewTokens: 32, EntropyBound: 2, Guidance: 3, GuidanceRounds: 2}
	gen := func(e *Engine, s Sampling) run {
		var r run
		res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Seed: 11,
			Sampling: s, OnEvent: func(ev Event) {
				if ev.Kind == EventStep {
					r.entropy = append(r.entropy, ev.Entropy)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		r.tokens = res.Tokens
		for _, c := range res.Canvases {
			r.rounds += c.GuidanceRounds
		}
		return r
	}
	load := func(inGraph bool) *Engine { return loadGo(t, dir, inGraph) }
	e := load(true)
	mr, ok := e.run.(modelRunner)
	if !ok || !mr.StepsOnDevice() {
		t.Fatalf("graph path runner %T does not step on the device", e.run)
	}
	device := gen(e, plain)
	first := mr.r.Compilations()
	again := gen(e, plain)
	second := mr.r.Compilations() - first
	guidedDevice := gen(e, guided)
	e.run = hostSampled{mr}
	hostSampler := gen(e, plain)
	guidedHostSampler := gen(e, guided)
	hostEngine := load(false)
	host := gen(hostEngine, plain)
	guidedHost := gen(hostEngine, guided)
	t.Logf("compilations: %d in the first generation, %d new in the second; %d tokens, %d steps",
		first, second, len(device.tokens), len(device.entropy))

	if len(device.tokens) == 0 || len(device.entropy) < 2 {
		t.Fatalf("device run generated %d tokens in %d steps", len(device.tokens), len(device.entropy))
	}
	// The host path's logits differ from the graphs' by float32 rounding of other
	// kernels (about 1e-4 relative: engine/model's tests), its entropies by ~1e-3.
	tol := map[string]float64{"second device run": 0, "host sampler": 1e-5, "host path": 1e-2}
	for name, r := range map[string]run{"second device run": again, "host sampler": hostSampler, "host path": host} {
		if !slices.Equal(r.tokens, device.tokens) {
			t.Errorf("%s, other tokens:\ndevice %v\n%-6s %v", name, device.tokens, "", r.tokens)
		}
		if len(r.entropy) != len(device.entropy) {
			t.Errorf("%s: %d steps, device %d", name, len(r.entropy), len(device.entropy))
			continue
		}
		for s := range r.entropy {
			if e := entropyErr(device.entropy[s], r.entropy[s]); e > tol[name] {
				t.Errorf("%s, step %d: entropies differ by %.2e", name, s+1, e)
			}
		}
	}
	if guidedDevice.rounds == 0 {
		t.Error("AR guidance ran no round")
	}
	for name, r := range map[string]run{"host sampler": guidedHostSampler, "host path": guidedHost} {
		if !slices.Equal(r.tokens, guidedDevice.tokens) || r.rounds != guidedDevice.rounds {
			t.Errorf("guided, %s: other tokens or rounds:\ndevice %v (%d rounds)\n%-6s %v (%d rounds)",
				name, guidedDevice.tokens, guidedDevice.rounds, "", r.tokens, r.rounds)
		}
	}
	// Prompt bucket, canvas commit bucket(s), cache growth, the step graph: a
	// handful; a second generation of the same shapes compiles nothing.
	if first < 2 || first > 8 || second != 0 {
		t.Errorf("compilations %d, then %d new: want at most 8, then none", first, second)
	}
}

// entropyErr is the largest |a−b| / (|b| + 1) over the entries (relative for
// large entropies, absolute for those near 0).
func entropyErr(a, b []float32) float64 {
	worst := 0.0
	for i := range b {
		d := float64(a[i] - b[i])
		if d < 0 {
			d = -d
		}
		m := float64(b[i])
		if m < 0 {
			m = -m
		}
		worst = max(worst, d/(m+1))
	}
	return worst
}

// reserving records the cache sizes the generation loop reserves.
type reserving struct {
	*scriptRunner
	reserved []int
}

func (r *reserving) Reserve(tokens int) error {
	r.reserved = append(r.reserved, tokens)
	return nil
}

// TestGenerationReservesTheCache: each generation sizes the KV cache once, up
// front, for everything it may hold: the prompt and every canvas (diffusion), or
// the prompt and the tokens (AR).
func TestGenerationReservesTheCache(t *testing.T) {
	f := &reserving{scriptRunner: newScript(body)}
	e := testEngine(f.scriptRunner)
	e.run = f
	for _, req := range []Request{
		{PromptIDs: prompt(), Seed: 1, Sampling: Sampling{MaxNewTokens: 40, MaxSteps: 4}},
		{PromptIDs: prompt(), Seed: 1, Mode: AR, Sampling: Sampling{MaxNewTokens: 7}},
	} {
		if _, err := e.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	// canvas 16: 40 tokens take three canvases.
	if want := []int{promptLen + 48, promptLen + 7}; !slices.Equal(f.reserved, want) {
		t.Errorf("reserved %v, want %v", f.reserved, want)
	}
}

// TestPrepareEvent: on the graph path the first generation builds its graphs,
// and says so once, before the step it delays (EventPrepare: "preparing the
// model for this device"); a second generation of the same shapes builds
// nothing and says nothing, and the host path never does.
func TestPrepareEvent(t *testing.T) {
	dir := writeTinyModel(t)
	kinds := func(e *Engine) []EventKind {
		var out []EventKind
		_, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Seed: 11,
			Sampling: Sampling{MaxNewTokens: 16}, OnEvent: func(ev Event) { out = append(out, ev.Kind) }})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	graph := loadGo(t, dir, true)
	first := kinds(graph)
	if n := countKind(first, EventPrepare); n != 1 || first[0] != EventPrepare {
		t.Errorf("first generation on the graph path: %d prepare events, events %v; want one, first", n, first)
	}
	if n := countKind(kinds(graph), EventPrepare); n != 0 {
		t.Errorf("second generation on the graph path: %d prepare events; want none (nothing to build)", n)
	}
	if n := countKind(kinds(loadGo(t, dir, false)), EventPrepare); n != 0 {
		t.Errorf("host path: %d prepare events; want none", n)
	}
}

func countKind(kinds []EventKind, k EventKind) int {
	n := 0
	for _, x := range kinds {
		if x == k {
			n++
		}
	}
	return n
}
