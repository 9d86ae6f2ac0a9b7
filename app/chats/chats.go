// Package chats stores chat threads on disk: one JSON file per thread under
// $XDG_DATA_HOME/darkroom/chats, each written atomically (temp file, fsync, rename),
// so a process killed mid-save leaves the previous version, never a truncated file.
// A thread file that cannot be read is reported for that thread; the rest still load.
// A thread also says whether a search finds it, and where (Match, search.go), and
// writes itself out as Markdown for export.
package chats

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/adrg/xdg"
	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// Message is one turn of a thread.
type Message struct {
	Role    string    `json:"role"` // "user" or "model"
	Content string    `json:"content"`
	Thought string    `json:"thought,omitempty"` // the model's thinking channel, when it had one
	Time    time.Time `json:"time"`
}

// Thread is one conversation.
type Thread struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	System   string    `json:"system,omitempty"` // per-thread system prompt
	Thinking bool      `json:"thinking,omitempty"`
	Mode     string    `json:"mode,omitempty"`  // the mode picked for it: "diffusion" or "ar"; "" automatic
	Model    string    `json:"model,omitempty"` // the model that answered last
	Messages []Message `json:"messages"`
	// ReadFrom is the first of Messages the model read for its last answer,
	// where the chat had grown past what it reads at once (the earlier ones
	// were left out: engine.Request.FitContext); 0 where it read them all.
	ReadFrom int       `json:"read_from,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// Store is a folder of thread files.
type Store struct {
	Dir string
}

// DefaultDir is $XDG_DATA_HOME/darkroom/chats.
func DefaultDir() string { return filepath.Join(xdg.DataHome, "darkroom", "chats") }

// Open returns the store at dir (DefaultDir when empty), creating the folder.
func Open(dir string) (*Store, error) {
	if dir == "" {
		dir = DefaultDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("chats folder %s: %w", dir, err)
	}
	return &Store{Dir: dir}, nil
}

// LoadError reports one thread file that could not be read.
type LoadError struct {
	File string
	Err  error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("chat %s could not be read: %v", filepath.Base(e.File), e.Err)
}
func (e *LoadError) Unwrap() error { return e.Err }

// NewID returns a fresh thread id.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:4])
}

// New returns an empty thread (not yet saved).
func New(title, system string) *Thread {
	now := time.Now().UTC()
	return &Thread{ID: NewID(), Title: title, System: system, Created: now, Updated: now}
}

func validID(id string) bool {
	if id == "" || len(id) > 100 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (s *Store) path(id string) string { return filepath.Join(s.Dir, id+".json") }

// List loads every thread, newest first. Threads whose file is corrupt are left
// out of the list and reported one LoadError each.
func (s *Store) List() ([]*Thread, []*LoadError) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, []*LoadError{{File: s.Dir, Err: err}}
	}
	var threads []*Thread
	var errs []*LoadError
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue // temp files start with "."
		}
		t, err := s.Load(strings.TrimSuffix(name, ".json"))
		if err != nil {
			errs = append(errs, &LoadError{File: filepath.Join(s.Dir, name), Err: err})
			continue
		}
		threads = append(threads, t)
	}
	sort.SliceStable(threads, func(i, j int) bool { return threads[i].Updated.After(threads[j].Updated) })
	return threads, errs
}

// Load reads one thread.
func (s *Store) Load(id string) (*Thread, error) {
	if !validID(id) {
		return nil, fmt.Errorf("invalid chat id %q", id)
	}
	data, err := os.ReadFile(s.path(id))
	if err != nil {
		return nil, err
	}
	var t Thread
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("not a valid chat file: %w", err)
	}
	if t.ID != id {
		return nil, fmt.Errorf("file holds chat %q, not %q", t.ID, id)
	}
	return &t, nil
}

// Save writes a thread atomically: a temp file in the same folder, fsync, rename.
func (s *Store) Save(t *Thread) error {
	if !validID(t.ID) {
		return fmt.Errorf("save chat: invalid id %q", t.ID)
	}
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("save chat %s: %w", t.ID, err)
	}
	if err := atomicfile.WriteFile(s.path(t.ID), data, 0o600); err != nil {
		return fmt.Errorf("save chat %s: %w", t.ID, err)
	}
	return nil
}

// Delete removes a thread.
func (s *Store) Delete(id string) error {
	if !validID(id) {
		return fmt.Errorf("delete chat: invalid id %q", id)
	}
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete chat %s: %w", id, err)
	}
	return nil
}

// Markdown is the thread as a Markdown document, for "Export chat": its title as
// the heading, the system prompt where it has one, then each message under who
// wrote it ("You", or the model the thread names; "Model" where it names none),
// its content as written (the answers are Markdown already), a thought in a
// quoted block before its answer.
func (t *Thread) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", strings.TrimSpace(t.Title))
	if s := strings.TrimSpace(t.System); s != "" {
		fmt.Fprintf(&b, "*System prompt:* %s\n\n", strings.Join(strings.Fields(s), " "))
	}
	model := t.Model
	if model == "" {
		model = "Model"
	}
	for _, m := range t.Messages {
		who := "You"
		if m.Role == "model" {
			who = model
		}
		fmt.Fprintf(&b, "## %s\n\n", who)
		if th := strings.TrimSpace(m.Thought); th != "" {
			b.WriteString("> *Thinking:* " + strings.ReplaceAll(th, "\n", "\n> ") + "\n\n")
		}
		b.WriteString(strings.TrimSpace(m.Content) + "\n\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// FileName is a file name for the thread's export: its title with the
// characters file systems refuse (and leading dots) replaced, at most 80
// bytes, then ext ("What is Unix?" → "What is Unix_.md").
func (t *Thread) FileName(ext string) string {
	name := strings.Map(func(r rune) rune {
		if r < ' ' || strings.ContainsRune(`<>:"/\|?*`, r) {
			return '_'
		}
		return r
	}, strings.TrimSpace(t.Title))
	name = strings.TrimLeft(name, ".")
	for len(name) > 80 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name = strings.TrimSpace(name); name == "" {
		name = "chat"
	}
	return name + ext
}
