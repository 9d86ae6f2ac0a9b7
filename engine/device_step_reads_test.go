package engine

import (
	"context"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// readsCounted counts, on a runner that steps on the device, the denoising steps
// and how many of them brought their logits to the host (Read) or left them there
// (Free).
type readsCounted struct {
	modelRunner
	steps, reads, frees int
}

func (c *readsCounted) DecodeStep(canvas []int, soft any, plan sampler.Plan) (sampler.StepResult, any, stepLogits, error) {
	res, next, logits, err := c.modelRunner.DecodeStep(canvas, soft, plan)
	if err != nil {
		return res, next, nil, err
	}
	c.steps++
	return res, next, countedLogits{logits, c}, nil
}

type countedLogits struct {
	stepLogits
	c *readsCounted
}

func (l countedLogits) Read() ([]float32, error) { l.c.reads++; return l.stepLogits.Read() }
func (l countedLogits) Free()                    { l.c.frees++; l.stepLogits.Free() }

// TestDeviceStepKeepsLogits: on the graph path a diffusion generation brings no
// step's logits to the host — only the ids, the acceptance and the entropies the
// step returns — and frees every step's; with AR guidance it reads one step's a
// canvas at most, the canvas's last, which guidance starts from.
func TestDeviceStepKeepsLogits(t *testing.T) {
	e := loadGo(t, writeTinyModel(t), true)
	mr, ok := e.run.(modelRunner)
	if !ok || !mr.StepsOnDevice() {
		t.Fatalf("graph path runner %T does not step on the device", e.run)
	}
	for _, tc := range []struct {
		name string
		s    Sampling
	}{
		{"plain", Sampling{MaxNewTokens: 32, EntropyBound: 2, Guidance: -1}},
		{"guided", Sampling{MaxNewTokens: 32, EntropyBound: 2, Guidance: 3, GuidanceRounds: 2}},
	} {
		c := &readsCounted{modelRunner: mr}
		e.run = c
		res, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Seed: 11, Sampling: tc.s})
		if err != nil {
			t.Fatal(err)
		}
		canvases := len(res.Canvases)
		t.Logf("%s: %d canvases, %d steps, %d logits read, %d freed", tc.name, canvases, c.steps, c.reads, c.frees)
		if c.steps < 2 || c.reads+c.frees != c.steps {
			t.Errorf("%s: %d steps, %d read + %d freed", tc.name, c.steps, c.reads, c.frees)
		}
		switch {
		case tc.name == "plain" && c.reads != 0:
			t.Errorf("plain diffusion read %d steps' logits", c.reads)
		case tc.name == "guided" && (c.reads < 1 || c.reads > canvases):
			t.Errorf("guided: %d steps' logits read over %d canvases", c.reads, canvases)
		}
	}
}
