package model

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// TestPopulateBytesMapsPages: populateBytes over a fresh mapping of a file — or
// touchPages, its way on kernels without MADV_POPULATE_READ — leaves every page of it
// mapped in the process (present in /proc/self/pagemap), where nothing was before: no
// later read of them faults.
func TestPopulateBytesMapsPages(t *testing.T) {
	const size = 16 << 20
	path := filepath.Join(t.TempDir(), "weights")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, populate := range map[string]func([]byte) error{
		"populateBytes": populateBytes,
		"touchPages":    func(b []byte) error { touchPages(b); return nil },
	} {
		b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		before := presentPages(t, b)
		if err := populate(b[1:]); err != nil { // an unaligned start
			t.Fatal(err)
		}
		after, pages := presentPages(t, b), size/pageSize
		_ = syscall.Munmap(b)
		if before != 0 || after != pages {
			t.Errorf("%s: %d of %d pages mapped before, %d after; want none, then all", name, before, pages, after)
		}
	}
}

// presentPages counts the pages of b mapped in the process: bit 63 of each page's
// entry in /proc/self/pagemap.
func presentPages(t *testing.T, b []byte) int {
	t.Helper()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer pm.Close()
	pages := len(b) / pageSize
	raw := make([]byte, 8*pages)
	first := int64(uintptr(unsafe.Pointer(&b[0])) / uintptr(pageSize))
	if _, err := pm.ReadAt(raw, first*8); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range pages {
		if binary.LittleEndian.Uint64(raw[8*i:])>>63 == 1 {
			n++
		}
	}
	return n
}
