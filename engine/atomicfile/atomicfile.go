// Package atomicfile writes files so that a reader sees either the old content or
// the new one, whole — never a torn file, even when the process dies mid-write or
// the disk fills. Configs, checkpoints, manifests, settings, chat threads, written
// model shards and copied model files all go through it: WriteFile for content in
// hand, Create for content streamed (a safetensors shard, a file copy). (Google's
// renameio does the same but does not build on Windows, which Darkroom ships to.)
//
// Jobs whose half-written file must be found again after a kill keep a fixed name of
// their own for it — a download's .part, which a restart resumes; a library move's
// .moving and the GPU runtime's extracted members' .tmp, which a restart writes over —
// where a temporary file here has a fresh name, so that two writers of one path never
// share one.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, as Create and Commit do. On error path is left
// as it was and nothing is left beside it.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// File is the new content of a path, written into a temporary file beside it (a
// hidden one, named after it) until Commit puts it in place whole or Abort drops it.
type File struct {
	f    *os.File
	path string
	perm os.FileMode
}

// Create starts replacing path (its folder must exist) with content of mode perm.
func Create(path string, perm os.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{f: f, path: path, perm: perm}, nil
}

// Write adds p to the new content.
func (f *File) Write(p []byte) (int, error) {
	if f.f == nil {
		return 0, fmt.Errorf("write %s: already committed or aborted", f.path)
	}
	return f.f.Write(p)
}

// Commit puts the content in place: it syncs the temporary file, gives it the mode,
// renames it over path and then syncs the folder (best effort) so the rename
// survives a crash. On error the temporary file is removed and path is left as it
// was. A File is done after Commit, whatever it returns.
func (f *File) Commit() error {
	if f.f == nil {
		return fmt.Errorf("write %s: already committed or aborted", f.path)
	}
	tmp := f.f.Name()
	err := f.f.Chmod(f.perm)
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	f.f = nil
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if d, err := os.Open(filepath.Dir(f.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Abort drops the new content: the temporary file is removed and path is left as it
// was. After Commit it does nothing, so a deferred Abort covers every early return.
func (f *File) Abort() {
	if f.f == nil {
		return
	}
	f.f.Close()
	os.Remove(f.f.Name())
	f.f = nil
}
