package ui

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/adrg/xdg"
)

// When Darkroom crashes — a bug's panic on any goroutine, a fatal error of the
// runtime — a desktop user sees the window vanish: what Go printed went to a
// terminal no one had open. The runtime now also writes it to a file in
// Darkroom's state folder (runtime/debug.SetCrashOutput); the next start finds
// it there, keeps it as crash-previous.log, says on screen that Darkroom
// closed unexpectedly and where the report is, and the system report (Settings
// → Copy system report) carries its first lines, for a bug report.

// crashFile is where the running Darkroom's crash output goes.
const crashFile = "crash.log"

// crashPrevious is where the last crash's report is kept.
const crashPrevious = "crash-previous.log"

// DefaultCrashDir is $XDG_STATE_HOME/darkroom.
func DefaultCrashDir() string { return filepath.Join(xdg.StateHome, "darkroom") }

// watchCrashes sends this process's crash output to dir/crash.log, first
// keeping what a previous run left there (lastCrash) and returning it ("" when
// that run ended cleanly). Errors leave crashes to stderr alone.
func watchCrashes(dir string) (previous string, err error) {
	if previous, err = lastCrash(dir); err != nil {
		return previous, err
	}
	f, err := os.OpenFile(filepath.Join(dir, crashFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return previous, fmt.Errorf("crash reports: %w", err)
	}
	defer f.Close() // SetCrashOutput writes to a duplicate of the descriptor
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		return previous, fmt.Errorf("crash reports: %w", err)
	}
	return previous, nil
}

// lastCrash is what the previous run's crash output file holds — empty where
// it ended cleanly — kept as dir/crash-previous.log where there is something.
func lastCrash(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("crash reports: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, crashFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("crash reports: %w", err)
	case len(strings.TrimSpace(string(b))) == 0:
		return "", nil
	}
	if err := os.WriteFile(filepath.Join(dir, crashPrevious), b, 0o600); err != nil {
		return string(b), fmt.Errorf("crash reports: keep the last one: %w", err)
	}
	return string(b), nil
}

// crashProblem is what the first screen says after a crash, and crashLines
// the report's first lines, for the system report.
func crashProblem(dir string) string {
	return "Darkroom closed unexpectedly the last time it ran — a bug in Darkroom, not something you did. " +
		"What it said is in " + filepath.Join(dir, crashPrevious) + "; Settings → Copy system report includes it, " +
		"to paste into a bug report."
}

// crashLines is the start of a crash report: the panic and the first frames.
func crashLines(report string, n int) []string {
	lines := strings.Split(strings.TrimSpace(report), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… (%d more lines)", len(lines)-n))
	}
	return lines
}
