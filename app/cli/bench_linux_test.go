package cli

import (
	"syscall"
	"testing"
)

// TestBenchPageFaultsCount: the process's count rises when it touches memory it
// has not touched before, each new page a minor fault.
func TestBenchPageFaultsCount(t *testing.T) {
	f0, ok := readPageFaults()
	if !ok {
		t.Fatal("no page faults read from /proc/self/stat")
	}
	const pages = 64
	b, err := syscall.Mmap(-1, 0, pages<<12, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(b)
	for i := 0; i < len(b); i += 1 << 12 {
		b[i] = 1
	}
	f1, _ := readPageFaults()
	if d := f1.sub(f0); d.minor < pages {
		t.Errorf("touching %d new pages counted %d minor faults", pages, d.minor)
	}
}
