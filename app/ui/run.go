package ui

import (
	"context"
	"fmt"
	"os"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/server"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/app/version"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// newWindow makes a window, turning the window library's panic where it cannot
// open the display (GLFW's "NotInitialized", after "X11: Failed to open display")
// into an error.
func newWindow(fa fyne.App, title string) (w fyne.Window, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return fa.NewWindow(title), nil
}

// Run opens the main window and blocks until it closes; it returns the exit
// code. v is the binary's version (Settings shows it).
func Run(v version.Info) int {
	// No app ID (FyneApp.toml's is for the installers): Darkroom keeps its
	// settings in its own files (app/ui/settings), and with an ID Fyne persists
	// its Preferences and rewrites their file on exit while watching it, so now
	// and then it reads the file half-written and logs "Preferences load error:
	// EOF" (3 exits in 9 of a bare Fyne window with an ID, none in 6 without).
	// A packaged build's metadata (fyne package) would bring the ID back.
	icon := fyne.NewStaticResource("darkroom.png", assets.IconPNG())
	app.SetMetadata(fyne.AppMetadata{Name: "Darkroom", Icon: icon})
	fa := app.NewWithID("")
	fa.SetIcon(icon)
	w, err := newWindow(fa, "Darkroom")
	if err != nil {
		fmt.Fprintf(os.Stderr, "darkroom: could not open the window (%v): start Darkroom from your desktop, "+
			"or use the command line (`darkroom help` lists the commands)\n", err)
		return 1
	}
	w.SetMaster()

	deps, err := productionDeps()
	if err != nil {
		fmt.Fprintln(os.Stderr, "darkroom:", err)
		return 1
	}
	crashDir := DefaultCrashDir()
	if last, err := watchCrashes(crashDir); err != nil {
		fmt.Fprintln(os.Stderr, "darkroom:", err) // crashes still reach stderr
	} else if last != "" {
		deps.Problems = append(deps.Problems, crashProblem(crashDir))
		deps.LastCrash = last
	}
	ws := deps.Settings.Get()
	w.Resize(savedWindowSize(ws.WindowWidth, ws.WindowHeight))
	deps.System.Version = v.String()
	// The local server (browser mode, API) runs the same shared model.
	var a *App
	sw := &server.Switch{Options: func() (server.Options, error) { return a.serverOptions(), nil }}
	deps.System.SetServer = sw.Set
	deps.System.ServerAPI = func() (string, string) {
		if srv := sw.Running(); srv != nil {
			return srv.APIBase(), srv.Token()
		}
		return "", ""
	}
	deps.System.OpenPage = sw.PageURL
	deps.System.SetServerOrigins = func(origins []string) error {
		if srv := sw.Running(); srv != nil {
			return srv.SetOrigins(origins)
		}
		return nil
	}
	a = New(fa, w, deps)
	w.SetCloseIntercept(a.requestClose) // asks first while a download or the like runs (quit.go)
	defer sw.Close()
	if deps.Settings.Get().ServerEnabled {
		a.Settings.setServer(true)
	}
	if dir := os.Getenv(windowCheckEnv); dir != "" {
		go a.windowCheck(dir)
	}
	w.ShowAndRun()
	a.shutdown()
	if checkFailed {
		return 1
	}
	return 0
}

// serverOptions are the local server's options at its start: the Settings
// port, and the shared model asked for on every request, so that the server
// follows "Use" on another model and backend changes, and writes pages in the
// Encyclopedia's page mode.
func (a *App) serverOptions() server.Options {
	v := a.deps.Settings.Get()
	return server.Options{Addr: fmt.Sprintf("127.0.0.1:%d", v.ServerPort), Origins: v.ServerOrigins,
		Model: func(ctx context.Context) (server.Model, error) {
			m, err := a.models.Get(ctx)
			if err != nil {
				return server.Model{}, err
			}
			sm := serverModel(m, a.sampling())
			v := a.deps.Settings.Get()
			sm.PageMode = pageMode(m.Info(), pickedLabel(v.PageMode)) // the Encyclopedia's
			sm.PagePrompt = v.PagePrompt
			return sm, nil
		},
		Known: a.knownModel}
}

// serverModel is m as the local server runs it: named by its stable id
// (darkroom-mini, the catalog name), on the engine itself where it is one, so
// the server can check a request against the context before it streams.
func serverModel(m Model, sampling engine.Sampling) server.Model {
	sm := server.Model{ID: serverID(m.Info()), Engine: m, Vocab: m, Sampling: sampling,
		APIMode: m.Info().Mode.Mode, APIModeReason: m.Info().Mode.Reason, Leads: m.Info().Leads, AnswerTokens: m.Info().AnswerTokens}
	sm.System = catalog.System(sm.ID)
	if !m.Info().Thinking {
		sm.NoThinking = catalog.NoThinking(m.Info().Builtin, false)
	}
	if em, ok := m.(*engineModel); ok {
		sm.Engine = em.e
	}
	return sm
}

// serverID is the local server's name for a model: the built-in Mini by its
// stable id (darkroom-mini), any other by its display name.
func serverID(info ModelInfo) string {
	if info.Builtin {
		return catalog.MiniID
	}
	return info.Name
}

// productionDeps opens the settings, chats, models library and engine.
func productionDeps() (Deps, error) {
	var d Deps
	s, err := settings.Open("")
	if err != nil {
		d.Problems = append(d.Problems, err.Error())
	}
	d.Settings = s
	c, err := chats.Open("")
	if err != nil {
		d.Problems = append(d.Problems, "Chats will not be saved: "+err.Error())
	} else {
		d.Chats = c
	}
	wireEngine(&d)
	return d, nil
}

// shutdown stops running generations and frees the models.
func (a *App) shutdown() {
	for _, r := range []*runner{&a.Encyclopedia.run, &a.Desktop.run, &a.Chat.run, &a.Race.run} {
		r.Stop()
	}
	if a.Library.unsub != nil {
		a.Library.unsub()
	}
	uiMu.Lock() // (tickDays re-arms it on the UI goroutine)
	if t := a.Chat.dayTimer; t != nil {
		t.Stop()
		a.Chat.dayTimer = nil
	}
	uiMu.Unlock()
	a.models.Reset()
	a.Race.second.Reset()
}
