package ui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2/widget"

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
	Backend  string // "go", "xla:cuda", … ("xla:cuda for 16 of 30 layers, the rest on go": split between the GPU and the CPU)
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
	// FromDisk, when set, is the engine's one sentence saying that the model's
	// weights do not all fit in memory and are read from the disk as needed
	// (engine.Engine.FromDisk).
	FromDisk string
	// Leads are the entries the model's folder holds
	// (assets.Leads; nil: none): an encyclopedia page opens with its title's.
	Leads *assets.Leads
	// AnswerTokens is the most new tokens of a chat answer where Settings set
	// no Max new tokens (catalog.AnswerTokens; 0: the model's own default).
	AnswerTokens int
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

// LoadStage is the function a Loader calls with ctx as loading moves through
// its stages (engine.Options.Progress's names, and "speed" for the choice of
// mode by this PC's rates, measured on the first load), so that the screens
// waiting for the model say where it is (loadingText); it does nothing where
// ctx carries none.
func LoadStage(ctx context.Context) func(stage string) {
	if f, ok := ctx.Value(loadStageKey{}).(func(string)); ok {
		return f
	}
	return func(string) {}
}

// LoadBytes is the function a Loader calls with ctx as the model's weights are done
// in a stage that takes a while (engine.Options.WeightsProgress: bytes done of the
// total — converted for the GPU in "model", read into memory in "read"), so that the
// status line counts them (loadingText); it does nothing where ctx carries none.
func LoadBytes(ctx context.Context) func(done, total int64) {
	if f, ok := ctx.Value(loadBytesKey{}).(func(done, total int64)); ok {
		return f
	}
	return func(int64, int64) {}
}

// loadStageKey and loadBytesKey carry a load's stage and byte reporters in its
// context, as net/http/httptrace carries its hooks.
type (
	loadStageKey struct{}
	loadBytesKey struct{}
)

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
	done    chan struct{}
	model   Model
	err     error
	started time.Time
	stage   string   // the last stage the loader reported (LoadStage), under the host's mu
	bytes   [2]int64 // the stage's bytes of weights done and their total (LoadBytes), under mu
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
		a = &loadAttempt{done: make(chan struct{}), started: time.Now()}
		h.loading = a
		go func() {
			ctx := context.WithValue(context.Background(), loadStageKey{}, func(stage string) {
				h.mu.Lock()
				a.stage, a.bytes = stage, [2]int64{} // a stage's counts are its own
				h.mu.Unlock()
			})
			ctx = context.WithValue(ctx, loadBytesKey{}, func(done, total int64) {
				h.mu.Lock()
				a.bytes = [2]int64{done, total}
				h.mu.Unlock()
			})
			m, err := h.loader.Load(ctx)
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

// Loading reports the load in flight: the stage it is at (LoadStage; "" before
// the first), when it started and the stage's bytes of weights done of their total
// (LoadBytes; zeros before any); ok is false where none is.
func (h *modelHost) Loading() (stage string, started time.Time, bytes [2]int64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loading == nil {
		return "", time.Time{}, bytes, false
	}
	return h.loading.stage, h.loading.started, h.loading.bytes, true
}

// loadingText is the status line while the model loads: the stage it is at,
// in words, the stage's weights done of their total where it counts them, and the
// seconds so far, so that a 26B's tens of seconds (minutes, from a hard disk) read as
// work going on ("Loading the model: reading its weights into memory, 4.2 GB of 16.8
// GB · 12 s").
func loadingText(stage string, since time.Duration, bytes [2]int64) string {
	words := loadStageWords[stage]
	s := "Loading the model"
	if words != "" {
		s += ": " + words
	}
	if bytes[1] > 0 {
		s += fmt.Sprintf(", %s of %s", formatBytes(bytes[0]), formatBytes(bytes[1]))
	}
	if secs := int(since.Seconds()); secs >= 1 {
		return fmt.Sprintf("%s · %d s", s, secs)
	}
	return s + "…"
}

// loadStageWords say each loading stage (LoadStage) in the status line.
var loadStageWords = map[string]string{
	"config": "reading its settings", "tokenizer": "reading its tokenizer", "weights": "opening its weights",
	"backend": "starting the backend", "model": "putting its weights in place", "read": "reading its weights into memory",
	"ready": "ready",
	"speed": "working out how fast it runs here (measured the first time only)",
}

// Loaded returns the model if it is loaded, without loading it.
func (h *modelHost) Loaded() Model {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.model
}

// Unload closes the shared model and waits for it to close (Close waits for a
// running generation to end), so that its files are let go before they are deleted
// or moved: Windows refuses to delete or move a file a process holds open (a GGUF
// model's is, for its lazy reads), and a mapped file's disk space is freed only once
// it is unmapped. The next Get loads the (new) active model. Not on the UI goroutine.
func (h *modelHost) Unload() {
	if m := h.take(); m != nil {
		_ = m.Close()
	}
}

// Reset closes the shared model; the next Get loads the (new) active model.
func (h *modelHost) Reset() {
	if m := h.take(); m != nil {
		go m.Close() // Close waits for a running generation to end
	}
}

// take is the shared model (nil: none), no longer shared: the next Get loads one.
func (h *modelHost) take() Model {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.model
	h.model = nil
	return m
}

// loadModel is the shared model for a screen's run (current: whether the run
// still owns the screen), loading it if needed; while it loads, status says
// how far it has got (loadingText), twice a second. The Encyclopedia, the
// Desktop and Chat wait for it so.
func (a *App) loadModel(ctx context.Context, current func() bool, status *widget.Label) (Model, error) {
	if m := a.models.Loaded(); m != nil {
		return m, nil
	}
	var loaded atomic.Bool // a tick's line drawn after the load must not cover the run's own
	show := func() {
		text := loadingText("", 0, [2]int64{})
		if stage, started, bytes, ok := a.models.Loading(); ok {
			text = loadingText(stage, time.Since(started), bytes)
		}
		onUI(func() {
			if current() && !loaded.Load() {
				status.SetText(text)
			}
		})
	}
	show()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				show()
			}
		}
	}()
	m, err := a.models.Get(ctx)
	loaded.Store(true)
	close(done)
	return m, err
}
