package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/convert"
	"github.com/darkroomlabs/darkroom/models/fit"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/speed"
	"github.com/darkroomlabs/darkroom/models/store"
)

// modelEnv overrides the active model with a folder (the window check and
// developers use it); the Library's choice applies otherwise.
const modelEnv = "DARKROOM_MODEL"

// wireEngine connects the real engine, models library and hardware detection.
func wireEngine(d *Deps) {
	v := d.Settings.Get()
	dir := v.ModelsDir
	if env := os.Getenv("DARKROOM_MODELS_DIR"); env != "" {
		dir = "" // the models package honours the variable itself
	}
	mgr, err := models.New(models.Options{Dir: dir, Endpoint: v.HFMirror, Token: v.HFToken})
	if err != nil {
		d.Problems = append(d.Problems, "The models library could not be opened: "+err.Error())
	} else {
		d.Library = &managerLibrary{m: mgr, settings: d.Settings}
	}
	var (
		hwOnce sync.Once
		info   hw.Info
	)
	detect := func() hw.Info {
		hwOnce.Do(func() {
			dir := ""
			if mgr != nil {
				dir = mgr.StorePath()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			info = hw.Detect(ctx, dir)
		})
		return info
	}
	if lib, ok := d.Library.(*managerLibrary); ok {
		lib.hardware = detect
	}
	d.System.Hardware = func() []string { return hardwareLines(detect()) }
	d.System.Report = func() string {
		var b strings.Builder
		detect().Report(&b)
		return b.String()
	}
	d.System.Backends = func() string {
		return "Built with: " + strings.Join(backend.Available(), ", ") + ". " + detect().Summary
	}
	d.System.GPU = newGPURuntime()
	d.System.MiniReady = func() error {
		_, err := assets.Mini()
		return err
	}
	d.System.SamplingDefaults = func() (engine.Sampling, error) { return samplingDefaults(mgr) }
	st := d.Settings
	d.Loader = LoaderFunc(func(ctx context.Context) (Model, error) {
		src, name, err := activeSource(mgr)
		if err != nil {
			return nil, err
		}
		leads, err := sourceLeads(src)
		if err != nil {
			return nil, err
		}
		stage := LoadStage(ctx)
		// Auto's GPU, unless the model is too big for it: split between it and the CPU
		// then, or the CPU, said on the model's line (models.BackendFor) — or the
		// split Settings' GPU layers ask for.
		choice := models.BackendChoice{Backend: st.Get().Backend, DeviceLayers: st.Get().GPULayers}
		if choice.DeviceLayers == 0 {
			choice = models.BackendFor(choice.Backend, src, func() hw.Info {
				info := detect()
				if info.Device == "gpu" { // the GPU's free memory now, not at start: a game may have started since
					if gpus, _ := nvidia.Find(ctx); len(gpus) > 0 {
						info.GPUs = gpus
					}
				}
				return info
			})
		}
		e, err := engine.Load(ctx, src, engine.Options{Backend: choice.Backend, DeviceLayers: choice.DeviceLayers,
			Progress: stage, WeightsProgress: LoadBytes(ctx)})
		if err != nil {
			return nil, err
		}
		m := newEngineModel(e, name, name == miniName)
		m.onCPU = choice.Why
		stage("speed") // the first load on this PC measures its rates: seconds
		m.mode, m.speed = modeChoice(ctx, e, name)
		m.leads = leads
		return m, nil
	})
}

// sourceLeads are the entries src's folder holds (models.Leads): the
// built-in Mini's — the source activeSource and the Library give it, the
// embedded files named catalog.MiniID — read once (builtinLeads).
func sourceLeads(src engine.Source) (*assets.Leads, error) {
	if src.FS != nil && src.Name == catalog.MiniID {
		return builtinLeads()
	}
	return models.Leads(src)
}

// builtinLeads are the built-in Darkroom Mini's entries, read once (a tenth of
// a second) for the start page and every load of the built-in model (the
// Race loads a second one).
var builtinLeads = sync.OnceValues(func() (*assets.Leads, error) {
	fsys, err := assets.Mini()
	if err != nil {
		return nil, err
	}
	return models.Leads(engine.FS(fsys, catalog.MiniID))
})

// activeSource is where the active model is read from, and its display name:
// DARKROOM_MODEL's folder, else the Library's choice (mgr may be nil), else the
// built-in Darkroom Mini.
func activeSource(mgr *models.Manager) (engine.Source, string, error) {
	switch {
	case os.Getenv(modelEnv) != "":
		return engine.Dir(os.Getenv(modelEnv)), envModelName(), nil
	case mgr != nil:
		active, err := mgr.Active()
		if err != nil {
			return engine.Source{}, "", err
		}
		if active == "" {
			active = catalog.MiniID
		}
		src, err := mgr.Source(active)
		if err != nil {
			return engine.Source{}, "", err
		}
		name := miniName
		if active != catalog.MiniID {
			name = active
		}
		return src, name, nil
	}
	fsys, err := assets.Mini()
	if err != nil {
		return engine.Source{}, "", err
	}
	return engine.FS(fsys, catalog.MiniID), miniName, nil
}

// samplingDefaults reads the active model's sampler defaults from its config
// files, without loading its weights, for the Settings screen.
func samplingDefaults(mgr *models.Manager) (engine.Sampling, error) {
	src, _, err := activeSource(mgr)
	if err != nil {
		return engine.Sampling{}, err
	}
	fsys := src.FS
	if fsys == nil {
		fsys = os.DirFS(src.Dir)
	}
	cfg, err := config.LoadFS(fsys, ".")
	if err != nil {
		return engine.Sampling{}, err
	}
	return engine.SamplingDefaults(cfg.Generation), nil
}

// envModelName names the model of DARKROOM_MODEL by its folder; a folder named
// darkroom-mini is a Darkroom Mini build (e.g. exported from a training run).
func envModelName() string {
	base := filepath.Base(os.Getenv(modelEnv))
	if base == catalog.MiniID {
		return miniName
	}
	return base
}

func hardwareLines(info hw.Info) []string {
	var lines []string
	for _, g := range info.GPUs {
		l := fmt.Sprintf("GPU: %s, %s VRAM (%s free)", g.Name, store.FormatBytes(g.VRAMTotal), store.FormatBytes(g.VRAMFree))
		if g.Driver != "" {
			l += ", driver " + g.Driver
		}
		lines = append(lines, l)
	}
	lines = append(lines, fmt.Sprintf("CPU: %d cores (%s/%s); RAM: %s (%s available)", info.CPUs, info.OS, info.Arch,
		store.FormatBytes(info.RAMTotal), store.FormatBytes(info.RAMAvailable)))
	if info.Summary != "" {
		lines = append(lines, info.Summary)
	}
	return lines
}

// modeChoice is the default mode of the model e loaded as name, on this machine
// (models/speed; the rates are measured once, on the first model's load).
func modeChoice(ctx context.Context, e *engine.Engine, name string) (speed.Choice, *speed.Estimate) {
	if name == miniName {
		name = catalog.MiniID
	}
	device := speed.Device(e.Backend())
	rates, err := speed.Here(ctx, device)
	if err != nil {
		entry, _ := catalog.ForModel(name, e.Config())
		return speed.Choose(entry, speed.Unknown(err.Error())), nil
	}
	return speed.ForLoaded(name, e.Config(), e.GGUFLayout(), device, rates, speed.LoadedFromDisk(ctx, e))
}

// engineModel adapts *engine.Engine to Model.
type engineModel struct {
	e        *engine.Engine
	name     string
	builtin  bool
	thinking bool
	mode     speed.Choice
	speed    *speed.Estimate
	leads    *assets.Leads
	onCPU    string // why a model auto would have run on the GPU runs on the CPU, all or split (models.BackendFor)
	answer   int    // ModelInfo.AnswerTokens
}

func newEngineModel(e *engine.Engine, name string, builtin bool) *engineModel {
	m := &engineModel{e: e, name: name, builtin: builtin}
	if !builtin {
		m.answer = catalog.AnswerTokens(name, e.Config())
	}
	_, hasThink := e.Tokenizer().ID(chat.Think)
	m.thinking = catalog.NoThinking(builtin, hasThink) == ""
	return m
}

func (m *engineModel) Generate(ctx context.Context, req engine.Request) (*engine.Result, error) {
	return m.e.Generate(ctx, req)
}
func (m *engineModel) TokenText(id int) string { return m.e.TokenText(id) }
func (m *engineModel) Decode(ids []int) string { return m.e.Tokenizer().Decode(ids) }
func (m *engineModel) IsEnd(id int) bool       { return m.e.IsEnd(id) }
func (m *engineModel) Close() error            { return m.e.Close() }
func (m *engineModel) Info() ModelInfo {
	backend := m.e.Backend()
	if m.e.Path() == engine.PathSplit { // its other layers on the CPU (models.BackendFor): not the whole GPU's speed
		backend += fmt.Sprintf(" for %d of %d layers, the rest on go", m.e.DeviceLayers(), m.e.Config().Text.NumHiddenLayers)
	}
	return ModelInfo{Name: m.name, Builtin: m.builtin, Backend: backend, Thinking: m.thinking,
		Defaults: m.e.GenerationDefaults(), Mode: m.mode, Speed: m.speed, Fallback: cmp.Or(m.onCPU, m.e.BackendFallback()), FromDisk: m.e.FromDisk(), Leads: m.leads,
		AnswerTokens: m.answer}
}

// managerLibrary adapts the models manager to Library.
type managerLibrary struct {
	m        *models.Manager
	settings *settings.Store
	hardware func() hw.Info

	mu        sync.Mutex
	transfers map[string]*models.Transfer
	subs      map[int]func(DownloadEvent) // for conversion events, which the manager does not send
	nextSub   int
}

func (l *managerLibrary) emit(ev DownloadEvent) {
	l.mu.Lock()
	subs := make([]func(DownloadEvent), 0, len(l.subs))
	for _, f := range l.subs {
		subs = append(subs, f)
	}
	l.mu.Unlock()
	for _, f := range subs {
		f(ev)
	}
}

func (l *managerLibrary) Entries() ([]LibraryEntry, error) {
	es, err := l.m.Entries()
	if err != nil {
		return nil, err
	}
	var info hw.Info
	if l.hardware != nil {
		info = l.hardware()
	}
	// With no model chosen yet the loader opens the built-in one: it is the active model.
	active, _ := l.m.Active()
	var out []LibraryEntry
	for _, e := range es {
		le := LibraryEntry{Name: e.ID, Title: e.Name, Description: e.Description, Repo: e.Repo, License: e.License,
			Builtin: e.Builtin, Active: e.Active || (e.Builtin && active == ""), State: libraryState(e.State)}
		if e.Local != nil {
			le.Profile = e.Local.Profile
		}
		if e.Progress != nil {
			le.Progress = downloadEvent(*e.Progress)
			le.State = le.Progress.State
		}
		for _, p := range e.Profiles {
			pf := profileFit(e, p, info)
			for _, d := range e.Derived {
				pf.Made = pf.Made || (pf.ConvertedFrom != "" && d.Profile == pf.Name)
			}
			le.Profiles = append(le.Profiles, pf)
		}
		out = append(out, le)
	}
	return out, nil
}

func libraryState(s string) string {
	switch s {
	case "built-in":
		return "built in"
	case "not downloaded", "":
		return "available"
	case "complete", "verified":
		return "ready"
	}
	return s
}

// publishedProfile is the profile an entry's download is in: bf16 for a
// checkpoint Darkroom converts to the others, else the entry's own format (an
// NVFP4 or GGUF export, loaded as downloaded).
func publishedProfile(e catalog.Entry) quant.Profile {
	if len(e.Profiles) == 0 || slices.Contains(e.Profiles, quant.BF16Profile) {
		return quant.BF16Profile
	}
	return e.Profiles[0]
}

// profileFit estimates a profile against the first GPU, else the RAM.
func profileFit(e models.Entry, p quant.Profile, info hw.Info) ProfileFit {
	pf := ProfileFit{Name: string(p), Keeps: e.Keeps(p)}
	if !e.Builtin {
		if p == publishedProfile(e.Entry) {
			pf.Bytes = e.Size
		} else {
			pf.ConvertedFrom = string(publishedProfile(e.Entry))
		}
	}
	cfg, err := models.EntryConfig(e.Entry)
	switch {
	case errors.Is(err, assets.ErrMiniNotBuilt):
		pf.Verdict, pf.Detail = "unknown", "Not built into this copy of Darkroom yet."
		return pf
	case err != nil:
		pf.Verdict, pf.Detail = "unknown", err.Error()
		return pf
	case cfg == nil:
		pf.Verdict, pf.Detail = "unknown", e.ID+": dimensions unknown before download"
		return pf
	}
	pl, err := models.Place(cfg, p, e.GGUF, info) // the GPU, or the RAM where the model is too big for the GPU
	if err != nil {
		pf.Verdict, pf.Detail = "unknown", err.Error()
		return pf
	}
	est, b := pl.Estimate, pl.Budget
	pf.Verdict, pf.OnCPU = string(pl.Overall()), pl.CPUBecause
	if s := pl.Split; s != nil { // the estimate is the GPU's part
		pf.Split, pf.HostNeed, pf.HostResident, pf.RAM = s.Because, s.Host.Total, s.Host.Resident(), s.RAM.Bytes
	}
	pf.Need, pf.Weights, pf.Resident, pf.Context = est.Total, est.Part(fit.PartWeights), est.Resident(), est.Context
	pf.Budget, pf.Where, pf.GPU = b.Bytes, b.Name, b.Kind == "gpu"
	if pf.GPU {
		pf.Where += " VRAM"
	}
	pf.FitsAt, pf.TightAt = fit.Limits(b)
	if pl.CPUBecause != "" {
		info.Device = "cpu" // its speed is the CPU's
	}
	var d *speed.FromDisk
	if pl.Verdict == fit.FromDisk && info.StoreDir != "" && info.Device == "cpu" {
		if rate, err := diskHere(context.Background(), info.StoreDir); err == nil {
			d = speed.DiskFor(est, b, pl.Verdict, rate.BytesPerS)
			pf.DiskRate = rate.BytesPerS
		}
	}
	pf.Printer, pf.Polaroid, pf.SpeedNote = profileSpeed(e, p, info, d)
	return pf
}

// diskHere measures (once) the models folder's disk (speed.DiskHere); tests replace
// it.
var diskHere = speed.DiskHere

// profileSpeed is each mode's estimated tokens/s for the entry under p on this
// PC, or why there is none (the CPU's rates are measured once, on first use); d,
// if not nil, prices the disk's reads of a model that runs from it.
func profileSpeed(e models.Entry, p quant.Profile, info hw.Info, d *speed.FromDisk) (printer, polaroid float64, note string) {
	cfg, err := models.EntryConfig(e.Entry)
	if err != nil || cfg == nil || info.Device == "" { // dimensions or hardware unknown
		return 0, 0, ""
	}
	rates, err := speed.Here(context.Background(), info.Device)
	if err != nil {
		return 0, 0, err.Error()
	}
	est, err := speed.ForWeights(e.Entry, cfg, p, e.GGUF, info.Device, rates, 0, d)
	if err != nil {
		return 0, 0, err.Error()
	}
	if !est.Known() {
		return 0, 0, est.Unknown
	}
	return est.AR.TokensPerS, est.Diffusion.TokensPerS, ""
}

func downloadEvent(ev models.Event) DownloadEvent {
	de := DownloadEvent{Name: ev.Model, State: ev.State, Done: ev.Done, Total: ev.Total, Rate: ev.Rate}
	if ev.State == models.StateElsewhere {
		de.Doing = ev.Message
	}
	if ev.ETA > 0 {
		de.ETA = ev.ETA
	}
	switch ev.State {
	case "complete":
		de.State = "done"
	case "canceled":
		de.State = "cancelled"
	case "queued", "file-failed": // one file failed; the others go on
		de.State = "downloading"
	}
	if ev.Err != nil {
		de.Err = ev.Err
	} else if ev.State == "failed" {
		de.Err = errors.New(ev.Message)
	}
	return de
}

// Start downloads the published weights; for another profile (int8, int4 of a
// bf16 checkpoint) the download is then converted locally, as `darkroom
// quantize` does.
func (l *managerLibrary) Start(name, profile string) error {
	published := quant.BF16Profile
	if e, ok := catalog.Find(name); ok {
		published = publishedProfile(e)
	}
	p := published // ParseProfile knows only the profiles Darkroom makes, not nvfp4
	if profile != "" && profile != string(published) {
		var err error
		if p, err = quant.ParseProfile(profile); err != nil {
			return err
		}
	}
	var opt models.PullOptions
	if p != published {
		opt.Reserve = madeBytes(name, p)
	}
	t, err := l.m.Pull(context.Background(), name, opt)
	var choice *models.QuantChoice
	if errors.As(err, &choice) && l.hardware != nil {
		models.JudgeQuants(choice, l.hardware()) // where each would run here, for its button
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.transfers == nil {
		l.transfers = map[string]*models.Transfer{}
	}
	l.transfers[name] = t
	l.mu.Unlock()
	if p != published {
		go l.convertAfter(t, name, p)
	}
	return nil
}

// madeBytes is the space converting catalog entry name into profile p on this PC
// takes in the models folder, with the store's margin, as the Library's
// recommendation counts it (diskNeed); 0 where the entry's dimensions are unknown.
func madeBytes(name string, p quant.Profile) int64 {
	e, ok := catalog.Find(name)
	if !ok {
		return 0
	}
	cfg, err := models.EntryConfig(e)
	if err != nil || cfg == nil {
		return 0
	}
	return withMargin(fit.WeightBytes(cfg, p))
}

// convertAfter waits for a download and converts it into profile p.
func (l *managerLibrary) convertAfter(t *models.Transfer, name string, p quant.Profile) {
	if err := t.Wait(); err != nil {
		return // the download's own events report it
	}
	l.convert(name, p)
}

// Convert converts the downloaded model into profile, as a download with that
// profile does once the files are in.
func (l *managerLibrary) Convert(name, profile string) error {
	p, err := quant.ParseProfile(profile)
	if err != nil {
		return err
	}
	go l.convert(name, p)
	return nil
}

// convert converts the downloaded model into profile p, reporting as download events.
func (l *managerLibrary) convert(name string, p quant.Profile) {
	l.emit(DownloadEvent{Name: name, State: "converting"})
	_, _, err := l.m.Quantize(context.Background(), name, models.QuantizeOptions{Profile: p,
		Progress: func(pr convert.Progress) {
			l.emit(DownloadEvent{Name: name, State: "converting", Done: pr.InBytes, Total: pr.TotalIn})
		}})
	if err != nil {
		l.emit(DownloadEvent{Name: name, State: "failed", Err: fmt.Errorf("converting to %s: %w", p, err)})
		return
	}
	l.emit(DownloadEvent{Name: name, State: "done"})
}

// transferName is the manager's name of a download: its transfer's, else name (a
// catalog ID the manager maps to its download itself: models.Manager.Transfer).
func (l *managerLibrary) transferName(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.transfers[name]; t != nil {
		return t.Name()
	}
	return name
}

func (l *managerLibrary) Pause(name string) error { return l.m.Pause(l.transferName(name)) }

// Resume continues a paused download; after a restart there is no transfer in
// memory, so it starts one, which continues from the .part files.
func (l *managerLibrary) Resume(name string) error {
	if l.m.Transfer(l.transferName(name)) == nil {
		return l.Start(name, "")
	}
	return l.m.Resume(l.transferName(name))
}
func (l *managerLibrary) Cancel(name string) error { return l.m.Cancel(l.transferName(name)) }
func (l *managerLibrary) Delete(name string) error { return l.m.Delete(name) }

// SetActive activates a model, or its local conversion to profile.
func (l *managerLibrary) SetActive(name, profile string) error {
	published := quant.BF16Profile
	if e, ok := catalog.Find(name); ok {
		published = publishedProfile(e)
	}
	if profile != "" && profile != string(published) {
		es, err := l.m.Entries()
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.ID != name {
				continue
			}
			for _, d := range e.Derived {
				if d.Profile == profile {
					return l.m.SetActive(d.Name)
				}
			}
			if !e.Builtin {
				return fmt.Errorf("%s has no %s version yet: download it with that profile, or run `darkroom quantize --model %s --profile %s`",
					e.Name, profile, name, profile)
			}
		}
	}
	return l.m.SetActive(name)
}

func (l *managerLibrary) ActiveName() string {
	if os.Getenv(modelEnv) != "" {
		return envModelName()
	}
	a, err := l.m.Active()
	if err != nil || a == "" || a == catalog.MiniID {
		return miniName
	}
	if e, ok := catalog.Find(a); ok {
		return e.Name
	}
	return a
}

func (l *managerLibrary) Store() (string, int64, error) {
	free, err := l.m.FreeSpace()
	return l.m.StorePath(), free, err
}

func (l *managerLibrary) Hub() (string, string) {
	h := l.m.Hub()
	return h.Token, h.Endpoint
}

func (l *managerLibrary) SetHub(token, mirror string) error {
	h := l.m.Hub()
	if mirror != "" && !strings.HasPrefix(mirror, "https://") && !strings.HasPrefix(mirror, "http://") {
		return errors.New("the mirror must be an http(s) address, e.g. https://hf-mirror.com")
	}
	d := hub.New(mirror, token) // empty: HF_ENDPOINT / HF_TOKEN, then the public Hub, as at start
	h.Endpoint, h.Token = d.Endpoint, d.Token
	return l.settings.Update(func(v *settings.Values) { v.HFToken, v.HFMirror = token, mirror })
}

func (l *managerLibrary) PlanMove(chosen string) (store.MovePlan, error) {
	st := l.m.Store()
	return st.PlanMove(st.MoveDir(chosen))
}

func (l *managerLibrary) MoveStore(ctx context.Context, dir string, progress func(done, total int64)) error {
	err := l.m.MoveStore(ctx, dir, func(p store.MoveProgress) { progress(p.Done, p.Total) })
	if err != nil {
		return err
	}
	return l.settings.Update(func(v *settings.Values) { v.ModelsDir = dir })
}

func (l *managerLibrary) Subscribe(fn func(DownloadEvent)) func() {
	l.mu.Lock()
	if l.subs == nil {
		l.subs = map[int]func(DownloadEvent){}
	}
	id := l.nextSub
	l.nextSub++
	l.subs[id] = fn
	l.mu.Unlock()
	unsub := l.m.Subscribe(func(ev models.Event) {
		de := downloadEvent(ev)
		// The Library card is keyed by catalog ID; the manager names transfers by
		// repo (and a GGUF's mix: models.Manager.EntryOf).
		if e, ok := l.m.EntryOf(ev.Model); ok {
			de.Name = e.ID
		}
		fn(de)
	})
	return func() {
		unsub()
		l.mu.Lock()
		delete(l.subs, id)
		l.mu.Unlock()
	}
}
