package speed

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// calibrationVersion changes when what Measure measures changes, so that rates
// cached by an older binary are measured again.
const calibrationVersion = 2

// Rates are what this machine's CPU does with Darkroom's own kernels (engine/kernels),
// measured by Measure.
type Rates struct {
	// Key is the machine and build they were measured on (Key()).
	Key      string    `json:"key"`
	Measured time.Time `json:"measured"`
	// GEMM is the float32 canvas product's rate (FLOP/s) on a grid of shapes:
	// kernels.MulNT of [M, K]×[K, N] for M, K and N in GridM, GridK and GridN. Small
	// shapes run far below large ones (packing the weights and writing the output
	// cost as much as the multiply-adds), so each product is timed at its own shape.
	GEMM []ShapeRate `json:"gemm"`
	// GEMV is the AR step's product rate, in weights per second, by stored format
	// ("f32", "bf16", "int8", "int4", "nvfp4"): kernels.Matrix.MulVec over a matrix
	// that stays in the CPU's caches, so it is the kernel's decoding and arithmetic
	// speed, not the memory's.
	GEMV map[string]float64 `json:"gemv"`
	// GEMVStream is the same product's rate over a matrix far larger than the
	// caches: what an AR token of a real model's weights runs at, decoding and
	// reading from memory at once (the two overlap only in part: the int8 head of a
	// real-width model streams at about half of either rate alone). A format
	// missing here is taken at the longer of its GEMV and memory times.
	GEMVStream map[string]float64 `json:"gemv_stream"`
	// Cache is the CPU's last-level cache in bytes (0: unknown): weights that fit
	// stay there from one AR token to the next, and run at the GEMV rate.
	Cache int64 `json:"cache_bytes"`
	// MemRead is the bytes per second MulVec reads from memory: an f32 matrix far
	// larger than the caches.
	MemRead float64 `json:"mem_read"`
	// Sampler is the logits per second the sampler's statistics take
	// (sampler.Tempered: soft-capped, tempered softmax, entropy and a draw).
	Sampler float64 `json:"sampler"`
}

// ShapeRate is the GEMM rate at one shape.
type ShapeRate struct {
	M, K, N int
	FLOPS   float64 `json:"flops"`
}

// The GEMM grid: canvas rows (a canvas, one expert's share of it), contraction
// depths and output widths.
var (
	GridM = []int{16, 256}
	GridK = []int{64, 256, 2048}
	GridN = []int{64, 256, 2048}
)

// GEMMAt is the GEMM rate of [m, k]×[k, n]: the grid's rates interpolated on a log
// scale along each axis, held at the grid's edges.
func (r *Rates) GEMMAt(m, k, n int) float64 {
	at := func(i, j, l int) float64 {
		for _, g := range r.GEMM {
			if g.M == GridM[i] && g.K == GridK[j] && g.N == GridN[l] {
				return g.FLOPS
			}
		}
		return 0
	}
	im, fm := position(GridM, m)
	ik, fk := position(GridK, k)
	in, fn := position(GridN, n)
	var rate float64
	for a := range 2 {
		for b := range 2 {
			for c := range 2 {
				w := weight(fm, a) * weight(fk, b) * weight(fn, c)
				if w > 0 {
					rate += w * at(im+a, ik+b, in+c)
				}
			}
		}
	}
	return rate
}

// position is the grid cell [i, i+1] holding x and x's place in it, 0 to 1 on a
// log scale (clamped at the ends).
func position(grid []int, x int) (int, float64) {
	if x <= grid[0] {
		return 0, 0
	}
	for i := 1; i < len(grid); i++ {
		if x <= grid[i] {
			return i - 1, math.Log(float64(x)/float64(grid[i-1])) / math.Log(float64(grid[i])/float64(grid[i-1]))
		}
	}
	return len(grid) - 2, 1
}

func weight(f float64, side int) float64 {
	if side == 0 {
		return 1 - f
	}
	return f
}

// Peak is the highest GEMM rate measured.
func (r *Rates) Peak() float64 {
	var p float64
	for _, d := range r.GEMM {
		p = max(p, d.FLOPS)
	}
	return p
}

func (r *Rates) valid() error {
	if len(r.GEMM) == 0 || r.MemRead <= 0 || r.Sampler <= 0 || len(r.GEMV) == 0 {
		return errors.New("incomplete rates")
	}
	if len(r.GEMM) != len(GridM)*len(GridK)*len(GridN) {
		return fmt.Errorf("%d GEMM rates, want %d", len(r.GEMM), len(GridM)*len(GridK)*len(GridN))
	}
	for _, d := range r.GEMM {
		if !(d.FLOPS > 0) || !slices.Contains(GridM, d.M) || !slices.Contains(GridK, d.K) || !slices.Contains(GridN, d.N) {
			return fmt.Errorf("bad GEMM rate %+v", d)
		}
	}
	for f, v := range r.GEMV {
		if !(v > 0) {
			return fmt.Errorf("bad %s GEMV rate %g", f, v)
		}
	}
	for f, v := range r.GEMVStream {
		if !(v > 0) {
			return fmt.Errorf("bad %s streaming GEMV rate %g", f, v)
		}
	}
	return nil
}

// cacheBytes is the last-level cache's size (Linux sysfs), 0 when unknown.
func cacheBytes() int64 {
	var most int64
	for i := range 5 {
		b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/size", i))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		mult := int64(1)
		switch {
		case strings.HasSuffix(s, "K"):
			mult, s = 1<<10, strings.TrimSuffix(s, "K")
		case strings.HasSuffix(s, "M"):
			mult, s = 1<<20, strings.TrimSuffix(s, "M")
		}
		var n int64
		if _, err := fmt.Sscan(s, &n); err == nil {
			most = max(most, n*mult)
		}
	}
	return most
}

// Key names what the rates depend on: the CPU model, its cores (and the Go
// scheduler's), the build of the kernels and this calibration's version.
func Key() string {
	return fmt.Sprintf("%s | %d cores, GOMAXPROCS %d | %s/%s | kernels %s | calibration %d",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, kernelsBuild(), calibrationVersion)
}

// cpuModel is the processor's name (Linux: /proc/cpuinfo), else the architecture.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// kernelsBuild identifies the kernels' code: the binary's VCS revision (and
// whether its tree was modified) and its build tags; a binary built without VCS
// stamps is named by its executable's size and time, so each build is measured.
func kernelsBuild() string {
	rev, dirty, tags := "unstamped", "", ""
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			rev = fmt.Sprintf("unstamped %d bytes %s", st.Size(), st.ModTime().UTC().Format(time.RFC3339))
		}
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return rev
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+modified"
			}
		case "-tags":
			tags = " tags " + s.Value
		}
	}
	return rev + dirty + tags
}

// Cache keeps measured rates in a JSON file, one entry per Key, so a machine is
// measured once: Get measures only when the file has no valid entry for this
// machine (missing, unreadable or corrupt files are measured again, not errors).
type Cache struct {
	Path    string                                    // the JSON file
	Measure func(ctx context.Context) (*Rates, error) // nil: Measure
	Key     string                                    // "": Key()

	mu   sync.Mutex
	last *Rates
}

// DefaultPath is calibration.json in Darkroom's folder of the user's cache
// ($XDG_CACHE_HOME/darkroom on Linux).
func DefaultPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the speed calibration: %w", err)
	}
	return filepath.Join(dir, "darkroom", "calibration.json"), nil
}

var (
	defaultMu     sync.Mutex
	defaultCaches = map[string]*Cache{}
)

// Default is the process's cache at DefaultPath (one per path, so the rates are
// read once).
func Default() (*Cache, error) {
	p, err := DefaultPath()
	if err != nil {
		return nil, err
	}
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultCaches[p] == nil {
		defaultCaches[p] = &Cache{Path: p}
	}
	return defaultCaches[p], nil
}

type cacheFile struct {
	Rates map[string]*Rates `json:"rates"` // by Key
}

// Get returns this machine's rates, measuring them (and writing the file) when the
// file holds none for it. A file that cannot be written is not an error: the rates
// are kept for this process.
func (c *Cache) Get(ctx context.Context) (*Rates, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := c.Key
	if key == "" {
		key = Key()
	}
	if c.last != nil && c.last.Key == key {
		return c.last, nil
	}
	var f cacheFile
	if b, err := os.ReadFile(c.Path); err == nil && json.Unmarshal(b, &f) == nil {
		if r := f.Rates[key]; r != nil && r.valid() == nil {
			c.last = r
			return r, nil
		}
	}
	measure := c.Measure
	if measure == nil {
		measure = Measure
	}
	r, err := measure(ctx)
	if err != nil {
		return nil, fmt.Errorf("measure this machine's speed: %w", err)
	}
	if err := r.valid(); err != nil {
		return nil, fmt.Errorf("measure this machine's speed: %w", err)
	}
	r.Key = key
	c.last = r
	if f.Rates == nil {
		f.Rates = map[string]*Rates{}
	}
	f.Rates[key] = r
	if b, err := json.MarshalIndent(f, "", "  "); err == nil {
		if os.MkdirAll(filepath.Dir(c.Path), 0o755) == nil {
			_ = atomicfile.WriteFile(c.Path, b, 0o644) // unwritable: measured again next run
		}
	}
	return r, nil
}

// Measure times Darkroom's kernels on this CPU: the canvas GEMM on a grid of shapes,
// the AR product per weight format in cache and from memory, and the sampler. It
// takes a few seconds, and allocates up to 300 MB for a moment.
func Measure(ctx context.Context) (*Rates, error) {
	r := &Rates{Measured: time.Now().UTC(), GEMV: map[string]float64{}, GEMVStream: map[string]float64{}, Cache: cacheBytes()}
	for _, m := range GridM {
		for _, k := range GridK {
			for _, n := range GridN {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				a, b, out := fill(m*k), fill(n*k), make([]float32, m*n)
				sec := best(func() { kernels.MulNT(out, a, b, m, n, k) }, 0.04)
				r.GEMM = append(r.GEMM, ShapeRate{M: m, K: k, N: n, FLOPS: 2 * float64(m*n*k) / sec})
			}
		}
	}

	// The AR product in cache: 256 KiB to 1 MiB of weights whatever the format.
	const rows, cols = 512, 1024
	for _, f := range formats {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w, err := matrixOf(f, rows, cols)
		if err != nil {
			return nil, err
		}
		x, out := fill(cols), make([]float32, rows)
		var merr error
		sec := best(func() { merr = w.MulVec(out, x) }, 0.05)
		if merr != nil {
			return nil, fmt.Errorf("%s MulVec: %w", f, merr)
		}
		r.GEMV[f] = float64(rows*cols) / sec
	}

	// From memory: 64 Mi weights per format (256 MiB of f32 down to 36 MiB of int4),
	// far beyond the caches; the f32 pass is the memory read rate.
	const bigRows, bigCols = 16384, 4096
	x, out := fill(bigCols), make([]float32, bigRows)
	for _, f := range formats {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		big, err := matrixOf(f, bigRows, bigCols)
		if err != nil {
			return nil, err
		}
		sec := best(func() { _ = big.MulVec(out, x) }, 0.1)
		r.GEMVStream[f] = float64(bigRows*bigCols) / sec
		if f == "f32" {
			r.MemRead = float64(len(big.Data)) / sec
		}
	}
	var sec float64

	// The sampler over 64 rows of 4096 logits.
	const sv, srows = 4096, 64
	logits, u := fill(sv*srows), make([]float64, srows)
	for i := range u {
		u[i] = float64(i) / srows
	}
	sec = best(func() { sampler.Tempered(logits, sv, 0.8, u) }, 0.05)
	r.Sampler = float64(sv*srows) / sec
	return r, ctx.Err()
}

// formats are the weight formats the AR product is timed in.
var formats = []string{"f32", "bf16", "int8", "int4", "nvfp4"}

// matrixOf is a rows×cols matrix in format f with plain values (unit scales, so no
// denormals slow the timing).
func matrixOf(f string, rows, cols int) (*kernels.Matrix, error) {
	w := &kernels.Matrix{Rows: rows, Cols: cols}
	var spec quant.Spec
	switch f {
	case "f32":
		w.GGUF, w.Data = gguf.F32, make([]byte, 4*rows*cols)
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint32(w.Data[4*i:], math.Float32bits(float32(i%13)/13))
		}
	case "bf16":
		w.GGUF, w.Data = gguf.BF16, make([]byte, 2*rows*cols)
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint16(w.Data[2*i:], uint16(math.Float32bits(float32(i%13)/13)>>16))
		}
	case "int8":
		spec = quant.Int8
	case "int4":
		spec = quant.Int4
	case "nvfp4":
		spec = quant.NVFP4
	default:
		return nil, fmt.Errorf("no weight format %q", f)
	}
	if spec.Bits != 0 {
		w.Spec = spec
		qw, qs := spec.Shapes([]int{rows, cols})
		w.Data = make([]byte, qw[0]*qw[1]*spec.DType().Size())
		for i := range w.Data {
			w.Data[i] = byte(i * 37)
		}
		w.Scales = make([]byte, qs[0]*qs[1]*spec.ScaleDType().Size())
		one := unitScale(spec)
		for i := 0; i+len(one) <= len(w.Scales); i += len(one) {
			copy(w.Scales[i:], one)
		}
		if spec.HasMin() {
			w.Mins = make([]byte, len(w.Scales))
		}
	}
	return w, w.Check()
}

// unitScale is the bytes of a scale of about 1 in spec's scale type.
func unitScale(spec quant.Spec) []byte {
	switch spec.ScaleDType().Size() {
	case 1:
		return []byte{0x38} // FP8 E4M3 1.0
	case 2:
		return []byte{0x80, 0x3f} // bf16 1.0
	}
	return binary.LittleEndian.AppendUint32(nil, math.Float32bits(1))
}

// best runs f once to warm up, then repeatedly for about budget seconds (at least
// three times), and returns the fastest run's seconds: the machine's rate with the
// least interference from other programs.
func best(f func(), budget float64) float64 {
	f()
	var times []float64
	start := time.Now()
	for len(times) < 3 || time.Since(start).Seconds() < budget {
		t0 := time.Now()
		f()
		times = append(times, max(time.Since(t0).Seconds(), 1e-9))
		if len(times) >= 1000 {
			break
		}
	}
	return slices.Min(times)
}

func fill(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(i%17)/17 - 0.5
	}
	return s
}
