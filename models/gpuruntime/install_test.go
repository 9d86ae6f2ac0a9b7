package gpuruntime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/gpuruntime/gpuruntimetest"
)

// The fake index's wheels.
const (
	pluginWheel = gpuruntimetest.PluginWheel
	cublasWheel = gpuruntimetest.CublasWheel
	nvccWheel   = gpuruntimetest.NvccWheel
)

// newInstaller returns an Installer on the fake index f into a fresh runtime folder,
// with fast retries and a Verify that records its calls and answers err.
func newInstaller(t *testing.T, f *gpuruntimetest.Index, dir string, verifyErr error) (*Installer, *int) {
	calls := new(int)
	in := &Installer{
		Index:   Index{URL: f.API()},
		Runtime: backend.CUDARuntime{Dir: filepath.Join(dir, "cuda")},
		Download: download.Options{StallTimeout: 2 * time.Second, BackoffBase: 5 * time.Millisecond,
			BackoffMax: 50 * time.Millisecond, MaxRetries: 4, Interval: 10 * time.Millisecond},
		Verify: func(_ context.Context, plugin string) error {
			*calls++
			if b, err := os.ReadFile(plugin); err != nil || !bytes.Equal(b, f.Contents[gpuruntimetest.PluginMember]) {
				t.Errorf("Verify: the plugin at %s is not the wheel's (%v)", plugin, err)
			}
			return verifyErr
		},
		OS: "linux", Arch: "amd64",
	}
	return in, calls
}

func TestResolve(t *testing.T) {
	f := gpuruntimetest.New(t)
	in, _ := newInstaller(t, f, t.TempDir(), nil)
	plan, err := in.Plan(context.Background(), "cuda12")
	if err != nil {
		t.Fatal(err)
	}
	if plan.JAX != "0.7.2" || plan.Plugin.Filename != pluginWheel || len(plan.Library) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	got := map[string]string{}
	for _, w := range plan.Library {
		got[w.Package] = w.Version
	}
	// The newest release the requirement allows with a Linux wheel: not the
	// pre-release, not the macOS-only one.
	if got["nvidia-cublas-cu12"] != "12.9.1.4" || got["nvidia-cuda-nvcc-cu12"] != "12.9.86" {
		t.Errorf("library versions %v", got)
	}
	if plan.Size() != f.WheelBytes() {
		t.Errorf("plan size %d, wheels %d", plan.Size(), f.WheelBytes())
	}
	f.SetAuthor("someone@example.com")
	if _, err := in.Plan(context.Background(), "cuda12"); err == nil || !strings.Contains(err.Error(), "not published by the JAX team") {
		t.Errorf("foreign author: %v", err)
	}
	if _, err := in.Plan(context.Background(), "cuda11"); err == nil {
		t.Error("cuda11 accepted")
	}
}

func plan(t *testing.T, in *Installer) *Plan {
	t.Helper()
	p, err := in.Plan(context.Background(), "cuda12")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInstallVerifiedThenRemove: the wheels are fetched, the plugin and the
// nvidia/ trees extracted as go-xla lays them out, the wheels deleted, and only
// after Verify passed is the runtime marked installed, where auto finds it.
func TestInstallVerifiedThenRemove(t *testing.T) {
	f := gpuruntimetest.New(t)
	dir := t.TempDir()
	in, calls := newInstaller(t, f, dir, nil)
	var stages []string
	in.OnStage = func(s string) { stages = append(stages, s) }
	var last download.Event
	var mu sync.Mutex
	in.Download.OnEvent = func(ev download.Event) { mu.Lock(); last = ev; mu.Unlock() }
	p := plan(t, in)
	if err := in.Install(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	rt := in.Runtime
	if *calls != 1 || !rt.Installed() {
		t.Fatalf("verify calls %d, installed %v", *calls, rt.Installed())
	}
	if strings.Join(stages, ",") != "resolving,downloading,extracting,verifying" {
		t.Errorf("stages %v", stages)
	}
	if last.Done != f.WheelBytes() || last.Total != f.WheelBytes() {
		t.Errorf("last progress %d/%d of %d", last.Done, last.Total, f.WheelBytes())
	}
	for member, path := range map[string]string{
		"nvidia/cublas/lib/libcublas.so.12": filepath.Join(rt.NVIDIA(), "cublas", "lib", "libcublas.so.12"),
		"nvidia/cuda_nvcc/bin/ptxas":        filepath.Join(rt.NVIDIA(), "bin", "ptxas"), // through the link
	} {
		if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, f.Contents[member]) {
			t.Errorf("%s: %v", path, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(rt.NVIDIA(), "cuda_nvcc", "bin", "ptxas")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("ptxas not executable: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rt.Dir, "downloads")); !os.IsNotExist(err) {
		t.Errorf("wheels kept after extraction: %v", err)
	}
	found := backend.FindPlugins([]backend.Location{{Dir: rt.NVIDIA(), From: backend.FromRuntime, Requires: rt.Marker()}})
	if len(found) != 1 || found[0].Name != "cuda" || found[0].Path != rt.Plugin() {
		t.Errorf("auto finds %+v", found)
	}
	st := in.Status()
	if !st.Installed || st.Plan == nil || st.Plan.JAX != "0.7.2" || st.VerifiedAt == nil || st.Disk == 0 {
		t.Errorf("status %+v", st)
	}
	if err := in.Remove(); err != nil {
		t.Fatal(err)
	}
	if st := in.Status(); st.Installed || st.Downloaded || st.Disk != 0 {
		t.Errorf("after remove: %+v", st)
	}
}

// TestInstallNotVerified: where no graph runs on a GPU (this machine), install
// ends "not verified", not installed; a later install verifies again without
// downloading anything.
func TestInstallNotVerified(t *testing.T) {
	f := gpuruntimetest.New(t)
	dir := t.TempDir()
	in, calls := newInstaller(t, f, dir, errors.New("No NVIDIA GPU found"))
	p := plan(t, in)
	err := in.Install(context.Background(), p)
	if !errors.Is(err, ErrNotVerified) || !strings.Contains(err.Error(), "No NVIDIA GPU found") {
		t.Fatalf("err = %v", err)
	}
	if in.Runtime.Installed() || *calls != 1 {
		t.Errorf("installed %v after a failed verify (%d calls)", in.Runtime.Installed(), *calls)
	}
	if st := in.Status(); st.Installed || !st.Downloaded {
		t.Errorf("status %+v", st)
	}
	sent := f.Sent()
	in.Verify = func(context.Context, string) error { return nil }
	if err := in.Install(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if !in.Runtime.Installed() || f.Sent() != sent {
		t.Errorf("installed %v; re-verify downloaded %d more bytes", in.Runtime.Installed(), f.Sent()-sent)
	}
}

// TestInstallCutConnectionResumes: a connection dropped half-way through a
// wheel is resumed with a Range request, and the file still verifies.
func TestInstallCutConnectionResumes(t *testing.T) {
	f := gpuruntimetest.New(t)
	f.CutOnce(cublasWheel)
	in, _ := newInstaller(t, f, t.TempDir(), nil)
	if err := in.Install(context.Background(), plan(t, in)); err != nil {
		t.Fatal(err)
	}
	rg := f.Ranges(cublasWheel)
	half := len(f.Files[cublasWheel]) / 2
	if len(rg) != 2 || rg[0] != "" || rg[1] != fmt.Sprintf("bytes=%d-", half) {
		t.Errorf("requests for the cut wheel: %q (want a whole GET, then bytes=%d-)", rg, half)
	}
	if got := f.Sent(); got != f.WheelBytes() {
		t.Errorf("sent %d bytes for %d of wheels: the cut file was fetched again", got, f.WheelBytes())
	}
	if !in.Runtime.Installed() {
		t.Error("not installed")
	}
}

// TestInstallBadSHA: a wheel whose bytes do not match the index's digest is
// quarantined and nothing is extracted or marked installed.
func TestInstallBadSHA(t *testing.T) {
	f := gpuruntimetest.New(t)
	f.BadSHA(nvccWheel)
	in, calls := newInstaller(t, f, t.TempDir(), nil)
	err := in.Install(context.Background(), plan(t, in))
	var ve *download.VerifyError
	if !errors.As(err, &ve) || ve.File != nvccWheel {
		t.Fatalf("err = %v, want a VerifyError for %s", err, nvccWheel)
	}
	if *calls != 0 || in.Runtime.Installed() {
		t.Errorf("verify calls %d, installed %v", *calls, in.Runtime.Installed())
	}
	if _, err := os.Stat(in.Runtime.Plugin()); !os.IsNotExist(err) {
		t.Errorf("plugin extracted from a failed download: %v", err)
	}
}

// TestInstall404: a wheel the file server does not have is a plain error in
// the index's words (not the Hub's), and nothing is installed.
// TestPlanOfflineSaysWhatToDo: an index that cannot be reached is named, with
// what to do (it said only "cannot reach the package index (URL): Get …").
func TestPlanOfflineSaysWhatToDo(t *testing.T) {
	f := gpuruntimetest.New(t)
	in, _ := newInstaller(t, f, t.TempDir(), nil)
	in.Index.URL = "http://127.0.0.1:9/pypi" // nothing listens on the discard port
	_, err := in.Plan(context.Background(), "cuda12")
	if err == nil || !strings.Contains(err.Error(), "cannot reach the package index (http://127.0.0.1:9/pypi) — check the internet connection, or set "+IndexEnvVar) {
		t.Errorf("offline: %v", err)
	}
}

func TestInstall404(t *testing.T) {
	f := gpuruntimetest.New(t)
	f.Missing(pluginWheel)
	in, _ := newInstaller(t, f, t.TempDir(), nil)
	err := in.Install(context.Background(), plan(t, in))
	if err == nil || !strings.Contains(err.Error(), "package index's file server answered 404") || !strings.Contains(err.Error(), pluginWheel) {
		t.Fatalf("err = %v", err)
	}
	if in.Runtime.Installed() {
		t.Error("installed")
	}
}

// TestInstallFullDisk: too little free space stops the install before any
// wheel is fetched; a disk that fills up mid-way stops it with the .part kept.
func TestInstallFullDisk(t *testing.T) {
	f := gpuruntimetest.New(t)
	in, _ := newInstaller(t, f, t.TempDir(), nil)
	in.Download.FreeSpace = func(string) (int64, error) { return 1 << 30, nil } // < download + 2× + 1 GiB
	err := in.Install(context.Background(), plan(t, in))
	if !errors.Is(err, download.ErrNoSpace) || f.Sent() != 0 {
		t.Fatalf("preflight: err = %v, %d bytes sent", err, f.Sent())
	}

	in, _ = newInstaller(t, f, t.TempDir(), nil)
	var written atomic.Int64
	in.Download.Parallel = 1
	in.Download.OpenPart = func(p string) (download.PartFile, error) {
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		return &fullDisk{File: fh, budget: &written, limit: 400 << 10}, err
	}
	err = in.Install(context.Background(), plan(t, in))
	if !errors.Is(err, download.ErrNoSpace) || in.Runtime.Installed() {
		t.Fatalf("disk full: err = %v", err)
	}
	if st := in.Status(); st.Partial == 0 {
		t.Errorf("no .part kept: %+v", st)
	}
}

type fullDisk struct {
	*os.File
	budget *atomic.Int64
	limit  int64
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if d.budget.Add(int64(len(p))) > d.limit {
		return 0, syscall.ENOSPC
	}
	return d.File.Write(p)
}

// TestMain lets the kill test run an install in a child process.
func TestMain(m *testing.M) {
	if idx := os.Getenv("GPURUNTIME_CHILD_INDEX"); idx != "" {
		in := &Installer{Index: Index{URL: idx}, Runtime: backend.CUDARuntime{Dir: os.Getenv("GPURUNTIME_CHILD_DIR")},
			Verify: func(context.Context, string) error { return nil }, OS: "linux", Arch: "amd64"}
		p, err := in.Plan(context.Background(), "cuda12")
		if err == nil {
			err = in.Install(context.Background(), p)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestInstallKilledAndRestarted: an install killed (SIGKILL) mid-download
// leaves its .part file, and the next install resumes it instead of starting over.
func TestInstallKilledAndRestarted(t *testing.T) {
	f := gpuruntimetest.New(t)
	f.SetBytesPerSec(256 << 10) // about 4 s for the wheels: time to kill it mid-way
	dir := filepath.Join(t.TempDir(), "cuda")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GPURUNTIME_CHILD_INDEX="+f.API(), "GPURUNTIME_CHILD_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in, _ := newInstaller(t, f, filepath.Dir(dir), nil)
	deadline := time.Now().Add(60 * time.Second)
	for in.Status().Partial < 200<<10 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child made no progress")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if st := in.Status(); st.Partial == 0 || st.Installed {
		t.Fatalf("after kill -9: %d bytes in .part files, installed %v", st.Partial, st.Installed)
	}
	// The restart is judged by where its requests start: the index may still be
	// writing into the dead child's connections, so the bytes it sends after the
	// kill are no measure of what the restart fetched.
	c := cutWheels(f, in)
	f.SetBytesPerSec(0)
	if err := in.Install(context.Background(), plan(t, in)); err != nil {
		t.Fatal(err)
	}
	checkResumedFrom(t, f, c)
	if !in.Runtime.Installed() {
		t.Error("not installed after the restart")
	}
}

// cut is what an install's download left when it was cut (a kill, a pause), per
// wheel: the bytes in its .part, whether it was finished (in the downloads folder
// under its own name), and how many requests the index had had for it.
type cut struct {
	kept      map[string]int64
	finished  map[string]bool
	requested map[string]int
}

func cutWheels(f *gpuruntimetest.Index, in *Installer) cut {
	c := cut{kept: map[string]int64{}, finished: map[string]bool{}, requested: map[string]int{}}
	for _, name := range gpuruntimetest.Wheels {
		c.kept[name], c.requested[name] = download.PartSize(in.downloads(), name), len(f.Starts(name))
		_, err := os.Stat(filepath.Join(in.downloads(), name))
		c.finished[name] = err == nil
	}
	return c
}

// checkResumedFrom asserts that the install after the cut fetched no finished
// wheel again, asked for each partly kept one from the bytes kept, and that every
// later request resumed too. It judges by where the requests start, as the
// models and download tests do: the bytes the index sent since the cut count
// what it wrote into the connections the cut dropped (on a busy machine, a lot).
func checkResumedFrom(t *testing.T, f *gpuruntimetest.Index, c cut) {
	t.Helper()
	for _, name := range gpuruntimetest.Wheels {
		starts := f.Starts(name)[c.requested[name]:]
		switch {
		case c.finished[name]:
			if len(starts) != 0 {
				t.Errorf("%s was fetched again from %v; it was already downloaded", name, starts)
			}
			continue
		case c.kept[name] == 0:
			continue
		case len(starts) == 0 || starts[0] != c.kept[name]:
			t.Errorf("%s: the install after the cut asked from %v; %d bytes were kept", name, starts, c.kept[name])
		}
		if _, err := f.Resumed(name); err != nil {
			t.Error(err)
		}
	}
}

func TestSupportedAndCUDAFor(t *testing.T) {
	for _, c := range []struct{ os, arch, want string }{
		{"windows", "amd64", "WSL2"}, {"darwin", "arm64", "macOS"}, {"linux", "arm64", "x86-64 only"}, {"linux", "amd64", ""},
	} {
		err := (&Installer{OS: c.os, Arch: c.arch}).Supported()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s/%s: %v", c.os, c.arch, err)
		}
	}
	for driver, want := range map[string]string{"580.65.06": "cuda13", "550.54.15": "cuda12", "": "cuda12", "470.1": ""} {
		got, err := CUDAFor(nvidia.GPU{Driver: driver})
		if got != want || (want == "") != (err != nil) {
			t.Errorf("driver %q: %q, %v", driver, got, err)
		}
	}
}

// TestVerifyCommand: a child that fails gives its last stderr line, without the
// "darkroom …:" prefix, as the reason; one that succeeds passes.
func TestVerifyCommand(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	fail := VerifyCommand(sh, "-c", `echo compiling >&2; echo "darkroom gpu: the CUDA plugin did not start: no CUDA-capable device is detected" >&2; exit 1`, "sh")
	if err := fail(context.Background(), "/x/plugin.so"); err == nil || err.Error() != "the CUDA plugin did not start: no CUDA-capable device is detected" {
		t.Errorf("failing child: %v", err)
	}
	ok := VerifyCommand(sh, "-c", `test "$1" = /x/plugin.so`, "sh")
	if err := ok(context.Background(), "/x/plugin.so"); err != nil {
		t.Errorf("passing child (the plugin path is its last argument): %v", err)
	}
}

// TestInstallProgressPauseResumeCancel drives an install through the job it hands
// to OnJob, as the app's buttons do, on a file server throttled to 1 MiB/s: the
// progress events carry a rate near the throttle and a time left that agrees with
// it (the average of the first intervals); a pause stops the transfer with the .part files kept and the install still
// waiting, a resume continues them where they stopped (no byte fetched twice) to a
// verified install; and a cancel ends a second install with ErrCanceled, its
// partial files removed and nothing installed.
func TestInstallProgressPauseResumeCancel(t *testing.T) {
	const bps = 1 << 20
	f := gpuruntimetest.New(t)
	f.SetBytesPerSec(bps)
	in, _ := newInstaller(t, f, t.TempDir(), nil)
	jobs := make(chan *download.Job, 1)
	in.OnJob = func(j *download.Job) { jobs <- j }
	var mu sync.Mutex
	var rated []download.Event
	paused := make(chan struct{}, 1)
	in.Download.OnEvent = func(ev download.Event) {
		notePause(paused, ev)
		if ev.Kind == download.EventProgress && ev.Rate > 0 && ev.Done > 256<<10 {
			mu.Lock()
			rated = append(rated, ev)
			mu.Unlock()
		}
	}
	p := plan(t, in)
	done := make(chan error, 1)
	go func() { done <- in.Install(context.Background(), p) }()
	job := <-jobs
	waitUntil(t, "a rated progress event", func() bool { mu.Lock(); defer mu.Unlock(); return len(rated) > 0 })
	mu.Lock()
	ev := rated[len(rated)-1]
	mu.Unlock()
	// Three files in flight at the throttle each: about three times it, the average
	// since the first progress tick (the index sends whole 16 KiB chunks).
	if ev.Rate < bps/4 || ev.Rate > 8*bps || ev.Total != f.WheelBytes() {
		t.Errorf("progress %d/%d at %.0f B/s (the server sends %d B/s a file)", ev.Done, ev.Total, ev.Rate, bps)
	}
	if want := time.Duration(float64(ev.Total-ev.Done) / ev.Rate * float64(time.Second)); ev.ETA <= 0 || ev.ETA-want > time.Millisecond || want-ev.ETA > time.Millisecond {
		t.Errorf("time left %v; the bytes left at that rate take %v", ev.ETA, want)
	}

	// The job reports the pause once its transfers have returned: the .part files
	// then hold what the resume must ask for next, and a transfer that went on
	// writing would leave the resume asking from beyond them.
	job.Pause()
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("no pause event 30 s after Pause")
	}
	c := cutWheels(f, in)
	select {
	case err := <-done:
		t.Fatalf("install returned while paused: %v", err)
	default:
	}
	if st := in.Status(); st.Partial == 0 || st.Installed {
		t.Errorf("paused: %+v (want .part files kept, not installed)", st)
	}
	f.SetBytesPerSec(0)
	job.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !in.Runtime.Installed() {
		t.Error("not installed after resume")
	}
	checkResumedFrom(t, f, c)

	f.SetBytesPerSec(bps)
	in, _ = newInstaller(t, f, t.TempDir(), nil)
	jobs = make(chan *download.Job, 1)
	in.OnJob = func(j *download.Job) { jobs <- j }
	go func() { done <- in.Install(context.Background(), p) }()
	job = <-jobs
	waitUntil(t, "a .part file", func() bool { return in.Status().Partial > 0 })
	job.Cancel()
	if err := <-done; !errors.Is(err, download.ErrCanceled) {
		t.Fatalf("canceled install: %v", err)
	}
	if st := in.Status(); st.Partial != 0 || st.Installed || st.Downloaded {
		t.Errorf("after cancel: %+v", st)
	}
}

// TestInstallPausedInOnJob: a job paused in OnJob, as the app pauses an install
// whose Pause came while the index was still being asked, reports the pause
// having asked the index for no wheel, and a resume fetches each wheel once,
// whole, to a verified install. (OnJob used to get the job already started: a
// few requests could go out before the pause held.)
func TestInstallPausedInOnJob(t *testing.T) {
	f := gpuruntimetest.New(t)
	in, _ := newInstaller(t, f, t.TempDir(), nil)
	jobs := make(chan *download.Job, 1)
	in.OnJob = func(j *download.Job) { j.Pause(); jobs <- j }
	paused := make(chan struct{}, 1)
	in.Download.OnEvent = func(ev download.Event) { notePause(paused, ev) }
	p := plan(t, in)
	done := make(chan error, 1)
	go func() { done <- in.Install(context.Background(), p) }()
	job := <-jobs
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("install ended (%v) instead of pausing", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no pause event 30 s after the job was made")
	}
	for _, w := range gpuruntimetest.Wheels {
		if starts := f.Starts(w); len(starts) != 0 {
			t.Errorf("%s was asked for (from %v) while paused", w, starts)
		}
	}
	job.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !in.Runtime.Installed() {
		t.Error("not installed after the resume")
	}
	for _, w := range gpuruntimetest.Wheels { // from its start, and again only to resume (a stall on a busy machine)
		if starts := f.Starts(w); len(starts) == 0 || starts[0] != 0 {
			t.Errorf("%s was asked for from %v (want from byte 0 first)", w, starts)
		}
		if _, err := f.Resumed(w); err != nil {
			t.Error(err)
		}
	}
}

// notePause signals paused, without waiting, for an event that reports the
// download job paused (the job sends it once its transfers have returned).
func notePause(paused chan<- struct{}, ev download.Event) {
	if ev.Kind == download.EventState && ev.State == download.StatePaused {
		select {
		case paused <- struct{}{}:
		default:
		}
	}
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestInstallCanceledWhileVerifying: an install whose context ends while the test
// graph runs (Ctrl-C in `gpu install`, Cancel in the app) returns the context's
// error, not a failed verification, and marks nothing installed.
func TestInstallCanceledWhileVerifying(t *testing.T) {
	f := gpuruntimetest.New(t)
	in, calls := newInstaller(t, f, t.TempDir(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in.Verify = func(ctx context.Context, _ string) error {
		*calls++
		cancel() // the child process is killed with the context
		<-ctx.Done()
		return errors.New("signal: killed")
	}
	err := in.Install(ctx, plan(t, in))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotVerified) || *calls != 1 {
		t.Errorf("canceled while verifying: %v (%d verifications)", err, *calls)
	}
	if in.Runtime.Installed() {
		t.Error("installed")
	}
}
