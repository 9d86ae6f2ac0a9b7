package models

import (
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/hubtest"
	"github.com/darkroomlabs/darkroom/models/store"
)

// repoFiles makes a model repo: a valid tiny config.json and two LFS shards.
func repoFiles(t *testing.T, seed int64) []*hubtest.File {
	t.Helper()
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	mk := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	return []*hubtest.File{
		{Name: "config.json", Data: cfg},
		{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)},
		{Name: "model-00001-of-00002.safetensors", Data: mk(1<<20 + 333), LFS: true},
		{Name: "model-00002-of-00002.safetensors", Data: mk(700<<10 + 5), LFS: true},
		{Name: "README.md", Data: []byte("# tiny\n")},
	}
}

func newManager(t *testing.T, h *hubtest.Hub, dir, token string) *Manager {
	t.Helper()
	m, err := New(Options{Dir: dir, Endpoint: h.URL, Token: token, Download: download.Options{
		StallTimeout: 500 * time.Millisecond, BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		Interval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	m.store.FreeSpace = func(string) (int64, error) { return 1 << 40, nil }
	return m
}

// cut notes, after a download was cut (a killed process, a full disk), what is
// kept of each file and how many requests the hub has had for it, for
// checkResumedFrom.
func cut(h *hubtest.Hub, dir string, files []*hubtest.File) (kept map[string]int64, requested map[string]int) {
	kept, requested = map[string]int64{}, map[string]int{}
	for _, f := range files {
		kept[f.Name], requested[f.Name] = download.PartSize(dir, f.Name), len(h.Starts(f.Name))
	}
	return kept, requested
}

// checkResumedFrom asserts that the pull after the cut asked for each partly
// kept file from the bytes kept, and that every later request resumed too. It
// judges by where the requests start: the hub may still have been writing into
// the dead connections after the cut, and a stall watchdog that fires on a busy
// machine drops what was in flight, so the bytes sent since are no measure.
func checkResumedFrom(t *testing.T, h *hubtest.Hub, files []*hubtest.File, kept map[string]int64, requested map[string]int) {
	t.Helper()
	for _, f := range files {
		if kept[f.Name] == 0 {
			continue
		}
		if starts := h.Starts(f.Name)[requested[f.Name]:]; len(starts) == 0 || starts[0] != kept[f.Name] {
			t.Errorf("%s: the pull after the cut asked from %v; %d bytes were kept", f.Name, starts, kept[f.Name])
		}
		if _, err := h.Resumed(f.Name); err != nil {
			t.Error(err)
		}
	}
}

// checkModel asserts every file of the repo is in dir with its sha256.
func checkModel(t *testing.T, dir string, files []*hubtest.File) {
	t.Helper()
	for _, f := range files {
		got, err := download.HashFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if got != f.SHA256() {
			t.Errorf("%s: sha256 %s, want %s", f.Name, got, f.SHA256())
		}
	}
}

func TestPullTokenAndEnv(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 1)
	h.Add("acme/gated", &hubtest.Repo{Files: files, Token: "hf_secret"})
	dir := t.TempDir()

	m := newManager(t, h, dir, "")
	_, err := m.Pull(context.Background(), "acme/gated", PullOptions{})
	if !errors.Is(err, hub.ErrUnauthorized) || !strings.Contains(err.Error(), "token") {
		t.Fatalf("without token: err = %v, want ErrUnauthorized mentioning the token", err)
	}
	// HF_ENDPOINT and HF_TOKEN from the environment.
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_TOKEN", "hf_secret")
	m2, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m2.store.FreeSpace = func(string) (int64, error) { return 1 << 40, nil }
	var mu sync.Mutex
	var last Event
	m2.Subscribe(func(ev Event) { mu.Lock(); last = ev; mu.Unlock() })
	tr, err := m2.Pull(context.Background(), "acme/gated", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	md, err := m2.Resolve("acme/gated")
	if err != nil {
		t.Fatal(err)
	}
	checkModel(t, md, files)
	man, _ := m2.store.Load("acme/gated")
	if man.State != store.StateComplete || man.Commit == "" || len(man.Files) != len(files) {
		t.Errorf("manifest %+v", man)
	}
	mu.Lock()
	if last.State != "complete" || last.Done != last.Total || last.Total != man.TotalSize() {
		t.Errorf("last event %+v, want complete with all %d bytes", last, man.TotalSize())
	}
	mu.Unlock()
}

func TestPullNotFound(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	m := newManager(t, h, t.TempDir(), "")
	_, err := m.Pull(context.Background(), "acme/nope", PullOptions{})
	if !errors.Is(err, hub.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if _, err := m.Resolve("acme/nope"); err == nil {
		t.Errorf("Resolve accepted a model that was never downloaded")
	}
}

func TestPullCorruptFileIsRefused(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 2)
	files[3].Corrupt = true
	h.Add("acme/bad", &hubtest.Repo{Files: files})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), "acme/bad", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Wait()
	if err == nil || !strings.Contains(err.Error(), files[3].Name) {
		t.Fatalf("err = %v, want one naming %s", err, files[3].Name)
	}
	md := m.store.ModelDir("acme/bad")
	man, _ := m.store.Load("acme/bad")
	if man.State != store.StateCorrupt {
		t.Errorf("manifest state %s, want corrupt", man.State)
	}
	// generate's resolver refuses it, by name and by folder, naming the file.
	for _, name := range []string{"acme/bad", md} {
		if _, err := m.Resolve(name); err == nil || !strings.Contains(err.Error(), files[3].Name) {
			t.Errorf("Resolve(%s) = %v, want a refusal naming the file", name, err)
		}
		if _, err := m.Source(name); err == nil {
			t.Errorf("Source(%s) accepted a corrupt model", name)
		}
	}
	checkModel(t, md, []*hubtest.File{files[0], files[1], files[2], files[4]})
	q, _ := download.HashFile(filepath.Join(md, files[3].Name+".corrupt"))
	if q == "" || q == files[3].SHA256() {
		t.Errorf("quarantined copy missing or not the bad bytes")
	}

	// The Hub fixed: pulling again fetches only the bad file.
	goodSent := h.Sent(files[2].Name)
	files[3].Corrupt = false
	tr, err = m.Pull(context.Background(), "acme/bad", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	// The old quarantined copy stays for diagnosis; the manifest now verifies, but
	// Resolve still refuses while a .corrupt file is in the folder.
	os.Remove(filepath.Join(md, files[3].Name+".corrupt"))
	if _, err := m.Resolve("acme/bad"); err != nil {
		t.Fatal(err)
	}
	checkModel(t, md, files)
	if h.Sent(files[2].Name) != goodSent {
		t.Errorf("a verified file was downloaded again")
	}
}

// enospc fails writes once a shared budget is spent, like a full disk.
type enospc struct {
	*os.File
	budget *int64
	mu     *sync.Mutex
}

func (f enospc) Write(p []byte) (int, error) {
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

func TestPullDiskFull(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 3)
	h.Add("acme/big", &hubtest.Repo{Files: files})
	dir := t.TempDir()

	// Pre-flight: not enough space for what is left, nothing fetched.
	m := newManager(t, h, dir, "")
	m.store.FreeSpace = func(string) (int64, error) { return 10 << 20, nil }
	tr, err := m.Pull(context.Background(), "acme/big", PullOptions{})
	if err == nil {
		err = tr.Wait()
	}
	if !errors.Is(err, download.ErrNoSpace) {
		t.Fatalf("pre-flight: err = %v, want ErrNoSpace", err)
	}
	if h.Sent(files[2].Name) != 0 {
		t.Errorf("fetched shard bytes despite the free-space check")
	}

	// The disk fills up mid-way.
	budget := int64(800 << 10)
	var mu sync.Mutex
	m = newManager(t, h, dir, "")
	m.dl.OpenPart = func(p string) (download.PartFile, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		return enospc{f, &budget, &mu}, nil
	}
	tr, err = m.Pull(context.Background(), "acme/big", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Wait()
	if !errors.Is(err, download.ErrNoSpace) || !strings.Contains(err.Error(), "disk") {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	man, _ := m.store.Load("acme/big")
	if man.State != store.StateFailed {
		t.Errorf("state %s, want failed", man.State)
	}
	md := m.store.ModelDir("acme/big")
	for _, f := range man.Files {
		_, statErr := os.Stat(filepath.Join(md, f.Name))
		if f.State == store.FileComplete {
			got, _ := download.HashFile(filepath.Join(md, f.Name))
			for _, hf := range files {
				if hf.Name == f.Name && got != hf.SHA256() {
					t.Errorf("%s marked complete with the wrong content", f.Name)
				}
			}
		} else if statErr == nil {
			t.Errorf("%s is in place but not verified", f.Name)
		}
	}
	if _, err := m.Resolve("acme/big"); err == nil {
		t.Errorf("Resolve accepted a half-downloaded model")
	}
	// Space freed: the same pull finishes from the kept .part files.
	kept, requested := cut(h, md, files)
	m = newManager(t, h, dir, "")
	tr, err = m.Pull(context.Background(), "acme/big", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, md, files)
	checkResumedFrom(t, h, files, kept, requested)
	var anyKept bool
	for _, k := range kept {
		anyKept = anyKept || k > 0
	}
	if !anyKept {
		t.Errorf("no partial file kept after the disk filled up")
	}
}

func TestPullRestartResumes(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 4)
	h.Add("acme/slow", &hubtest.Repo{Files: files})
	h.SetBytesPerSec(1 << 20)
	dir := t.TempDir()
	m := newManager(t, h, dir, "")
	ctx, cancel := context.WithCancel(context.Background())
	progressed := make(chan struct{}, 1)
	m.Subscribe(func(ev Event) {
		if ev.Done > 600<<10 {
			select {
			case progressed <- struct{}{}:
			default:
			}
		}
	})
	tr, err := m.Pull(ctx, "acme/slow", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-progressed
	cancel() // the app quits mid-download
	if err := tr.Wait(); err == nil {
		t.Fatal("interrupted download reported success")
	}
	h.SetBytesPerSec(0)
	m = newManager(t, h, dir, "") // a new process: nothing deleted on startup
	if ents, _ := m.Entries(); len(ents) == 0 {
		t.Fatal("no entries")
	}
	tr, err = m.Pull(context.Background(), "acme/slow", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, m.store.ModelDir("acme/slow"), files)
	for _, f := range files {
		if _, err := h.Resumed(f.Name); err != nil {
			t.Errorf("restarted from zero: %v", err)
		}
	}
}

func TestPullRefusesUnloadableFormats(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.Add("acme/gguf", &hubtest.Repo{Files: []*hubtest.File{{Name: "model-Q4_K_M.gguf", Data: []byte("GGUF"), LFS: true}}})
	h.Add("acme/nvfp4", &hubtest.Repo{Files: []*hubtest.File{
		{Name: "config.json", Data: []byte(`{"model_type":"diffusion_gemma","quantization_config":{"quant_method":"modelopt"}}`)},
		{Name: "model.safetensors", Data: make([]byte, 4096), LFS: true},
	}})
	m := newManager(t, h, t.TempDir(), "")
	if _, err := m.Pull(context.Background(), "acme/gguf", PullOptions{}); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("gguf without tokenizer.json: err = %v", err)
	}
	if _, err := m.Pull(context.Background(), "acme/nvfp4", PullOptions{}); err == nil {
		t.Errorf("nvfp4 config accepted")
	}
	if h.Sent("model.safetensors") != 0 {
		t.Errorf("weights fetched before the config check")
	}
}

// TestPullAnotherArchitectureLeavesNothing: a repo of another architecture (a
// Llama, pasted into the Library's Hugging Face box) is refused by its
// config.json, naming its model_type, before any weights, and leaves nothing
// behind: it had left a failed "acme/llama" in the Library for the user to
// delete. A model already there is kept whatever its new config says.
func TestPullAnotherArchitectureLeavesNothing(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.Add("acme/llama", &hubtest.Repo{Files: []*hubtest.File{
		{Name: "config.json", Data: []byte(`{"architectures":["LlamaForCausalLM"],"model_type":"llama"}`)},
		{Name: "model.safetensors", Data: make([]byte, 4096), LFS: true},
	}})
	m := newManager(t, h, t.TempDir(), "")
	_, err := m.Pull(context.Background(), "acme/llama", PullOptions{})
	if err == nil || !strings.Contains(err.Error(), `model_type is "llama"`) {
		t.Fatalf("a Llama repo: %v", err)
	}
	if h.Sent("model.safetensors") != 0 {
		t.Error("weights fetched before the config check")
	}
	entries, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Local != nil && e.Local.Repo == "acme/llama" {
			t.Errorf("the refused repo is listed: %+v (state %s)", e.Local.Name, e.State)
		}
	}
	if names, _ := os.ReadDir(m.StorePath()); len(names) > 0 {
		var left []string
		for _, n := range names {
			if !strings.HasPrefix(n.Name(), ".") {
				left = append(left, n.Name())
			}
		}
		if len(left) > 0 {
			t.Errorf("left in the models folder: %v", left)
		}
	}
}

// TestPullNVFP4 pulls the catalog's NVFP4 entry from a fake hub: ModelOpt's
// config.json (quant_method modelopt, quant_algo NVFP4) passes the config check and
// every file verifies.
func TestPullNVFP4(t *testing.T) {
	e, ok := catalog.Find(catalog.NVFP4ID)
	if !ok {
		t.Fatalf("catalog entry %s missing", catalog.NVFP4ID)
	}
	h := hubtest.New()
	defer h.Close()
	cfg := config.Tiny()
	cfg.Quantization = &config.Quantization{QuantMethod: config.ModelOptMethod, QuantAlgo: "NVFP4"}
	cj, err := cfg.MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(8))
	shard := make([]byte, 600<<10)
	rng.Read(shard)
	files := []*hubtest.File{
		{Name: "config.json", Data: cj},
		{Name: "hf_quant_config.json", Data: []byte(`{"producer":{"name":"modelopt"},"quantization":{"quant_algo":"NVFP4","group_size":16}}`)},
		{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)},
		{Name: "model-00001-of-00001.safetensors", Data: shard, LFS: true},
	}
	h.Add(e.Repo, &hubtest.Repo{Files: files})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), catalog.NVFP4ID, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, m.store.ModelDir(e.Repo), files)
}

func TestLibraryDeleteActiveMove(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 5)
	h.Add("acme/tiny", &hubtest.Repo{Files: files})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), "acme/tiny", PullOptions{Include: []string{"*.json", "*.safetensors"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.store.ModelDir("acme/tiny"), "README.md")); err == nil {
		t.Errorf("--include did not filter README.md")
	}
	if err := m.SetActive("acme/tiny"); err != nil {
		t.Fatal(err)
	}
	ents, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range ents {
		if e.ID == "acme/tiny" {
			found = true
			if !e.Active || e.State != "complete" {
				t.Errorf("entry %+v", e)
			}
		}
		if e.ID == "darkroom-mini" && e.State != "built-in" {
			t.Errorf("mini state %q", e.State)
		}
	}
	if !found {
		t.Errorf("local model missing from Entries")
	}
	// Move the store: files verified at the new place, Resolve follows.
	dst := filepath.Join(t.TempDir(), "elsewhere")
	if err := m.MoveStore(context.Background(), dst, nil); err != nil {
		t.Fatal(err)
	}
	md, err := m.Resolve("acme/tiny")
	if err != nil || !strings.HasPrefix(md, dst) {
		t.Fatalf("after move: %s, %v", md, err)
	}
	checkModel(t, md, files[:4])
	if a, _ := m.Active(); a != "acme/tiny" {
		t.Errorf("active %q lost in the move", a)
	}
	if err := m.Delete("acme/tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(md); err == nil {
		t.Errorf("folder still there after delete")
	}
	if a, _ := m.Active(); a != "" {
		t.Errorf("deleted model still active")
	}
	if err := m.Delete("darkroom-mini"); err == nil {
		t.Errorf("deleting the built-in model succeeded")
	}
}

// TestMain lets TestPullKilledAndRestarted and TestTwoProcessesOneModel run this test
// binary as a `pull` process.
func TestMain(m *testing.M) {
	if dir := os.Getenv("PULL_CHILD_DIR"); dir != "" {
		mgr, err := New(Options{Dir: dir, Endpoint: os.Getenv("PULL_CHILD_ENDPOINT")})
		if err == nil {
			var tr *Transfer
			if tr, err = mgr.Pull(context.Background(), os.Getenv("PULL_CHILD_REPO"), PullOptions{}); err == nil {
				err = tr.Wait()
			}
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startPullChild starts this test binary as a process pulling repo from the hub
// at endpoint into the models folder dir (TestMain), its stderr to stderr where
// not nil.
func startPullChild(t *testing.T, dir, endpoint, repo string, stderr io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PULL_CHILD_DIR="+dir, "PULL_CHILD_ENDPOINT="+endpoint, "PULL_CHILD_REPO="+repo)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestPullKilledAndRestarted kills a pulling process with SIGKILL mid-download and
// pulls again in a new one: it resumes from the .part files (bytes fetched after the
// restart = bytes missing) and every file verifies.
func TestPullKilledAndRestarted(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 6)
	h.Add("acme/killme", &hubtest.Repo{Files: files})
	h.SetBytesPerSec(512 << 10)
	dir := t.TempDir()
	cmd := startPullChild(t, dir, h.URL, "acme/killme", nil)
	md := filepath.Join(dir, "acme--killme")
	shard := files[2].Name
	deadline := time.Now().Add(60 * time.Second)
	for download.PartSize(md, shard) < 200<<10 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child made no progress")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	m := newManager(t, h, dir, "")
	man, err := m.store.Load("acme/killme")
	if err != nil || man.State != store.StateDownloading {
		t.Fatalf("after kill -9: manifest %+v, %v", man, err)
	}
	if _, err := m.Resolve("acme/killme"); err == nil {
		t.Errorf("Resolve accepted a killed download")
	}
	kept, requested := cut(h, md, files)
	if kept[shard] == 0 {
		t.Fatalf("no .part kept for %s", shard)
	}
	h.SetBytesPerSec(0)
	tr, err := m.Pull(context.Background(), "acme/killme", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, md, files)
	checkResumedFrom(t, h, files, kept, requested)
}

// TestPauseRightAfterPull pauses in the gap between the config job and the weights
// job (Pull returns once config.json is in): the pause must hold for the job that
// starts next, and Resume must finish the download intact.
func TestPauseRightAfterPull(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 9)
	h.Add("acme/pause", &hubtest.Repo{Files: files})
	h.SetBytesPerSec(512 << 10)
	m := newManager(t, h, t.TempDir(), "")
	// The pause is judged by the event the weights job sends when it takes it (it
	// never comes if the job ignores the pause), not by the hub's byte counts
	// sitting still for a while: they also count what the hub wrote into
	// connections the pause dropped.
	paused := make(chan struct{}, 1)
	unsub := m.Subscribe(func(ev Event) {
		if ev.State == "paused" {
			select {
			case paused <- struct{}{}:
			default:
			}
		}
	})
	defer unsub()
	tr, err := m.Pull(context.Background(), "acme/pause", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Pause()
	select {
	case <-paused:
	case <-tr.Done():
		t.Fatal("paused download finished")
	case <-time.After(30 * time.Second):
		t.Fatal("the weights job never reported the pause")
	}
	h.SetBytesPerSec(0)
	tr.Resume()
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, m.store.ModelDir("acme/pause"), files)
}

// TestPauseAtConfigWeightsBoundary pauses the moment config.json is verified, when
// the config job is ending and the weights job has not asked the hub for anything
// yet. While paused, no weights are requested and the model is neither loadable
// (by name or by folder) nor listed as complete; Resume finishes it intact with
// config.json fetched once and each weights file fetched once from byte 0, then
// only resumed.
func TestPauseAtConfigWeightsBoundary(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 13)
	const repo = "acme/boundary"
	h.Add(repo, &hubtest.Repo{Files: files})
	m := newManager(t, h, t.TempDir(), "")
	weights := []string{files[2].Name, files[3].Name}

	var once sync.Once
	pausedAt := make(chan map[string]int, 1) // weights requests made when the pause was asked for
	paused := make(chan struct{}, 1)
	unsub := m.Subscribe(func(ev Event) {
		if ev.File == "config.json" && ev.State == "downloading" && ev.Err == nil && ev.Message == "" {
			once.Do(func() { // config.json's file-done: the boundary
				reqs := map[string]int{}
				for _, w := range weights {
					reqs[w] = h.Requests(w)
				}
				if err := m.Pause(repo); err != nil {
					t.Errorf("Pause at the boundary: %v", err)
				}
				pausedAt <- reqs
			})
		}
		if ev.State == "paused" {
			select {
			case paused <- struct{}{}:
			default:
			}
		}
	})
	defer unsub()

	type pulled struct {
		tr  *Transfer
		err error
	}
	pullDone := make(chan pulled, 1)
	go func() {
		tr, err := m.Pull(context.Background(), repo, PullOptions{})
		pullDone <- pulled{tr, err}
	}()
	var reqs map[string]int
	select {
	case reqs = <-pausedAt:
	case <-time.After(30 * time.Second):
		t.Fatal("config.json was never reported verified")
	}
	for _, w := range weights {
		if reqs[w] != 0 {
			t.Fatalf("%s had %d requests before config.json was in: the pause did not land at the boundary", w, reqs[w])
		}
	}
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the download never reported the pause")
	}

	// Paused: give a download that ignored the pause time to ask for its weights.
	time.Sleep(300 * time.Millisecond)
	for _, w := range weights {
		if n := h.Requests(w); n != 0 {
			t.Errorf("paused, yet %s was requested %d times", w, n)
		}
	}
	dir := m.store.ModelDir(repo)
	if _, err := m.Resolve(repo); err == nil {
		t.Errorf("Resolve accepted a paused download by name")
	}
	if _, err := m.Resolve(dir); err == nil {
		t.Errorf("Resolve accepted a paused download's folder")
	}
	ents, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.ID == repo && e.State == string(store.StateComplete) {
			t.Errorf("paused download listed as %s", e.State)
		}
	}

	if err := m.Resume(repo); err != nil {
		t.Fatal(err)
	}
	var p pulled
	select {
	case p = <-pullDone:
	case <-time.After(30 * time.Second):
		t.Fatal("Pull did not return after Resume")
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	if err := p.tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, dir, files)
	if n := h.Requests("config.json"); n != 1 {
		t.Errorf("config.json requested %d times, want once", n)
	}
	for _, w := range weights {
		if starts := h.Starts(w); len(starts) == 0 || starts[0] != 0 {
			t.Errorf("%s: requests started at %v, want a first one from byte 0", w, starts)
		}
		if _, err := h.Resumed(w); err != nil {
			t.Errorf("re-downloaded: %v", err)
		}
	}
	if _, err := m.Resolve(repo); err != nil {
		t.Errorf("the finished model does not resolve: %v", err)
	}
	man, err := m.store.Load(repo)
	if err != nil || man.State != store.StateComplete {
		t.Errorf("finished manifest: %+v, %v", man, err)
	}
}

// TestCutOffDownloadIsPausedAndCancels: a download cut off while it ran (the
// program killed, the PC off: its manifest still says downloading, as
// TestPullKilledAndRestarted sees) was listed as downloading by the next
// process, whose Pause and Cancel then failed with "no download running": a
// dead end. It is listed as paused with the bytes kept; Cancel removes the
// partial files and keeps the verified ones; Pull then fetches the rest.
func TestCutOffDownloadIsPausedAndCancels(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 17)
	const repo = "acme/cutoff"
	h.Add(repo, &hubtest.Repo{Files: files})
	h.SetBytesPerSec(512 << 10)
	dir := t.TempDir()
	m := newManager(t, h, dir, "")
	ctx, cancel := context.WithCancel(context.Background())
	tr, err := m.Pull(ctx, repo, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	md := m.store.ModelDir(repo)
	shard := files[2].Name
	waitUntil := time.Now().Add(30 * time.Second)
	for download.PartSize(md, shard) < 100<<10 {
		if time.Now().After(waitUntil) {
			t.Fatal("no progress")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	tr.Wait()
	// As a kill leaves it: the manifest says downloading, and no transfer runs.
	man, err := m.store.Load(repo)
	if err != nil {
		t.Fatal(err)
	}
	man.State = store.StateDownloading
	if err := m.store.Save(man); err != nil {
		t.Fatal(err)
	}

	m = newManager(t, h, dir, "") // the next process
	var e *Entry
	ents, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ents {
		if ents[i].ID == repo {
			e = &ents[i]
		}
	}
	if e == nil || e.State != "paused" || e.Progress == nil || e.Progress.State != "paused" ||
		e.Progress.Done < 100<<10 || e.Progress.Total != man.TotalSize() {
		t.Fatalf("a cut-off download listed as %+v (progress %+v); want paused with the bytes kept", e, e.Progress)
	}
	if err := m.Cancel(repo); err != nil {
		t.Fatalf("Cancel of a cut-off download: %v", err)
	}
	if n := download.PartSize(md, shard); n != 0 {
		t.Errorf("%s.part holds %d bytes after Cancel", shard, n)
	}
	if got, _ := download.HashFile(filepath.Join(md, "config.json")); got != files[0].SHA256() {
		t.Error("Cancel removed the verified config.json")
	}
	if man, _ := m.store.Load(repo); man == nil || man.State != store.StateCanceled {
		t.Errorf("manifest after Cancel: %+v", man)
	}
	if err := m.Cancel(repo); err == nil {
		t.Error("a second Cancel found a download to cancel")
	}
	h.SetBytesPerSec(0)
	if tr, err = m.Pull(context.Background(), repo, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, md, files)
}

// TestPullGGUFWithCompanion pulls the catalog's GGUF entry from a fake hub that serves
// both repos: only the chosen quantization of the GGUF repo, plus config.json and
// tokenizer.json from the base repo, all verified into one model folder.
func TestPullGGUFWithCompanion(t *testing.T) {
	e, ok := catalog.Find(catalog.GGUFID)
	if !ok || e.Companion == nil {
		t.Fatalf("catalog entry %s with a companion repo is missing", catalog.GGUFID)
	}
	h := hubtest.New()
	defer h.Close()
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	gguf := []*hubtest.File{
		{Name: catalog.GGUFFile(gguf.Q4KM), Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 900<<10), LFS: true},
		{Name: "diffusiongemma-26B-A4B-it-Q8_0.gguf", Data: make([]byte, 2<<20), LFS: true}, // another quant: not fetched
		{Name: "README.md", Data: []byte("# gguf\n")},
	}
	base := []*hubtest.File{
		{Name: "config.json", Data: cfg},
		{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)},
		{Name: "model-00001-of-00002.safetensors", Data: make([]byte, 3<<20), LFS: true}, // not fetched
	}
	h.Add(e.Repo, &hubtest.Repo{Files: gguf})
	h.Add(e.Companion.Repo, &hubtest.Repo{Files: base})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), catalog.GGUFID, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	dir := m.store.ModelDir(e.LocalName())
	checkModel(t, dir, []*hubtest.File{gguf[0], base[0], base[1]})
	for _, name := range []string{"diffusiongemma-26B-A4B-it-Q8_0.gguf", "model-00001-of-00002.safetensors"} {
		if h.Sent(name) != 0 {
			t.Errorf("%s was downloaded", name)
		}
	}
	// A GGUF repo pulled by hand, without a tokenizer: refused before any download.
	h.Add("acme/two-ggufs", &hubtest.Repo{Files: []*hubtest.File{
		{Name: "a-Q4_K_M.gguf", Data: []byte("GGUF"), LFS: true}, {Name: "a-Q8_0.gguf", Data: []byte("GGUF"), LFS: true}}})
	if _, err := m.Pull(context.Background(), "acme/two-ggufs", PullOptions{}); err == nil || !strings.Contains(err.Error(), "as acme/two-ggufs:Q4_K_M") {
		t.Errorf("two GGUFs: err = %v", err)
	}
}

// TestPullGGUFEntryNamedOtherwise: a catalog GGUF entry whose file the repo names
// otherwise than the catalog ("…-UD-Q3_K_M.gguf") is pulled as that file, found by
// its quantization; where the repo has no file of the entry's quantization, the pull
// says which it has (a *QuantChoice, as for the repo named with that mix), nothing
// downloaded. It said "no files match [diffusiongemma-26B-A4B-it-Q3_K_M.gguf]".
func TestPullGGUFEntryNamedOtherwise(t *testing.T) {
	id := catalog.GGUFIDs[gguf.Q3KM]
	e, ok := catalog.Find(id)
	if !ok || e.Companion == nil {
		t.Fatalf("catalog entry %s with a companion repo is missing", id)
	}
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	ud := &hubtest.File{Name: "diffusiongemma-26B-A4B-it-UD-Q3_K_M.gguf", Data: ggufOf(t, config.Tiny(), gguf.Q3KM, 700<<10), LFS: true}
	other := &hubtest.File{Name: "diffusiongemma-26B-A4B-it-Q4_K_M.gguf", Data: make([]byte, 1<<20), LFS: true}
	base := []*hubtest.File{{Name: "config.json", Data: cfg}, {Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)}}
	for _, c := range []struct {
		name  string
		files []*hubtest.File
	}{{"named otherwise", []*hubtest.File{ud, other}}, {"absent", []*hubtest.File{other}}} {
		t.Run(c.name, func(t *testing.T) {
			h := hubtest.New()
			defer h.Close()
			h.Add(e.Repo, &hubtest.Repo{Files: c.files})
			h.Add(e.Companion.Repo, &hubtest.Repo{Files: base})
			m := newManager(t, h, t.TempDir(), "")
			tr, err := m.Pull(context.Background(), id, PullOptions{})
			if len(c.files) == 1 {
				var choice *QuantChoice
				if !errors.As(err, &choice) || choice.Asked != "Q3_K_M" || len(choice.Quants) != 1 || choice.Quants[0].Name != "Q4_K_M" {
					t.Fatalf("err = %v, want the repo's quantizations", err)
				}
				if h.Sent(other.Name) != 0 {
					t.Error("a file was downloaded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Wait(); err != nil {
				t.Fatal(err)
			}
			checkModel(t, m.store.ModelDir(e.LocalName()), []*hubtest.File{ud, base[0], base[1]})
			if h.Sent(other.Name) != 0 {
				t.Errorf("%s was downloaded", other.Name)
			}
		})
	}
}

// TestConvertedMiniIsListed: the built-in Mini converted into a profile
// (`darkroom quantize --model darkroom-mini --profile int8`) is listed as a model
// of its own, to use and delete. It was filed under the Mini's conversions, which
// only a card with a profile picker shows, and the Mini's has none (bf16 alone):
// the Library never showed it.
func TestConvertedMiniIsListed(t *testing.T) {
	m, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	name, _, err := m.Quantize(context.Background(), catalog.MiniID, QuantizeOptions{Profile: quant.Int8Profile})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var own bool
	for _, e := range ents {
		if e.ID == catalog.MiniID && len(e.Derived) != 0 {
			t.Errorf("%s filed under the Mini's conversions, which nothing shows", e.Derived[0].Name)
		}
		own = own || (e.ID == name && e.Local != nil && e.State == string(store.StateComplete))
	}
	if !own {
		t.Errorf("%s is not listed as a model of its own", name)
	}
}

// TestResolveGGUFFolder: a folder holding a GGUF file, whose config is in the
// file (the engine reads it there), is a model folder; it was refused, '… is not
// a model folder (no config.json)'. A .gguf file given itself is told to give its
// folder, not 'give the folder that holds config.json'.
func TestResolveGGUFFolder(t *testing.T) {
	m, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "diffusiongemma-26b-Q4_K_M.gguf")
	if err := os.WriteFile(file, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Resolve(dir); err != nil || got != dir {
		t.Errorf("Resolve(a folder with a GGUF) = %q, %v; want the folder", got, err)
	}
	want := file + " is a GGUF file: give the folder that holds it (with the model's tokenizer.json beside it)"
	if _, err := m.Resolve(file); err == nil || err.Error() != want {
		t.Errorf("Resolve(the .gguf file): %v\nwant %s", err, want)
	}
}

// TestNothingStartsWhileTheModelsMove: while the models folder moves, a
// download or a conversion (which would write into the folder being copied)
// and a delete are refused in words, as is a second move; once it has moved
// they work again.
func TestNothingStartsWhileTheModelsMove(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.Add("acme/tiny", &hubtest.Repo{Files: repoFiles(t, 5)})
	h.Add("acme/other", &hubtest.Repo{Files: repoFiles(t, 5)})
	m := newManager(t, h, t.TempDir(), "")
	tr, err := m.Pull(context.Background(), "acme/tiny", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	m.store.SameDisk = func(a, b string) bool { return false } // copied, so the move reports progress
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	dst := filepath.Join(t.TempDir(), "elsewhere")
	moved := make(chan error, 1)
	go func() {
		moved <- m.MoveStore(context.Background(), dst, func(store.MoveProgress) {
			once.Do(func() { close(started); <-release })
		})
	}()
	<-started
	if _, err := m.Pull(context.Background(), "acme/other", PullOptions{}); !errors.Is(err, ErrMoving) || !strings.Contains(err.Error(), dst) {
		t.Errorf("a download during the move: %v", err)
	}
	if err := m.Delete("acme/tiny"); !errors.Is(err, ErrMoving) {
		t.Errorf("a delete during the move: %v", err)
	}
	if _, _, err := m.Quantize(context.Background(), "acme/tiny", QuantizeOptions{Profile: "int8"}); !errors.Is(err, ErrMoving) {
		t.Errorf("a conversion during the move: %v", err)
	}
	if err := m.MoveStore(context.Background(), t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "moving to "+dst) {
		t.Errorf("a second move during the move: %v", err)
	}
	close(release)
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	tr, err = m.Pull(context.Background(), "acme/other", PullOptions{})
	if err != nil {
		t.Fatalf("a download after the move: %v", err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	if md, err := m.Resolve("acme/other"); err != nil || !strings.HasPrefix(md, dst) {
		t.Errorf("the download after the move went to %s (%v), not the new folder %s", md, err, dst)
	}
}

// TestConcurrentPullsShareOneTransfer: two Pulls of one model at once (a
// double click, the Library and the first-run screen) get the same transfer,
// and each file is fetched once. The check for a running transfer and its
// registration were apart, so both pulls passed the check and raced over the
// same files.
func TestConcurrentPullsShareOneTransfer(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 21)
	h.Add("acme/twice", &hubtest.Repo{Files: files})
	m := newManager(t, h, t.TempDir(), "")
	const n = 4
	var wg sync.WaitGroup
	trs, errs := make([]*Transfer, n), make([]error, n)
	for i := range n {
		wg.Go(func() { trs[i], errs[i] = m.Pull(context.Background(), "acme/twice", PullOptions{}) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("pull %d: %v", i, errs[i])
		}
		if trs[i] != trs[0] {
			t.Errorf("pull %d got its own transfer", i)
		}
	}
	for _, tr := range trs {
		if err := tr.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if starts := h.Starts(f.Name); len(starts) != 1 {
			t.Errorf("%s fetched %d times (from %v)", f.Name, len(starts), starts)
		}
	}
	checkModel(t, m.store.ModelDir("acme/twice"), files)
}

// TestTwoProcessesOneModel: while another process (this test binary as `darkroom
// pull`) downloads a model into the same models folder, this one's Pull, Delete
// and MoveStore refuse, saying the model is in use by another Darkroom and doing
// what, instead of writing the same .part files (their bytes interleaved, the file
// failing verification), deleting it from under the download, or moving the
// folder; the other download ends intact, and then this process has the model.
func TestTwoProcessesOneModel(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	files := repoFiles(t, 12)
	h.Add("acme/two", &hubtest.Repo{Files: files})
	h.SetBytesPerSec(256 << 10)
	dir := t.TempDir()
	var stderr strings.Builder
	cmd := startPullChild(t, dir, h.URL, "acme/two", &stderr)
	defer cmd.Process.Kill()
	md := filepath.Join(dir, "acme--two")
	deadline := time.Now().Add(60 * time.Second)
	for download.PartSize(md, files[2].Name) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the other process made no progress")
		}
		time.Sleep(10 * time.Millisecond)
	}

	m := newManager(t, h, dir, "")
	held := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrHeld) || !strings.Contains(err.Error(), "downloading it") {
			t.Errorf("%s while another process downloads: %v; want it refused as in use there, downloading it", what, err)
		}
	}
	tr, err := m.Pull(context.Background(), "acme/two", PullOptions{})
	if err == nil {
		tr.Wait()
	}
	held("Pull", err)
	held("Delete", m.Delete("acme/two"))
	held("MoveStore", m.MoveStore(context.Background(), filepath.Join(t.TempDir(), "moved"), nil))
	if m.StorePath() != dir {
		t.Errorf("the models folder moved to %s", m.StorePath())
	}

	h.SetBytesPerSec(0)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the other process's download: %v: %s", err, stderr.String())
	}
	checkModel(t, md, files)
	// Now this process may: the pull finds every file verified.
	tr, err = m.Pull(context.Background(), "acme/two", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resolve("acme/two"); err != nil {
		t.Errorf("the model after both: %v", err)
	}
}

// TestPullAgainOnTheFailure: a download refused for space (here: the room its
// conversion needs) is over when its subscribers hear that it failed — a Pull
// made on that event (the app's user tapping Download again as the card says
// why) starts a new download; it had been handed the failing one, which ended
// at once (the Library's card then never reached "ready").
func TestPullAgainOnTheFailure(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.Add("acme/big", &hubtest.Repo{Files: repoFiles(t, 5)})
	m := newManager(t, h, t.TempDir(), "")
	var asked atomic.Int32 // the config files' job fits; the weights' does not leave the room asked for
	m.store.FreeSpace = func(string) (int64, error) {
		if asked.Add(1) == 1 {
			return 1 << 40, nil
		}
		return 3 << 30, nil
	}
	var once sync.Once
	again := make(chan *Transfer, 1)
	var againErr error
	unsub := m.Subscribe(func(ev Event) {
		if ev.State == "failed" {
			once.Do(func() {
				tr, err := m.Pull(context.Background(), "acme/big", PullOptions{})
				againErr = err
				again <- tr
			})
		}
	})
	defer unsub()
	failed, err := m.Pull(context.Background(), "acme/big", PullOptions{Reserve: 2 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := failed.Wait(); !errors.Is(err, download.ErrNoSpace) {
		t.Fatalf("the first download: %v, want refused for space", err)
	}
	tr := <-again
	if againErr != nil || tr == nil || tr == failed {
		t.Fatalf("Pull on the failure event: %v, %v (the failed transfer: %v)", tr, againErr, tr == failed)
	}
	if err := tr.Wait(); err != nil {
		t.Fatalf("the second download: %v", err)
	}
}

// TestIsPath: what can only be a path, on every system — Windows' rooted "/models",
// a backslash anywhere ("models\foo" is a folder on Windows, never a repo) — and what
// can be a name.
func TestIsPath(t *testing.T) {
	for s, want := range map[string]bool{
		"/nonexistent": true, `\models`: true, `models\foo`: true, `C:\models\foo`: true, "./foo": true,
		"../foo": true, `.\foo`: true, ".": true, "..": true,
		"diffusiongemma-26b": false, "google/diffusiongemma-26B-A4B-it": false, "darkroom-mini": false,
	} {
		if got := isPath(s); got != want {
			t.Errorf("isPath(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestPullTwoGGUFMixes pulls two of the catalog's GGUF entries of one repo (Unsloth's
// Q4_K_M, then its Q6_K). Each is a model of its own: its own folder with its one
// .gguf file (the loader refuses a folder of two), its card alone "complete" while
// the other is not downloaded, each resolved by its ID and deleted alone. They had
// shared the repo's folder: after the Q4_K_M every GGUF card said it was downloaded
// and loaded the Q4_K_M, and the Q6_K's download made the folder unloadable.
func TestPullTwoGGUFMixes(t *testing.T) {
	q4, _ := catalog.Find(catalog.GGUFIDs[gguf.Q4KM])
	q6, _ := catalog.Find(catalog.GGUFIDs[gguf.Q6KM])
	h := hubtest.New()
	defer h.Close()
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	files := []*hubtest.File{
		{Name: catalog.GGUFFile(gguf.Q4KM), Data: ggufOf(t, config.Tiny(), gguf.Q4KM, 300<<10), LFS: true},
		{Name: catalog.GGUFFile(gguf.Q6KM), Data: ggufOf(t, config.Tiny(), gguf.Q6KM, 400<<10), LFS: true},
	}
	h.Add(q4.Repo, &hubtest.Repo{Files: files})
	h.Add(q4.Companion.Repo, &hubtest.Repo{Files: []*hubtest.File{
		{Name: "config.json", Data: cfg}, {Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)}}})
	m := newManager(t, h, t.TempDir(), "")
	state := func(id string) string {
		es, err := m.Entries()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.ID == id {
				return e.State
			}
		}
		return "absent"
	}
	pull := func(id string) {
		tr, err := m.Pull(context.Background(), id, PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	pull(q4.ID)
	if s4, s6 := state(q4.ID), state(q6.ID); s4 != string(store.StateComplete) || s6 != "not downloaded" {
		t.Errorf("after the Q4_K_M: its card %q, the Q6_K's %q", s4, s6)
	}
	pull(q6.ID)
	// Each transfer's events name its model, which the Library maps to its card.
	for _, e := range []catalog.Entry{q4, q6} {
		if got, ok := m.EntryOf(e.LocalName()); !ok || got.ID != e.ID {
			t.Errorf("the events of %s go to %q", e.LocalName(), got.ID)
		}
	}
	dirs := map[string]bool{}
	for _, e := range []catalog.Entry{q4, q6} {
		src, err := m.Source(e.ID)
		if err != nil {
			t.Fatalf("%s: %v", e.ID, err)
		}
		ggufs, _ := filepath.Glob(filepath.Join(src.Dir, "*.gguf"))
		if len(ggufs) != 1 || filepath.Base(ggufs[0]) != catalog.GGUFFile(e.Mix) || state(e.ID) != string(store.StateComplete) {
			t.Errorf("%s: folder %s holds %v, card %q", e.ID, src.Dir, ggufs, state(e.ID))
		}
		dirs[src.Dir] = true
	}
	if len(dirs) != 2 {
		t.Errorf("the two mixes share a folder: %v", dirs)
	}
	if err := m.Delete(q6.ID); err != nil {
		t.Fatal(err)
	}
	if s4, s6 := state(q4.ID), state(q6.ID); s4 != string(store.StateComplete) || s6 != "not downloaded" {
		t.Errorf("after deleting the Q6_K: the Q4_K_M's card %q, the Q6_K's %q", s4, s6)
	}
	// A Q4_K_M downloaded before the other mixes were listed sits in a folder named by
	// the repo alone: still the Q4_K_M's, and not the Q6_K's.
	man, err := m.store.Load(q4.LocalName())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(m.store.ModelDir(q4.LocalName()), m.store.ModelDir(q4.Repo)); err != nil {
		t.Fatal(err)
	}
	man.Name = q4.Repo
	if err := m.store.Save(man); err != nil {
		t.Fatal(err)
	}
	src, err := m.Source(q4.ID)
	if err != nil || src.Dir != m.store.ModelDir(q4.Repo) || state(q4.ID) != string(store.StateComplete) || state(q6.ID) != "not downloaded" {
		t.Errorf("a Q4_K_M in the repo's folder: %v, %v; cards %q and %q", src, err, state(q4.ID), state(q6.ID))
	}
	if _, err := m.Source(q6.ID); err == nil {
		t.Error("the Q6_K resolves to the Q4_K_M's folder")
	}
	if got, ok := m.EntryOf(q4.Repo); !ok || got.ID != q4.ID {
		t.Errorf("the events of the repo's folder go to %q", got.ID)
	}
}
