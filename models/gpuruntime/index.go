// Package gpuruntime installs Darkroom's GPU support: the PJRT CUDA plugin and
// the NVIDIA libraries it needs, fetched from the package index go-xla's own
// installer reads (PyPI's JSON API: jax-cudaNN-pjrt holds the plugin,
// jax-cudaNN-plugin's requirements name the nvidia-* wheels), through the models
// downloader (resumable .part files, sha256 against the index's digests, a
// free-space check first, progress with rate and ETA, pause and cancel), into
// backend.Runtime(). Wheels are zip files: the plugin and the wheels' nvidia/
// trees are extracted, laid out as go-xla lays them out (the plugin inside
// nvidia/, where its RPATH looks).
//
// The runtime counts as installed only after Verify ran a tiny graph on the GPU
// with it; then the marker file is written and the backend's auto choice offers
// it. Linux on x86-64 only: Windows and macOS get a plain explanation (Windows:
// CUDA through Darkroom inside WSL2; the CPU path runs natively).
package gpuruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/gomlx/go-xla/pkg/installer"
)

// DefaultIndex is PyPI's JSON API, the index go-xla's installer reads.
const DefaultIndex = "https://pypi.org/pypi"

// IndexEnvVar points Darkroom at another index with the same JSON API (a mirror).
const IndexEnvVar = "DARKROOM_GPU_INDEX"

// jaxAuthor is the author e-mail the JAX packages must carry (go-xla checks it too).
const jaxAuthor = "jax-dev@google.com"

// Index reads package metadata from a PyPI-style JSON API.
type Index struct {
	URL  string // "https://pypi.org/pypi"
	HTTP *http.Client
}

// project is the part of /pypi/NAME[/VERSION]/json that Darkroom reads.
type project struct {
	Info struct {
		Name         string   `json:"name"`
		Version      string   `json:"version"`
		AuthorEmail  string   `json:"author_email"`
		RequiresDist []string `json:"requires_dist"`
	} `json:"info"`
	Releases map[string][]indexFile `json:"releases"`
	URLs     []indexFile            `json:"urls"` // the files of Info.Version
}

type indexFile struct {
	PackageType string            `json:"packagetype"`
	Filename    string            `json:"filename"`
	URL         string            `json:"url"`
	Size        int64             `json:"size"`
	Digests     map[string]string `json:"digests"`
}

func (ix Index) get(ctx context.Context, parts ...string) (*project, error) {
	base := ix.URL
	if base == "" {
		base = DefaultIndex
	}
	u := strings.TrimSuffix(base, "/")
	for _, p := range parts {
		u += "/" + url.PathEscape(p)
	}
	u += "/json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c := ix.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the package index (%s) — check the internet connection, or set %s to a mirror of it: %w",
			base, IndexEnvVar, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("the package index (%s) has no package %s", base, strings.Join(parts, " "))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the package index (%s) answered %s for %s", base, resp.Status, strings.Join(parts, " "))
	}
	var p project
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&p); err != nil {
		return nil, fmt.Errorf("the package index's answer for %s is not valid JSON: %w", strings.Join(parts, " "), err)
	}
	return &p, nil
}

// Wheel is one file to fetch.
type Wheel struct {
	Package  string `json:"package"`
	Version  string `json:"version"`
	Filename string `json:"filename"`
	URL      string `json:"url"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

// Plan is what an install fetches.
type Plan struct {
	CUDA    string  `json:"cuda"`        // "cuda12" or "cuda13"
	JAX     string  `json:"jax_version"` // the version of the plugin's JAX release
	Plugin  Wheel   `json:"plugin"`      // jax-cudaNN-pjrt
	Library []Wheel `json:"libraries"`   // nvidia-* wheels
}

// Wheels lists every file of the plan, the plugin first.
func (p *Plan) Wheels() []Wheel { return append([]Wheel{p.Plugin}, p.Library...) }

// Size is the bytes to download.
func (p *Plan) Size() int64 {
	var n int64
	for _, w := range p.Wheels() {
		n += w.Size
	}
	return n
}

// linuxWheel picks the manylinux x86-64 binary wheel among files.
func linuxWheel(pkg, version string, files []indexFile) (Wheel, bool) {
	re := installer.PipPackageLinuxAMD64()
	for _, f := range files {
		if f.PackageType == "bdist_wheel" && re.MatchString(f.Filename) && f.Digests["sha256"] != "" && f.Size > 0 {
			return Wheel{Package: pkg, Version: version, Filename: f.Filename, URL: f.URL, Size: f.Size, SHA256: f.Digests["sha256"]}, true
		}
	}
	return Wheel{}, false
}

// Resolve asks the index what cuda ("cuda12" or "cuda13") needs: the latest
// jax-<cuda>-pjrt wheel and, for the nvidia-* requirements of jax-<cuda>-plugin
// of the same version, the newest wheel each allows.
func (ix Index) Resolve(ctx context.Context, cuda string) (*Plan, error) {
	if cuda != "cuda12" && cuda != "cuda13" {
		return nil, fmt.Errorf("unknown CUDA version %q (want cuda12 or cuda13)", cuda)
	}
	pjrtName := "jax-" + cuda + "-pjrt"
	pj, err := ix.get(ctx, pjrtName)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(pj.Info.AuthorEmail, jaxAuthor) {
		return nil, fmt.Errorf("%s on the package index is not published by the JAX team (author %q), so Darkroom will not install it", pjrtName, pj.Info.AuthorEmail)
	}
	version := pj.Info.Version
	files := pj.URLs
	if len(files) == 0 {
		files = pj.Releases[version]
	}
	plan := &Plan{CUDA: cuda, JAX: version}
	var ok bool
	if plan.Plugin, ok = linuxWheel(pjrtName, version, files); !ok {
		return nil, fmt.Errorf("%s %s has no Linux x86-64 wheel with a sha256 on the package index", pjrtName, version)
	}
	pluginName := "jax-" + cuda + "-plugin"
	pl, err := ix.get(ctx, pluginName, version)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(pl.Info.AuthorEmail, jaxAuthor) {
		return nil, fmt.Errorf("%s on the package index is not published by the JAX team (author %q), so Darkroom will not install it", pluginName, pl.Info.AuthorEmail)
	}
	var info installer.PipPackageInfo
	info.Info.RequiresDist = pl.Info.RequiresDist
	deps, err := info.ParseDependencies()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", pluginName, version, err)
	}
	for _, dep := range deps {
		if !strings.HasPrefix(dep.Package, "nvidia") {
			continue
		}
		w, err := ix.newest(ctx, dep)
		if err != nil {
			return nil, err
		}
		plan.Library = append(plan.Library, w)
	}
	if len(plan.Library) == 0 {
		return nil, fmt.Errorf("%s %s lists no NVIDIA libraries", pluginName, version)
	}
	return plan, nil
}

// newest is the highest version of dep's package the constraints allow that has
// a Linux x86-64 wheel.
func (ix Index) newest(ctx context.Context, dep installer.PipDependency) (Wheel, error) {
	p, err := ix.get(ctx, dep.Package)
	if err != nil {
		return Wheel{}, err
	}
	var best Wheel
	for v, files := range p.Releases {
		if !dep.IsValid(v) || strings.ContainsAny(v, "abcrdev") { // no pre-releases
			continue
		}
		if best.Version != "" && installer.PipCompareVersion(v, best.Version) <= 0 {
			continue
		}
		if w, ok := linuxWheel(dep.Package, v, files); ok {
			best = w
		}
	}
	if best.Version == "" {
		return Wheel{}, fmt.Errorf("the package index has no Linux x86-64 wheel of %s that fits the plugin's requirement", dep.Package)
	}
	return best, nil
}

// fileName is the wheel's name on disk (its URL's last element, else Filename).
func (w Wheel) fileName() string {
	if w.Filename != "" && !strings.ContainsAny(w.Filename, `/\`) {
		return w.Filename
	}
	return path.Base(w.URL)
}

var errUnsupported = errors.New("GPU support is installed on Linux only")
