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

// MoveDir is where a move to chosen, a folder a person picked, puts the models:
// chosen itself when it is missing, empty or a models folder already (it holds
// library.json, a model's manifest, or a folder of this store's that a move
// which stopped half-way left there); otherwise a new "darkroom-models" folder
// inside it. A models folder holds only models: a later move carries every
// folder in it along (a home folder's, a disk's, the chats beside the models).
func (s *Store) MoveDir(chosen string) string {
	ents, err := os.ReadDir(chosen)
	if err != nil || len(ents) == 0 {
		return chosen
	}
	for _, e := range ents {
		if e.Name() == "library.json" {
			return chosen
		}
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(chosen, e.Name(), ManifestName)); err == nil {
			return chosen
		}
		if _, err := os.Stat(filepath.Join(s.Root, e.Name(), ManifestName)); err == nil {
			return chosen
		}
	}
	return filepath.Join(chosen, "darkroom-models")
}

// MovePlan is what moving the store to a folder would carry, read before
// anything moves (Store.PlanMove), so that a person can be asked first.
type MovePlan struct {
	From, To string // the models folder now and the one it would move to (absolute)
	Models   int    // model folders that move
	Bytes    int64  // their size
	// Copy is the part of Bytes written at To: a folder on the same file system
	// is renamed (nothing written); files an interrupted move copied already are kept.
	Copy int64
	Need int64 // free space To needs: Copy plus SpaceMargin (0 when nothing is copied)
	Free int64 // free space at To; -1 when unknown (the move is not refused for it)
	dirs []string
	same bool
}

// Fits reports whether To has the free space the move needs.
func (p MovePlan) Fits() bool { return p.Copy == 0 || p.Free < 0 || p.Free >= p.Need }

// PlanMove says what Move(dst) would carry and whether dst has room for it. A
// dst that is the store itself plans nothing (To == From); one inside the store
// is an error.
func (s *Store) PlanMove(dst string) (MovePlan, error) {
	dst, err := filepath.Abs(dst)
	if err != nil {
		return MovePlan{}, fmt.Errorf("move models to %s: %w", dst, err)
	}
	p := MovePlan{From: s.Root, To: dst, Free: -1}
	if dst == s.Root {
		return p, nil
	}
	if rel, err := filepath.Rel(s.Root, dst); err == nil && rel != ".." && !startsWithDotDot(rel) {
		return p, fmt.Errorf("move models to %s: the new folder is inside the current one (%s)", dst, s.Root)
	}
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return p, fmt.Errorf("move models from %s: %w", s.Root, err)
	}
	p.same = sameDevice(s.Root, dst)
	if s.SameDisk != nil {
		p.same = s.SameDisk(s.Root, dst)
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == locksDir || e.Name() == trashDir { // the holds stay with the folder they guard; the trash is not moved
			continue
		}
		p.dirs = append(p.dirs, e.Name())
		_, err := os.Stat(filepath.Join(dst, e.Name()))
		renamed := errors.Is(err, fs.ErrNotExist) && p.same // no extra space
		err = filepath.WalkDir(filepath.Join(s.Root, e.Name()), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			p.Bytes += info.Size()
			if renamed {
				return nil
			}
			rel, _ := filepath.Rel(s.Root, path)
			if st, err := os.Stat(filepath.Join(dst, rel)); err == nil && st.Size() == info.Size() {
				return nil
			}
			p.Copy += info.Size()
			return nil
		})
		if err != nil {
			return p, fmt.Errorf("move models from %s: %w", s.Root, err)
		}
	}
	p.Models = len(p.dirs)
	if p.Copy > 0 {
		p.Need = p.Copy + SpaceMargin(p.Copy)
	}
	if free, err := s.FreeSpace(dst); err == nil {
		p.Free = free
	}
	return p, nil
}

// Move moves every model (and library.json) from s.Root to dst and points s at
// dst. Before copying anything it checks that dst has room for what is left plus
// a margin (PlanMove). On the same file system each model folder is renamed
// instead of copied. Every model is in place at dst before any is removed from
// s.Root: a move that stops half-way (an error, ctx cancelled) renames back the
// folders it renamed and leaves every model where it was, with s still at its
// old root. It is resumable: a model whose folder already exists at dst keeps
// the files copied so far (same name and size) and only the rest are copied,
// the manifest last.
func (s *Store) Move(ctx context.Context, dst string, progress func(MoveProgress)) error {
	p, err := s.PlanMove(dst)
	if err != nil {
		return err
	}
	if p.To == s.Root {
		return nil
	}
	dst = p.To
	if !p.Fits() {
		return fmt.Errorf("move models to %s: not enough free space (%s needed with margin, %s free)",
			dst, FormatBytes(p.Need), FormatBytes(p.Free))
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("move models to %s: %w", dst, err)
	}
	var renamed, copied []string
	// stopped undoes the renames and says that every model is still in s.Root.
	stopped := func(err error) error {
		for _, name := range renamed {
			os.Rename(filepath.Join(dst, name), filepath.Join(s.Root, name))
		}
		return fmt.Errorf("%w (every model is still in %s; moving to %s again continues where this stopped)", err, s.Root, dst)
	}
	var done int64
	for _, name := range p.dirs {
		src := filepath.Join(s.Root, name)
		to := filepath.Join(dst, name)
		if _, err := os.Stat(to); errors.Is(err, fs.ErrNotExist) && p.same {
			if err := os.Rename(src, to); err == nil {
				renamed = append(renamed, name)
				continue
			}
		}
		if err := copyTree(ctx, src, to, func(n int64) {
			done += n
			if progress != nil {
				progress(MoveProgress{Model: name, Done: done, Total: p.Copy})
			}
		}); err != nil {
			return stopped(fmt.Errorf("move %s to %s: %w", name, dst, err))
		}
		copied = append(copied, name)
	}
	if b, err := os.ReadFile(filepath.Join(s.Root, "library.json")); err == nil {
		if err := atomicfile.WriteFile(filepath.Join(dst, "library.json"), b, 0o600); err != nil {
			return stopped(err)
		}
	}
	for _, name := range copied {
		if err := os.RemoveAll(filepath.Join(s.Root, name)); err != nil {
			return fmt.Errorf("move %s: copied, but removing the old folder failed: %w", name, err)
		}
	}
	os.Remove(filepath.Join(s.Root, "library.json"))
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
