package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/app/remote"
	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/engine"
)

// The remote engine: the Library's "Remote servers" section adds
// OpenAI-compatible servers (their base URL and key go in the settings), lists
// their models as cards, and makes one the active model with "Use". The loader
// then opens that model through app/remote instead of a local one, for every
// screen; a local card's "Use" switches back. Neither needs a restart:
// modelChanged drops the loaded model and the next generation loads the new one.

// remoteListTimeout bounds a server's model listing.
const remoteListTimeout = 15 * time.Second

// remoteLoader opens the active remote model when settings name one, else
// loads with local.
// remoteGoneAdvice ends the error of a remote model whose server cannot be
// reached: the way back to this PC's models.
const remoteGoneAdvice = "; or, in the Library, Use a model on this PC"

func remoteLoader(st *settings.Store, local Loader) Loader {
	return LoaderFunc(func(ctx context.Context) (Model, error) {
		v := st.Get()
		if r := v.RemoteModel; r != nil {
			srv, _ := v.RemoteServer(r.URL)
			s := &remote.Server{BaseURL: srv.URL, Key: srv.Key}
			m, err := remote.Open(ctx, s, r.ID)
			var rerr *remote.Error
			if errors.As(err, &rerr) && rerr.Unreachable { // every screen fails so until it is back
				return nil, fmt.Errorf("open %s at %s: %w%s", r.ID, s.Host(), err, remoteGoneAdvice)
			}
			if err != nil {
				return nil, fmt.Errorf("open %s at %s: %w", r.ID, s.Host(), err)
			}
			return &remoteModel{m}, nil
		}
		if local == nil {
			return nil, errors.New("no model loader is configured")
		}
		return local.Load(ctx)
	})
}

// remoteModel adapts *remote.Model to Model. Its token ids are the remote
// model's own numbering of the text it received (see package remote): the
// screens draw them with TokenText and Decode as they draw local tokens.
type remoteModel struct{ *remote.Model }

func (m *remoteModel) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	return m.Model.Generate(ctx, req)
}

func (m *remoteModel) Info() ModelInfo {
	return ModelInfo{Name: remoteName(m.Model.Info().ID, m.Server().Host()), Backend: "remote: " + m.Server().Host(),
		OneMode: m.OneMode()}
}

// remoteName is how the active model indicator names a remote model.
func remoteName(id, host string) string { return "remote: " + id + " at " + host }

// remoteActiveName is the indicator's name of the active remote model, or "".
func (a *App) remoteActiveName() string {
	r := a.deps.Settings.Get().RemoteModel
	if r == nil {
		return ""
	}
	return remoteName(r.ID, (&remote.Server{BaseURL: r.URL}).Host())
}

// leaveRemote makes the local model (the Library's choice) active again; it
// writes nothing when no remote model is active.
func (a *App) leaveRemote() error {
	if a.deps.Settings.Get().RemoteModel == nil {
		return nil
	}
	return a.deps.Settings.Update(func(v *settings.Values) { v.RemoteModel = nil })
}

// remoteSection is the Library's "Remote servers" card.
type remoteSection struct {
	app     *App
	url     *widget.Entry
	key     *widget.Entry
	test    *widget.Button
	add     *widget.Button
	result  *widget.Label // the connection test's outcome
	servers *fyne.Container
	content fyne.CanvasObject

	mu     sync.Mutex
	listed map[string]remoteListing // by server URL, written off the UI goroutine
}

type remoteListing struct {
	models []api.Model
	err    error
}

func newRemoteSection(a *App) *remoteSection {
	r := &remoteSection{app: a, listed: map[string]remoteListing{}}
	r.url = widget.NewEntry()
	r.url.SetPlaceHolder("http://gpu-server:8000/v1")
	r.key = widget.NewPasswordEntry()
	r.key.SetPlaceHolder("API key (empty if the server needs none)")
	r.result = widget.NewLabel("")
	r.result.Wrapping = fyne.TextWrapWord
	r.result.Hide()
	r.test = widget.NewButtonWithIcon("Test connection", theme.SearchIcon(), func() { r.connect(false) })
	r.add = widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), func() { r.connect(true) })
	r.url.OnSubmitted = func(string) { r.connect(false) } // Enter tests, as a form's Enter does; Add stays a choice
	r.key.OnSubmitted = r.url.OnSubmitted
	r.servers = container.NewVBox()
	form := widget.NewForm(widget.NewFormItem("Base URL", r.url), widget.NewFormItem("Key", r.key))
	r.content = noteCard("Remote servers",
		"Use a model that runs on another machine: vLLM, another Darkroom's `darkroom serve`, or any OpenAI-compatible "+
			"server. A Darkroom server's pages develop step by step; others' arrive canvas by canvas. "+
			"The key is kept in plain text in Darkroom's settings file.",
		container.NewVBox(form, container.NewHBox(r.test, r.add), r.result, r.servers))
	r.refresh()
	return r
}

// remoteNeedsURL is the Remote servers box's line when Test connection or Add is
// pressed with no address.
const remoteNeedsURL = "Type the server's base URL first, e.g. http://gpu-server:8000/v1 (vLLM) or the API base `darkroom serve` prints."

// connect lists the models of the server in the form; with add, it then keeps
// the server in the settings.
func (r *remoteSection) connect(add bool) {
	u, key := remote.BaseURL(r.url.Text), strings.TrimSpace(r.key.Text)
	if u == "" { // a button that did nothing, or said 'Could not connect to : ""', would look broken
		r.result.Importance = widget.WarningImportance
		r.result.SetText(remoteNeedsURL)
		r.result.Show()
		r.app.win.Canvas().Focus(r.url)
		return
	}
	if u != r.url.Text {
		r.url.SetText(u) // as it is kept: "gpu-box:8000" → "http://gpu-box:8000"
	}
	r.result.Importance = widget.MediumImportance
	r.result.SetText("Connecting to " + u + "…")
	r.result.Show()
	r.test.Disable()
	r.add.Disable()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), remoteListTimeout)
		defer cancel()
		s := &remote.Server{BaseURL: u, Key: key}
		models, err := s.Models(ctx)
		if err == nil && add {
			err = r.app.deps.Settings.Update(func(v *settings.Values) {
				for i, srv := range v.RemoteServers {
					if srv.URL == u {
						v.RemoteServers[i].Key = key
						return
					}
				}
				v.RemoteServers = append(v.RemoteServers, settings.RemoteServer{URL: u, Key: key})
			})
		}
		if err == nil {
			r.mu.Lock()
			r.listed[u] = remoteListing{models: models}
			r.mu.Unlock()
		}
		onUI(func() {
			r.test.Enable()
			r.add.Enable()
			switch {
			case err != nil:
				r.result.Importance = widget.DangerImportance
				r.result.SetText(plainError("connect to "+u, err))
			case add:
				r.result.Importance = widget.SuccessImportance
				r.result.SetText(fmt.Sprintf("Added %s: %s.", s.Host(), plural.Count(len(models), "model", "models")))
				r.url.SetText("")
				r.key.SetText("")
				r.rebuild()
			default:
				r.result.Importance = widget.SuccessImportance
				r.result.SetText(fmt.Sprintf("Connected to %s: %s%s. Add it to use one.", s.Host(), plural.Count(len(models), "model", "models"), modelIDs(models)))
			}
		})
	}()
}

func modelIDs(ms []api.Model) string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	if len(ids) == 0 {
		return ""
	}
	return " (" + strings.Join(ids, ", ") + ")"
}

// refresh lists the added servers' models again (off the UI goroutine).
func (r *remoteSection) refresh() {
	r.rebuild()
	servers := r.app.deps.Settings.Get().RemoteServers
	if len(servers) == 0 {
		return
	}
	go func() {
		var wg sync.WaitGroup
		for _, srv := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), remoteListTimeout)
				defer cancel()
				models, err := (&remote.Server{BaseURL: srv.URL, Key: srv.Key}).Models(ctx)
				r.mu.Lock()
				r.listed[srv.URL] = remoteListing{models: models, err: err}
				r.mu.Unlock()
			}()
		}
		wg.Wait()
		onUI(r.rebuild)
	}()
}

// rebuild draws a card per added server holding a card per model (UI goroutine).
func (r *remoteSection) rebuild() {
	v := r.app.deps.Settings.Get()
	var objs []fyne.CanvasObject
	for _, srv := range v.RemoteServers {
		s := &remote.Server{BaseURL: srv.URL}
		r.mu.Lock()
		l, ok := r.listed[srv.URL]
		r.mu.Unlock()
		var rows []fyne.CanvasObject
		switch {
		case !ok:
			rows = append(rows, widget.NewLabel("Listing its models…"))
		case l.err != nil:
			msg := widget.NewLabel(plainError("list the models of "+s.Host(), l.err))
			msg.Wrapping = fyne.TextWrapWord
			msg.Importance = widget.DangerImportance
			rows = append(rows, msg)
		case len(l.models) == 0:
			rows = append(rows, widget.NewLabel("This server lists no models."))
		}
		for _, m := range l.models {
			rows = append(rows, r.modelCard(srv.URL, m, v.RemoteModel))
		}
		u := srv.URL
		retry := widget.NewButtonWithIcon("Refresh", theme.ViewRefreshIcon(), r.refresh)
		remove := widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), func() { r.remove(u) })
		head := container.NewBorder(nil, nil, nil, container.NewHBox(retry, remove), widget.NewLabelWithStyle(srv.URL, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		objs = append(objs, widget.NewCard("", "", container.NewVBox(append([]fyne.CanvasObject{head}, rows...)...)))
	}
	r.servers.Objects = objs
	r.servers.Refresh()
}

// modelCard is a remote model with its "Use" button, or "Active".
func (r *remoteSection) modelCard(url string, m api.Model, active *settings.RemoteModel) fyne.CanvasObject {
	how := "Streams its answers canvas by canvas."
	if m.Darkroom() {
		how = "A Darkroom server: pages develop step by step."
	}
	note := widget.NewLabel(how)
	note.Wrapping = fyne.TextWrapWord
	secondaryText(note)
	var action fyne.CanvasObject
	if active != nil && active.URL == url && active.ID == m.ID {
		action = widget.NewLabelWithStyle("Active", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	} else {
		use := widget.NewButtonWithIcon("Use", theme.ConfirmIcon(), func() { r.use(url, m) })
		use.Importance = widget.HighImportance
		action = use
	}
	title := widget.NewRichText(&widget.TextSegment{Style: widget.RichTextStyleSubHeading, Text: m.ID})
	title.Wrapping = fyne.TextWrapWord
	return widget.NewCard("", "", container.NewBorder(nil, nil, nil, container.NewVBox(action), container.NewVBox(title, note)))
}

// use makes a remote model the active model for every screen.
func (r *remoteSection) use(url string, m api.Model) {
	err := r.app.deps.Settings.Update(func(v *settings.Values) {
		v.RemoteModel = &settings.RemoteModel{URL: url, ID: m.ID, OwnedBy: m.OwnedBy}
	})
	if err != nil {
		r.result.Importance = widget.DangerImportance
		r.result.SetText(plainError("use "+m.ID, err))
		r.result.Show()
		return
	}
	r.app.modelChanged()
}

// remove forgets a server (and its key); if its model was active, the local
// model is active again.
func (r *remoteSection) remove(url string) {
	wasActive := false
	err := r.app.deps.Settings.Update(func(v *settings.Values) {
		wasActive = v.RemoteModel != nil && v.RemoteModel.URL == url
		out := v.RemoteServers[:0]
		for _, s := range v.RemoteServers {
			if s.URL != url {
				out = append(out, s)
			}
		}
		v.RemoteServers = out
	})
	if err != nil {
		r.result.Importance = widget.DangerImportance
		r.result.SetText(plainError("remove "+url, err))
		r.result.Show()
		return
	}
	if wasActive {
		r.app.modelChanged()
		return
	}
	r.rebuild()
}

// remoteCard builds the Library's remote servers section.
func (a *App) remoteCard() fyne.CanvasObject {
	a.remote = newRemoteSection(a)
	return a.remote.content
}
