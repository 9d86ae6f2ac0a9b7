package gpuruntime

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/models/download"
)

// fakeIndex is a PyPI-style JSON API and file server with faults to inject.
type fakeIndex struct {
	*httptest.Server
	wheels   map[string][]byte // file name → bytes
	contents map[string][]byte // member name → bytes, over all wheels

	mu       sync.Mutex
	author   string          // of the JAX packages
	badSHA   map[string]bool // publish a wrong digest
	missing  map[string]bool // 404 for the file
	cutOnce  map[string]bool // the first whole-file GET stops half-way
	ranges   map[string][]string
	sent     map[string]int64
	slowBPS  atomic.Int64 // bytes/s for file bodies, 0 = full speed
	projects atomic.Int64 // JSON requests served
}

func randBytes(rng *rand.Rand, n int) []byte { b := make([]byte, n); rng.Read(b); return b }

func makeWheel(t *testing.T, members map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for name, data := range members {
		h := &zip.FileHeader{Name: name, Method: zip.Store}
		if strings.Contains(name, "/bin/") {
			h.SetMode(0o755)
		}
		w, err := z.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	z.Create("nvidia_cublas_cu12-12.9.1.4.dist-info/METADATA") // outside nvidia/: not extracted
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const (
	pluginWheel = "jax_cuda12_pjrt-0.7.2-py3-none-manylinux2014_x86_64.whl"
	cublasWheel = "nvidia_cublas_cu12-12.9.1.4-py3-none-manylinux_2_27_x86_64.whl"
	nvccWheel   = "nvidia_cuda_nvcc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl"
)

func newFakeIndex(t *testing.T) *fakeIndex {
	rng := rand.New(rand.NewSource(1))
	f := &fakeIndex{author: jaxAuthor, badSHA: map[string]bool{}, missing: map[string]bool{}, cutOnce: map[string]bool{},
		ranges: map[string][]string{}, sent: map[string]int64{}, contents: map[string][]byte{}}
	members := map[string]map[string][]byte{
		pluginWheel: {"jax_plugins/xla_cuda12/xla_cuda_plugin.so": randBytes(rng, 300<<10), "jax_plugins/xla_cuda12/__init__.py": []byte("")},
		cublasWheel: {"nvidia/cublas/lib/libcublas.so.12": randBytes(rng, 500<<10), "nvidia/cublas/lib/libcublasLt.so.12": randBytes(rng, 200<<10)},
		nvccWheel:   {"nvidia/cuda_nvcc/bin/ptxas": randBytes(rng, 100<<10)},
	}
	f.wheels = map[string][]byte{}
	for w, m := range members {
		f.wheels[w] = makeWheel(t, m)
		for name, data := range m {
			f.contents[name] = data
		}
	}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.Start() // after f.Server is set: the handler reads f.URL
	t.Cleanup(f.Close)
	return f
}

func (f *fakeIndex) file(name string) map[string]any {
	data := f.wheels[name]
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	f.mu.Lock()
	if f.badSHA[name] {
		digest = strings.Repeat("0", 64)
	}
	f.mu.Unlock()
	return map[string]any{"packagetype": "bdist_wheel", "filename": name, "url": f.URL + "/files/" + name,
		"size": len(data), "digests": map[string]string{"sha256": digest}}
}

func (f *fakeIndex) serve(w http.ResponseWriter, r *http.Request) {
	if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
		f.serveFile(w, r, name)
		return
	}
	f.projects.Add(1)
	f.mu.Lock()
	author := f.author
	f.mu.Unlock()
	mac := map[string]any{"packagetype": "bdist_wheel", "filename": "jax_cuda12_pjrt-0.7.2-py3-none-macosx_11_0_arm64.whl",
		"url": f.URL + "/files/mac.whl", "size": 10, "digests": map[string]string{"sha256": strings.Repeat("1", 64)}}
	var p map[string]any
	switch r.URL.Path {
	case "/pypi/jax-cuda12-pjrt/json":
		p = map[string]any{"info": map[string]any{"name": "jax-cuda12-pjrt", "version": "0.7.2", "author_email": author},
			"urls": []any{mac, f.file(pluginWheel)}}
	case "/pypi/jax-cuda12-plugin/0.7.2/json":
		p = map[string]any{"info": map[string]any{"name": "jax-cuda12-plugin", "version": "0.7.2", "author_email": author,
			"requires_dist": []string{"jax-cuda12-pjrt==0.7.2", `nvidia-cublas-cu12>=12.1.3.1; extra == "with-cuda"`,
				`nvidia-cuda-nvcc-cu12>=12.6.85; extra == "with-cuda"`}}}
	case "/pypi/nvidia-cublas-cu12/json":
		p = map[string]any{"info": map[string]any{"name": "nvidia-cublas-cu12", "version": "13.0.0"},
			"releases": map[string]any{"12.0.1": []any{f.file(cublasWheel)}, "12.9.1.4": []any{f.file(cublasWheel)},
				"13.0.0rc1": []any{f.file(cublasWheel)}, "12.9.2.0": []any{mac}}}
	case "/pypi/nvidia-cuda-nvcc-cu12/json":
		p = map[string]any{"info": map[string]any{"name": "nvidia-cuda-nvcc-cu12", "version": "12.9.86"},
			"releases": map[string]any{"12.9.86": []any{f.file(nvccWheel)}}}
	default:
		http.NotFound(w, r)
		return
	}
	json.NewEncoder(w).Encode(p)
}

func (f *fakeIndex) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	data, ok := f.wheels[name]
	f.mu.Lock()
	f.ranges[name] = append(f.ranges[name], r.Header.Get("Range"))
	cut := f.cutOnce[name] && r.Header.Get("Range") == ""
	if cut {
		f.cutOnce[name] = false
	}
	if !ok || f.missing[name] {
		f.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	f.mu.Unlock()
	start := int64(0)
	if rg := r.Header.Get("Range"); rg != "" {
		s, _, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		start, _ = strconv.ParseInt(s, 10, 64)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(data)-1, len(data)))
		w.Header().Set("Content-Length", strconv.Itoa(len(data)-int(start)))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	}
	body := data[start:]
	if cut {
		body = body[:len(body)/2]
	}
	for len(body) > 0 {
		n := min(len(body), 16<<10)
		m, err := w.Write(body[:n])
		f.mu.Lock()
		f.sent[name] += int64(m)
		f.mu.Unlock()
		if err != nil {
			return
		}
		body = body[n:]
		if bps := f.slowBPS.Load(); bps > 0 {
			w.(http.Flusher).Flush()
			time.Sleep(time.Duration(int64(n) * int64(time.Second) / bps))
		}
	}
	if cut {
		panic(http.ErrAbortHandler) // drop the connection mid-file
	}
}

func (f *fakeIndex) sentTotal() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, v := range f.sent {
		n += v
	}
	return n
}

func (f *fakeIndex) wheelBytes() int64 {
	var n int64
	for _, name := range []string{pluginWheel, cublasWheel, nvccWheel} {
		n += int64(len(f.wheels[name]))
	}
	return n
}

// installer returns an Installer on the fake index into a fresh runtime folder,
// with fast retries and a Verify that records its calls and answers err.
func (f *fakeIndex) installer(t *testing.T, dir string, verifyErr error) (*Installer, *int) {
	calls := new(int)
	in := &Installer{
		Index:   Index{URL: f.URL + "/pypi"},
		Runtime: backend.CUDARuntime{Dir: filepath.Join(dir, "cuda")},
		Download: download.Options{StallTimeout: 2 * time.Second, BackoffBase: 5 * time.Millisecond,
			BackoffMax: 50 * time.Millisecond, MaxRetries: 4, Interval: 10 * time.Millisecond},
		Verify: func(_ context.Context, plugin string) error {
			*calls++
			if b, err := os.ReadFile(plugin); err != nil || !bytes.Equal(b, f.contents["jax_plugins/xla_cuda12/xla_cuda_plugin.so"]) {
				t.Errorf("Verify: the plugin at %s is not the wheel's (%v)", plugin, err)
			}
			return verifyErr
		},
		OS: "linux", Arch: "amd64",
	}
	return in, calls
}

func TestResolve(t *testing.T) {
	f := newFakeIndex(t)
	in, _ := f.installer(t, t.TempDir(), nil)
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
	if plan.Size() != f.wheelBytes() {
		t.Errorf("plan size %d, wheels %d", plan.Size(), f.wheelBytes())
	}
	f.mu.Lock()
	f.author = "someone@example.com"
	f.mu.Unlock()
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
	f := newFakeIndex(t)
	dir := t.TempDir()
	in, calls := f.installer(t, dir, nil)
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
	if last.Done != f.wheelBytes() || last.Total != f.wheelBytes() {
		t.Errorf("last progress %d/%d of %d", last.Done, last.Total, f.wheelBytes())
	}
	for member, path := range map[string]string{
		"nvidia/cublas/lib/libcublas.so.12": filepath.Join(rt.NVIDIA(), "cublas", "lib", "libcublas.so.12"),
		"nvidia/cuda_nvcc/bin/ptxas":        filepath.Join(rt.NVIDIA(), "bin", "ptxas"), // through the link
	} {
		if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, f.contents[member]) {
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
	f := newFakeIndex(t)
	dir := t.TempDir()
	in, calls := f.installer(t, dir, errors.New("No NVIDIA GPU found"))
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
	sent := f.sentTotal()
	in.Verify = func(context.Context, string) error { return nil }
	if err := in.Install(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if !in.Runtime.Installed() || f.sentTotal() != sent {
		t.Errorf("installed %v; re-verify downloaded %d more bytes", in.Runtime.Installed(), f.sentTotal()-sent)
	}
}

// TestInstallCutConnectionResumes: a connection dropped half-way through a
// wheel is resumed with a Range request, and the file still verifies.
func TestInstallCutConnectionResumes(t *testing.T) {
	f := newFakeIndex(t)
	f.cutOnce[cublasWheel] = true
	in, _ := f.installer(t, t.TempDir(), nil)
	if err := in.Install(context.Background(), plan(t, in)); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	rg := f.ranges[cublasWheel]
	f.mu.Unlock()
	half := len(f.wheels[cublasWheel]) / 2
	if len(rg) != 2 || rg[0] != "" || rg[1] != fmt.Sprintf("bytes=%d-", half) {
		t.Errorf("requests for the cut wheel: %q (want a whole GET, then bytes=%d-)", rg, half)
	}
	if got := f.sentTotal(); got != f.wheelBytes() {
		t.Errorf("sent %d bytes for %d of wheels: the cut file was fetched again", got, f.wheelBytes())
	}
	if !in.Runtime.Installed() {
		t.Error("not installed")
	}
}

// TestInstallBadSHA: a wheel whose bytes do not match the index's digest is
// quarantined and nothing is extracted or marked installed.
func TestInstallBadSHA(t *testing.T) {
	f := newFakeIndex(t)
	f.badSHA[nvccWheel] = true
	in, calls := f.installer(t, t.TempDir(), nil)
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
func TestInstall404(t *testing.T) {
	f := newFakeIndex(t)
	f.missing[pluginWheel] = true
	in, _ := f.installer(t, t.TempDir(), nil)
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
	f := newFakeIndex(t)
	in, _ := f.installer(t, t.TempDir(), nil)
	in.Download.FreeSpace = func(string) (int64, error) { return 1 << 30, nil } // < download + 2× + 1 GiB
	err := in.Install(context.Background(), plan(t, in))
	if !errors.Is(err, download.ErrNoSpace) || f.sentTotal() != 0 {
		t.Fatalf("preflight: err = %v, %d bytes sent", err, f.sentTotal())
	}

	in, _ = f.installer(t, t.TempDir(), nil)
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
	f := newFakeIndex(t)
	f.slowBPS.Store(256 << 10) // about 4 s for the wheels: time to kill it mid-way
	dir := filepath.Join(t.TempDir(), "cuda")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GPURUNTIME_CHILD_INDEX="+f.URL+"/pypi", "GPURUNTIME_CHILD_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in, _ := f.installer(t, filepath.Dir(dir), nil)
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
	kept := in.Status().Partial
	for _, name := range []string{pluginWheel, cublasWheel, nvccWheel} { // wheels the child finished
		if fi, err := os.Stat(filepath.Join(dir, "downloads", name)); err == nil {
			kept += fi.Size()
		}
	}
	if kept == 0 || in.Runtime.Installed() {
		t.Fatalf("after kill -9: %d bytes in .part files, installed %v", kept, in.Runtime.Installed())
	}
	// The server's handlers for the dead child notice only at their next write.
	before := f.sentTotal()
	for {
		time.Sleep(300 * time.Millisecond)
		if n := f.sentTotal(); n != before {
			before = n
			continue
		}
		break
	}
	f.slowBPS.Store(0)
	if err := in.Install(context.Background(), plan(t, in)); err != nil {
		t.Fatal(err)
	}
	if again := f.sentTotal() - before; again > f.wheelBytes()-kept {
		t.Errorf("restart fetched %d bytes; only %d were missing (resume the .part files)", again, f.wheelBytes()-kept)
	}
	if !in.Runtime.Installed() {
		t.Error("not installed after the restart")
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
// it (within the smoothing of the first intervals); a pause stops the transfer with the .part files kept and the install still
// waiting, a resume continues them where they stopped (no byte fetched twice) to a
// verified install; and a cancel ends a second install with ErrCanceled, its
// partial files removed and nothing installed.
func TestInstallProgressPauseResumeCancel(t *testing.T) {
	const bps = 1 << 20
	f := newFakeIndex(t)
	f.slowBPS.Store(bps)
	in, _ := f.installer(t, t.TempDir(), nil)
	jobs := make(chan *download.Job, 1)
	in.OnJob = func(j *download.Job) { jobs <- j }
	var mu sync.Mutex
	var rated []download.Event
	in.Download.OnEvent = func(ev download.Event) {
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
	// Three files in flight at the throttle each: about three times it, smoothed from
	// the first 10 ms interval's (which holds a whole 16 KiB chunk of each or none).
	if ev.Rate < bps/4 || ev.Rate > 8*bps || ev.Total != f.wheelBytes() {
		t.Errorf("progress %d/%d at %.0f B/s (the server sends %d B/s a file)", ev.Done, ev.Total, ev.Rate, bps)
	}
	if want := time.Duration(float64(ev.Total-ev.Done) / ev.Rate * float64(time.Second)); ev.ETA <= 0 || ev.ETA-want > time.Millisecond || want-ev.ETA > time.Millisecond {
		t.Errorf("time left %v; the bytes left at that rate take %v", ev.ETA, want)
	}

	job.Pause()
	waitUntil(t, "the pause", func() bool { return job.State() == download.StatePaused })
	time.Sleep(300 * time.Millisecond) // the handlers notice the closed connections at their next write
	sent := f.sentTotal()
	time.Sleep(300 * time.Millisecond)
	if f.sentTotal() != sent {
		t.Errorf("%d bytes sent while paused", f.sentTotal()-sent)
	}
	select {
	case err := <-done:
		t.Fatalf("install returned while paused: %v", err)
	default:
	}
	if st := in.Status(); st.Partial == 0 || st.Installed {
		t.Errorf("paused: %+v (want .part files kept, not installed)", st)
	}
	f.slowBPS.Store(0)
	job.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !in.Runtime.Installed() {
		t.Error("not installed after resume")
	}
	if extra := f.sentTotal() - f.wheelBytes(); extra > f.wheelBytes()/20 {
		t.Errorf("resume fetched %d bytes again", extra)
	}

	f.slowBPS.Store(bps)
	in, _ = f.installer(t, t.TempDir(), nil)
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
