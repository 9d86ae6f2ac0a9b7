package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/app/server/servertest"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/enginetest"
	"github.com/darkroomlabs/darkroom/engine/enginetest/tinyengine"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// startDarkroomServer runs `darkroom serve`'s server on a tiny random model
// whose steps are paced, so a test sees them arrive one by one.
func startDarkroomServer(t *testing.T) *server.Server {
	t.Helper()
	e := tinyengine.Load(t, enginetest.Options{})
	return servertest.Start(t, server.Options{Engine: tinyengine.Paced{Engine: e, Step: 40 * time.Millisecond},
		Vocab: newEngineModel(e, "tiny", false), ModelID: "tiny", FrameInterval: time.Millisecond})
}

// buttonIn finds the button labelled text under root (laid out under uiMu).
func buttonIn(root fyne.CanvasObject, text string) *widget.Button {
	return onScreen(root, func(b *widget.Button) bool { return b.Text == text })
}

// TestRemoteServerUseAndSwitchBack: the Library adds a real Darkroom server,
// lists its model and uses it; the Encyclopedia's page then develops step by
// step from the server's stream, with the indicator naming the remote model;
// the Mini's "Use" switches back, and the next page comes from the local model.
// All in one app, without a restart.
func TestRemoteServerUseAndSwitchBack(t *testing.T) {
	srv := startDarkroomServer(t)
	dir := t.TempDir()
	mgr, err := models.New(models.Options{Dir: filepath.Join(dir, "models")})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true; v.Seed = 42 })
	cs, _ := chats.Open(filepath.Join(dir, "chats"))
	lib := &managerLibrary{m: mgr, settings: st, hardware: func() hw.Info { return hw.Info{RAMTotal: 16 << 30} }}
	local := &fakeModel{answers: wikiAnswers}
	fa := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	a := newApp(fa, w, Deps{Settings: st, Chats: cs, Library: lib,
		Loader: LoaderFunc(func(context.Context) (Model, error) { return local, nil })})
	asUI(func() { w.Resize(fyne.NewSize(1000, 700)) })
	t.Cleanup(a.shutdown)
	asUI(func() { a.Show("Library") })
	r := a.remote

	// A wrong key is refused in plain words, and the key is not shown.
	typeText(r.url, "http://"+srv.Addr())
	typeText(r.key, "not-the-key")
	tap(r.test)
	waitFor(t, "the refused key", func() bool {
		return strings.Contains(uiRead(func() string { return r.result.Text }), "refused the key")
	})
	if strings.Contains(uiRead(func() string { return r.result.Text }), "not-the-key") {
		t.Error("the error shows the key")
	}
	asUI(func() { r.key.SetText(srv.Token()) })
	tap(r.add)
	var use *widget.Button
	waitFor(t, "the server's model card", func() bool { use = buttonIn(r.servers, "Use"); return use != nil })
	if v := st.Get(); len(v.RemoteServers) != 1 || v.RemoteServers[0].Key != srv.Token() {
		t.Fatalf("saved servers %+v", v.RemoteServers)
	}
	tap(use)
	host := srv.Addr()
	if got := a.activeModelName(); got != "remote: tiny at "+host {
		t.Errorf("indicator %q", got)
	}
	if n := uiRead(func() string { return a.notices[0].Text }); !strings.Contains(n, "remote: tiny at "+host) {
		t.Errorf("notice %q", n)
	}
	waitFor(t, "the Mini's Use button", func() bool {
		c := func() *libraryCard { uiMu.Lock(); defer uiMu.Unlock(); return a.Library.byName[catalog.MiniID] }()
		return c != nil && buttonIn(c.card, "Use") != nil
	})

	// A page from the remote model, step by step.
	var mu sync.Mutex
	kinds := map[engine.EventKind]int{}
	developing := false // a frame showed noise and decided text together
	a.frameHook = func(v pageView, ev engine.Event) {
		noise, text := countRuns(v.Doc())
		mu.Lock()
		kinds[ev.Kind]++
		developing = developing || (noise > 0 && text > 0)
		mu.Unlock()
	}
	e := a.Encyclopedia
	asUI(func() { a.Show("Encyclopedia"); e.generate("Unix") })
	waitFor(t, "the remote page", func() bool { return strings.HasPrefix(uiRead(func() string { return e.status.Text }), "Done") })
	e.run.Wait()
	mu.Lock()
	steps := kinds[engine.EventStep]
	mu.Unlock()
	if steps < 2 || !developing {
		t.Errorf("%d step frames drawn from the remote stream, with noise %v: the page did not develop step by step (%v)", steps, developing, kinds)
	}
	if len(local.Calls()) != 0 {
		t.Fatal("the local model generated while the remote one was active")
	}
	if m := a.models.Loaded(); m == nil || !strings.HasPrefix(m.Info().Name, "remote: ") {
		t.Fatalf("loaded model %v", m)
	}
	if title := uiRead(func() string { return e.view.Doc().Title }); title != "Unix" {
		t.Errorf("remote page's title %q, want the opening's", title)
	}

	// Back to the Mini.
	asUI(func() { a.Show("Library") })
	c := func() *libraryCard { uiMu.Lock(); defer uiMu.Unlock(); return a.Library.byName[catalog.MiniID] }()
	tap(buttonIn(c.card, "Use"))
	waitFor(t, "the Mini active again", func() bool { return st.Get().RemoteModel == nil && a.activeModelName() == miniName })
	waitFor(t, "the remote model's Use button back", func() bool { return buttonIn(r.servers, "Use") != nil })
	asUI(func() { a.Show("Encyclopedia"); e.generate("Bell Labs") })
	waitFor(t, "the local page", func() bool {
		return len(local.Calls()) == 1 && strings.HasPrefix(uiRead(func() string { return e.status.Text }), "Done")
	})
	e.run.Wait()
	if title := uiRead(func() string { return e.view.Doc().Title }); title != "Bell Labs" {
		t.Errorf("local page's title %q", title)
	}
}

// fakeVLLM is a server that is not Darkroom and streams like vLLM: whole
// canvases as content deltas (one each pause), usage, [DONE].
type fakeVLLM struct {
	*httptest.Server
	mu    sync.Mutex
	chats int // chat requests served
}

func startVLLM(t *testing.T, canvases []string, pause time.Duration) *fakeVLLM {
	v := &fakeVLLM{}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-vllm" {
			http.Error(w, `{"error":{"message":"Unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"google/diffusiongemma","object":"model","owned_by":"vllm"}]}`)
			return
		}
		v.mu.Lock()
		v.chats++
		v.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range canvases {
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", b)
			w.(http.Flusher).Flush()
			time.Sleep(pause)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":14}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(v.Close)
	return v
}

// Chats is the number of chat requests the server has had.
func (v *fakeVLLM) Chats() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.chats
}

// useVLLM adds the fake vLLM server in the Library and uses its model.
func useVLLM(t *testing.T, a *App, v *fakeVLLM) {
	t.Helper()
	r := a.remote
	typeText(r.url, v.URL+"/v1")
	typeText(r.key, "sk-vllm")
	tap(r.add)
	var use *widget.Button
	waitFor(t, "the vLLM model card", func() bool { use = buttonIn(r.servers, "Use"); return use != nil })
	tap(use)
}

// TestRemoteVLLMCanvasByCanvas: with a server that is not Darkroom (one that
// streams like vLLM: whole canvases as content deltas, usage, [DONE]) the page
// arrives canvas by canvas under the heading the app asked for; when the server
// goes away, the Encyclopedia says it cannot reach it.
func TestRemoteVLLMCanvasByCanvas(t *testing.T) {
	hs := startVLLM(t, []string{"<p>Unix is an operating system ", "from Bell Labs.</p>"}, 100*time.Millisecond) // a canvas per frame
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	useVLLM(t, a.App, hs)

	var mu sync.Mutex
	kinds := map[engine.EventKind]int{}
	a.frameHook = func(v pageView, ev engine.Event) {
		mu.Lock()
		kinds[ev.Kind]++
		mu.Unlock()
	}
	e := a.Encyclopedia
	asUI(func() { e.generate("Unix") })
	waitFor(t, "the remote page", func() bool { return strings.HasPrefix(uiRead(func() string { return e.status.Text }), "Done") })
	e.run.Wait()
	mu.Lock()
	// (A loaded machine may draw the two canvases in one frame: the throttle keeps the latest.)
	if kinds[engine.EventStep] != 0 || kinds[engine.EventCommit] < 1 || kinds[engine.EventCommit] > 2 {
		t.Errorf("frames %v: want the canvases, a frame each, and no steps", kinds)
	}
	mu.Unlock()
	if title := uiRead(func() string { return e.view.Doc().Title }); title != "Unix" {
		t.Errorf("title %q, want the opening's", title)
	}
	if st := uiRead(func() string { return e.status.Text }); !strings.Contains(st, "14 tokens") || !strings.Contains(st, "2 canvases") {
		t.Errorf("status %q: want the server's token count and the canvases", st)
	}

	hs.Close()
	asUI(a.modelChanged) // as after a restart of the app: the next page loads the model again
	asUI(func() { e.generate("Bell Labs") })
	waitFor(t, "the error", func() bool { return uiRead(func() string { return e.errLabel.Text }) != "" })
	if msg := uiRead(func() string { return e.errLabel.Text }); !strings.Contains(msg, "cannot reach the server at "+strings.TrimPrefix(hs.URL, "http://")) {
		t.Errorf("error %q", msg)
	}
}

// TestRaceOnOneModeServer: a server that is not Darkroom offers one mode, its
// own, so the Race has no printer: the printer pane and the summary say so
// plainly, and only the polaroid's request reaches the server; the forward
// passes such a server does not report are not shown as 0. (The race used to
// send both requests, and the "printer" raced a second polaroid.)
func TestRaceOnOneModeServer(t *testing.T) {
	hs := startVLLM(t, []string{"<p>Unix is an operating system.</p>"}, 0)
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	useVLLM(t, a.App, hs)
	r := a.Race
	tap(r.startB)
	r.run.Wait()
	host := strings.TrimPrefix(hs.URL, "http://")
	summary := uiRead(func() string { return r.summary.Text })
	if !strings.Contains(summary, "Only the polaroid ran: the server at "+host+" offers one mode") ||
		!strings.Contains(summary, "Finished: 14 tokens") || strings.Contains(summary, "forward pass") ||
		!strings.Contains(summary, "use a local model or a Darkroom server") {
		t.Errorf("summary %q", summary)
	}
	if st := uiRead(func() string { return r.panes[0].stats.Text }); !strings.Contains(st, "offers one mode") {
		t.Errorf("printer pane %q", st)
	}
	var shown *htmlsafe.Doc
	asUI(func() { shown = r.panes[0].view.Doc() })
	if shown != nil {
		t.Errorf("the printer pane shows a page: %q", shown.Title)
	}
	if st := uiRead(func() string { return r.panes[1].stats.Text }); !strings.HasPrefix(st, "Finished: 14 tokens ·") ||
		strings.Contains(st, "forward pass") {
		t.Errorf("polaroid pane %q", st)
	}
	if n := hs.Chats(); n != 1 {
		t.Errorf("%d chat requests reached the server, want the polaroid's alone", n)
	}
}

// TestChatOnOneModeServer: on a server that is not Darkroom the chat's status
// names the server's own mode, not the polaroid it cannot vouch for (it said
// "Polaroid (diffusion)", and "as chosen" when picked); the printer, picked, is
// refused in words that say why and what to do.
func TestChatOnOneModeServer(t *testing.T) {
	hs := startVLLM(t, []string{"Unix is an operating system ", "from Bell Labs."}, 300*time.Millisecond) // a status line per canvas
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	useVLLM(t, a.App, hs)
	c := a.Chat
	var mu sync.Mutex
	var shown []string
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the status lines while the answer streams
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				st := uiRead(func() string { return c.status.Text })
				mu.Lock()
				shown = append(shown, st)
				mu.Unlock()
			}
		}
	}()
	asUI(func() { c.mode.SetSelected(modeLabel(engine.Diffusion)) })
	typeText(c.input, "What is Unix?")
	tap(c.send)
	c.run.Wait()
	mu.Lock()
	lines := strings.Join(shown, "\n")
	mu.Unlock()
	if st := uiRead(func() string { return c.status.Text }); !strings.HasPrefix(st, "Done") || strings.Contains(strings.ToLower(lines+st), "polaroid") {
		t.Errorf("status %q, while streaming:\n%s", st, lines)
	}
	if !strings.Contains(lines, serverModeLabel+" · Developing · canvas") {
		t.Errorf("no streaming status names the server's mode:\n%s", lines)
	}

	asUI(func() { c.mode.SetSelected(modeLabel(engine.AR)) })
	typeText(c.input, "And?")
	tap(c.send)
	c.run.Wait()
	if msg := uiRead(func() string { return c.errLabel.Text }); !strings.Contains(msg, "offers one mode") || !strings.Contains(msg, "use a local model or a Darkroom server") {
		t.Errorf("AR on a one-mode server: %q", msg)
	}
	if n := hs.Chats(); n != 1 {
		t.Errorf("%d chat requests reached the server; the printer's should not", n)
	}
}

// TestRemoteServerAddressAsTyped: the Remote servers box takes an address as
// people type it — 'gpu-box:8000', without http:// — and, left empty, says what
// it wants. 'host:port' was refused ('"127.0.0.1:8797" is not a server address:
// write it as http://HOST:PORT or https://HOST/v1'), and an empty box said
// 'Could not connect to : "" is not a server address: …'.
func TestRemoteServerAddressAsTyped(t *testing.T) {
	srv := startDarkroomServer(t)
	dir := t.TempDir()
	mgr, err := models.New(models.Options{Dir: filepath.Join(dir, "models")})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) { v.FirstRunDone = true })
	lib := &managerLibrary{m: mgr, settings: st, hardware: func() hw.Info { return hw.Info{RAMTotal: 16 << 30} }}
	w := test.NewTempWindow(t, nil)
	a := newApp(test.NewTempApp(t), w, Deps{Settings: st, Library: lib,
		Loader: LoaderFunc(func(context.Context) (Model, error) { return &fakeModel{}, nil })})
	asUI(func() { w.Resize(fyne.NewSize(1000, 700)) })
	t.Cleanup(a.shutdown)
	asUI(func() { a.Show("Library") })
	r := a.remote

	tap(r.test)
	if got := uiRead(func() string { return r.result.Text }); got != remoteNeedsURL {
		t.Errorf("Test connection with no address: %q, want %q", got, remoteNeedsURL)
	}
	typeText(r.url, srv.Addr()) // 127.0.0.1:PORT
	typeText(r.key, srv.Token())
	tap(r.add)
	waitFor(t, "the server added", func() bool { return buttonIn(r.servers, "Use") != nil })
	if v := st.Get(); len(v.RemoteServers) != 1 || v.RemoteServers[0].URL != "http://"+srv.Addr() {
		t.Errorf("saved servers %+v; want http://%s", v.RemoteServers, srv.Addr())
	}
}

// TestRemoteGoneSaysTheWayBack: with a remote model in use whose server has
// gone, the error names the way back to a model on this PC as well as the
// server to check; it said only 'check that it is running and that the address
// is right', and every screen failed so until the server came back.
func TestRemoteGoneSaysTheWayBack(t *testing.T) {
	dir := t.TempDir()
	st, _ := settings.Open(filepath.Join(dir, "settings.json"))
	st.Update(func(v *settings.Values) {
		v.FirstRunDone = true
		v.RemoteServers = []settings.RemoteServer{{URL: "http://127.0.0.1:9"}}
		v.RemoteModel = &settings.RemoteModel{URL: "http://127.0.0.1:9", ID: "tiny"}
	})
	a := newApp(test.NewTempApp(t), test.NewTempWindow(t, nil), Deps{Settings: st,
		Loader: LoaderFunc(func(context.Context) (Model, error) { return &fakeModel{answers: wikiAnswers}, nil })})
	defer a.shutdown()
	e := a.Encyclopedia
	asUI(func() { e.Navigate("Unix") })
	e.run.Wait()
	got := uiRead(func() string { return e.errLabel.Text })
	if !strings.Contains(got, "cannot reach the server") || !strings.HasSuffix(got, remoteGoneAdvice) {
		t.Errorf("error %q; want it to end %q", got, remoteGoneAdvice)
	}
}
