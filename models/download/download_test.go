package download

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/models/hubtest"
)

const repo = "acme/tiny"

// fixture builds a fake hub with two LFS files and one small git file.
func fixture(t *testing.T, seed int64) (*hubtest.Hub, []*hubtest.File) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	mk := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	files := []*hubtest.File{
		{Name: "model-00001-of-00002.safetensors", Data: mk(3<<20 + 12345), LFS: true},
		{Name: "model-00002-of-00002.safetensors", Data: mk(2<<20 + 777), LFS: true},
		{Name: "config.json", Data: []byte(`{"model_type":"diffusion_gemma"}` + strings.Repeat(" ", 5000))},
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.Add(repo, &hubtest.Repo{Files: files})
	return h, files
}

func specs(h *hubtest.Hub, files []*hubtest.File) []File {
	var out []File
	for _, f := range files {
		s := File{Name: f.Name, URL: h.URL + "/" + repo + "/resolve/main/" + f.Name, Size: int64(len(f.Data))}
		if f.LFS {
			s.SHA256 = f.SHA256()
		} else {
			s.GitOID = f.GitOID()
		}
		out = append(out, s)
	}
	return out
}

func fastOpts() Options {
	return Options{StallTimeout: 400 * time.Millisecond, BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		MaxRetries: 6, Interval: 20 * time.Millisecond}
}

// checkFiles asserts every file is in place with its sha256 and no .part left.
func checkFiles(t *testing.T, dir string, files []*hubtest.File) {
	t.Helper()
	for _, f := range files {
		got, err := HashFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if got != f.SHA256() {
			t.Errorf("%s: sha256 %s, want %s", f.Name, got, f.SHA256())
		}
		if _, err := os.Stat(filepath.Join(dir, f.Name+".part")); err == nil {
			t.Errorf("%s: .part left behind", f.Name)
		}
	}
}

// checkResumed asserts that each file's requests after its first resumed from
// the .part (hubtest's Resumed), and returns how many did. (The bytes the hub
// sent are no measure of this: a retry, a pause or a stall watchdog that fires
// on a busy machine drops whatever was already written into the connection.)
func checkResumed(t *testing.T, h *hubtest.Hub, files []*hubtest.File) (resumed int) {
	t.Helper()
	for _, f := range files {
		n, err := h.Resumed(f.Name)
		if err != nil {
			t.Error(err)
		}
		resumed += n
	}
	return resumed
}

func TestDownloadCutAtRandomOffsets(t *testing.T) {
	h, files := fixture(t, 1)
	rng := rand.New(rand.NewSource(42))
	var mu sync.Mutex
	sizes := map[string]int64{}
	for _, f := range files {
		sizes[f.Name] = int64(len(f.Data))
	}
	h.Fault = func(name string, n int, start int64) (int64, bool) {
		if n >= 4 { // the first four requests of each file are cut
			return -1, false
		}
		mu.Lock()
		defer mu.Unlock()
		return rng.Int63n(sizes[name] - start), false // somewhere inside what is left
	}
	var retries int
	opt := fastOpts()
	opt.OnEvent = func(ev Event) {
		if ev.Kind == EventRetry {
			mu.Lock()
			retries++
			mu.Unlock()
		}
	}
	dir := t.TempDir()
	if err := Start(context.Background(), dir, specs(h, files), opt).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files)
	for _, f := range files {
		if h.Requests(f.Name) < 5 {
			t.Errorf("%s: %d requests, want ≥ 5 (4 cut + the rest)", f.Name, h.Requests(f.Name))
		}
	}
	checkResumed(t, h, files)
	if retries < 3*4 {
		t.Errorf("saw %d retry events, want ≥ 12", retries)
	}
}

func TestDownloadStallWatchdogRetries(t *testing.T) {
	h, files := fixture(t, 2)
	h.Fault = func(name string, n int, start int64) (int64, bool) {
		if n == 0 && strings.HasSuffix(name, ".safetensors") {
			return 100 << 10, true // send 100 kB, then go silent
		}
		return -1, false
	}
	// The stalled files, each seen stalling by the watchdog. (A busy machine can
	// leave any transfer without a byte for the test's 400 ms, so a count of
	// exactly two, and bytes sent equal to the size, held on a quiet one alone.)
	var mu sync.Mutex
	stalled := map[string]bool{}
	opt := fastOpts()
	opt.OnEvent = func(ev Event) {
		if ev.Kind == EventRetry && errors.Is(ev.Err, ErrStalled) {
			mu.Lock()
			stalled[ev.File] = true
			mu.Unlock()
		}
	}
	dir := t.TempDir()
	if err := Start(context.Background(), dir, specs(h, files), opt).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files)
	for _, f := range files[:2] {
		if !stalled[f.Name] {
			t.Errorf("%s: the watchdog never fired (stalled: %v)", f.Name, stalled)
		}
		starts := h.Starts(f.Name)
		if len(starts) < 2 {
			t.Errorf("%s: requests %v: not retried after the stall", f.Name, starts)
			continue
		}
		// Each retry starts where the bytes kept end: never before the last
		// request's start, and the file is resumed, not fetched again from byte
		// 0. (A retry from where the last request started is right when the
		// watchdog fired before any of its bytes arrived, as on a busy machine.)
		for i := 1; i < len(starts); i++ {
			if starts[i] < starts[i-1] {
				t.Errorf("%s: request %d of %v starts before the bytes kept", f.Name, i, starts)
			}
		}
		if starts[len(starts)-1] == 0 {
			t.Errorf("%s: requests %v: the stalled transfer was fetched again from byte 0, not resumed", f.Name, starts)
		}
	}
	checkResumed(t, h, files[2:])
}

func TestDownloadWrongHashIsQuarantined(t *testing.T) {
	h, files := fixture(t, 3)
	files[1].Corrupt = true
	dir := t.TempDir()
	err := Start(context.Background(), dir, specs(h, files), fastOpts()).Wait()
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a VerifyError", err)
	}
	if ve.File != files[1].Name || !strings.Contains(err.Error(), files[1].Name) {
		t.Errorf("error does not name the file: %v", err)
	}
	bad := filepath.Join(dir, files[1].Name)
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("corrupt file was put in place")
	}
	q, err := HashFile(bad + ".corrupt")
	if err != nil {
		t.Fatalf("no quarantined file: %v", err)
	}
	if q == files[1].SHA256() || ve.Got != q {
		t.Errorf("quarantined sha256 %s (reported %s), listed %s", q, ve.Got, files[1].SHA256())
	}
	checkFiles(t, dir, []*hubtest.File{files[0], files[2]})
}

func TestDownloadFileChangedOnHub(t *testing.T) {
	h, files := fixture(t, 9)
	files[0].Changed = true
	dir := t.TempDir()
	err := Start(context.Background(), dir, specs(h, files), fastOpts()).Wait()
	if err == nil || !strings.Contains(err.Error(), "different version") || !strings.Contains(err.Error(), files[0].Name) {
		t.Fatalf("err = %v", err)
	}
	if h.Sent(files[0].Name) != 0 {
		t.Errorf("fetched a file the Hub says changed")
	}
	checkFiles(t, dir, files[1:])
}

func TestDownloadNotFound(t *testing.T) {
	h, files := fixture(t, 4)
	sp := specs(h, files)
	sp[2].URL = h.URL + "/" + repo + "/resolve/main/missing.json"
	opt := fastOpts()
	var mu sync.Mutex
	var retries int
	opt.OnEvent = func(ev Event) {
		// The missing file's retries alone: on a busy machine the stall watchdog
		// rightly retries the others.
		if ev.Kind == EventRetry && ev.File == sp[2].Name {
			mu.Lock()
			retries++
			mu.Unlock()
		}
	}
	dir := t.TempDir()
	err := Start(context.Background(), dir, sp, opt).Wait()
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("err = %v, want a 404 naming config.json", err)
	}
	if retries != 0 {
		t.Errorf("404 was retried %d times", retries)
	}
	checkFiles(t, dir, files[:2])
}

func TestDownloadFreeSpacePreflight(t *testing.T) {
	h, files := fixture(t, 5)
	opt := fastOpts()
	opt.FreeSpace = func(string) (int64, error) { return 4 << 20, nil }
	opt.SpaceMargin = func(int64) int64 { return 1 << 20 }
	dir := t.TempDir()
	err := Start(context.Background(), dir, specs(h, files), opt).Wait()
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	for _, f := range files {
		if h.Sent(f.Name) != 0 {
			t.Errorf("%s: fetched %d bytes despite the pre-flight", f.Name, h.Sent(f.Name))
		}
	}
	// With room, the same download runs; every file verified.
	opt.FreeSpace = func(string) (int64, error) { return 1 << 40, nil }
	if err := Start(context.Background(), dir, specs(h, files), opt).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files)
}

// TestDownloadReserve: a download to be converted after keeps the conversion's space
// free: with room for the files alone but not for what is made from them, it is
// refused before a byte is fetched, the error saying both.
func TestDownloadReserve(t *testing.T) {
	h, files := fixture(t, 5)
	opt := fastOpts()
	opt.FreeSpace = func(string) (int64, error) { return 16 << 20, nil }
	opt.SpaceMargin = func(int64) int64 { return 1 << 20 }
	opt.Reserve = 12 << 20
	var failed []error // the failed state's reports: each must say why (the Library showed an empty error)
	opt.OnEvent = func(ev Event) {
		if ev.Kind == EventState && ev.State == StateFailed {
			failed = append(failed, ev.Err)
		}
	}
	dir := t.TempDir()
	err := Start(context.Background(), dir, specs(h, files), opt).Wait()
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "12.6 MB more for what is made from it") {
		t.Fatalf("err = %v, want ErrNoSpace naming the 12.6 MB reserved", err)
	}
	if len(failed) != 1 || failed[0] != err {
		t.Errorf("the failed state was reported with %v, want the job's error once", failed)
	}
	opt.OnEvent = nil
	for _, f := range files {
		if h.Sent(f.Name) != 0 {
			t.Errorf("%s: fetched %d bytes despite the pre-flight", f.Name, h.Sent(f.Name))
		}
	}
	opt.Reserve = 8 << 20 // 5.3 MB of files, 1 MiB of margin and 8 MiB: within 16 MiB
	if err := Start(context.Background(), dir, specs(h, files), opt).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files)
}

// fullDisk is a PartFile that fails with ENOSPC once the shared budget is spent.
type fullDisk struct {
	*os.File
	budget *int64
	mu     *sync.Mutex
}

func (f fullDisk) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if int64(len(p)) > *f.budget {
		n, _ := f.File.Write(p[:*f.budget])
		*f.budget = 0
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	*f.budget -= int64(len(p))
	return f.File.Write(p)
}

func TestDownloadDiskFullStopsCleanly(t *testing.T) {
	h, files := fixture(t, 6)
	budget := int64(2 << 20)
	var mu sync.Mutex
	opt := fastOpts()
	opt.OpenPart = func(p string) (PartFile, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		return fullDisk{f, &budget, &mu}, nil
	}
	dir := t.TempDir()
	j := Start(context.Background(), dir, specs(h, files[:2]), opt)
	err := j.Wait()
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	if j.State() != StateFailed {
		t.Errorf("state %s, want failed", j.State())
	}
	for _, f := range files[:2] {
		if _, err := os.Stat(filepath.Join(dir, f.Name)); err == nil {
			t.Errorf("%s marked complete on a full disk", f.Name)
		}
	}
	// Space freed: resume from the kept .part files, verified end to end.
	var kept int64
	for _, f := range files[:2] {
		kept += PartSize(dir, f.Name)
	}
	if kept == 0 {
		t.Fatalf("no partial data kept")
	}
	opt.OpenPart = nil
	if err := Start(context.Background(), dir, specs(h, files[:2]), opt).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files[:2])
}

func TestDownloadPauseResumeCancel(t *testing.T) {
	h, files := fixture(t, 7)
	h.SetBytesPerSec(4 << 20)
	dir := t.TempDir()
	opt := fastOpts()
	progressed := make(chan struct{}, 1)
	opt.OnEvent = func(ev Event) {
		if ev.Kind == EventProgress && ev.Done > 1<<20 {
			select {
			case progressed <- struct{}{}:
			default:
			}
		}
	}
	j := Start(context.Background(), dir, specs(h, files), opt)
	<-progressed
	j.Pause()
	for j.State() != StatePaused {
		time.Sleep(5 * time.Millisecond)
	}
	h.SetBytesPerSec(0)
	j.Resume()
	if err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files)
	if checkResumed(t, h, files) == 0 {
		t.Errorf("no file was asked for again after the pause: the pause did not stop a download")
	}

	// Cancel removes the partial files.
	dir2 := t.TempDir()
	h.SetBytesPerSec(2 << 20)
	j = Start(context.Background(), dir2, specs(h, files[:1]), opt)
	<-progressed
	j.Cancel()
	if err := j.Wait(); !errors.Is(err, ErrCanceled) {
		t.Fatalf("err = %v, want ErrCanceled", err)
	}
	if n := PartSize(dir2, files[0].Name); n != 0 {
		t.Errorf(".part of %d bytes left after cancel", n)
	}
}

// pauses counts a job's pause events on its channel (its OnEvent).
func pauses(opt *Options) <-chan struct{} {
	ch := make(chan struct{}, 16)
	opt.OnEvent = func(ev Event) {
		if ev.Kind == EventState && ev.State == StatePaused {
			ch <- struct{}{}
		}
	}
	return ch
}

// waitPaused waits for a job's pause event; a job that missed the pause ends
// or runs on, which fails the test instead of hanging it.
func waitPaused(t *testing.T, j *Job, paused <-chan struct{}) {
	t.Helper()
	select {
	case <-paused:
	case <-j.Done():
		t.Fatalf("the job ended (%v) instead of pausing", j.Wait())
	case <-time.After(30 * time.Second):
		t.Fatal("no pause event 30 s after the start")
	}
}

// noRequests asserts the hub was asked for none of the files.
func noRequests(t *testing.T, h *hubtest.Hub, files []*hubtest.File, while string) {
	t.Helper()
	for _, f := range files {
		if starts := h.Starts(f.Name); len(starts) != 0 {
			t.Errorf("%s was asked for (from %v) %s", f.Name, starts, while)
		}
	}
}

// TestDownloadPausedBeforeStart: a job paused between New and Start reports the
// pause and asks the hub for nothing until Resume, then fetches each file once,
// whole, and verifies it. (Start then Pause, as the callers did, let the job's
// goroutine send its first requests before the pause held: config.json was
// asked for about once in 60 runs of this under -cpu 1,2,8.)
func TestDownloadPausedBeforeStart(t *testing.T) {
	h, files := fixture(t, 11)
	dir := t.TempDir()
	opt := fastOpts()
	paused := pauses(&opt)
	j := New(dir, specs(h, files), opt)
	j.Pause()
	j.Start(context.Background())
	waitPaused(t, j, paused)
	// The job waits for Resume once it has sent the pause: nothing can follow it.
	noRequests(t, h, files, "while paused")
	if st := j.State(); st != StatePaused {
		t.Errorf("state %s while paused", st)
	}
	j.Resume()
	if err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files)
	for _, f := range files { // from its start, and again only to resume (a stall on a busy machine)
		if starts := h.Starts(f.Name); len(starts) == 0 || starts[0] != 0 {
			t.Errorf("%s was asked for from %v (want from byte 0 first)", f.Name, starts)
		}
	}
	checkResumed(t, h, files)
}

// TestDownloadPauseAfterResume: a Pause that follows a Resume the job has not
// taken yet holds. The Resume used to leave its wake-up queued and the Pause,
// seeing the job still paused, did nothing, so the job downloaded although the
// last thing asked of it was to pause.
func TestDownloadPauseAfterResume(t *testing.T) {
	h, files := fixture(t, 12)
	opt := fastOpts()
	paused, downloading := make(chan struct{}, 16), make(chan struct{}, 16)
	opt.OnEvent = func(ev Event) {
		switch {
		case ev.Kind == EventState && ev.State == StatePaused:
			paused <- struct{}{}
		case ev.Kind == EventState && ev.State == StateDownloading:
			downloading <- struct{}{}
		}
	}
	j := New(t.TempDir(), specs(h, files), opt)
	j.Pause()
	j.Resume()
	j.Pause()
	j.Start(context.Background())
	waitPaused(t, j, paused)
	// The old job went on at once, from the Resume's wake-up; a second is ample
	// for it to say so on a loaded machine.
	select {
	case <-downloading:
		t.Error("the job downloaded after Pause, Resume, Pause")
	case <-time.After(time.Second):
	}
	noRequests(t, h, files, "after Pause, Resume, Pause")
	j.Cancel()
	if err := j.Wait(); !errors.Is(err, ErrCanceled) {
		t.Fatalf("err = %v, want ErrCanceled", err)
	}
}

// TestDownloadCanceledBeforeStart: a job canceled before Start asks for nothing
// and removes the .part files an earlier run left, even where the disk has no
// room for what was left to fetch.
func TestDownloadCanceledBeforeStart(t *testing.T) {
	h, files := fixture(t, 13)
	dir := t.TempDir()
	part := filepath.Join(dir, files[0].Name+".part")
	if err := os.WriteFile(part, files[0].Data[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	opt := fastOpts()
	opt.FreeSpace = func(string) (int64, error) { return 0, nil }
	j := New(dir, specs(h, files), opt)
	j.Cancel()
	j.Start(context.Background())
	if err := j.Wait(); !errors.Is(err, ErrCanceled) {
		t.Fatalf("err = %v, want ErrCanceled", err)
	}
	noRequests(t, h, files, "by a canceled job")
	if _, err := os.Stat(part); err == nil {
		t.Errorf("%s left after the cancel", filepath.Base(part))
	}
}

// TestMain lets the kill test re-run this binary as a downloader process.
func TestMain(m *testing.M) {
	if os.Getenv("DL_CHILD_DIR") != "" {
		var sp []File
		for _, l := range strings.Split(os.Getenv("DL_CHILD_FILES"), ";") {
			var f File
			fmt.Sscanf(l, "%s %s %d %s", &f.Name, &f.URL, &f.Size, &f.SHA256)
			sp = append(sp, f)
		}
		err := Start(context.Background(), os.Getenv("DL_CHILD_DIR"), sp, Options{}).Wait()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestDownloadKilledProcessResumes(t *testing.T) {
	h, files := fixture(t, 8)
	files = files[:1]
	size := int64(len(files[0].Data))
	h.SetBytesPerSec(1 << 20) // ~3 s for the file: time to kill it mid-way
	dir := t.TempDir()
	sp := specs(h, files)[0]
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DL_CHILD_DIR="+dir,
		fmt.Sprintf("DL_CHILD_FILES=%s %s %d %s", sp.Name, sp.URL, sp.Size, sp.SHA256))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for PartSize(dir, sp.Name) < size/4 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child made no progress")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	kept := PartSize(dir, sp.Name)
	if kept == 0 || kept >= size {
		t.Fatalf("after kill -9: .part has %d of %d bytes", kept, size)
	}
	// The restart's request, judged by where it starts: the hub may still be
	// writing into the killed process's connection, so its byte count after the
	// kill is no measure of what the restart fetched.
	before := len(h.Starts(sp.Name))
	h.SetBytesPerSec(0)
	if err := Start(context.Background(), dir, []File{sp}, fastOpts()).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, files)
	if starts := h.Starts(sp.Name)[before:]; len(starts) != 1 || starts[0] != kept {
		t.Errorf("restart asked from %v; the .part had %d bytes (resume from the .part)", starts, kept)
	}
}

// TestDownloadOwnStatusError: a job that fetches from another server words its
// HTTP errors itself instead of the package-wide (Hub) wording.
func TestDownloadOwnStatusError(t *testing.T) {
	h, files := fixture(t, 9)
	sp := specs(h, files)[2:]
	sp[0].URL = h.URL + "/" + repo + "/resolve/main/missing.json"
	opt := fastOpts()
	opt.StatusError = func(resp *http.Response) error {
		return fmt.Errorf("the package index has no such file (%s)", resp.Status)
	}
	err := Start(context.Background(), t.TempDir(), sp, opt).Wait()
	if err == nil || !strings.Contains(err.Error(), "the package index has no such file (404") {
		t.Fatalf("err = %v", err)
	}
}

// TestDownloadNoEventAfterTheEnd: every OnEvent call has returned when the job
// ends, and none comes after, so the last event a subscriber sees is the job's
// last. The progress ticker's call is held here until the file is in (as a
// loaded machine can hold any goroutine): it once went on after the job ended,
// and a "downloading" event then followed "complete" in the models manager,
// leaving the Library card downloading for ever.
func TestDownloadNoEventAfterTheEnd(t *testing.T) {
	h, files := fixture(t, 10)
	files = files[2:] // config.json, 5 kB: about 100 ms, several ticks
	h.SetBytesPerSec(50 << 10)
	var inFlight, late atomic.Int32
	var held atomic.Bool
	fileDone := make(chan struct{})
	var j *Job
	started := make(chan struct{})
	opt := fastOpts()
	opt.OnEvent = func(ev Event) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		<-started
		select {
		case <-j.Done():
			late.Add(1)
		default:
		}
		switch ev.Kind {
		case EventFileDone:
			close(fileDone)
		case EventProgress:
			if held.CompareAndSwap(false, true) { // the first: the ticker's, while the file is fetched
				select { // (bounded: a file that fails sends no EventFileDone)
				case <-fileDone:
				case <-time.After(30 * time.Second):
					t.Error("the file was not fetched")
				}
				select { // the job must not end under this call (bounded, for the old code)
				case <-j.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}
	j = Start(context.Background(), t.TempDir(), specs(h, files), opt)
	close(started)
	if err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := inFlight.Load(); n != 0 {
		t.Errorf("%d OnEvent calls still running when the job ended", n)
	}
	if n := late.Load(); n != 0 {
		t.Errorf("%d events delivered after the job ended", n)
	}
}

// TestRateMeterFirstBurst: a transfer's first two samples a moment apart (a
// ticker's stale tick and the next, after its goroutine was held up) do not set
// the rate for seconds: a tenth of a second later it is near the steady rate.
// The first interval's rate used to become the rate, 16 times the steady one
// here, and smoothing over 3 s left it above 15 times after 100 ms.
func TestRateMeterFirstBurst(t *testing.T) {
	const steady = 3 << 20 // bytes/s
	var r rateMeter
	t0 := time.Now()
	r.add(t0, 0)
	n := int64(48 << 10) // three 16 KiB chunks in 1 ms
	r.add(t0.Add(time.Millisecond), n)
	for ms := 11; ms <= 101; ms += 10 {
		n += steady / 100
		r.add(t0.Add(time.Duration(ms)*time.Millisecond), n)
	}
	if got := r.Rate(); got < steady/2 || got > 2*steady {
		t.Errorf("rate %.0f B/s after 100 ms at %d B/s", got, steady)
	}
	// Later, each interval moves the rate towards its own.
	for ms := 111; ms <= 10_000; ms += 10 {
		n += steady / 200
		r.add(t0.Add(time.Duration(ms)*time.Millisecond), n)
	}
	if got := r.Rate(); got < 0.45*steady || got > 0.55*steady {
		t.Errorf("rate %.0f B/s after 10 s at %d B/s", got, steady/2)
	}
}
