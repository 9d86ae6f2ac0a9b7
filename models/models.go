// Package models is Darkroom's models library: what the desktop app's Library
// screen and the CLI (pull, models, rm, hw, quantize) are built on. It never
// imports Fyne.
//
// A Manager joins the pieces kept in subpackages:
//
//   - catalog: the known models (DiffusionGemma 26B, Darkroom Mini built in) and the
//     community formats the engine cannot load, with the reason;
//   - hub: the Hugging Face API client (file lists with sizes and hashes, resolve URLs,
//     HF_TOKEN, HF_ENDPOINT, proxies);
//   - download: resumable, verified, parallel downloads with pause/resume/cancel and
//     progress events;
//   - store: the models folder, per-model manifests, atomic writes, move and delete,
//     and the holds that keep two Darkroom processes off one model;
//   - hw and fit: hardware detection and the "will it fit" estimates — and here,
//     Place and BackendFor: where a model runs on this PC (the GPU; for one too big
//     for it, split between the GPU and the CPU, or the CPU) and how auto loads it;
//   - convert: `darkroom quantize`, streaming a checkpoint into an int8/int4 profile.
//
// Resolve (and Source) turn what a user typed — a catalog name, a repo, a local
// model's name or a folder — into model files, and refuse any model a file of which
// failed verification.
package models

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/store"
)

func init() {
	download.StatusError = hub.StatusError // plain-language 401/404 in download errors
}

// Options configure a Manager. Zero values pick the defaults.
type Options struct {
	Dir      string // models folder; "" = $DARKROOM_MODELS_DIR, else $XDG_DATA_HOME/darkroom/models
	Endpoint string // Hub endpoint; "" = $HF_ENDPOINT, else https://huggingface.co
	Token    string // Hub token; "" = $HF_TOKEN
	HTTP     *http.Client
	// Download tunes transfers (parallelism, stall timeout, backoff; tests inject faults).
	Download download.Options
}

// Manager is the models library.
type Manager struct {
	store *store.Store
	hub   *hub.Client
	dl    download.Options

	mu       sync.Mutex
	manifest sync.Mutex // serializes manifest read-modify-write
	jobs     map[string]*Transfer
	starting map[string]chan struct{} // Pulls claimed before their transfer is a job (startPull): closed when it is, or failed
	busy     int                      // Pulls before their transfer starts, and conversions (Quantize), which a move waits for
	moving   string                   // where the store is moving to (MoveStore), "" when it is not
	subs     map[int]func(Event)
	nextSub  int
	ggufs    ggufCache // what local GGUF files' headers give (localEntry)
}

// New opens the library.
func New(opt Options) (*Manager, error) {
	st, err := store.Open(opt.Dir)
	if err != nil {
		return nil, err
	}
	h := hub.New(opt.Endpoint, opt.Token)
	if opt.HTTP != nil {
		h.HTTP = opt.HTTP
	}
	m := &Manager{store: st, hub: h, dl: opt.Download, jobs: map[string]*Transfer{}, starting: map[string]chan struct{}{}, subs: map[int]func(Event){}}
	if m.dl.HTTP == nil {
		m.dl.HTTP = h.HTTP
	}
	if m.dl.FreeSpace == nil {
		m.dl.FreeSpace = func(p string) (int64, error) { return st.FreeSpace(p) }
	}
	if m.dl.SpaceMargin == nil {
		m.dl.SpaceMargin = store.SpaceMargin
	}
	return m, nil
}

// Store is the models folder.
func (m *Manager) Store() *store.Store { return m.store }

// StorePath is the models folder's path.
func (m *Manager) StorePath() string { return m.store.Root }

// FreeSpace is the free disk space of the models folder.
func (m *Manager) FreeSpace() (int64, error) { return m.store.FreeSpace(m.store.Root) }

// Hub is the Hub client (endpoint and token in use).
func (m *Manager) Hub() *hub.Client { return m.hub }

// Event reports a download's progress or state to subscribers.
type Event struct {
	Model string        `json:"model"`
	State string        `json:"state"` // "downloading", "verifying", "paused", "complete", "failed", "canceled"
	File  string        `json:"file,omitempty"`
	Done  int64         `json:"done_bytes"`
	Total int64         `json:"total_bytes"`
	Rate  float64       `json:"bytes_per_second"`
	ETA   time.Duration `json:"eta_ns"` // -1 when unknown
	Err   error         `json:"-"`
	// Message is a plain-language line for retries and errors.
	Message string `json:"message,omitempty"`
}

// Subscribe registers fn for every download event of this manager; fn is called
// from download goroutines and must not block (the app hands events to fyne.Do).
// The returned function unsubscribes.
func (m *Manager) Subscribe(fn func(Event)) (unsubscribe func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextSub
	m.nextSub++
	m.subs[id] = fn
	return func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

func (m *Manager) publish(ev Event) {
	m.mu.Lock()
	subs := make([]func(Event), 0, len(m.subs))
	for _, f := range m.subs {
		subs = append(subs, f)
	}
	m.mu.Unlock()
	for _, f := range subs {
		f(ev)
	}
}

// Entry is one row of the library: a catalog model or a local one, with its local state.
type Entry struct {
	catalog.Entry
	// GGUF is how its weights are laid out where they are a GGUF file (its mix's rule
	// for a catalog GGUF entry; a local GGUF's own types, read from its header), by
	// which its memory and speed are estimated (models.Place, speed.ForWeights); the
	// zero layout for any other.
	GGUF weights.GGUFLayout `json:"-"`
	// Name is what Resolve accepts for it (the catalog ID, or a local model's name).
	Local *store.Manifest `json:"local,omitempty"` // nil when not downloaded
	Dir   string          `json:"dir,omitempty"`
	// State is "built-in", "not downloaded", or the manifest's state — except that a
	// download no transfer of this Manager runs is "paused" (see Entries).
	State string `json:"state"`
	// Derived are local conversions of this model (quantized profiles).
	Derived []*store.Manifest `json:"derived,omitempty"`
	Active  bool              `json:"active"`
	// Progress is the latest event of a running download, or for a paused one
	// what it has kept; nil when none.
	Progress *Event `json:"progress,omitempty"`
}

// Entries lists the catalog with local state, then local models not in the catalog.
//
// A download that no transfer of this Manager runs is listed as paused, with the
// bytes it has kept, whether the program quit (the manifest says paused) or was
// cut off (killed, the PC lost power: the manifest still says downloading, and
// no transfer will ever end it). Pull resumes it and Cancel removes what it kept.
// A download another process runs (the app opened twice, `darkroom pull`) is
// listed as "elsewhere", with the bytes it has so far and, as the event's
// Message, what that process said it is doing (store.Hold); Pull and Cancel
// refuse it until that process lets it go.
func (m *Manager) Entries() ([]Entry, error) {
	locals, err := m.store.List()
	if err != nil {
		return nil, err
	}
	lib, _ := m.store.LibraryState()
	used := map[string]bool{}
	var out []Entry
	add := func(e Entry) {
		e.Active = lib.Active != "" && (lib.Active == e.ID || (e.Local != nil && lib.Active == e.Local.Name))
		m.mu.Lock()
		if t := m.jobs[e.ID]; t != nil {
			ev := t.Last()
			e.Progress = &ev
		} else if e.Local != nil {
			if t := m.jobs[e.Local.Name]; t != nil {
				ev := t.Last()
				e.Progress = &ev
			}
		}
		m.mu.Unlock()
		if e.Progress == nil && e.Local != nil && unfinished(e.Local.State) {
			ev := m.kept(e.Local)
			if doing, held := m.store.Elsewhere(e.Local.Name); held {
				ev.State, ev.Message = StateElsewhere, doing
			}
			e.Progress, e.State = &ev, ev.State
		}
		out = append(out, e)
	}
	for _, ce := range catalog.Entries() {
		e := Entry{Entry: ce, GGUF: weights.MixLayout(ce.Mix), State: "not downloaded"}
		if ce.Builtin {
			e.State = "built-in"
		}
		for _, l := range locals {
			switch {
			case isDownloadOf(ce, l):
				e.Local, e.Dir, e.State = l, m.store.ModelDir(l.Name), string(l.State)
				used[l.Name] = true
			case (l.BaseOf == ce.ID || (ce.Repo != "" && l.BaseOf == ce.Repo)) && slices.Contains(ce.Profiles, quant.Profile(l.Profile)):
				// A conversion the entry's profile picker offers; another (the
				// Mini, bf16 alone, made int8) is listed as a model of its own.
				e.Derived = append(e.Derived, l)
				used[l.Name] = true
			}
		}
		add(e)
	}
	for _, l := range locals {
		if used[l.Name] {
			continue
		}
		add(m.localEntry(l))
	}
	return out, nil
}

// isDownloadOf reports whether local model l is the download of catalog entry ce:
// fetched from its repo, and for a GGUF entry holding its mix's file (the entries of
// Unsloth's repo are one file each; a folder named by the repo alone, as the Q4_K_M
// was before the repo's other mixes were listed, is the Q4_K_M's).
func isDownloadOf(ce catalog.Entry, l *store.Manifest) bool {
	if ce.Repo == "" || l.Source != "hub" || !strings.EqualFold(l.Repo, ce.Repo) {
		return false
	}
	if !ce.GGUF() {
		return true
	}
	for _, f := range l.Files {
		if strings.EqualFold(path.Base(f.Name), catalog.GGUFFile(ce.Mix)) {
			return true
		}
	}
	return false
}

// downloadOf is the name of catalog entry e's download in the store: the local model
// that is its download (isDownloadOf), else the name a new one takes
// (catalog.Entry.LocalName).
func (m *Manager) downloadOf(e catalog.Entry) string {
	if locals, err := m.store.List(); err == nil {
		for _, l := range locals {
			if isDownloadOf(e, l) {
				return l.Name
			}
		}
	}
	return e.LocalName()
}

// EntryOf is the catalog entry whose download the local model named model is (a
// transfer's and its events' name: a repo, or a GGUF repo and its mix), and false
// for a model the catalog does not list.
func (m *Manager) EntryOf(model string) (catalog.Entry, bool) {
	man, err := m.store.Load(model)
	for _, e := range catalog.Entries() {
		if e.Repo == "" {
			continue
		}
		if err == nil && isDownloadOf(e, man) || err != nil && e.LocalName() == model {
			return e, true
		}
	}
	return catalog.Entry{}, false
}

// localEntry is the entry of a local model the catalog does not list: a
// Hugging Face model downloaded by its repo (a fine-tune of DiffusionGemma),
// or a conversion the catalog's profile pickers do not offer (the Mini made
// int8). Its profile is the one it is in, its dimensions its own config.json
// once that is downloaded (the fit estimate reads them), and its description
// says where it came from.
func (m *Manager) localEntry(l *store.Manifest) Entry {
	dir := m.store.ModelDir(l.Name)
	profile := cmp.Or(l.Profile, string(quant.BF16Profile))
	format := "safetensors (" + profile + ")"
	ggufName := "" // its GGUF file, where it is one
	for _, f := range l.Files {
		if _, ok := ggufQuantOf(f.Name); ok {
			ggufName = f.Name
		}
	}
	ggufPath := filepath.Join(dir, filepath.FromSlash(ggufName))
	loadConfig := func() (*config.Model, error) {
		if ggufName != "" && l.State == store.StateComplete { // config.json, else the GGUF's metadata (m.ggufs)
			cfg, _, err := m.ggufs.read(ggufPath)
			return cfg, err
		}
		c, err := config.Load(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // not downloaded yet: dimensions unknown
		}
		return c, err
	}
	var layout weights.GGUFLayout
	var types string
	if ggufName != "" {
		q, _ := ggufQuantOf(ggufName)
		format = "GGUF " + q
		if l.State == store.StateComplete {
			if cfg, lay, err := m.ggufs.read(ggufPath); err == nil && lay.IsGGUF() {
				layout, types = lay, lay.Describe(cfg)
			}
		}
		// The estimates' stand-in profile, as the catalog's GGUF entries' (catalog.GGUFProfile).
		profile = string(catalog.GGUFProfile(layout.Mix))
	}
	e := Entry{Entry: catalog.Entry{ID: l.Name, Name: l.Name, Repo: l.Repo, Revision: l.Revision,
		Format: format, Size: l.TotalSize(), Profiles: []quant.Profile{quant.Profile(profile)}, Config: loadConfig},
		GGUF: layout, Local: l, Dir: dir, State: string(l.State)}
	switch {
	case l.BaseOf != "":
		base := l.BaseOf
		if ce, ok := catalog.Find(base); ok {
			base = ce.Name
		}
		e.Description = "Made on this PC from " + base + " (" + profile + ")."
	case l.Source == "hub":
		e.Description = "Downloaded from Hugging Face (" + l.Repo + "). Darkroom's catalog does not list it: " +
			"what it is and what it is for are on its page there."
	}
	if types != "" {
		e.Description += " Its GGUF blocks: " + types + "."
	}
	return e
}

// Active is the active model's name ("" = none chosen: the app uses Darkroom Mini).
func (m *Manager) Active() (string, error) {
	l, err := m.store.LibraryState()
	return l.Active, err
}

// SetActive makes name the active model; it must resolve (verified or built in).
func (m *Manager) SetActive(name string) error {
	if _, err := m.Source(name); err != nil {
		return err
	}
	l, err := m.store.LibraryState()
	if err != nil {
		return err
	}
	l.Active = name
	return m.store.SetLibraryState(l)
}

// Delete removes a local model (its files, partial downloads and quarantined
// files). It refuses while the model is downloading, here or in another process.
func (m *Manager) Delete(name string) error {
	key, err := m.localName(name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	t := m.jobs[key]
	moving := m.notMoving("delete " + name)
	m.mu.Unlock()
	if moving != nil {
		return moving
	}
	if t != nil {
		return fmt.Errorf("delete %s: it is downloading; cancel the download first", name)
	}
	unhold, err := m.store.Hold(key, "deleting it") // not while another process downloads it
	if err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	defer unhold()
	if err := m.store.Delete(key); err != nil {
		return err
	}
	if l, err := m.store.LibraryState(); err == nil && (l.Active == name || l.Active == key) {
		l.Active = ""
		_ = m.store.SetLibraryState(l)
	}
	return nil
}

// localName maps what a user typed to a model name in the store.
func (m *Manager) localName(name string) (string, error) {
	candidates := []string{name, quantName(name)}
	if e, ok := catalog.Find(name); ok {
		if e.Builtin {
			return "", fmt.Errorf("%s is built into Darkroom and cannot be deleted", e.Name)
		}
		candidates = append([]string{m.downloadOf(e), e.ID}, candidates...)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := m.store.Load(c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s is not in the models folder %s (see `darkroom models`)", name, m.store.Root)
}

// MoveStore moves every model to dir (resumable: run it again after an
// interruption) and keeps using dir. It refuses while downloads run. The caller
// persists the new location (app settings or --models-dir). It refuses while
// another process holds a model (store.Hold).
func (m *Manager) MoveStore(ctx context.Context, dir string, progress func(store.MoveProgress)) error {
	m.mu.Lock()
	n := len(m.jobs) + m.busy
	if n == 0 && m.moving == "" {
		m.moving = dir
	}
	moving := m.moving
	m.mu.Unlock()
	switch {
	case n > 0:
		return fmt.Errorf("move models: %d download(s) or conversion(s) running; pause or finish them first", n)
	case moving != dir:
		return fmt.Errorf("move models: they are moving to %s already", moving)
	}
	defer func() {
		m.mu.Lock()
		m.moving = ""
		m.mu.Unlock()
	}()
	unhold, err := m.store.HoldAll("moving the models folder") // not from under another process's work
	if err != nil {
		return fmt.Errorf("move models: %w", err)
	}
	defer unhold()
	return m.store.Move(ctx, dir, progress)
}

// StateElsewhere is the state Entries gives a download another process runs.
const StateElsewhere = "elsewhere"

// ErrMoving is wrapped by Pull, Delete and Quantize while the models folder moves.
var ErrMoving = errors.New("the models folder is moving")

// holdStore keeps a move of the models folder from starting until release is
// called, or refuses what (an ErrMoving error) while one runs: for the work that
// reads or writes the folder outside the jobs a move already waits for.
func (m *Manager) holdStore(what string) (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holdLocked(what, nil)
}

// holdLocked is holdStore with m.mu held; release also runs then (m.mu held) when
// it is not nil.
func (m *Manager) holdLocked(what string, then func()) (release func(), err error) {
	if err := m.notMoving(what); err != nil {
		return nil, err
	}
	m.busy++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.busy--
		if then != nil {
			then()
		}
	}, nil
}

// startPull returns the transfer already running for modelName, or claims its
// start: until release is called, a move of the models folder waits (as for
// holdStore) and another Pull of the same model waits for this one, then gets
// its transfer (or, if this one failed before it had one, tries itself). The
// check and the claim are one step under m.mu, so two Pulls at once (a double
// click, the Library and the first-run screen) cannot both fetch the files.
func (m *Manager) startPull(ctx context.Context, modelName, what string) (running *Transfer, release func(), err error) {
	m.mu.Lock()
	for {
		if t := m.jobs[modelName]; t != nil {
			m.mu.Unlock()
			return t, nil, nil
		}
		other, starting := m.starting[modelName]
		if !starting {
			break
		}
		m.mu.Unlock()
		select {
		case <-other:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%s: %w", what, ctx.Err())
		}
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	claimed := make(chan struct{})
	release, err = m.holdLocked(what, func() {
		delete(m.starting, modelName)
		close(claimed)
	})
	if err != nil {
		return nil, nil, err
	}
	m.starting[modelName] = claimed
	return nil, release, nil
}

// notMoving returns an ErrMoving error naming what waits (m.mu held).
func (m *Manager) notMoving(what string) error {
	if m.moving == "" {
		return nil
	}
	return fmt.Errorf("%s: %w to %s; try again once it has moved", what, ErrMoving, m.moving)
}

// ErrBuiltin is wrapped by Resolve for the built-in model, which has no folder:
// load it with Source (or assets.Mini()).
var ErrBuiltin = errors.New("the model is built into the binary")

// Resolve turns a model name or folder into the folder holding its files (see
// Manager.Resolve), using the default models folder.
func Resolve(nameOrDir string) (string, error) {
	m, err := New(Options{})
	if err != nil {
		return "", err
	}
	return m.Resolve(nameOrDir)
}

// Resolve turns what a user typed into a model folder:
//
//   - a folder with config.json: used as is, unless it carries a Darkroom manifest
//     that is not fully verified, or holds a quarantined (.corrupt) file;
//   - a catalog ID or repo ("diffusiongemma-26b", "google/diffusiongemma-26B-A4B-it"),
//     a derived profile ("diffusiongemma-26b-int4") or any local model's name: the
//     store's folder, only if every file was verified.
//
// The built-in model returns an error wrapping ErrBuiltin.
func (m *Manager) Resolve(nameOrDir string) (string, error) {
	if st, err := os.Stat(nameOrDir); err == nil && st.IsDir() {
		return checkDir(nameOrDir)
	} else if err == nil {
		if strings.EqualFold(filepath.Ext(nameOrDir), ".gguf") {
			return "", fmt.Errorf("%s is a GGUF file: give the folder that holds it (with the model's tokenizer.json beside it)", nameOrDir)
		}
		return "", fmt.Errorf("%s is a file, not a model folder (give the folder that holds config.json)", nameOrDir)
	}
	if isPath(nameOrDir) {
		return "", fmt.Errorf("folder %s does not exist (give a model folder that holds config.json, or a name from `darkroom models`)", nameOrDir)
	}
	if e, ok := catalog.Find(nameOrDir); ok && e.Builtin {
		return "", fmt.Errorf("%s: %w", e.Name, ErrBuiltin)
	}
	var candidates []string
	if e, ok := catalog.Find(nameOrDir); ok {
		candidates = append(candidates, m.downloadOf(e), e.ID)
	}
	candidates = append(candidates, nameOrDir, quantName(nameOrDir))
	for _, c := range candidates {
		if c == "" {
			continue
		}
		man, err := m.store.Load(c)
		if err != nil {
			continue
		}
		if err := man.Verified(); err != nil {
			return "", err
		}
		dir := m.store.ModelDir(man.Name)
		if err := noQuarantine(dir); err != nil {
			return "", err
		}
		return dir, nil
	}
	if e, ok := catalog.Find(nameOrDir); ok {
		return "", fmt.Errorf("%s is not downloaded yet: run `darkroom pull %s` (or use the Library)", e.Name, e.ID)
	}
	if !strings.Contains(nameOrDir, "..") && strings.Count(nameOrDir, "/") == 1 { // owner/name
		return "", fmt.Errorf("%s is neither a folder nor a downloaded model: run `darkroom pull %s`", nameOrDir, nameOrDir)
	}
	return "", fmt.Errorf("unknown model %q: not a folder, a catalog name or a model in %s (see `darkroom models`)", nameOrDir, m.store.Root)
}

// isPath reports whether what the user typed can only be a file-system path,
// never a catalog name or an owner/name repo: absolute, rooted ("/models" is one on
// Windows too, on the current drive), relative to "." or "..", or holding a
// backslash anywhere (Windows' separator; no Hugging Face name holds one).
func isPath(s string) bool {
	return filepath.IsAbs(s) || filepath.VolumeName(s) != "" || s == "." || s == ".." ||
		strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.Contains(s, `\`)
}

// checkDir accepts a model folder unless its manifest or files say a file failed verification.
func checkDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if man, err := store.ReadManifest(abs); err == nil {
		if err := man.Verified(); err != nil {
			return "", err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := noQuarantine(abs); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(abs, "config.json")); err != nil {
		// A GGUF file carries its config in its metadata (the engine reads it there).
		if ggufs, _ := filepath.Glob(filepath.Join(abs, "*.gguf")); len(ggufs) == 0 {
			return "", fmt.Errorf("%s is not a model folder (no config.json)", abs)
		}
	}
	return abs, nil
}

// noQuarantine refuses a folder holding a file that failed verification.
func noQuarantine(dir string) error {
	var bad string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".corrupt") && bad == "" {
			bad = p
		}
		return nil
	})
	if bad != "" {
		rel, _ := filepath.Rel(dir, bad)
		return fmt.Errorf("%s: file %s failed verification and was quarantined; download the model again (`darkroom pull`) before using it",
			dir, strings.TrimSuffix(rel, ".corrupt"))
	}
	return nil
}

// PullOptions tune Pull.
type PullOptions struct {
	Revision string   // branch, tag or commit ("main")
	Include  []string // globs of file names to fetch (default: the catalog's, else all)
	// Reserve is free space the download must leave in the models folder beyond its
	// own (download.Options.Reserve): what will be made from it (a profile converted
	// on this PC), so that a download its conversion cannot follow is refused first.
	Reserve int64
}

// Pull starts downloading a model (a catalog ID or an owner/name repo) into the
// store and returns at once; follow it with Subscribe or Transfer.Wait. A model
// already partly downloaded continues from its .part files; verified files are
// not fetched again. Before any large file, config.json is fetched and checked: a
// repo whose format the engine cannot load is refused up front.
func (m *Manager) Pull(ctx context.Context, name string, opt PullOptions) (*Transfer, error) {
	repo, include, modelName := name, opt.Include, name
	var companion *catalog.Companion
	quant := ""      // a GGUF repo's quantization named after it (ggufquant.go)
	var mix gguf.Mix // a catalog GGUF entry's, its file found by it where its name is not the repo's
	if e, ok := catalog.Find(name); ok {
		companion = e.Companion
		if e.Builtin {
			return nil, fmt.Errorf("%s is built into Darkroom; nothing to download", e.Name)
		}
		repo, modelName = e.Repo, m.downloadOf(e)
		if len(include) == 0 {
			include, mix = e.Include, e.Mix
		}
		if opt.Revision == "" {
			opt.Revision = e.Revision
		}
	} else if r, q := splitQuant(name); q != "" {
		repo, quant = r, strings.ToUpper(q)
		modelName = repo + ":" + quant
		if e, ok := catalog.Find(repo); ok { // Unsloth's repo: its tokenizer comes from the base repo, as its entries'
			companion = e.Companion
			if opt.Revision == "" {
				opt.Revision = e.Revision
			}
		}
	}
	if err := catalog.CheckLoadable(repo); err != nil {
		return nil, err
	}
	running, release, err := m.startPull(ctx, modelName, "download "+name) // until this pull's transfer is a job, or fails
	if running != nil || err != nil {
		return running, err // already running: the same transfer
	}
	defer release()
	// Another process's download of the model (the app opened twice, `darkroom
	// pull`) would write the same .part files: the model's hold, kept until the
	// transfer finishes (finish lets it go).
	unhold, err := m.store.Hold(modelName, "downloading it")
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", name, err)
	}
	handed := false
	defer func() {
		if !handed {
			unhold()
		}
	}()

	rev, err := m.hub.Revision(ctx, repo, opt.Revision)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", repo, err)
	}
	files := filterFiles(rev.Files, include)
	if len(files) == 0 && mix != "" {
		// The catalog names the file as Unsloth names its quantizations; a repo that
		// names it otherwise ("-UD-") has it found by its quantization, and one without
		// it says which it has (a *QuantChoice), as a repo named with that mix would.
		f, err := ggufForQuant(repo, string(mix), rev.Files)
		if err != nil {
			return nil, fmt.Errorf("pull %s: %w", name, m.withChoiceConfig(ctx, repo, rev.Commit, rev.Files, err))
		}
		files = []hub.File{f}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("pull %s: no files match %v at %s", repo, include, rev.Commit)
	}
	if quant != "" { // the repo's other files, and of its GGUF files the one named
		f, err := ggufForQuant(repo, quant, files)
		if err != nil {
			return nil, fmt.Errorf("pull %s: %w", name, m.withChoiceConfig(ctx, repo, rev.Commit, files, err))
		}
		files = slices.DeleteFunc(files, func(g hub.File) bool { return strings.HasSuffix(strings.ToLower(g.Name), ".gguf") })
		files = append(files, f)
	} else if len(ggufQuants(files)) > 0 { // a vision projector beside a model's GGUF: not Darkroom's to load
		files = slices.DeleteFunc(files, func(g hub.File) bool { return weights.IsProjectorGGUF(g.Name) })
	}
	// GGUF files read by ranges before their download (checkGGUF, ggufTokenizer), for a
	// few minutes at most: a Hub that stalls then refuses nothing (the loader checks).
	hctx, stop := context.WithTimeout(ctx, remoteCheckTime)
	defer stop()
	headers := &remoteHeaders{open: func(f hub.File) *hub.RemoteFile {
		return m.hub.OpenRemote(hctx, m.hub.ResolveURL(repo, rev.Commit, f.Name), f.Size)
	}}
	if companion == nil && !hasFile(files, "tokenizer.json") {
		companion = ggufTokenizer(files, headers) // another publisher's GGUF of a catalog model
	}
	urls := map[string]string{} // file → where it comes from
	for _, f := range files {
		urls[f.Name] = m.hub.ResolveURL(repo, rev.Commit, f.Name)
	}
	if companion != nil { // small files from another repo (a GGUF's tokenizer.json and config.json)
		crev, err := m.hub.Revision(ctx, companion.Repo, companion.Revision)
		if err != nil {
			return nil, fmt.Errorf("pull %s: files from %s: %w", repo, companion.Repo, err)
		}
		for _, f := range filterFiles(crev.Files, companion.Include) {
			if _, dup := urls[f.Name]; !dup { // the repo's own file wins
				files = append(files, f)
				urls[f.Name] = m.hub.ResolveURL(companion.Repo, crev.Commit, f.Name)
			}
		}
	}
	if err := checkFormat(repo, files); err != nil {
		return nil, fmt.Errorf("pull %s: %w", repo, m.withChoiceConfig(ctx, repo, rev.Commit, files, err))
	}

	man, err := m.store.Load(modelName)
	fresh := err != nil // nothing of this model here before this pull
	if err != nil || man.Commit != rev.Commit {
		old := man
		man = &store.Manifest{Name: modelName, Repo: repo, Source: "hub", Profile: "bf16"}
		if old != nil {
			man.Created = old.Created
		}
	}
	man.Revision, man.Commit, man.Endpoint, man.Error = opt.Revision, rev.Commit, m.hub.Endpoint, ""
	if man.Revision == "" {
		man.Revision = "main"
	}
	dir := m.store.ModelDir(modelName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pull %s: %w", repo, err)
	}
	man.Files = mergeFiles(man.Files, files, dir)
	man.State = store.StateDownloading
	if err := m.store.Save(man); err != nil {
		return nil, fmt.Errorf("pull %s: %w", repo, err)
	}

	// config.json first: refuse what the engine cannot load before fetching gigabytes.
	var first, rest []download.File
	for _, f := range man.Files {
		if f.State == store.FileComplete {
			continue
		}
		df := download.File{Name: f.Name, URL: urls[f.Name], Size: f.Size, SHA256: f.SHA256, GitOID: f.GitOID}
		if f.Name == "config.json" {
			first = append(first, df)
		} else {
			rest = append(rest, df)
		}
	}
	t := &Transfer{m: m, name: modelName, done: make(chan struct{}), last: Event{Model: modelName, State: "downloading", ETA: -1},
		unhold: unhold, reserve: opt.Reserve}
	handed = true
	m.mu.Lock()
	m.jobs[modelName] = t
	m.mu.Unlock()
	if len(first) > 0 {
		if err := m.runJob(ctx, t, man, first); err != nil {
			m.finish(t, man, err)
			return nil, fmt.Errorf("pull %s: %w", repo, err)
		}
	}
	err = nil
	if hasFile(files, "config.json") { // (a GGUF without config.json: the engine reads the config from its metadata)
		err = checkConfig(filepath.Join(dir, "config.json"))
	}
	for _, f := range man.Files {
		if err == nil && f.State != store.FileComplete && strings.HasSuffix(strings.ToLower(f.Name), ".gguf") {
			err = checkGGUF(ctx, headers, hub.File{Name: f.Name, Size: f.Size}, dir)
		}
	}
	if err != nil {
		err = fmt.Errorf("pull %s: %w", repo, err)
		m.finish(t, man, err)
		if fresh { // a config.json the engine cannot load is all there is: no model to list, nor to delete by hand
			_ = m.Delete(modelName)
		}
		return nil, err
	}
	go func() {
		err := m.runJob(ctx, t, man, rest)
		m.finish(t, man, err)
	}()
	return t, nil
}

// runJob runs one download job for t, keeping the manifest in step.
func (m *Manager) runJob(ctx context.Context, t *Transfer, man *store.Manifest, files []download.File) error {
	if len(files) == 0 {
		return nil
	}
	var verified int64
	m.manifest.Lock()
	for _, f := range man.Files {
		if f.State == store.FileComplete {
			verified += f.Size
		}
	}
	m.manifest.Unlock()
	t.mu.Lock()
	t.verifiedAtStart = verified
	t.mu.Unlock()
	opt := m.dl
	opt.Reserve = t.reserve
	opt.Authorize = m.hub.Authorize
	opt.OnEvent = func(ev download.Event) { m.onEvent(t, man, ev) }
	job := download.New(m.store.ModelDir(man.Name), files, opt)
	// Paused or canceled between jobs (config files → weights): the new job
	// takes it before it starts, so it asks the hub for nothing. It is taken
	// under t.mu, so a Resume or Pause that follows acts on the job after it.
	t.mu.Lock()
	t.job = job
	switch {
	case t.canceled:
		job.Cancel()
	case t.paused:
		job.Pause()
	}
	t.mu.Unlock()
	job.Start(ctx)
	return job.Wait()
}

// onEvent updates the manifest on file results and forwards progress.
func (m *Manager) onEvent(t *Transfer, man *store.Manifest, ev download.Event) {
	out := Event{Model: man.Name, File: ev.File, Done: ev.Done, Total: ev.Total, Rate: ev.Rate, ETA: ev.ETA, Err: ev.Err}
	// Done/Total cover the whole model, not just this job.
	var before, total int64
	m.manifest.Lock()
	for _, f := range man.Files {
		total += f.Size
	}
	m.manifest.Unlock()
	t.mu.Lock()
	before = t.verifiedAtStart
	t.mu.Unlock()
	out.Done, out.Total = ev.Done+before, total
	switch ev.Kind {
	case download.EventFileDone, download.EventFileError:
		m.manifest.Lock()
		for i := range man.Files {
			if man.Files[i].Name != ev.File {
				continue
			}
			if ev.Kind == download.EventFileDone {
				man.Files[i].State, man.Files[i].Error = store.FileComplete, ""
			} else {
				var ve *download.VerifyError
				if errors.As(ev.Err, &ve) {
					man.Files[i].State, man.Files[i].Error = store.FileCorrupt, fmt.Sprintf("%s %s, expected %s", ve.Algo, ve.Got, ve.Want)
				} else {
					man.Files[i].State, man.Files[i].Error = store.FilePartial, ev.Err.Error()
				}
			}
		}
		_ = m.store.Save(man)
		m.manifest.Unlock()
		out.State = "downloading"
		if ev.Err != nil {
			out.State, out.Message = "file-failed", ev.Err.Error()
		}
	case download.EventRetry:
		out.State, out.Message = "downloading", fmt.Sprintf("%s: retrying (attempt %d) after: %v", ev.File, ev.Attempt, ev.Err)
	case download.EventVerifying:
		out.State, out.Message = "verifying", "re-checking the partial "+ev.File+" before resuming"
	default:
		switch ev.State {
		case download.StateFailed, download.StateCanceled:
			// The transfer's end is finish's to tell, once the manager no longer
			// has it running: a Pull made on hearing it (Download tapped again as
			// the card says why) would otherwise be handed this ending transfer.
			return
		case download.StateDone:
			out.State = "downloading" // the Transfer reports "complete" when the manifest is final
		default:
			out.State = string(ev.State)
		}
	}
	t.setLast(out)
	m.publish(out)
}

// finish records a transfer's end in the manifest and tells subscribers.
func (m *Manager) finish(t *Transfer, man *store.Manifest, err error) {
	m.manifest.Lock()
	state := store.StateComplete
	for _, f := range man.Files {
		if f.State == store.FileCorrupt {
			state = store.StateCorrupt
		}
	}
	switch {
	case errors.Is(err, download.ErrCanceled):
		state = store.StateCanceled // the .part files are gone; verified files and the manifest stay
		for i := range man.Files {
			if man.Files[i].State == store.FilePartial {
				man.Files[i].State = store.FilePending
			}
		}
	case errors.Is(err, context.Canceled) && state != store.StateCorrupt:
		state = store.StatePaused // the program stopped (Ctrl-C, app closed): resume with Pull
		err = fmt.Errorf("interrupted; partial files kept, pull again to resume: %w", err)
	case err != nil && state != store.StateCorrupt:
		state = store.StateFailed
	case err == nil:
		if verr := man.Verified(); verr != nil {
			state, err = store.StateFailed, verr
		}
	}
	man.State = state
	if err != nil {
		man.Error = err.Error()
	} else {
		man.Error = ""
	}
	_ = m.store.Save(man)
	m.manifest.Unlock()

	ev := t.Last()
	ev.State, ev.Err, ev.Rate, ev.ETA = string(state), err, 0, -1
	if errors.Is(err, download.ErrCanceled) {
		ev.State = "canceled"
	}
	if err != nil {
		ev.Message = err.Error()
	}
	t.setLast(ev)
	m.mu.Lock()
	delete(m.jobs, t.name)
	m.mu.Unlock()
	t.unhold()
	t.err = err
	// Subscribers hear the end before Wait returns, so a caller that waits sees
	// the final event (a subscriber must not Wait on the transfer it is told about).
	m.publish(ev)
	close(t.done)
}

// Transfer is a running download of one model.
type Transfer struct {
	m    *Manager
	name string

	mu              sync.Mutex
	job             *download.Job
	last            Event
	canceled        bool
	paused          bool // the user's last word: applies to jobs started later too
	verifiedAtStart int64
	done            chan struct{}
	err             error
	unhold          func() // lets the model's hold (store.Hold) go, at the end
	reserve         int64  // PullOptions.Reserve
}

// Name is the model's name in the store.
func (t *Transfer) Name() string { return t.name }

// Wait blocks until the download ends (not while paused) and returns its error.
func (t *Transfer) Wait() error {
	<-t.done
	return t.err
}

// Done is closed when the download ends.
func (t *Transfer) Done() <-chan struct{} { return t.done }

// Last is the latest event.
func (t *Transfer) Last() Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *Transfer) setLast(ev Event) {
	t.mu.Lock()
	t.last = ev
	t.mu.Unlock()
}

// Pause stops the transfer, keeping partial files.
func (t *Transfer) Pause() {
	t.mu.Lock()
	t.paused = true
	j := t.job
	t.mu.Unlock()
	if j != nil {
		j.Pause()
	}
}

// Resume continues a paused transfer.
func (t *Transfer) Resume() {
	t.mu.Lock()
	t.paused = false
	j := t.job
	t.mu.Unlock()
	if j != nil {
		j.Resume()
	}
}

// Cancel stops the transfer and removes its partial files (verified files stay).
func (t *Transfer) Cancel() {
	t.mu.Lock()
	t.canceled = true
	j := t.job
	t.mu.Unlock()
	if j != nil {
		j.Cancel()
	}
}

// Transfer returns the running download of a model, nil if none.
func (m *Manager) Transfer(name string) *Transfer {
	local := ""
	if e, ok := catalog.Find(name); ok {
		local = m.downloadOf(e) // (the store read outside m.mu)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.jobs[name]; t != nil {
		return t
	}
	return m.jobs[local]
}

// Pause, Resume and Cancel act on a model's running download by name. Cancel
// also ends a paused download no transfer runs (after a restart, or a download
// cut off): it removes its partial files, keeping the verified ones, as
// canceling a running one does.
func (m *Manager) Pause(name string) error  { return m.act(name, (*Transfer).Pause) }
func (m *Manager) Resume(name string) error { return m.act(name, (*Transfer).Resume) }
func (m *Manager) Cancel(name string) error {
	if m.Transfer(name) != nil {
		return m.act(name, (*Transfer).Cancel)
	}
	key, err := m.localName(name)
	if err != nil {
		return err
	}
	unhold, err := m.store.Hold(key, "canceling its download") // not from under another process's download
	if err != nil {
		return fmt.Errorf("cancel %s: %w", name, err)
	}
	defer unhold()
	m.manifest.Lock()
	defer m.manifest.Unlock()
	man, err := m.store.Load(key)
	if err != nil {
		return err
	}
	if !unfinished(man.State) {
		return fmt.Errorf("%s has no download to cancel (it is %s)", name, man.State)
	}
	dir := m.store.ModelDir(key)
	for i, f := range man.Files {
		if f.State == store.FileComplete || f.State == store.FileCorrupt {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		for _, q := range []string{p + ".part", p + ".part.json"} {
			if err := os.Remove(q); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cancel %s: %w", name, err)
			}
		}
		man.Files[i].State, man.Files[i].Error = store.FilePending, ""
	}
	man.State, man.Error = store.StateCanceled, ""
	return m.store.Save(man)
}

// unfinished reports whether a manifest's state is a download that has not
// ended: running, paused, or cut off while it ran.
func unfinished(s store.State) bool { return s == store.StateDownloading || s == store.StatePaused }

// kept is the event of a download no transfer runs: paused, with the bytes its
// verified and partial files hold.
func (m *Manager) kept(man *store.Manifest) Event {
	ev := Event{Model: man.Name, State: string(store.StatePaused), ETA: -1}
	dir := m.store.ModelDir(man.Name)
	for _, f := range man.Files {
		ev.Total += f.Size
		if f.State == store.FileComplete {
			ev.Done += f.Size
		} else {
			ev.Done += min(download.PartSize(dir, f.Name), f.Size)
		}
	}
	return ev
}

func (m *Manager) act(name string, f func(*Transfer)) error {
	t := m.Transfer(name)
	if t == nil {
		return fmt.Errorf("%s has no download running", name)
	}
	f(t)
	return nil
}

// filterFiles keeps files matching any glob (matched against the full path and
// the base name); no globs keeps all.
func filterFiles(files []hub.File, globs []string) []hub.File {
	if len(globs) == 0 {
		return files
	}
	var out []hub.File
	for _, f := range files {
		for _, g := range globs {
			if ok, _ := path.Match(g, f.Name); ok {
				out = append(out, f)
				break
			}
			if ok, _ := path.Match(g, path.Base(f.Name)); ok && !strings.Contains(g, "/") {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

func hasFile(files []hub.File, name string) bool {
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// checkFormat refuses file sets the engine cannot load: Hugging Face safetensors need
// config.json; a GGUF (engine/gguf) must be a single file (one quantization) with the
// Hugging Face tokenizer.json beside it.
func checkFormat(repo string, files []hub.File) error {
	hasConfig, hasST := false, false
	for _, f := range files {
		switch {
		case f.Name == "config.json":
			hasConfig = true
		case strings.HasSuffix(f.Name, ".safetensors"):
			hasST = true
		}
	}
	qs := ggufQuants(files) // the model's GGUF files (not a vision projector's)
	switch ggufs := modelGGUFs(qs); {
	case len(ggufs) > 0 && !hasST:
		if len(ggufs) > 1 {
			return quantChoice(repo, "", qs)
		}
		if !hasFile(files, "tokenizer.json") {
			return fmt.Errorf("the GGUF comes without tokenizer.json, which Darkroom needs beside it (Darkroom does not rebuild a tokenizer from GGUF metadata), " +
				"and its vocabulary is not that of a model Darkroom's catalog lists, whose tokenizer it would take from the model's own repo: choose a repo that ships tokenizer.json")
		}
		return nil
	case !hasConfig:
		return fmt.Errorf("the repo has no config.json at its top level; Darkroom needs a Hugging Face model folder")
	case !hasST:
		return fmt.Errorf("the repo has no .safetensors weights")
	}
	return nil
}

// checkConfig parses config.json with the engine's rules (model type, dimensions,
// quantization method).
func checkConfig(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config.json: %w", err)
	}
	if _, err := config.ParseModel(b); err != nil {
		return fmt.Errorf("Darkroom cannot load this model: %w", err)
	}
	return nil
}

// mergeFiles builds the manifest's file list from the Hub's, keeping the states
// of unchanged files: a verified file stays verified only if it is still there with
// its size; a file already in place but not recorded (the process died between the
// rename and the manifest write) is adopted after re-hashing it.
func mergeFiles(old []store.File, hubFiles []hub.File, dir string) []store.File {
	prev := map[string]store.File{}
	for _, f := range old {
		prev[f.Name] = f
	}
	out := make([]store.File, 0, len(hubFiles))
	for _, h := range hubFiles {
		f := store.File{Name: h.Name, Size: h.Size, SHA256: h.SHA256, GitOID: h.GitOID, State: store.FilePending}
		p, had := prev[h.Name]
		same := had && p.SHA256 == h.SHA256 && p.GitOID == h.GitOID && p.Size == h.Size
		final := filepath.Join(dir, filepath.FromSlash(h.Name))
		st, statErr := os.Stat(final)
		switch {
		case same && p.State == store.FileComplete && statErr == nil && st.Size() == h.Size:
			f.State = store.FileComplete
		case statErr == nil && st.Size() == h.Size && verifyFile(final, h):
			f.State = store.FileComplete
		case same && p.State == store.FileCorrupt:
			f.State, f.Error = store.FilePending, "" // asked again: fetch anew (the .corrupt stays for diagnosis)
		}
		if f.State != store.FileComplete && download.PartSize(dir, h.Name) > 0 {
			f.State = store.FilePartial
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func verifyFile(p string, h hub.File) bool {
	if h.SHA256 == "" {
		return false
	}
	got, err := download.HashFile(p)
	return err == nil && strings.EqualFold(got, h.SHA256)
}
