package mapfile

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestMap: a file's bytes, mapped where the system maps (Unix, Windows) and read
// otherwise; an empty file is no mapping but an empty read.
func TestMap(t *testing.T) {
	want := bytes.Repeat([]byte("darkroom"), 3000)
	f := openWith(t, want)
	b, unmap, err := Map(f, int64(len(want)))
	maps := runtime.GOOS != "js" && runtime.GOOS != "wasip1" && runtime.GOOS != "plan9" // mapfile_other.go's
	if mapped := maps && !Off(); mapped != (err == nil) {
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
	b, unmap, err = MapOrRead(f, int64(len(want)), nil)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("MapOrRead: %d bytes, %v", len(b), err)
	}
	if unmap != nil {
		unmap()
	}

	e := openWith(t, nil)
	if _, _, err := Map(e, 0); err == nil {
		t.Error("an empty file mapped")
	}
	if b, unmap, err := MapOrRead(e, 0, nil); err != nil || len(b) != 0 || unmap != nil {
		t.Errorf("MapOrRead of an empty file = %d bytes, unmap %v, %v; want none read", len(b), unmap != nil, err)
	}
}

// TestMapOff: DARKROOM_NO_MMAP=1 declines every mapping, and MapOrRead reads instead.
func TestMapOff(t *testing.T) {
	want := bytes.Repeat([]byte("no mmap "), 1000)
	f := openWith(t, want)
	for _, v := range []string{"1", "yes"} {
		t.Setenv("DARKROOM_NO_MMAP", v)
		if _, _, err := Map(f, int64(len(want))); err == nil || !Off() {
			t.Fatalf("DARKROOM_NO_MMAP=%s: Map = %v", v, err)
		}
		var reads []int64
		b, unmap, err := MapOrRead(f, int64(len(want)), func(done int64) { reads = append(reads, done) })
		if err != nil || unmap != nil || !bytes.Equal(b, want) {
			t.Fatalf("DARKROOM_NO_MMAP=%s: MapOrRead: %d bytes, unmap %v, %v", v, len(b), unmap != nil, err)
		}
		if !slices.Equal(reads, []int64{int64(len(want))}) {
			t.Errorf("DARKROOM_NO_MMAP=%s: reads reported %v, want the file's %d bytes once", v, reads, len(want))
		}
	}
	t.Setenv("DARKROOM_NO_MMAP", "0")
	if Off() {
		t.Error("DARKROOM_NO_MMAP=0 turns mapping off")
	}
}

// openWith writes data to a new file and opens it for reading, closed when the test
// ends.
func openWith(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
