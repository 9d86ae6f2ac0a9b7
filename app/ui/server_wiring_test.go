package ui

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// namedModel is a fake model under a Library name (not the built-in Mini).
type namedModel struct {
	*fakeModel
	name string
}

func (m namedModel) Info() ModelInfo { return ModelInfo{Name: m.name, Backend: "fake"} }

// TestServerFollowsModelSwitch: the local server the app starts listens on the
// Settings port, names the Mini by its stable id, and after "Use" on another
// model answers with the new one, without a restart.
func TestServerFollowsModelSwitch(t *testing.T) {
	st, _ := settings.Open(filepath.Join(t.TempDir(), "settings.json"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	st.Update(func(v *settings.Values) {
		v.FirstRunDone = true
		v.ServerPort, _ = strconv.Atoi(port)
	})
	var mu sync.Mutex
	var next Model = &fakeModel{answers: func(engine.Request) string { return "from the Mini" }}
	loader := LoaderFunc(func(context.Context) (Model, error) {
		mu.Lock()
		defer mu.Unlock()
		return next, nil
	})
	a := newApp(test.NewTempApp(t), test.NewTempWindow(t, nil), Deps{Settings: st, Loader: loader})
	defer a.shutdown()
	sw := &server.Switch{Options: func() (server.Options, error) { return a.serverOptions(), nil }}
	defer sw.Close()
	if _, err := sw.Set(true); err != nil {
		t.Fatal(err)
	}
	srv := sw.Running()
	if got := srv.Addr(); got != "127.0.0.1:"+port {
		t.Errorf("listening on %s, want the Settings port %s", got, port)
	}
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.APIBase()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	answer := func(model string) string {
		code, body := call("POST", "/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		var r struct {
			Model   string
			Choices []struct{ Message struct{ Content string } }
		}
		if code != 200 || json.Unmarshal([]byte(body), &r) != nil || len(r.Choices) != 1 || r.Model != model {
			t.Fatalf("chat with %q: %d %s", model, code, body)
		}
		return r.Choices[0].Message.Content
	}
	if _, body := call("GET", "/models", ""); !strings.Contains(body, `"id":"darkroom-mini"`) {
		t.Errorf("models: %s", body)
	}
	if got := answer("darkroom-mini"); !strings.Contains(got, "from the Mini") {
		t.Errorf("answer %q", got)
	}

	mu.Lock() // the Library's "Use" on another model
	next = namedModel{&fakeModel{answers: func(engine.Request) string { return "from the other model" }}, "diffusiongemma-test"}
	mu.Unlock()
	asUI(a.modelChanged)
	if _, body := call("GET", "/models", ""); !strings.Contains(body, `"id":"diffusiongemma-test"`) {
		t.Errorf("models after the switch: %s", body)
	}
	if got := answer("diffusiongemma-test"); !strings.Contains(got, "from the other model") {
		t.Errorf("answer after the switch %q", got)
	}
	if sw.Running() != srv {
		t.Error("the server was restarted")
	}
}

// TestServerModelSystem: the app's local server gives the built-in Mini's chats
// the system turn it was trained with when a request brings none, as the Chat
// screen does; a Library model gets none.
func TestServerModelSystem(t *testing.T) {
	if got := serverModel(&fakeModel{}, engine.Sampling{}); got.ID != catalog.MiniID || got.System != assets.ChatSystem() {
		t.Errorf("the built-in Mini: id %q, system %q", got.ID, got.System)
	}
	if got := serverModel(namedModel{&fakeModel{}, "some-model"}, engine.Sampling{}); got.System != "" {
		t.Errorf("a Library model: system %q, want none", got.System)
	}
}
