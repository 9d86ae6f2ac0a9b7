// Package atomicfile writes files so that a reader sees either the old content or
// the new one, whole — never a torn file, even when the process dies mid-write or
// the disk fills. Configs, checkpoints, manifests, settings and chat threads all
// go through it. (github.com/google/renameio does the same but does not build on
// Windows, which Darkroom ships to.)
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data: it writes a temporary file in the same
// folder, syncs it, gives it perm, renames it over path and then syncs the folder
// (best effort) so the rename survives a crash. On error the temporary file is
// removed and path is left as it was.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
