package fit

import (
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

// TestKVBytesMatchesRunner allocates the engine's cache: a Runner (graph path, its
// default MinCapacity) over config.Tiny (sliding window 8) encodes a context of 300
// tokens, far longer than the window, and the bytes its cache holds are exactly what
// the estimate's KV part says; the host path, which holds only the positions cached,
// holds KVCacheBytes of them (plus a small rotation table) and no more than the estimate.
func TestKVBytesMatchesRunner(t *testing.T) {
	mcfg := config.Tiny()
	const ctxTokens = 300
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := make([]int, ctxTokens)
	for i := range tokens {
		tokens[i] = rng.IntN(mcfg.Text.VocabSize)
	}
	for _, host := range []bool{false, true} {
		ctx := context.New()
		if err := model.LoadSet(ctx, weights.Random(mcfg, 3)); err != nil {
			t.Fatal(err)
		}
		r, err := model.NewRunner(b, &mcfg.Text, ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.HostHead, r.HostDecoder = true, host
		if _, err := r.Encode(tokens); err != nil {
			t.Fatal(err)
		}
		want := KVBytes(mcfg, ctxTokens, 4)
		got := r.CacheBytes()
		t.Logf("host=%v: runner cache %d bytes (capacity %d), estimate %d", host, got, r.Capacity(), want)
		if host {
			// Its rows are HostKVCacheBytes of the positions cached; with them, its table
			// of the full layer's RoPE rotations (4 rotated pairs × 8 bytes per position);
			// then, once it keeps the prompt in every slot, the copies of its rows. The CPU
			// estimate's KV part holds them all.
			exact := model.HostKVCacheBytes(&mcfg.Text, ctxTokens)
			if got < exact || got > exact+ctxTokens*4*8 {
				t.Errorf("host cache holds %d bytes for %d tokens: want HostKVCacheBytes %d + at most %d of rotation table",
					got, ctxTokens, exact, ctxTokens*4*8)
			}
			r.Keep(0)
			r.Keep(model.KeptSlots - 1)
			kept := r.CacheBytes() - got
			cpu, err := Compute(mcfg, quant.BF16Profile, Runtime{Context: ctxTokens})
			if err != nil {
				t.Fatal(err)
			}
			if kept != model.HostKeptBytes(&mcfg.Text, ctxTokens) || cpu.Part(PartKV) != exact+kept {
				t.Errorf("kept copy %d bytes (HostKeptBytes %d); the CPU estimate's KV part %d, want %d",
					kept, model.HostKeptBytes(&mcfg.Text, ctxTokens), cpu.Part(PartKV), exact+kept)
			}
			continue
		}
		if got != want {
			t.Errorf("runner cache holds %d bytes at %d tokens, the estimate's KV part is %d", got, ctxTokens, want)
		}
		// By hand: capacity 512; 2 sliding layers × K,V × 263 slots (window − 1 +
		// RingSlack) × 2 KV heads × 16 and 1 full layer × V × 512 slots × 1 KV head ×
		// 32, f32.
		if r.Capacity() != 512 || got != 4*(2*2*263*2*16+512*32) {
			t.Errorf("capacity %d, %d bytes: not the hand count", r.Capacity(), got)
		}
	}
}
