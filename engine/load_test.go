package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/enginetest"
)

// writeTinyModel writes a random-weight checkpoint of config.Tiny with a small
// trained tokenizer (see enginetest).
func writeTinyModel(t *testing.T) string {
	return enginetest.WriteTinyModel(t, enginetest.Options{MaxNewTokens: 32, MaxSteps: 6})
}

// loadGo loads the model in dir on the pure-Go backend — in GoMLX graphs if inGraph,
// else on the host path — closed when the test ends.
func loadGo(t *testing.T, dir string, inGraph bool) *Engine {
	t.Helper()
	e, err := Load(context.Background(), Dir(dir), Options{Backend: "go", InGraph: inGraph})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// bothPaths runs req on the host path and in graphs, and returns each one's
// result.
func bothPaths(t *testing.T, host, graph *Engine, req Request) (h, g *Result) {
	t.Helper()
	h, err := host.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if g, err = graph.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return h, g
}

func TestLoadAndGenerateTinyModel(t *testing.T) {
	t.Setenv("DARKROOM_NO_MMAP", "0") // mapped first, then not
	dir := writeTinyModel(t)
	var stages []string
	counted := map[string][][2]int64{} // WeightsProgress's reports, by the stage they came in
	opts := func(inGraph bool) Options {
		return Options{Backend: "go", InGraph: inGraph,
			Progress: func(s string) { stages = append(stages, s) },
			WeightsProgress: func(done, total int64) {
				st := stages[len(stages)-1]
				counted[st] = append(counted[st], [2]int64{done, total})
			}}
	}
	e, err := Load(context.Background(), Dir(dir), opts(false))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Backend() != "go" || e.BackendFallback() != "" || e.Config().CanvasLength != 16 {
		t.Errorf("backend %q fallback %q canvas %d", e.Backend(), e.BackendFallback(), e.Config().CanvasLength)
	}
	if !slices.Equal(stages, []string{"config", "tokenizer", "weights", "backend", "model", "read", "ready"}) {
		t.Errorf("progress stages %v", stages)
	}
	// The host path reads the mapped weights into memory before the first pass; the
	// graph path copies them out of the mapping as the model stage puts them in place.
	checkCounts(t, "host path, read", counted["read"])
	if len(counted) != 1 {
		t.Errorf("weights counted in the stages %v, want the read only", counted)
	}
	clear(counted)
	g, err := Load(context.Background(), Dir(dir), opts(true))
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	checkCounts(t, "graph path, model", counted["model"])
	if len(counted) != 1 {
		t.Errorf("graph path: weights counted in the stages %v, want the model only", counted)
	}
	// Where the files are read rather than mapped (DARKROOM_NO_MMAP; Windows), opening
	// them counts their bytes too.
	t.Setenv("DARKROOM_NO_MMAP", "1")
	clear(counted)
	u, err := Load(context.Background(), Dir(dir), opts(false))
	if err != nil {
		t.Fatal(err)
	}
	u.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var size int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			size += st.Size()
		}
	}
	if w := counted["weights"]; len(w) == 0 || size == 0 || w[len(w)-1] != [2]int64{size, size} {
		t.Errorf("unmapped: weights counted %v while opening them, want up to the files' %d bytes", w, size)
	}
	checkCounts(t, "unmapped, read", counted["read"])
	if d := e.GenerationDefaults(); d.MaxNewTokens != 32 || d.MaxSteps != 6 || d.TMax != 0.8 {
		t.Errorf("defaults %+v", d)
	}
	steps := 0
	req := Request{Prompt: "What is Unix?", Seed: 5, OnEvent: func(ev Event) {
		if ev.Kind == EventStep {
			steps++
		}
	}}
	res, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens < 5 || res.ForwardPasses < 2 || steps == 0 || len(res.Canvases) == 0 {
		t.Errorf("diffusion result %+v (%d step events)", res, steps)
	}
	if len(res.Tokens) > 32 || (res.StopReason != "eos" && res.StopReason != "max_tokens") {
		t.Errorf("%d tokens, stop %q", len(res.Tokens), res.StopReason)
	}
	for _, c := range res.Canvases {
		if c.Steps < 1 || c.Steps > 6 {
			t.Errorf("canvas steps %d outside 1..6", c.Steps)
		}
	}
	// The same seed reproduces the run on the real model.
	again, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, again.Tokens) || res.ForwardPasses != again.ForwardPasses {
		t.Errorf("same seed: %v vs %v", res.Tokens, again.Tokens)
	}

	ar, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Mode: AR,
		Sampling: Sampling{MaxNewTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if ar.PromptTokens != res.PromptTokens || len(ar.Tokens) > 6 || ar.ForwardPasses != 1+len(ar.Tokens)-boolInt(ar.StopReason == "max_tokens") {
		t.Errorf("AR result %+v", ar)
	}
	// Raw text and prompt ids reach the encoder as documented.
	bos := e.Tokenizer().BOS()
	ids, err := e.promptIDs(&Request{Prompt: "Unix", Raw: true})
	if err != nil || ids[0] != bos || !slices.Equal(ids[1:], e.Tokenizer().Encode("Unix")) {
		t.Errorf("raw prompt ids %v, %v", ids, err)
	}
	ids, _ = e.promptIDs(&Request{Prompt: "Unix"})
	if text := e.Tokenizer().Decode(ids); ids[0] != bos || !strings.HasSuffix(text, "<|turn>user\nUnix<turn|>\n<|turn>model\n<|channel>thought\n<channel|>") {
		t.Errorf("chat prompt %q", text)
	}
	ids, _ = e.promptIDs(&Request{Thinking: true, Prompt: "ignored", PromptIDs: []int{9},
		Messages: []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Unix?"}}})
	if text := e.Tokenizer().Decode(ids); !strings.Contains(text, "<|turn>system\n<|think|>\nBe brief.<turn|>\n<|turn>user\nUnix?<turn|>\n<|turn>model\n") ||
		strings.HasSuffix(text, "<channel|>") {
		t.Errorf("messages prompt %q", text)
	}
	if ids, _ := e.promptIDs(&Request{PromptIDs: []int{9, 8}}); !slices.Equal(ids, []int{9, 8}) {
		t.Errorf("prompt ids changed: %v", ids)
	}
	if _, err := e.Generate(context.Background(), Request{Messages: []Message{{Role: "robot", Content: "x"}}}); err == nil {
		t.Error("unknown role accepted")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestLoadErrors(t *testing.T) {
	dir := writeTinyModel(t)
	ctx := context.Background()
	if _, err := Load(ctx, Dir(filepath.Join(dir, "nope")), Options{}); err == nil {
		t.Error("missing directory loaded")
	}
	if err := os.Remove(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	_, err := Load(ctx, Dir(dir), Options{})
	if err == nil || !strings.Contains(err.Error(), "no tokenizer.json") || !strings.Contains(err.Error(), "download the model again") {
		t.Errorf("missing tokenizer: %v, want it named and what to do", err)
	}
	good := writeTinyModel(t)
	if _, err := Load(ctx, Dir(good), Options{Backend: "tpu"}); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Errorf("unknown backend: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Load(cctx, Dir(good), Options{}); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("cancelled load: %v", err)
	}
	// The embedded-model path: the same files through an fs.FS.
	e, err := Load(ctx, FS(os.DirFS(good), "tiny"), Options{Backend: "xla"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if (e.Backend() == "go") != strings.HasPrefix(e.BackendFallback(), "XLA backend unavailable (") {
		t.Errorf("xla here: backend %q, fallback %q", e.Backend(), e.BackendFallback())
	}
}

// TestHostAndGraphPathsAgree loads the same checkpoint on the pure-Go backend
// twice — host float32 path (default) and GoMLX graphs (InGraph) — and checks that
// both report their path and decode the same greedy AR tokens. (Diffusion samples
// from nearly uniform distributions on random weights, where float32 rounding
// differences between the paths may flip a draw; engine/model's tests hold both
// paths' logits to the float64 reference instead.)
func TestHostAndGraphPathsAgree(t *testing.T) {
	dir := writeTinyModel(t)
	gen := func(inGraph bool) (*Result, string) {
		e, err := Load(context.Background(), Dir(dir), Options{Backend: "go", InGraph: inGraph})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Mode: AR, Seed: 7,
			Sampling: Sampling{MaxNewTokens: 24}})
		if err != nil {
			t.Fatal(err)
		}
		return res, e.Path()
	}
	host, hostPath := gen(false)
	graph, graphPath := gen(true)
	if hostPath != PathHost || graphPath != PathGraph {
		t.Fatalf("paths = %q, %q; want %q, %q", hostPath, graphPath, PathHost, PathGraph)
	}
	if !slices.Equal(host.Tokens, graph.Tokens) {
		t.Errorf("greedy AR, different tokens:\nhost  %v\ngraph %v", host.Tokens, graph.Tokens)
	}
}

// TestGuidanceOnTheTinyModel runs AR guidance through the real runner on both
// paths: the rounds run (one uncached encoder pass each) and are counted.
func TestGuidanceOnTheTinyModel(t *testing.T) {
	dir := writeTinyModel(t)
	for _, inGraph := range []bool{false, true} {
		e, err := Load(context.Background(), Dir(dir), Options{Backend: "go", InGraph: inGraph})
		if err != nil {
			t.Fatal(err)
		}
		gen := func(s Sampling) *Result {
			res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Seed: 3, Sampling: s})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		off := gen(Sampling{MaxNewTokens: 16})
		on := gen(Sampling{MaxNewTokens: 16, Guidance: 3, GuidanceRounds: 4})
		e.Close()
		c := on.Canvases[0]
		if off.Canvases[0].GuidanceRounds != 0 || c.GuidanceRounds < 1 || c.GuidanceRounds > 4 {
			t.Errorf("graph %v: guidance rounds %d off, %d on (budget 4)", inGraph, off.Canvases[0].GuidanceRounds, c.GuidanceRounds)
		}
		if on.ForwardPasses != 1+c.Steps+c.GuidanceRounds {
			t.Errorf("graph %v: %d forward passes, want prompt + %d steps + %d rounds", inGraph, on.ForwardPasses, c.Steps, c.GuidanceRounds)
		}
		if c.Guided == 0 && c.GuidanceRounds > 1 {
			t.Errorf("graph %v: %d rounds changed nothing (a round that changes nothing is the last)", inGraph, c.GuidanceRounds)
		}
	}
}

// checkCounts holds a load's weight counts to rising ones that end at their total.
func checkCounts(t *testing.T, what string, c [][2]int64) {
	t.Helper()
	n := len(c)
	if n < 2 || c[n-1][0] != c[n-1][1] || c[0][0] <= 0 {
		t.Errorf("%s: weights counted %v, want rising counts that end at the total", what, c)
		return
	}
	for i := 1; i < n; i++ {
		if c[i][0] <= c[i-1][0] || c[i][1] != c[0][1] {
			t.Errorf("%s: weights counted %v, want rising counts of one total", what, c)
			return
		}
	}
}

// TestSplitPathAgrees loads the tiny model split after its first layer
// (Options.DeviceLayers; graphs on the pure-Go backend stand in for a GPU's): it
// reports PathSplit, and its greedy AR tokens are the whole graph's; a diffusion
// answer develops too. A DeviceLayers of the layer count or more is the whole graph.
func TestSplitPathAgrees(t *testing.T) {
	dir := writeTinyModel(t)
	gen := func(layers int, mode Mode) (*Result, string) {
		e, err := Load(context.Background(), Dir(dir), Options{Backend: "go", InGraph: true, DeviceLayers: layers})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Mode: mode, Seed: 7,
			Sampling: Sampling{MaxNewTokens: 24}})
		if err != nil {
			t.Fatal(err)
		}
		return res, e.Path()
	}
	graph, graphPath := gen(0, AR)
	split, splitPath := gen(1, AR)
	if _, all := gen(99, AR); graphPath != PathGraph || splitPath != PathSplit || all != PathGraph {
		t.Fatalf("paths = %q, %q, %q; want %q, %q, %q", graphPath, splitPath, all, PathGraph, PathSplit, PathGraph)
	}
	if !slices.Equal(graph.Tokens, split.Tokens) {
		t.Errorf("greedy AR, different tokens:\ngraph %v\nsplit %v", graph.Tokens, split.Tokens)
	}
	if res, _ := gen(1, Diffusion); len(res.Tokens) == 0 || len(res.Canvases) == 0 {
		t.Errorf("split diffusion: %d tokens, %d canvases", len(res.Tokens), len(res.Canvases))
	}
}
