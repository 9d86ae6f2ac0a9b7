package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/quant"
)

// TestInitCheckpointWriteFails: a write that fails in the middle of the weights (the
// process's file-size limit, lowered to 64 KiB, stands in for a full disk: the
// kernel refuses the write with EFBIG as it refuses one with ENOSPC) is reported
// with the file it was writing, and leaves neither the output directory nor the
// temporary one.
func TestInitCheckpointWriteFails(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	out := filepath.Join(root, "m")
	limit := old
	limit.Cur = 64 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Skip(err)
	}
	_, err := InitCheckpoint(context.Background(), initTiny(), out, InitOptions{Profile: quant.Int8Profile, Seed: 1})
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "model.safetensors") || !strings.Contains(err.Error(), "file too large") {
		t.Fatalf("error %v, want the file and the failed write", err)
	}
	t.Log(err)
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}
