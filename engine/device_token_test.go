package engine

import (
	"cmp"
	"context"
	"slices"
	"testing"
)

// hostPicked hides a runner's EncodeNext, so the AR loop takes each token's logits
// to the host sampler as it did before the pick moved onto the device.
type hostPicked struct{ runner }

// logitsCounted counts the encoder passes that bring a logits row to the host.
type logitsCounted struct {
	modelRunner
	rows int
}

func (c *logitsCounted) Encode(tokens []int) ([]float32, error) {
	c.rows++
	return c.modelRunner.Encode(tokens)
}

// TestDeviceTokenSameTokens loads the tiny model on the graph path (pure-Go
// backend, InGraph) and decodes in AR mode with the same seed three ways: the
// pick on the device (only ids come back: no Encode's logits row is read), the
// same graphs with the logits taken to the host sampler, and the host path;
// greedy and at two temperatures, without and with the repetition penalty (θ = 1.3,
// which must change the greedy tokens), the stutter rule and the frequency penalty
// (α = 0.5; each must too). All
// give the same tokens and token events. The graph path's compilations are bounded
// for the first generation, none for a second, nor for the penalty and the rule
// (their seen and banned ids and biases are inputs of a fixed shape).
func TestDeviceTokenSameTokens(t *testing.T) {
	dir := writeTinyModel(t)
	load := func(inGraph bool) *Engine { return loadGo(t, dir, inGraph) }
	stutters := 0    // Sampling.NoStutters of the runs
	frequency := 0.0 // Sampling.FrequencyPenalty of the runs (negative: off)
	gen := func(e *Engine, temperature, penalty float64) (tokens []int, events [][]int) {
		res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Seed: 7, Mode: AR,
			Sampling: Sampling{MaxNewTokens: 24, Temperature: temperature, RepetitionPenalty: penalty, NoStutters: stutters, FrequencyPenalty: frequency}, OnEvent: func(ev Event) {
				if ev.Kind == EventToken {
					events = append(events, ev.Committed)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens, events
	}
	e := load(true)
	mr, ok := e.run.(modelRunner)
	if !ok || !mr.TokensOnDevice() {
		t.Fatalf("graph path runner %T does not pick tokens on the device", e.run)
	}
	counted := &logitsCounted{modelRunner: mr}
	e.run = counted
	host := load(false)
	if host.run.(modelRunner).TokensOnDevice() {
		t.Fatal("the host path claims to pick tokens on the device")
	}
	var first, second, penalized int
	var greedy []int
	for k, c := range []struct {
		temperature, penalty float64
		stutters             int
		frequency            float64
	}{{0, 0, 0, 0}, {0.7, 0, 0, 0}, {1.5, 0, 0, 0}, {0, 1.3, 0, 0}, {0.7, 1.3, 0, 0}, {0, 0, 1, 0}, {0.7, 1.3, 1, 0},
		{0, 0, 0, 0.5}, {0.7, 1.3, 1, 0.5}} {
		temperature := c.temperature
		stutters, frequency = c.stutters, cmp.Or(c.frequency, -1)
		before := mr.r.Compilations()
		device, deviceEvents := gen(e, temperature, c.penalty)
		if k == 0 {
			first = mr.r.Compilations() - before
			again, _ := gen(e, temperature, c.penalty)
			second = mr.r.Compilations() - before - first
			if !slices.Equal(again, device) {
				t.Errorf("T=%g, a second device run gave other tokens:\n%v\n%v", temperature, device, again)
			}
		}
		if c.penalty != 0 || c.stutters != 0 || c.frequency != 0 {
			penalized += mr.r.Compilations() - before
		}
		if counted.rows != 0 {
			t.Fatalf("T=%g: %d encoder passes brought their logits row to the host", temperature, counted.rows)
		}
		e.run = hostPicked{mr}
		hostSampler, hostEvents := gen(e, temperature, c.penalty)
		e.run = counted
		hostPath, _ := gen(host, temperature, c.penalty)
		if len(device) < 8 {
			t.Fatalf("T=%g θ=%g: the device run decoded only %d tokens", temperature, c.penalty, len(device))
		}
		if k == 0 {
			greedy = device
		} else if slices.Equal(device, greedy) {
			t.Errorf("T=%g θ=%g stutters %d α=%g decoded the unpenalized greedy tokens: the test does not exercise the draw, the penalties or the stutter rule",
				temperature, c.penalty, c.stutters, c.frequency)
		}
		if !slices.Equal(hostSampler, device) || !slices.EqualFunc(hostEvents, deviceEvents, slices.Equal[[]int]) {
			t.Errorf("T=%g θ=%g, host sampler, other tokens or events:\ndevice %v\nhost   %v", temperature, c.penalty, device, hostSampler)
		}
		if c.stutters != 0 {
			word := host.guideIDs.word
			for i := 1; i < len(device); i++ {
				if word[device[i]] >= 0 && word[device[i]] == word[device[i-1]] {
					t.Errorf("T=%g θ=%g with the stutter rule: %d then %d spell one word: %v", temperature, c.penalty, device[i-1], device[i], device)
				}
			}
		}
		if !slices.Equal(hostPath, device) {
			t.Errorf("T=%g θ=%g, host path, other tokens:\ndevice %v\nhost   %v", temperature, c.penalty, device, hostPath)
		}
	}
	t.Logf("compilations: %d in the first AR generation, %d new in the second, %d for the penalty", first, second, penalized)
	// The prompt's bucket and one token's, and the cache's growth: a handful.
	if first < 2 || first > 6 || second != 0 || penalized != 0 {
		t.Errorf("compilations %d, then %d new, %d for the penalty: want 2 to 6, then none and none", first, second, penalized)
	}
}
