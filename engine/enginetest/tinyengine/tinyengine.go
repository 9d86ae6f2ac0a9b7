// Package tinyengine loads enginetest's tiny checkpoint into a running engine on
// the pure Go backend, for the tests of packages above the engine that need a real
// one (the server, the remote client, the screens), and paces an engine's
// denoising steps for tests that need a generation still running (Paced). It
// stands apart from enginetest because the engine's own tests write their
// checkpoints with enginetest, which therefore cannot import the engine.
package tinyengine

import (
	"context"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
)

// Load writes enginetest's checkpoint for opts (random weights of config.Tiny: a
// vocabulary of 512, a canvas of 16) and loads it with
// engine.Load on the "go" backend, the path a downloaded model takes. A failure
// stops the test; the engine is closed when the test ends.
func Load(t testing.TB, opts enginetest.Options) *engine.Engine {
	t.Helper()
	dir := enginetest.WriteTinyModel(t, opts)
	e, err := engine.Load(context.Background(), engine.Dir(dir), engine.Options{Backend: "go"})
	if err != nil {
		t.Fatalf("tinyengine: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("tinyengine: close: %v", err)
		}
	})
	return e
}

// Paced is an engine whose denoising steps each take at least Step, as a real
// model's do: the tiny model's steps take microseconds, and a server rightly
// drops a step whose canvas is committed before its stream could send it, so
// without a pace a fast or loaded machine can stream none at all (the CI's did,
// with app/remote's TestDarkroomServerRunsTheModeAsked). The pause follows each
// step event; everything else is the engine's own.
type Paced struct {
	*engine.Engine
	Step time.Duration
}

// Generate runs req on the engine, pausing Step after each step event.
func (p Paced) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	if on := req.OnEvent; on != nil {
		req.OnEvent = func(ev engine.Event) {
			on(ev)
			if ev.Kind == engine.EventStep {
				time.Sleep(p.Step)
			}
		}
	}
	return p.Engine.Generate(ctx, req)
}
