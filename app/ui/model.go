package ui

import (
	"context"
	"errors"
	"sync"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// Model is a loaded model as the screens use it: the engine (see engine_model.go)
// or a fake in tests. Generate follows engine.(*Engine).Generate: one generation at
// a time, cancellation through ctx within one step, a cancelled run returns what it
// committed with StopReason engine.StopCancelled.
type Model interface {
	Generate(ctx context.Context, req engine.Request) (*engine.Result, error)
	// TokenText is one token's text on its own (for drawing a developing canvas).
	TokenText(id int) string
	// Decode is the text of a token sequence.
	Decode(ids []int) string
	// IsEnd reports whether id ends a generation (EOS, end of turn).
	IsEnd(id int) bool
	Info() ModelInfo
	Close() error
}

// ModelInfo describes the model a screen talks to.
type ModelInfo struct {
	Name     string // "Darkroom Mini", "DiffusionGemma 26B-A4B-it (int4)"
	Builtin  bool   // the embedded Darkroom Mini
	Backend  string // "go", "xla:cuda", …
	Thinking bool   // the model has a thinking channel
	Defaults engine.Sampling
	// Mode is the mode chat and the local API run without a choice, and why
	// (models/speed: the faster one here where both modes write equally well);
	// a zero Mode is diffusion. Speed is the estimate behind it (nil: none).
	Mode  speed.Choice
	Speed *speed.Estimate
	// OneMode, when set, says why the model runs one way only (a remote server
	// that is not Darkroom's), so there is no printer to race the polaroid.
	OneMode string
	// Fallback, when set, is the engine's one sentence saying why the backend
	// asked for (XLA, or auto's GPU) did not start and the CPU runs instead.
	Fallback string
	// Leads are the entries the model's folder holds
	// (assets.Leads; nil: none): an encyclopedia page opens with its title's.
	Leads *assets.Leads
}

// defaultMode is the mode of a generation the user did not choose one for.
func (i ModelInfo) defaultMode() engine.Mode {
	if i.Mode.Mode == "" {
		return engine.Diffusion
	}
	return i.Mode.Mode
}

// Loader opens the active model. Every call returns a new instance, so the Race
// screen can run two generations at once on the same weights.
type Loader interface {
	Load(ctx context.Context) (Model, error)
}

// LoaderFunc adapts a function to Loader.
type LoaderFunc func(ctx context.Context) (Model, error)

// Load implements Loader.
func (f LoaderFunc) Load(ctx context.Context) (Model, error) { return f(ctx) }

// modelHost shares one loaded model between the screens and loads it on first use.
type modelHost struct {
	loader Loader
	onLoad func(Model) // called, off the UI goroutine, once a model has loaded (nil: nothing)

	mu      sync.Mutex
	model   Model
	loading *loadAttempt // the load in flight, if any
}

type loadAttempt struct {
	done  chan struct{}
	model Model
	err   error
}

func newModelHost(l Loader) *modelHost { return &modelHost{loader: l} }

// Get returns the shared model, loading it if needed. Concurrent callers wait for
// the same load; a failed load is reported to them all and retried on the next call.
func (h *modelHost) Get(ctx context.Context) (Model, error) {
	h.mu.Lock()
	if h.model != nil {
		m := h.model
		h.mu.Unlock()
		return m, nil
	}
	if h.loader == nil {
		h.mu.Unlock()
		return nil, errors.New("no model loader is configured")
	}
	a := h.loading
	if a == nil {
		a = &loadAttempt{done: make(chan struct{})}
		h.loading = a
		go func() {
			m, err := h.loader.Load(context.Background())
			h.mu.Lock()
			a.model, a.err = m, err
			if err == nil {
				h.model = m
			}
			h.loading = nil
			onLoad := h.onLoad
			h.mu.Unlock()
			if err == nil && onLoad != nil {
				onLoad(m)
			}
			close(a.done)
		}()
	}
	h.mu.Unlock()
	select {
	case <-a.done:
		return a.model, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Loaded returns the model if it is loaded, without loading it.
func (h *modelHost) Loaded() Model {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.model
}

// Reset closes the shared model; the next Get loads the (new) active model.
func (h *modelHost) Reset() {
	h.mu.Lock()
	m := h.model
	h.model = nil
	h.mu.Unlock()
	if m != nil {
		go m.Close() // Close waits for a running generation to end
	}
}
