package mapfile

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestMap: a file's bytes, mapped where the system maps (Unix) and read otherwise;
// an empty file is no mapping but an empty read.
func TestMap(t *testing.T) {
	dir := t.TempDir()
	want := bytes.Repeat([]byte("darkroom"), 3000)
	path := filepath.Join(dir, "m.bin")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, unmap, err := Map(f, int64(len(want)))
	if mapped := runtime.GOOS != "windows"; mapped != (err == nil) {
		t.Fatalf("Map: %v (mapped here: %v)", err, mapped)
	}
	if err == nil {
		if !bytes.Equal(b, want) {
			t.Error("the mapping differs from the file")
		}
		if err := unmap(); err != nil {
			t.Error(err)
		}
	}
	b, unmap, err = MapOrRead(f, int64(len(want)))
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("MapOrRead: %d bytes, %v", len(b), err)
	}
	if unmap != nil {
		unmap()
	}

	empty := filepath.Join(dir, "empty.bin")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := os.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, _, err := Map(e, 0); err == nil {
		t.Error("an empty file mapped")
	}
	if b, unmap, err := MapOrRead(e, 0); err != nil || len(b) != 0 || unmap != nil {
		t.Errorf("MapOrRead of an empty file = %d bytes, unmap %v, %v; want none read", len(b), unmap != nil, err)
	}
}
