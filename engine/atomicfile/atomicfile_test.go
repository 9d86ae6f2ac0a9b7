package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "new content" {
		t.Fatalf("read %q, %v", got, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteFileFailureLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The rename target is a non-empty directory: the write must fail, leave no
	// temporary file and keep the old file untouched.
	target := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(target, []byte("data"), 0o600); err == nil {
		t.Fatal("rename over a non-empty directory succeeded")
	}
	got, _ := os.ReadFile(p)
	if string(got) != "old" {
		t.Errorf("old file = %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestCreateStreams: content written through a File in pieces is invisible at path
// until Commit (a reader sees the old file whole meanwhile), then there whole, with
// its mode, and nothing is left beside it; Write and Commit after Commit fail, and a
// deferred Abort after Commit changes nothing.
func TestCreateStreams(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "shard.safetensors")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	for _, piece := range []string{"new ", "content ", "in pieces"} {
		if _, err := f.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != "old" {
			t.Fatalf("mid-write, the path reads %q", got)
		}
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	if got, _ := os.ReadFile(p); string(got) != "new content in pieces" {
		t.Fatalf("after Commit, %q", got)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("Write after Commit succeeded")
	}
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestAbortLeavesOld: an aborted File (a failed conversion, a cancelled copy) leaves
// the old file as it was and no temporary file, and cannot be committed after.
func TestAbortLeavesOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokenizer.json")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half of the new")); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("after Abort, %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if _, err := Create(filepath.Join(dir, "missing", "x"), 0o644); err == nil {
		t.Error("Create in a missing folder succeeded")
	}
}
