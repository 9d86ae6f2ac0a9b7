package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// MoveProgress reports a store move: bytes copied so far out of total.
type MoveProgress struct {
	Model       string
	Done, Total int64
}

// SpaceMargin is the extra free space required on top of the bytes to write
// (downloads and moves): 2% plus 1 GiB, for the file system's own needs.
func SpaceMargin(n int64) int64 { return n/50 + 1<<30 }

// Move moves every model (and library.json) from s.Root to dst and points s at
// dst. It is resumable: a model whose folder already exists at dst keeps the files
// copied so far (same name and size) and only the rest are copied; a model's source
// folder is removed only after its manifest has been written at dst, last. Before
// copying anything it checks that dst has room for what is left plus a margin.
// On the same file system each model folder is renamed instead of copied.
func (s *Store) Move(ctx context.Context, dst string, progress func(MoveProgress)) error {
	dst, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("move models to %s: %w", dst, err)
	}
	if dst == s.Root {
		return nil
	}
	if rel, err := filepath.Rel(s.Root, dst); err == nil && rel != ".." && !startsWithDotDot(rel) {
		return fmt.Errorf("move models to %s: the new folder is inside the current one (%s)", dst, s.Root)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("move models to %s: %w", dst, err)
	}
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return fmt.Errorf("move models from %s: %w", s.Root, err)
	}
	// What is left to copy.
	same := sameDevice(s.Root, dst)
	var left int64
	var dirs []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dirs = append(dirs, e.Name())
		if _, err := os.Stat(filepath.Join(dst, e.Name())); errors.Is(err, fs.ErrNotExist) && same {
			continue // will be renamed: no extra space
		}
		err := filepath.WalkDir(filepath.Join(s.Root, e.Name()), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(s.Root, p)
			if st, err := os.Stat(filepath.Join(dst, rel)); err == nil && st.Size() == info.Size() {
				return nil
			}
			left += info.Size()
			return nil
		})
		if err != nil {
			return fmt.Errorf("move models from %s: %w", s.Root, err)
		}
	}
	if free, err := s.FreeSpace(dst); err == nil && left > 0 && free < left+SpaceMargin(left) {
		return fmt.Errorf("move models to %s: not enough free space (%s needed with margin, %s free)",
			dst, FormatBytes(left+SpaceMargin(left)), FormatBytes(free))
	}
	var done int64
	for _, name := range dirs {
		src := filepath.Join(s.Root, name)
		to := filepath.Join(dst, name)
		if _, err := os.Stat(to); errors.Is(err, fs.ErrNotExist) {
			if err := os.Rename(src, to); err == nil {
				continue // same file system
			}
		}
		if err := copyTree(ctx, src, to, func(n int64) {
			done += n
			if progress != nil {
				progress(MoveProgress{Model: name, Done: done, Total: left})
			}
		}); err != nil {
			return fmt.Errorf("move %s to %s: %w (run the move again to continue)", name, dst, err)
		}
		if err := os.RemoveAll(src); err != nil {
			return fmt.Errorf("move %s: copied, but removing the old folder failed: %w", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(s.Root, "library.json")); err == nil {
		if err := atomicfile.WriteFile(filepath.Join(dst, "library.json"), b, 0o600); err != nil {
			return err
		}
		os.Remove(filepath.Join(s.Root, "library.json"))
	}
	s.Root = dst
	return nil
}

func startsWithDotDot(rel string) bool {
	return len(rel) >= 3 && rel[:3] == ".."+string(filepath.Separator)
}

// copyTree copies the files of src into dst, skipping files already there with
// the same size, the manifest last.
func copyTree(ctx context.Context, src, dst string, copied func(int64)) error {
	var files []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel != ManifestName {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(src, ManifestName)); err == nil {
		files = append(files, ManifestName)
	}
	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		from, to := filepath.Join(src, rel), filepath.Join(dst, rel)
		si, err := os.Stat(from)
		if err != nil {
			return err
		}
		if di, err := os.Stat(to); err == nil && di.Size() == si.Size() && rel != ManifestName {
			continue
		}
		if err := copyFile(ctx, from, to, copied); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(ctx context.Context, from, to string, copied func(int64)) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := to + ".moving"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			out.Close()
			return err
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
			copied(int64(n))
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, to)
}

// FormatBytes renders a byte count for people ("51.6 GB"), decimal units as disks use.
func FormatBytes(n int64) string {
	f := float64(n)
	switch {
	case n >= 1e12:
		return fmt.Sprintf("%.1f TB", f/1e12)
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", f/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", f/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", f/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
