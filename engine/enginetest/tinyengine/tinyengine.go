// Package tinyengine loads enginetest's tiny checkpoint into a running engine on
// the pure Go backend, for the tests of packages above the engine that need a real
// one (the server, the remote client, the screens). It stands apart from
// enginetest because the engine's own tests write their checkpoints with
// enginetest, which therefore cannot import the engine.
package tinyengine

import (
	"context"
	"testing"

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
