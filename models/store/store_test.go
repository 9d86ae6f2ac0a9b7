package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestRoundTripAndVerified(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Name: "acme/tiny", Repo: "acme/tiny", Source: "hub", State: StateDownloading,
		Files: []File{{Name: "config.json", Size: 10, State: FileComplete}, {Name: "model.safetensors", Size: 99, SHA256: "ab", State: FilePartial}}}
	if err := s.Save(m); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("acme/tiny")
	if err != nil || got.Name != "acme/tiny" || len(got.Files) != 2 || got.TotalSize() != 109 {
		t.Fatalf("load: %+v, %v", got, err)
	}
	if got.Verified() == nil {
		t.Errorf("partial model verified")
	}
	got.Files[1].State, got.Files[1].Error = FileCorrupt, "sha256 x, expected ab"
	if err := got.Verified(); err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("corrupt: %v", err)
	}
	got.Files[1].State = FileComplete
	if err := got.Verified(); err != nil {
		t.Errorf("complete: %v", err)
	}
	if filepath.Base(s.ModelDir("acme/tiny")) != "acme--tiny" {
		t.Errorf("dir name %s", s.ModelDir("acme/tiny"))
	}
	// No temporary files left by the atomic writes.
	ents, _ := os.ReadDir(s.ModelDir("acme/tiny"))
	if len(ents) != 1 {
		t.Errorf("model folder holds %d entries, want only the manifest", len(ents))
	}
	l, _ := s.List()
	if len(l) != 1 {
		t.Errorf("list: %d", len(l))
	}
	if err := s.Delete("acme/tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("acme/tiny"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after delete: %v", err)
	}
	if err := s.Delete("acme/tiny"); err == nil {
		t.Errorf("deleting a missing model succeeded")
	}
}

func TestDefaultDirEnv(t *testing.T) {
	t.Setenv(EnvDir, "/tmp/x-models")
	if DefaultDir() != "/tmp/x-models" {
		t.Errorf("DARKROOM_MODELS_DIR ignored: %s", DefaultDir())
	}
	t.Setenv(EnvDir, "")
	if !strings.HasSuffix(DefaultDir(), filepath.Join("darkroom", "models")) {
		t.Errorf("default %s", DefaultDir())
	}
}

func TestFreeSpace(t *testing.T) {
	n, err := FreeSpace(filepath.Join(t.TempDir(), "not", "yet"))
	if err != nil || n <= 0 {
		t.Errorf("free space %d, %v", n, err)
	}
}

// twoModels is a store holding a/one and b/two (a 3 MiB w.bin each), a/one active.
func twoModels(t *testing.T) (*Store, string) {
	t.Helper()
	src := t.TempDir()
	s, _ := Open(src)
	for _, name := range []string{"a/one", "b/two"} {
		m := &Manifest{Name: name, Source: "hub", State: StateComplete, Files: []File{{Name: "w.bin", Size: 3 << 20, State: FileComplete}}}
		if err := s.Save(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.ModelDir(name), "w.bin"), make([]byte, 3<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.SetLibraryState(Library{Active: "a/one"})
	return s, src
}

// TestMoveResumesAndChecksSpace moves a store with a copy (forced by a stale
// partial copy at the destination, as after an interrupted move), then checks
// the space check refuses a destination that is too small.
func TestMoveResumesAndChecksSpace(t *testing.T) {
	s, src := twoModels(t)
	dst := filepath.Join(t.TempDir(), "new")
	// An interrupted earlier move left a partial copy of a--one (no manifest yet).
	os.MkdirAll(filepath.Join(dst, "a--one"), 0o755)
	os.WriteFile(filepath.Join(dst, "a--one", "w.bin"), make([]byte, 1<<20), 0o644)

	small := &Store{Root: s.Root, FreeSpace: func(string) (int64, error) { return 1 << 20, nil }, SameDisk: s.SameDisk}
	if err := small.Move(context.Background(), dst, nil); err == nil || !strings.Contains(err.Error(), "free space") {
		t.Errorf("too-small destination: %v", err)
	}
	var last MoveProgress
	if err := s.Move(context.Background(), dst, func(p MoveProgress) { last = p }); err != nil {
		t.Fatal(err)
	}
	if s.Root != dst {
		t.Errorf("root %s after move", s.Root)
	}
	l, _ := s.List()
	if len(l) != 2 {
		t.Fatalf("%d models after move", len(l))
	}
	for _, m := range l {
		st, err := os.Stat(filepath.Join(s.ModelDir(m.Name), "w.bin"))
		if err != nil || st.Size() != 3<<20 {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
	if lib, _ := s.LibraryState(); lib.Active != "a/one" {
		t.Errorf("library state lost: %+v", lib)
	}
	if _, err := os.Stat(filepath.Join(src, "a--one")); err == nil {
		t.Errorf("source folder kept after move")
	}
	if last.Done == 0 && last.Total != 0 {
		t.Errorf("no progress reported: %+v", last)
	}
	if err := s.Move(context.Background(), filepath.Join(dst, "inside"), nil); err == nil {
		t.Errorf("moved into itself")
	}
}

// TestMoveStoppedHalfWayLeavesEveryModel: a move that fails on its second model
// (a folder in the way at the destination) leaves both models in the old
// folder — the first, renamed there already, is renamed back; it was left at
// the destination, out of the store's sight — and the store where it was.
// Moving again once the way is clear finishes the move.
func TestMoveStoppedHalfWayLeavesEveryModel(t *testing.T) {
	s, src := twoModels(t)
	dst := filepath.Join(t.TempDir(), "new")
	os.MkdirAll(filepath.Join(dst, "b--two", "w.bin", "in-the-way"), 0o755)
	p, err := s.PlanMove(dst)
	if err != nil || p.Models != 2 || p.Bytes < 6<<20 || p.Copy < 3<<20 || p.Copy >= p.Bytes || !p.Fits() {
		t.Fatalf("plan %+v, %v; want 2 models, a/one renamed and b/two copied", p, err)
	}
	err = s.Move(context.Background(), dst, nil)
	if err == nil || !strings.Contains(err.Error(), "every model is still in "+src) {
		t.Fatalf("move with a folder in the way: %v", err)
	}
	if s.Root != src {
		t.Errorf("root %s after a failed move", s.Root)
	}
	for _, dir := range []string{"a--one", "b--two"} {
		if st, err := os.Stat(filepath.Join(src, dir, "w.bin")); err != nil || st.Size() != 3<<20 {
			t.Errorf("%s after a failed move: %v", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "a--one")); err == nil {
		t.Errorf("a--one stayed at the destination of a failed move")
	}
	if l, err := s.List(); err != nil || len(l) != 2 {
		t.Errorf("the store lists %d models after a failed move: %v", len(l), err)
	}

	os.RemoveAll(filepath.Join(dst, "b--two", "w.bin"))
	if err := s.Move(context.Background(), dst, nil); err != nil {
		t.Fatal(err)
	}
	if l, err := s.List(); s.Root != dst || err != nil || len(l) != 2 {
		t.Fatalf("moved again: root %s, %d models, %v", s.Root, len(l), err)
	}
	if ents, _ := os.ReadDir(src); len(ents) != 0 {
		t.Errorf("the old folder keeps %d entries", len(ents))
	}
}

// TestDeleteHeldModel: a model whose folder cannot be renamed away (on Windows, a file
// in it another program has mapped) is refused whole, saying what to do, and stays
// listed with its files; one whose files cannot all be removed (the rename went
// through, the removal did not) leaves the Library at once, its leftovers out of
// the way in .trash until a later Delete removes them.
func TestDeleteHeldModel(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"acme/held", "acme/other"} {
		if err := s.Save(&Manifest{Name: name, Repo: name, Source: "hub", State: StateComplete}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.ModelDir(name), "model.safetensors"), []byte("weights"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { rename, removeAll = os.Rename, os.RemoveAll }()
	inUse := errors.New("The process cannot access the file because it is being used by another process.")
	rename = func(string, string) error { return inUse }
	if err := s.Delete("acme/held"); err == nil || !errors.Is(err, inUse) || !strings.Contains(err.Error(), "close it, then delete again") {
		t.Fatalf("a refused rename: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(s.ModelDir("acme/held"), "model.safetensors")); err != nil || string(b) != "weights" {
		t.Fatalf("after a refused delete the model's file reads %q, %v", b, err)
	}
	if _, err := s.Load("acme/held"); err != nil {
		t.Fatalf("after a refused delete: %v", err)
	}

	rename = os.Rename
	removeAll = func(string) error { return inUse }
	if err := s.Delete("acme/held"); err != nil {
		t.Fatalf("a held file in the trash: %v", err)
	}
	if _, err := s.Load("acme/held"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a deleted model still loads: %v", err)
	}
	if l, _ := s.List(); len(l) != 1 || l[0].Name != "acme/other" {
		t.Errorf("list after the delete: %v", l)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.Root, trashDir)); len(ents) != 1 {
		t.Fatalf("trash holds %d folders, want the held one", len(ents))
	}

	removeAll = os.RemoveAll
	if err := s.Delete("acme/other"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.Root, trashDir)); len(ents) != 0 {
		t.Errorf("trash still holds %d folders after a later delete", len(ents))
	}
	if ents, _ := os.ReadDir(s.Root); len(ents) != 1 || ents[0].Name() != trashDir {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("models folder holds %v, want only the emptied trash", names)
	}
}
