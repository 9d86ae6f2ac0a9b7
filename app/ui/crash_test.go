package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCrashChild is the process TestCrashIsReportedAtTheNextStart crashes: it
// watches for crashes in $DARKROOM_CRASH_CHILD and panics on a goroutine of
// its own (or, with DARKROOM_CRASH_CLEAN set, ends cleanly).
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("DARKROOM_CRASH_CHILD")
	if dir == "" {
		t.Skip("the child process of TestCrashIsReportedAtTheNextStart")
	}
	if _, err := watchCrashes(dir); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("DARKROOM_CRASH_CLEAN") != "" {
		return
	}
	go func() { panic("a bug in Darkroom, on a goroutine of its own") }()
	time.Sleep(30 * time.Second)
}

// TestCrashIsReportedAtTheNextStart: a Darkroom that crashes — a panic on a
// background goroutine, which no recover can catch — leaves what the runtime
// said in its state folder; the next start finds it, keeps it as
// crash-previous.log, says so on its first screen and puts its first lines in
// the system report. The window just vanished, and what Go printed went to a
// terminal no desktop user had open. A run that ends cleanly leaves nothing.
func TestCrashIsReportedAtTheNextStart(t *testing.T) {
	dir := t.TempDir()
	child := func(clean bool) error {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
		cmd.Env = append(os.Environ(), "DARKROOM_CRASH_CHILD="+dir)
		if clean {
			cmd.Env = append(cmd.Env, "DARKROOM_CRASH_CLEAN=1")
		}
		return cmd.Run()
	}
	if err := child(false); err == nil {
		t.Fatal("the child did not crash")
	}
	report, err := lastCrash(dir)
	if err != nil || !strings.Contains(report, "panic: a bug in Darkroom, on a goroutine of its own") || !strings.Contains(report, "goroutine ") {
		t.Fatalf("after a crash, the report %q (%v)", report, err)
	}
	if kept, err := os.ReadFile(filepath.Join(dir, crashPrevious)); err != nil || string(kept) != report {
		t.Errorf("crash-previous.log: %q (%v)", kept, err)
	}
	if !strings.Contains(crashProblem(dir), filepath.Join(dir, crashPrevious)) {
		t.Errorf("the first screen's words do not say where the report is: %s", crashProblem(dir))
	}

	// The next start shows it, and the system report carries it.
	a := newTestApp(t, &fakeModel{answers: wikiAnswers}, "")
	a.deps.LastCrash = report
	if got := a.systemReport(); !strings.Contains(got, "The last run's crash:\n  panic: a bug in Darkroom") {
		t.Errorf("the system report:\n%s", got)
	}

	// A run that starts over the crash and ends cleanly leaves nothing to report.
	if err := child(true); err != nil {
		t.Fatalf("a clean run: %v", err)
	}
	if report, err := lastCrash(dir); err != nil || report != "" {
		t.Errorf("after a clean run, the report %q (%v)", report, err)
	}
}
