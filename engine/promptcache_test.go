package engine

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPromptReuse: a prompt that begins as a kept one did is encoded from that
// prompt's cache — a conversation's next message after its answer, a regenerated
// answer, the other mode on the same prompt, the conversation again after another one
// (each kept in its own slot) — and writes the same tokens, in the same forward
// passes, as an engine that encodes it all; a prompt that shares less than a chunk
// starts from empty; a request with NoPromptCache reads it all and leaves the kept
// prompts as they were. The host path and the graph path (the runner's copies in
// host memory) alike.
func TestPromptReuse(t *testing.T) {
	dir := writeTinyModel(t)
	for _, graph := range []bool{false, true} {
		t.Run(map[bool]string{false: "host", true: "graph"}[graph], func(t *testing.T) { testPromptReuse(t, dir, graph) })
	}
}

func testPromptReuse(t *testing.T, dir string, graph bool) {
	reuse := loadGo(t, dir, graph)
	rng := rand.New(rand.NewPCG(3, 4))
	ids := func(n int) []int { return randomIDs(rng, n) }
	first := ids(600)
	run := func(e *Engine, prompt []int, mode Mode) *Result {
		t.Helper()
		res, err := e.Generate(context.Background(), Request{PromptIDs: prompt, Mode: mode, Seed: 11,
			Sampling: Sampling{MaxNewTokens: 24}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	check := func(what string, prompt []int, mode Mode, cached int) {
		t.Helper()
		got := run(reuse, prompt, mode)
		want := run(loadGo(t, dir, graph), prompt, mode)
		if got.PromptCached != cached || want.PromptCached != 0 {
			t.Errorf("%s: %d prompt tokens cached, want %d (a fresh engine: %d)", what, got.PromptCached, cached, want.PromptCached)
		}
		if !slices.Equal(got.Tokens, want.Tokens) || got.ForwardPasses != want.ForwardPasses || got.StopReason != want.StopReason {
			t.Errorf("%s: %v in %d passes (%s), fresh %v in %d (%s)", what, got.Tokens, got.ForwardPasses, got.StopReason,
				want.Tokens, want.ForwardPasses, want.StopReason)
		}
	}
	check("the first prompt", first, Diffusion, 0)
	second := append(append(slices.Clone(first), ids(40)...), ids(30)...) // the answer, then a new message
	check("the next message", second, Diffusion, 512)                     // 600 kept, in whole chunks of 256
	check("regenerated", second, Diffusion, 512)                          // 670 kept; all but the last token: 669 → 512
	check("the printer on it", second, AR, 512)
	check("another conversation", append(slices.Clone(first[:200]), ids(400)...), AR, 0)
	check("the first again, after another", first, Diffusion, 512) // its own slot
	check("a third conversation", ids(300), Diffusion, 0)          // in the other's slot
	check("the first's next message", second, AR, 512)
	if slots := reuse.kept.slots; len(slots[0].tokens) == 0 || len(slots[1].tokens) == 0 {
		t.Errorf("kept %d and %d tokens, want both slots in use", len(slots[0].tokens), len(slots[1].tokens))
	}
	kept := reuse.kept
	res, err := reuse.Generate(context.Background(), Request{PromptIDs: second, Mode: AR, Seed: 11,
		Sampling: Sampling{MaxNewTokens: 24}, NoPromptCache: true})
	if err != nil {
		t.Fatal(err)
	}
	want := run(loadGo(t, dir, graph), second, AR)
	if res.PromptCached != 0 || !slices.Equal(res.Tokens, want.Tokens) || !reflect.DeepEqual(reuse.kept, kept) {
		t.Errorf("NoPromptCache: %d cached, %v (fresh %v), kept prompts changed %v", res.PromptCached, res.Tokens, want.Tokens,
			!reflect.DeepEqual(reuse.kept, kept))
	}
	check("the next message after one read in full", second, AR, 512)
}

// TestReadPromptInPieces: a prompt longer than PromptPiece is read a piece at a time,
// an EventPrompt before each piece and after the last, and writes what reading it in
// one pass writes, in both modes; stopped between pieces, the generation ends at
// once (StopCancelled, nothing written) and the next one reads on from the pieces
// already read.
func TestReadPromptInPieces(t *testing.T) {
	dir := writeTinyModel(t)
	prompt := randomIDs(rand.New(rand.NewPCG(5, 6)), 2600)
	for _, mode := range []Mode{Diffusion, AR} {
		var reads [][2]int
		req := Request{PromptIDs: prompt, Mode: mode, Seed: 7, Sampling: Sampling{MaxNewTokens: 20}, OnEvent: func(ev Event) {
			if ev.Kind == EventPrompt {
				reads = append(reads, [2]int{ev.PromptRead, ev.PromptTokens})
			}
		}}
		got, err := loadGo(t, dir, false).Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if want := [][2]int{{0, 2600}, {1024, 2600}, {2048, 2600}}; !slices.Equal(reads, want) {
			t.Errorf("%s: prompt events %v, want %v", mode, reads, want)
		}
		promptPiece = 1 << 30
		req.OnEvent = nil
		whole, err := loadGo(t, dir, false).Generate(context.Background(), req)
		promptPiece = PromptPiece
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Tokens, whole.Tokens) || got.ForwardPasses != whole.ForwardPasses+2 {
			t.Errorf("%s: in pieces %v (%d passes), in one pass %v (%d)", mode, got.Tokens, got.ForwardPasses, whole.Tokens, whole.ForwardPasses)
		}

		e := loadGo(t, dir, false)
		ctx, cancel := context.WithCancel(context.Background())
		req.OnEvent = func(ev Event) {
			if ev.Kind == EventPrompt && ev.PromptRead == 2048 {
				cancel()
			}
		}
		stopped, err := e.Generate(ctx, req)
		if err != nil || stopped.StopReason != StopCancelled || len(stopped.Tokens) != 0 || stopped.ForwardPasses != 2 {
			t.Fatalf("%s: stopped while reading: %+v, %v", mode, stopped, err)
		}
		req.OnEvent = nil
		again, err := e.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if again.PromptCached != 2048 || !slices.Equal(again.Tokens, got.Tokens) {
			t.Errorf("%s: after the stop, %d tokens read from the cache and %v written, want 2048 and %v", mode, again.PromptCached, again.Tokens, got.Tokens)
		}
	}
}

// TestReadPromptWithOpening: in AR mode the prompt's pass holds the opening too (a
// Continue's answer so far); stopped while reading past the prompt into it, the kept
// record names those tokens, and the next run of the request writes what a fresh
// engine writes.
func TestReadPromptWithOpening(t *testing.T) {
	dir := writeTinyModel(t)
	prompt := randomIDs(rand.New(rand.NewPCG(7, 8)), 1500)
	e := loadGo(t, dir, false)
	opening := strings.Repeat("unix kernel shell pipe ", 50)
	if n := len(e.tok.Encode(opening)); n < 600 {
		t.Fatalf("the opening is %d tokens, want a piece's worth past the prompt", n)
	}
	req := Request{PromptIDs: prompt, Opening: opening, Mode: AR, Seed: 3, Sampling: Sampling{MaxNewTokens: 1100}}
	ctx, cancel := context.WithCancel(context.Background())
	req.OnEvent = func(ev Event) {
		if ev.Kind == EventPrompt && ev.PromptRead == 2048 {
			cancel()
		}
	}
	if res, err := e.Generate(ctx, req); err != nil || res.StopReason != StopCancelled {
		t.Fatalf("stopped in the opening: %+v, %v", res, err)
	}
	if kept := e.kept.slots[0].tokens; len(kept) != 2048 || !slices.Equal(kept[:1500], prompt) {
		t.Fatalf("kept record of %d tokens, want the prompt and the opening's first 548", len(kept))
	}
	req.OnEvent = nil
	got, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := loadGo(t, dir, false).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, want.Tokens) {
		t.Errorf("after the stop %d tokens, fresh %d; they differ", len(got.Tokens), len(want.Tokens))
	}
}

// randomIDs is n token ids of the tiny model's vocabulary, clear of its special ids.
func randomIDs(rng *rand.Rand, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 3 + rng.IntN(300)
	}
	return out
}
