package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Holds across processes.
//
// Two Darkroom processes on one models folder — the app opened twice, or the app
// beside `darkroom pull` — each kept only their own record of what runs, so both
// could write the same model's .part files at once (their bytes interleaved, the
// file then failing verification and quarantined: gigabytes fetched again), delete
// a model the other was downloading, or move the folder from under it. A hold is an
// exclusive lock the operating system keeps for an open file (flock on Unix,
// LockFileEx on Windows), one lock file a model under <root>/.locks: it is let go
// when the holder releases it or its process ends, however it ends, so a crash
// leaves nothing to clean up. The lock files themselves stay (a few bytes each:
// removing one another process may be opening would let two hold it).

// ErrHeld is wrapped by Hold when another process holds the model: a *HeldError.
var ErrHeld = errors.New("in use by another Darkroom")

// HeldError is Hold's error where another process holds the model: which model,
// and what that process said it is doing ("downloading it").
type HeldError struct {
	Name, Doing string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is %v, which is %s: wait for it to finish there, or close that Darkroom, then try again",
		e.Name, ErrHeld, e.Doing)
}

// Unwrap makes errors.Is(err, ErrHeld) hold.
func (e *HeldError) Unwrap() error { return ErrHeld }

// locksDir is the folder of the lock files, under the store's root.
const locksDir = ".locks"

// lockPath is the lock file of the model called name.
func (s *Store) lockPath(name string) string {
	return filepath.Join(s.Root, locksDir, DirName(name)+".lock")
}

// Hold takes the model's hold for what this process is doing ("downloading it",
// "deleting it", …), written into the lock file for a process that finds it held.
// It does not wait: where another process holds it, the error wraps ErrHeld and
// says, in plain words, what that process is doing and what to do. release lets it
// go (once; later calls do nothing).
func (s *Store) Hold(name, what string) (release func(), err error) {
	path := s.lockPath(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	taken, err := lockFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: lock %s: %w", name, path, err)
	}
	if !taken {
		f.Close()
		return nil, &HeldError{Name: name, Doing: holderDoing(path)}
	}
	s.heldMu.Lock()
	if s.held == nil {
		s.held = map[string]int{}
	}
	s.held[path]++
	s.heldMu.Unlock()
	// What this process does, for another that finds the model held (on Windows the
	// lock is on a byte past the text, which stays readable).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%s\nprocess %d\n", what, os.Getpid())), 0)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		s.heldMu.Lock()
		if s.held[path]--; s.held[path] <= 0 {
			delete(s.held, path)
		}
		s.heldMu.Unlock()
		_ = f.Truncate(0)
		_ = unlockFile(f)
		f.Close()
	}, nil
}

// Elsewhere reports whether another process holds the model's hold, and what
// it said it is doing ("downloading it"); a hold this Store took is not
// another's.
func (s *Store) Elsewhere(name string) (doing string, held bool) {
	path := s.lockPath(name)
	s.heldMu.Lock()
	mine := s.held[path] > 0
	s.heldMu.Unlock()
	if mine {
		return "", false
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", false // never held: no lock file
	}
	defer f.Close()
	taken, err := lockFile(f)
	if err != nil {
		return "", false
	}
	if taken {
		_ = unlockFile(f)
		return "", false
	}
	return holderDoing(path), true
}

// holderDoing is what the holder of the lock file at path said it is doing.
func holderDoing(path string) string {
	if b, err := os.ReadFile(path); err == nil {
		if first, _, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(first) != "" {
			return strings.TrimSpace(first)
		}
	}
	return "using it"
}

// HoldAll takes every model's hold in the store (for moving the whole folder),
// or none: where one is held elsewhere, those taken are let go and the error is
// that model's.
func (s *Store) HoldAll(what string) (release func(), err error) {
	models, err := s.List()
	if err != nil {
		return nil, err
	}
	var held []func()
	releaseAll := func() {
		for _, r := range held {
			r()
		}
	}
	for _, m := range models {
		r, err := s.Hold(m.Name, what)
		if err != nil {
			releaseAll()
			return nil, err
		}
		held = append(held, r)
	}
	return releaseAll, nil
}
