package tinyengine

import (
	"context"
	"errors"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
)

// TestLoad: the engine generates from the checkpoint's options, and is closed
// once the test that loaded it ends.
func TestLoad(t *testing.T) {
	var e *engine.Engine
	t.Run("load", func(t *testing.T) {
		e = Load(t, enginetest.Options{MaxNewTokens: 5})
		res, err := e.Generate(context.Background(), engine.Request{Prompt: "What is Unix?", Mode: engine.AR, Seed: 1})
		if err != nil || len(res.Tokens) == 0 || len(res.Tokens) > 5 {
			t.Fatalf("generated %+v, %v; want 1 to 5 tokens", res, err)
		}
	})
	if _, err := e.Generate(context.Background(), engine.Request{Prompt: "Unix?", Mode: engine.AR}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("after the test: %v, want %v", err, engine.ErrClosed)
	}
}
