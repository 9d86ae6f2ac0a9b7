package engine

import (
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
// greedy and at two temperatures. All give the same tokens and token events. The
// graph path's compilations are bounded for the first generation, none for a
// second.
func TestDeviceTokenSameTokens(t *testing.T) {
	dir := writeTinyModel(t)
	load := func(inGraph bool) *Engine { return loadGo(t, dir, inGraph) }
	gen := func(e *Engine, temperature float64) (tokens []int, events [][]int) {
		res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Seed: 7, Mode: AR,
			Sampling: Sampling{MaxNewTokens: 24, Temperature: temperature}, OnEvent: func(ev Event) {
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
	var first, second int
	var greedy []int
	for k, temperature := range []float64{0, 0.7, 1.5} {
		before := mr.r.Compilations()
		device, deviceEvents := gen(e, temperature)
		if k == 0 {
			first = mr.r.Compilations() - before
			again, _ := gen(e, temperature)
			second = mr.r.Compilations() - before - first
			if !slices.Equal(again, device) {
				t.Errorf("T=%g, a second device run gave other tokens:\n%v\n%v", temperature, device, again)
			}
		}
		if counted.rows != 0 {
			t.Fatalf("T=%g: %d encoder passes brought their logits row to the host", temperature, counted.rows)
		}
		e.run = hostPicked{mr}
		hostSampler, hostEvents := gen(e, temperature)
		e.run = counted
		hostPath, _ := gen(host, temperature)
		if len(device) < 8 {
			t.Fatalf("T=%g: the device run decoded only %d tokens", temperature, len(device))
		}
		if k == 0 {
			greedy = device
		} else if slices.Equal(device, greedy) {
			t.Errorf("T=%g decoded the greedy tokens: the test does not exercise the draw", temperature)
		}
		if !slices.Equal(hostSampler, device) || !slices.EqualFunc(hostEvents, deviceEvents, slices.Equal[[]int]) {
			t.Errorf("T=%g, host sampler, other tokens or events:\ndevice %v\nhost   %v", temperature, device, hostSampler)
		}
		if !slices.Equal(hostPath, device) {
			t.Errorf("T=%g, host path, other tokens:\ndevice %v\nhost   %v", temperature, device, hostPath)
		}
	}
	t.Logf("compilations: %d in the first AR generation, %d new in the second", first, second)
	// The prompt's bucket and one token's, and the cache's growth: a handful.
	if first < 2 || first > 6 || second != 0 {
		t.Errorf("compilations %d, then %d new: want 2 to 6, then none", first, second)
	}
}
