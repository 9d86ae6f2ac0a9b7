package ui

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/ui/internal/tiny"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/engine"
)

// TestRealEngineDevelopsAPage runs the Encyclopedia on the real engine with a
// tiny random model: the adapter (token texts, end ids, decode) and the bridge
// work with real events, and the page develops through noise to a finished page.
func TestRealEngineDevelopsAPage(t *testing.T) {
	dir := t.TempDir()
	if err := tiny.Write(filepath.Join(dir, "model")); err != nil {
		t.Fatal(err)
	}
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true; v.Backend = "go"; v.Seed = 3 })
	cs, _ := chats.Open(filepath.Join(dir, "chats"))
	loader := LoaderFunc(func(ctx context.Context) (Model, error) {
		e, err := engine.Load(ctx, engine.Dir(filepath.Join(dir, "model")), engine.Options{Backend: st.Get().Backend})
		if err != nil {
			return nil, err
		}
		return stepPaced{newEngineModel(e, "tiny", false)}, nil
	})
	fa := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	a := newApp(fa, w, Deps{Settings: st, Chats: cs, Loader: loader})
	asUI(func() { w.Resize(fyne.NewSize(900, 600)) })
	defer a.shutdown()

	var mu sync.Mutex
	noisy := 0
	a.frameHook = func(v pageView, ev engine.Event) {
		if n, _ := runeCounts(v.Doc()); n > 0 {
			mu.Lock()
			noisy++
			mu.Unlock()
		}
	}
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()
	if !e.errLabel.Hidden {
		t.Fatalf("error: %s", e.errLabel.Text)
	}
	if !strings.HasPrefix(e.status.Text, "Done") {
		t.Errorf("status %q", e.status.Text)
	}
	mu.Lock()
	if noisy == 0 {
		t.Error("no developing frame showed noise")
	}
	mu.Unlock()
	m := a.models.Loaded()
	if m == nil || m.Info().Backend != "go" || m.Info().Defaults.MaxSteps != 12 {
		t.Fatalf("model info %+v", m)
	}
	if p := e.cache["Unix"]; p == nil || len(p.tokens) == 0 || m.Decode(p.tokens) != p.html {
		t.Errorf("cached page does not match its tokens")
	}
}

// stepPaced is a model whose denoising steps take at least stepPace each: the
// tiny model's whole page takes milliseconds, and under a loaded machine the
// throttle's goroutine could first run after the last step, showing no
// developing frame at all (TestRealEngineDevelopsAPage failed so once in a full
// run). A real model's steps take tens of milliseconds or more.
type stepPaced struct{ Model }

const stepPace = 5 * time.Millisecond

func (m stepPaced) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	on := req.OnEvent
	req.OnEvent = func(ev engine.Event) {
		if on != nil {
			on(ev)
		}
		if ev.Kind == engine.EventStep {
			time.Sleep(stepPace)
		}
	}
	return m.Model.Generate(ctx, req)
}

// TestLoadingSaysWhereItIs: while the model loads, the status line names the
// stage the loader reports (LoadStage) and counts the seconds — a 26B's load
// said only "Loading the model…" for tens of seconds — and where a stage counts its
// weights (LoadBytes: converted for the GPU, read into memory), how far it has got,
// each stage its own count; the page's own line takes over once it has loaded.
func TestLoadingSaysWhereItIs(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	// The loader goes through steps, each then waiting for the test to read the line.
	steps := []func(ctx context.Context){
		func(ctx context.Context) { LoadStage(ctx)("config"); LoadStage(ctx)("weights") },
		func(ctx context.Context) { LoadStage(ctx)("model"); LoadBytes(ctx)(2_000_000_000, 16_800_000_000) },
		func(ctx context.Context) { LoadStage(ctx)("read") },
		func(ctx context.Context) { LoadBytes(ctx)(4_200_000_000, 16_800_000_000) },
	}
	wants := []string{
		"Loading the model: opening its weights · ",
		"Loading the model: putting its weights in place, 2.0 GB of 16.8 GB · ",
		"Loading the model: reading its weights into memory · ", // the model stage's count is not the read's
		"Loading the model: reading its weights into memory, 4.2 GB of 16.8 GB · ",
	}
	reached, next := make(chan struct{}), make(chan struct{})
	loader := LoaderFunc(func(ctx context.Context) (Model, error) {
		for _, step := range steps {
			step(ctx)
			reached <- struct{}{}
			<-next
		}
		LoadStage(ctx)("ready")
		return &fakeModel{answers: wikiAnswers}, nil
	})
	a := newApp(test.NewTempApp(t), test.NewTempWindow(t, nil), Deps{Settings: st, Loader: loader})
	defer a.shutdown()
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Unix") })
	status := func() string { return uiRead(func() string { return e.status.Text }) }
	for _, want := range wants {
		<-reached
		for deadline := time.Now().Add(3 * time.Second); !strings.HasPrefix(status(), want) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if got := status(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " s") {
			t.Errorf("the status says %q, want %q…", got, want)
		}
		next <- struct{}{}
	}
	e.run.Wait()
	time.Sleep(600 * time.Millisecond) // a tick after the load must not cover the page's line
	if got := status(); !strings.HasPrefix(got, "Done") {
		t.Errorf("after the load the status says %q", got)
	}
	if got := loadingText("", 0, [2]int64{}); got != "Loading the model…" {
		t.Errorf("before a stage: %q", got)
	}
}
