package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPromptReuse: on the host path a prompt that begins as the last one did is
// encoded from the last prompt's cache — a conversation's next message after its
// answer, a regenerated answer, the other mode on the same prompt — and writes the
// same tokens, in the same forward passes, as an engine that encodes it all; a prompt
// that shares less than a chunk starts from empty, and the graph path never reuses.
func TestPromptReuse(t *testing.T) {
	dir := writeTinyModel(t)
	reuse := loadGo(t, dir, false)
	rng := rand.New(rand.NewPCG(3, 4))
	ids := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 3 + rng.IntN(300) // clear of the special ids
		}
		return out
	}
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
		want := run(loadGo(t, dir, false), prompt, mode)
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
	check("the first again, after another", first, Diffusion, 0)

	graph := loadGo(t, dir, true)
	run(graph, first, Diffusion)
	if res := run(graph, first, Diffusion); res.PromptCached != 0 {
		t.Errorf("the graph path reused %d tokens", res.PromptCached)
	}
}
