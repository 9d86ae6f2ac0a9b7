// Package store owns Darkroom's local model store: the folder that holds every
// downloaded or converted model, one sub-folder per model with a manifest
// (darkroom-manifest.json) recording where the files came from, their sizes and
// hashes and whether each was verified. It also owns atomic file writes, the
// free-space query, deleting a model, moving the whole store to another folder,
// and the holds that keep two processes from working on one model at once
// (hold.go: <root>/.locks).
//
// (A deleted model's folder is first renamed into <root>/.trash, then removed:
// what another program still holds — on Windows, a file a `darkroom serve` beside
// the app has mapped — stays there, out of the Library, until a later Delete.)
//
// Layout:
//
//	<root>/
//	  library.json                      store-wide state (active model)
//	  google--diffusiongemma-26B-A4B-it/
//	    darkroom-manifest.json
//	    config.json, model-00001-of-00011.safetensors, …
//	    model-00002-of-00011.safetensors.part   (a download in progress)
//	    model-00003-of-00011.safetensors.corrupt (failed verification, kept for diagnosis)
//
// The store never deletes partial downloads on its own; only an explicit Delete
// or a cancelled download removes them.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/adrg/xdg"
	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// ManifestName is the per-model manifest file inside a model's folder.
const ManifestName = "darkroom-manifest.json"

// EnvDir overrides the store location (the --models-dir flag overrides it in turn).
const EnvDir = "DARKROOM_MODELS_DIR"

// DefaultDir returns the store location: $DARKROOM_MODELS_DIR if set, else
// $XDG_DATA_HOME/darkroom/models (AppData\Local\darkroom\models on Windows).
func DefaultDir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	return filepath.Join(xdg.DataHome, "darkroom", "models")
}

// FileState is the verification state of one file of a model.
type FileState string

const (
	FilePending  FileState = "pending"  // not started
	FilePartial  FileState = "partial"  // a .part file exists
	FileComplete FileState = "complete" // present and verified (size and hash)
	FileCorrupt  FileState = "corrupt"  // failed verification; quarantined as .corrupt, never loaded
)

// State is a model's overall state.
type State string

const (
	StateDownloading State = "downloading" // a download was started and has not finished (may be paused)
	StatePaused      State = "paused"
	StateComplete    State = "complete" // every file verified
	StateFailed      State = "failed"   // stopped with an error (see Manifest.Error)
	StateCorrupt     State = "corrupt"  // at least one file failed verification
	StateCanceled    State = "canceled" // stopped by the user: partial files removed, verified files kept
)

// File is one file of a model.
type File struct {
	Name   string    `json:"name"` // path inside the model folder, slash-separated
	Size   int64     `json:"size"`
	SHA256 string    `json:"sha256,omitempty"`  // LFS files: hex sha256 of the content
	GitOID string    `json:"git_oid,omitempty"` // non-LFS files: git blob sha1
	State  FileState `json:"state"`
	Error  string    `json:"error,omitempty"`
}

// Manifest describes one model in the store.
type Manifest struct {
	Name     string    `json:"name"`               // catalog ID or repo ("google/diffusiongemma-26B-A4B-it")
	Repo     string    `json:"repo,omitempty"`     // Hugging Face repo, when downloaded
	Revision string    `json:"revision,omitempty"` // as requested ("main")
	Commit   string    `json:"commit,omitempty"`   // resolved commit sha
	Endpoint string    `json:"endpoint,omitempty"`
	Source   string    `json:"source"`            // "hub" or "quantize"
	Profile  string    `json:"profile,omitempty"` // "bf16", "int8", "int4"
	BaseOf   string    `json:"base,omitempty"`    // for converted models: the model it was made from
	Files    []File    `json:"files"`
	State    State     `json:"state"`
	Error    string    `json:"error,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// TotalSize is the sum of the files' sizes.
func (m *Manifest) TotalSize() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Verified reports whether every file is complete and verified, and if not, why.
func (m *Manifest) Verified() error {
	if len(m.Files) == 0 {
		return fmt.Errorf("model %s has no files", m.Name)
	}
	for _, f := range m.Files {
		switch f.State {
		case FileComplete:
		case FileCorrupt:
			return fmt.Errorf("model %s: file %s failed verification (%s); it was quarantined and will not be loaded — download it again",
				m.Name, f.Name, f.Error)
		default:
			return fmt.Errorf("model %s: file %s is not downloaded yet (%s)", m.Name, f.Name, f.State)
		}
	}
	return nil
}

// Store is a models folder.
type Store struct {
	Root string
	// FreeSpace reports the bytes available at a path; tests replace it.
	FreeSpace func(path string) (int64, error)
	// SameDisk reports whether two folders are on one file system, where a move
	// renames instead of copying; nil asks the system. Tests replace it.
	SameDisk func(a, b string) bool

	// held counts the holds this Store has taken, by lock file (hold.go), so
	// that Elsewhere does not take this process's own for another's.
	heldMu sync.Mutex
	held   map[string]int
}

// Open returns the store at root (created if missing). An empty root means DefaultDir().
func Open(root string) (*Store, error) {
	if root == "" {
		root = DefaultDir()
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("models folder %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create models folder %s: %w", abs, err)
	}
	return &Store{Root: abs, FreeSpace: FreeSpace}, nil
}

// DirName maps a model name ("owner/repo", "owner/repo:Q6_K" — one quantization of a
// GGUF repo — or "darkroom-mini-int4") to its folder name: "/" and ":" (which no
// Windows folder name may hold) become "--", which no Hugging Face name holds.
func DirName(name string) string {
	return strings.NewReplacer("/", "--", ":", "--").Replace(strings.Trim(name, "/"))
}

// ModelDir is the folder of a model.
func (s *Store) ModelDir(name string) string { return filepath.Join(s.Root, DirName(name)) }

// Load reads a model's manifest. A missing model gives an error wrapping fs.ErrNotExist.
func (s *Store) Load(name string) (*Manifest, error) {
	return ReadManifest(s.ModelDir(name))
}

// ReadManifest reads the manifest in a model folder.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("read manifest of %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", filepath.Join(dir, ManifestName), err)
	}
	return &m, nil
}

// Save writes a model's manifest atomically.
func (s *Store) Save(m *Manifest) error {
	now := time.Now().UTC()
	if m.Created.IsZero() {
		m.Created = now
	}
	m.Updated = now
	dir := s.ModelDir(m.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save manifest of %s: %w", m.Name, err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("save manifest of %s: %w", m.Name, err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, ManifestName), append(b, '\n'), 0o600)
}

// List returns the manifests of every model in the store, sorted by name. Folders
// without a readable manifest are skipped.
func (s *Store) List() ([]*Manifest, error) {
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return nil, fmt.Errorf("list models in %s: %w", s.Root, err)
	}
	var out []*Manifest
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		m, err := ReadManifest(filepath.Join(s.Root, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete removes a model's folder, including partial and quarantined files. The
// folder is first renamed into <root>/.trash, so the model leaves the Library at
// once and whole: where the rename is refused — on Windows, a file in it that another
// program has mapped or holds open (a `darkroom serve` beside the app) — nothing is
// removed and the error says so; what then cannot be removed from the trash stays
// there, out of the Library, and each later Delete tries it again.
func (s *Store) Delete(name string) error {
	dir := s.ModelDir(name)
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); err != nil {
		return fmt.Errorf("delete %s: not in the models folder %s", name, s.Root)
	}
	trash := filepath.Join(s.Root, trashDir)
	if err := os.MkdirAll(trash, 0o755); err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	gone := filepath.Join(trash, fmt.Sprintf("%s-%d", DirName(name), time.Now().UnixNano()))
	if err := rename(dir, gone); err != nil {
		return fmt.Errorf("delete %s: %w (is a program using it, such as a Darkroom server or another Darkroom window? close it, then delete again)", name, err)
	}
	s.emptyTrash()
	return nil
}

// trashDir is where Delete moves a model's folder before removing it.
const trashDir = ".trash"

// rename and removeAll are os.Rename and os.RemoveAll: variables for the tests'
// faults.
var (
	rename    = os.Rename
	removeAll = os.RemoveAll
)

// emptyTrash removes what <root>/.trash holds, as far as it can: a folder a program
// still holds stays for the next time.
func (s *Store) emptyTrash() {
	ents, err := os.ReadDir(filepath.Join(s.Root, trashDir))
	if err != nil {
		return
	}
	for _, e := range ents {
		_ = removeAll(filepath.Join(s.Root, trashDir, e.Name()))
	}
}

// Library is store-wide state kept in <root>/library.json.
type Library struct {
	Active string `json:"active,omitempty"` // the active model's name
}

// LibraryState reads library.json (zero value when missing).
func (s *Store) LibraryState() (Library, error) {
	var l Library
	b, err := os.ReadFile(filepath.Join(s.Root, "library.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("read library state: %w", err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("library state %s: %w", filepath.Join(s.Root, "library.json"), err)
	}
	return l, nil
}

// SetLibraryState writes library.json atomically.
func (s *Store) SetLibraryState(l Library) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(s.Root, "library.json"), append(b, '\n'), 0o600)
}
