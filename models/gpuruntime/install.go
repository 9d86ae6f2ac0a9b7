package gpuruntime

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/models/download"
)

// ErrNotVerified says the files are in place but no graph ran on the GPU with
// them, so the runtime is not marked installed. Install returns it as a
// *NotVerifiedError, which holds the reason.
var ErrNotVerified = errors.New("GPU support was downloaded but not verified")

// NotVerifiedError is ErrNotVerified with why the test graph did not run.
type NotVerifiedError struct{ Reason error }

func (e *NotVerifiedError) Error() string        { return ErrNotVerified.Error() + ": " + e.Reason.Error() }
func (e *NotVerifiedError) Unwrap() error        { return e.Reason }
func (e *NotVerifiedError) Is(target error) bool { return target == ErrNotVerified }

// Stages an install reports (Installer.OnStage).
const (
	StageResolving   = "resolving"
	StageDownloading = "downloading"
	StageExtracting  = "extracting"
	StageVerifying   = "verifying"
)

// Installer installs GPU support. The zero value installs from PyPI into
// backend.Runtime() with the downloader's defaults; Verify must be set.
type Installer struct {
	Index   Index
	Runtime backend.CUDARuntime // zero: backend.Runtime()
	// Download tunes the transfers (HTTP client, free-space probe, progress
	// events, timings). Its StatusError and SpaceMargin are set by the installer.
	Download download.Options
	// Verify runs a tiny graph on the GPU with the plugin at path; nil error means
	// it ran there. VerifyCommand and RunTinyGraph are the real ones.
	Verify func(ctx context.Context, plugin string) error
	// OnStage and OnJob report progress: the stage, and the download job (for
	// pause and cancel), given just before it starts, so a Pause or Cancel made
	// in OnJob holds before anything is asked of the index. Either may be nil.
	OnStage func(stage string)
	OnJob   func(*download.Job)
	// OS and Arch are runtime.GOOS and GOARCH ("" = this machine's).
	OS, Arch string
}

func (in *Installer) runtime() backend.CUDARuntime {
	if in.Runtime.Dir == "" {
		return backend.Runtime()
	}
	return in.Runtime
}

func (in *Installer) stage(s string) {
	if in.OnStage != nil {
		in.OnStage(s)
	}
}

// Supported says in plain words why GPU support cannot be installed on this
// system (nil: it can).
func (in *Installer) Supported() error {
	goos, goarch := in.OS, in.Arch
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	switch {
	case goos == "windows":
		return fmt.Errorf("%w: on Windows, Darkroom uses an NVIDIA GPU inside WSL2 — install Darkroom in WSL2 and run `darkroom gpu install` there; the Windows build runs on the CPU", errUnsupported)
	case goos == "darwin":
		return fmt.Errorf("%w: macOS has no NVIDIA CUDA support, so Darkroom runs on the CPU there", errUnsupported)
	case goos != "linux" || goarch != "amd64":
		return fmt.Errorf("%w: the CUDA plugin is published for Linux on x86-64 only (this is %s/%s), so Darkroom runs on the CPU", errUnsupported, goos, goarch)
	}
	return nil
}

// CUDAFor picks the CUDA generation the GPU's driver runs: CUDA 13 needs driver
// 580 or newer, CUDA 12 driver 525; an unknown driver gets CUDA 12.
func CUDAFor(g nvidia.GPU) (string, error) {
	switch d := g.DriverMajor(); {
	case d == 0:
		return "cuda12", nil
	case d >= 580:
		return "cuda13", nil
	case d >= 525:
		return "cuda12", nil
	default:
		return "", fmt.Errorf("the NVIDIA driver %s is too old for GPU support (CUDA 12 needs 525 or newer): update the driver, then run `darkroom gpu install`", g.Driver)
	}
}

// Plan asks the index what to fetch for cuda ("cuda12" or "cuda13").
func (in *Installer) Plan(ctx context.Context, cuda string) (*Plan, error) {
	if err := in.Supported(); err != nil {
		return nil, err
	}
	in.stage(StageResolving)
	return in.Index.Resolve(ctx, cuda)
}

// marker is the runtime's installed.json (and plan.json before verification).
type marker struct {
	Plan       *Plan     `json:"plan"`
	VerifiedAt time.Time `json:"verified_at,omitzero"`
}

func (in *Installer) downloads() string { return filepath.Join(in.runtime().Dir, "downloads") }
func (in *Installer) planPath() string  { return filepath.Join(in.runtime().Dir, "plan.json") }

// Install fetches plan's wheels, extracts them into the runtime folder and
// verifies the plugin on the GPU; only then is the runtime marked installed.
// Interrupted downloads resume from their .part files on the next Install. A
// failed verification returns an error wrapping ErrNotVerified and leaves the
// files in place (a later Install verifies again without downloading).
func (in *Installer) Install(ctx context.Context, plan *Plan) error {
	if err := in.Supported(); err != nil {
		return err
	}
	if in.Verify == nil {
		return errors.New("gpuruntime: Installer.Verify is not set")
	}
	rt := in.runtime()
	if err := os.MkdirAll(rt.Dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the GPU runtime folder: %w", err)
	}
	_ = os.Remove(rt.Marker()) // what follows replaces the files; re-verify them
	if !in.extracted(plan) {
		if err := in.fetch(ctx, plan); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil { // canceled once the download was done
			return err
		}
		in.stage(StageExtracting)
		if err := in.extract(plan); err != nil {
			return err
		}
		m, _ := json.MarshalIndent(marker{Plan: plan}, "", "  ")
		if err := atomicfile.WriteFile(in.planPath(), m, 0o644); err != nil {
			return err
		}
		_ = os.RemoveAll(in.downloads()) // the wheels are extracted; keep the disk
	}
	if err := ctx.Err(); err != nil { // canceled: not a failed verification
		return err
	}
	in.stage(StageVerifying)
	if err := in.Verify(ctx, rt.Plugin()); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &NotVerifiedError{Reason: err}
	}
	m, _ := json.MarshalIndent(marker{Plan: plan, VerifiedAt: time.Now().UTC()}, "", "  ")
	return atomicfile.WriteFile(rt.Marker(), m, 0o644)
}

// extracted reports whether plan's files are already extracted (plan.json matches).
func (in *Installer) extracted(plan *Plan) bool {
	b, err := os.ReadFile(in.planPath())
	if err != nil {
		return false
	}
	var m marker
	if json.Unmarshal(b, &m) != nil || m.Plan == nil {
		return false
	}
	a, _ := json.Marshal(m.Plan)
	p, _ := json.Marshal(plan)
	_, err = os.Stat(in.runtime().Plugin())
	return string(a) == string(p) && err == nil
}

func (in *Installer) fetch(ctx context.Context, plan *Plan) error {
	in.stage(StageDownloading)
	var files []download.File
	for _, w := range plan.Wheels() {
		// A wheel finished by an earlier, interrupted install is not fetched again.
		p := filepath.Join(in.downloads(), w.fileName())
		if fi, err := os.Stat(p); err == nil && fi.Size() == w.Size {
			if sum, err := download.HashFile(p); err == nil && strings.EqualFold(sum, w.SHA256) {
				continue
			}
		}
		files = append(files, download.File{Name: w.fileName(), URL: w.URL, Size: w.Size, SHA256: w.SHA256})
	}
	opt := in.Download
	opt.StatusError = func(resp *http.Response) error {
		return fmt.Errorf("the package index's file server answered %s for %s", resp.Status, resp.Request.URL.Redacted())
	}
	// The wheels are unpacked next to themselves before they are deleted: the
	// extracted libraries take about twice the download.
	opt.SpaceMargin = func(n int64) int64 { return 2*n + 1<<30 }
	if err := os.MkdirAll(in.downloads(), 0o755); err != nil { // the free-space probe needs it
		return fmt.Errorf("cannot create the download folder: %w", err)
	}
	job := download.New(in.downloads(), files, opt)
	if in.OnJob != nil {
		in.OnJob(job) // before it starts: a Pause or Cancel there holds before any request
	}
	job.Start(ctx)
	if err := job.Wait(); err != nil {
		return fmt.Errorf("downloading GPU support: %w", err)
	}
	return nil
}

// extract unpacks the plugin wheel's xla_cuda_plugin.so to the runtime's plugin
// path and every library wheel's nvidia/ tree into the runtime's nvidia folder,
// then adds the links go-xla's installer makes (bin/ptxas; for CUDA 13 the cuBLAS
// libraries XLA does not find from its data folder).
func (in *Installer) extract(plan *Plan) error {
	rt := in.runtime()
	if err := os.RemoveAll(rt.NVIDIA()); err != nil {
		return fmt.Errorf("cannot replace %s: %w", rt.NVIDIA(), err)
	}
	wheel := func(w Wheel) string { return filepath.Join(in.downloads(), w.fileName()) }
	n, err := unzip(wheel(plan.Plugin), func(name string) string {
		if strings.HasPrefix(name, "jax_plugins/xla_cuda") && strings.HasSuffix(name, "/xla_cuda_plugin.so") {
			return rt.Plugin()
		}
		return ""
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s holds no jax_plugins/xla_cuda*/xla_cuda_plugin.so", plan.Plugin.fileName())
	}
	for _, w := range plan.Library {
		if _, err := unzip(wheel(w), func(name string) string {
			rel, ok := strings.CutPrefix(name, "nvidia/")
			if !ok || rel == "" {
				return ""
			}
			return filepath.Join(rt.NVIDIA(), filepath.FromSlash(rel))
		}); err != nil {
			return err
		}
	}
	ptxas := map[string]string{"cuda12": "cuda_nvcc/bin/ptxas", "cuda13": "cu13/bin/ptxas"}[plan.CUDA]
	if _, err := os.Stat(filepath.Join(rt.NVIDIA(), ptxas)); err == nil {
		bin := filepath.Join(rt.NVIDIA(), "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return err
		}
		if err := os.Symlink(filepath.Join("..", filepath.FromSlash(ptxas)), filepath.Join(bin, "ptxas")); err != nil {
			return fmt.Errorf("linking ptxas: %w", err)
		}
	}
	if plan.CUDA == "cuda13" {
		for _, lib := range cublasLinks {
			target := filepath.Join(rt.NVIDIA(), "cu13", "lib", lib)
			if _, err := os.Stat(target); err != nil {
				continue
			}
			link := filepath.Join(filepath.Dir(rt.Dir), lib)
			_ = os.Remove(link)
			rel, _ := filepath.Rel(filepath.Dir(link), target)
			if err := os.Symlink(rel, link); err != nil {
				return fmt.Errorf("linking %s: %w", lib, err)
			}
		}
	}
	return nil
}

// cublasLinks are the CUDA 13 libraries go-xla links two folders above the
// plugin's, where the plugin looks for them.
var cublasLinks = []string{"libcublasLt.so.13", "libcublas.so.13"}

// unzip writes each member of the zip file at path that dest maps to a path
// ("" skips it) and returns how many it wrote. Members whose names leave the
// archive's tree are refused.
func unzip(path string, dest func(name string) string) (int, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return 0, fmt.Errorf("%s is not a readable wheel: %w", filepath.Base(path), err)
	}
	defer z.Close()
	n := 0
	for _, f := range z.File {
		if f.FileInfo().IsDir() {
			continue
		}
		if !fs.ValidPath(f.Name) {
			return n, fmt.Errorf("%s: refusing member %q outside the archive", filepath.Base(path), f.Name)
		}
		out := dest(f.Name)
		if out == "" {
			continue
		}
		if err := writeMember(f, out); err != nil {
			return n, fmt.Errorf("extracting %s from %s: %w", f.Name, filepath.Base(path), err)
		}
		n++
	}
	return n, nil
}

func writeMember(f *zip.File, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	mode := os.FileMode(0o644)
	if f.Mode()&0o111 != 0 || strings.Contains(f.Name, "/bin/") {
		mode = 0o755
	}
	tmp := out + ".tmp"
	w, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		os.Remove(tmp)
		return err
	}
	if err := w.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}

// Status is what is installed.
type Status struct {
	Dir       string `json:"dir"`
	Installed bool   `json:"installed"` // verified on this machine's GPU
	// Downloaded: the files are extracted but not verified.
	Downloaded bool       `json:"downloaded"`
	Plan       *Plan      `json:"plan,omitempty"`
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
	Partial    int64      `json:"partial_download_bytes"` // in .part files, resumed by the next install
	Disk       int64      `json:"disk_bytes"`             // everything under Dir
}

// Status reads the runtime folder.
func (in *Installer) Status() Status {
	rt := in.runtime()
	st := Status{Dir: rt.Dir, Installed: rt.Installed()}
	read := func(path string) *marker {
		b, err := os.ReadFile(path)
		var m marker
		if err != nil || json.Unmarshal(b, &m) != nil {
			return nil
		}
		return &m
	}
	if m := read(rt.Marker()); m != nil && st.Installed {
		st.Plan, st.VerifiedAt = m.Plan, &m.VerifiedAt
	} else if m := read(in.planPath()); m != nil {
		st.Plan, st.Downloaded = m.Plan, true
	}
	_ = filepath.WalkDir(rt.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			st.Disk += fi.Size()
			if strings.HasSuffix(p, ".part") {
				st.Partial += fi.Size()
			}
		}
		return nil
	})
	return st
}

// Remove deletes the runtime folder (and the links beside it); auto then runs on
// the CPU or another plugin it finds.
func (in *Installer) Remove() error {
	rt := in.runtime()
	for _, lib := range cublasLinks {
		link := filepath.Join(filepath.Dir(rt.Dir), lib)
		if fi, err := os.Lstat(link); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			_ = os.Remove(link)
		}
	}
	if err := os.RemoveAll(rt.Dir); err != nil {
		return fmt.Errorf("cannot remove GPU support from %s: %w", rt.Dir, err)
	}
	return nil
}
