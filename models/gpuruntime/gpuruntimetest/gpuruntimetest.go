// Package gpuruntimetest is a local stand-in, for tests, for the package index
// GPU support is installed from (PyPI's JSON API and its file server): a CUDA 12
// PJRT plugin wheel of JAX 0.7.2 and the two NVIDIA library wheels its
// jax-cuda12-plugin requires, beside a macOS wheel, a pre-release and a
// release without a Linux wheel that an install must pass over. It serves Range
// requests and can inject faults: a wrong published digest, a 404, a connection
// cut half-way through a file, a foreign package author and throttling. It
// counts the body bytes it sends and records each file's Range headers, and so
// where each of its requests starts (Starts, Resumed).
package gpuruntimetest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/models/hubtest"
)

// The wheels served, and the plugin's member inside the plugin wheel.
const (
	PluginWheel  = "jax_cuda12_pjrt-0.7.2-py3-none-manylinux2014_x86_64.whl"
	CublasWheel  = "nvidia_cublas_cu12-12.9.1.4-py3-none-manylinux_2_27_x86_64.whl"
	NvccWheel    = "nvidia_cuda_nvcc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl"
	PluginMember = "jax_plugins/xla_cuda12/xla_cuda_plugin.so"
	// JAXAuthor is the author e-mail the JAX packages are published with.
	JAXAuthor = "jax-dev@google.com"
)

// Wheels lists the served wheels, the plugin first.
var Wheels = []string{PluginWheel, CublasWheel, NvccWheel}

// Index is the fake index; its API is at API() and its files under /files/.
type Index struct {
	*httptest.Server
	// Files maps a wheel's name to its bytes; Contents a member's name (over all
	// wheels) to its bytes.
	Files, Contents map[string][]byte

	mu      sync.Mutex
	author  string
	badSHA  map[string]bool
	missing map[string]bool
	cutOnce map[string]bool
	ranges  map[string][]string
	sent    map[string]int64
	bps     atomic.Int64
}

// New starts an index, closed at the test's end. The wheels hold random bytes
// (the plugin is no shared library: a real start of it fails).
func New(t testing.TB) *Index {
	rng := rand.New(rand.NewSource(1))
	random := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	f := &Index{Files: map[string][]byte{}, Contents: map[string][]byte{}, author: JAXAuthor, badSHA: map[string]bool{},
		missing: map[string]bool{}, cutOnce: map[string]bool{}, ranges: map[string][]string{}, sent: map[string]int64{}}
	members := map[string]map[string][]byte{
		PluginWheel: {PluginMember: random(300 << 10), "jax_plugins/xla_cuda12/__init__.py": []byte("")},
		CublasWheel: {"nvidia/cublas/lib/libcublas.so.12": random(500 << 10), "nvidia/cublas/lib/libcublasLt.so.12": random(200 << 10)},
		NvccWheel:   {"nvidia/cuda_nvcc/bin/ptxas": random(100 << 10)},
	}
	for _, w := range Wheels {
		f.Files[w] = wheel(t, members[w])
		for name, data := range members[w] {
			f.Contents[name] = data
		}
	}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.Start() // after f.Server is set: the handler reads f.URL
	t.Cleanup(f.Close)
	return f
}

// wheel zips members (stored, ptxas executable) with a dist-info file that an
// install leaves out.
func wheel(t testing.TB, members map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		h := &zip.FileHeader{Name: name, Method: zip.Store}
		if strings.Contains(name, "/bin/") {
			h.SetMode(0o755)
		}
		w, err := z.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(members[name])
	}
	z.Create("nvidia_cublas_cu12-12.9.1.4.dist-info/METADATA") // outside nvidia/: not extracted
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// API is the JSON API's base URL (Index.URL for gpuruntime).
func (f *Index) API() string { return f.URL + "/pypi" }

// SetAuthor publishes the JAX packages under another author.
func (f *Index) SetAuthor(s string) { f.mu.Lock(); f.author = s; f.mu.Unlock() }

// BadSHA publishes a wrong sha256 for the wheel.
func (f *Index) BadSHA(wheel string) { f.mu.Lock(); f.badSHA[wheel] = true; f.mu.Unlock() }

// Missing answers 404 for the wheel.
func (f *Index) Missing(wheel string) { f.mu.Lock(); f.missing[wheel] = true; f.mu.Unlock() }

// CutOnce drops the connection half-way through the wheel's first whole-file GET.
func (f *Index) CutOnce(wheel string) { f.mu.Lock(); f.cutOnce[wheel] = true; f.mu.Unlock() }

// SetBytesPerSec throttles each file body to n bytes/s (0: full speed).
func (f *Index) SetBytesPerSec(n int64) { f.bps.Store(n) }

// Ranges lists the Range header of each request for the wheel ("" for none).
func (f *Index) Ranges(wheel string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ranges[wheel]...)
}

// Starts is the first byte each request for the wheel asked for, in the order
// they came (0 for a request without a Range). Unlike Sent it does not count
// what the server wrote into a connection the client had already dropped.
func (f *Index) Starts(wheel string) []int64 {
	var starts []int64
	for _, rg := range f.Ranges(wheel) {
		starts = append(starts, rangeStart(rg))
	}
	return starts
}

// Resumed checks, as hubtest's Resumed does for the Hub, that every request for
// the wheel after its first resumed from the bytes kept; it returns how many did.
func (f *Index) Resumed(wheel string) (int, error) {
	return hubtest.CheckResumed(wheel, f.Starts(wheel))
}

// rangeStart is the first byte a Range header ("bytes=N-") asks for; 0 for none.
func rangeStart(rg string) int64 {
	s, _, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Sent is the body bytes sent, over all files.
func (f *Index) Sent() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, v := range f.sent {
		n += v
	}
	return n
}

// WheelBytes is the size of every wheel an install fetches.
func (f *Index) WheelBytes() int64 {
	var n int64
	for _, w := range Wheels {
		n += int64(len(f.Files[w]))
	}
	return n
}

func (f *Index) file(name string) map[string]any {
	data := f.Files[name]
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

func (f *Index) serve(w http.ResponseWriter, r *http.Request) {
	if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
		f.serveFile(w, r, name)
		return
	}
	f.mu.Lock()
	author := f.author
	f.mu.Unlock()
	mac := map[string]any{"packagetype": "bdist_wheel", "filename": "jax_cuda12_pjrt-0.7.2-py3-none-macosx_11_0_arm64.whl",
		"url": f.URL + "/files/mac.whl", "size": 10, "digests": map[string]string{"sha256": strings.Repeat("1", 64)}}
	var p map[string]any
	switch r.URL.Path {
	case "/pypi/jax-cuda12-pjrt/json":
		p = map[string]any{"info": map[string]any{"name": "jax-cuda12-pjrt", "version": "0.7.2", "author_email": author},
			"urls": []any{mac, f.file(PluginWheel)}}
	case "/pypi/jax-cuda12-plugin/0.7.2/json":
		p = map[string]any{"info": map[string]any{"name": "jax-cuda12-plugin", "version": "0.7.2", "author_email": author,
			"requires_dist": []string{"jax-cuda12-pjrt==0.7.2", `nvidia-cublas-cu12>=12.1.3.1; extra == "with-cuda"`,
				`nvidia-cuda-nvcc-cu12>=12.6.85; extra == "with-cuda"`}}}
	case "/pypi/nvidia-cublas-cu12/json":
		p = map[string]any{"info": map[string]any{"name": "nvidia-cublas-cu12", "version": "13.0.0"},
			"releases": map[string]any{"12.0.1": []any{f.file(CublasWheel)}, "12.9.1.4": []any{f.file(CublasWheel)},
				"13.0.0rc1": []any{f.file(CublasWheel)}, "12.9.2.0": []any{mac}}}
	case "/pypi/nvidia-cuda-nvcc-cu12/json":
		p = map[string]any{"info": map[string]any{"name": "nvidia-cuda-nvcc-cu12", "version": "12.9.86"},
			"releases": map[string]any{"12.9.86": []any{f.file(NvccWheel)}}}
	default:
		http.NotFound(w, r)
		return
	}
	json.NewEncoder(w).Encode(p)
}

func (f *Index) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	data, ok := f.Files[name]
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
		start = rangeStart(rg)
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
		if bps := f.bps.Load(); bps > 0 {
			w.(http.Flusher).Flush()
			time.Sleep(time.Duration(int64(n) * int64(time.Second) / bps))
		}
	}
	if cut {
		panic(http.ErrAbortHandler) // drop the connection mid-file
	}
}
