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
	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// calibrationVersion changes when what Measure measures changes, so that rates
// cached by an older binary are measured again.
const calibrationVersion = 18

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
	// IntGEMM is the integer canvas product's rate (FLOP/s, packing included) at the
	// same shapes, its weights read from memory (distinct matrices in turn, 64 MB of
	// them where they are that large): Matrix.MulNT of Darkroom's int4 weights where the kernels multiply
	// int8 and int4 weights in integer arithmetic (kernels.IntProducts); empty where
	// they do not, and those formats' products are priced at GEMM plus Decode.
	IntGEMM []ShapeRate `json:"int_gemm,omitempty"`
	// IntFormats are the stored formats whose canvas products took the integer path
	// when IntGEMM was measured (kernels.IntFormats: "int4", "nvfp4" and, with
	// AVX-512 VNNI or AVX-VNNI, "int8"), and IntKernel its micro-kernel
	// (kernels.IntKernel); the formats not listed are priced at GEMM plus Decode.
	// Each is priced at IntGEMM's (int4's) rate times its IntRelative.
	IntFormats []string `json:"int_formats,omitempty"`
	IntKernel  string   `json:"int_kernel,omitempty"`
	// IntGGUF are the GGUF formats (ggufFormat: "q4_k", "q5_0", "q8_0") whose canvas
	// products took the integer path then (kernels.IntGGUF), priced as IntFormats'.
	IntGGUF []string `json:"int_gguf,omitempty"`
	// IntRelative is each other integer format's canvas product rate (MulNT) over
	// int4's, at a 26B expert's shape: [64, 2816]×[2816, 704], both timed in turn
	// (measureIntRelative). The kernel's steps differ by format: NVFP4's groups of 16
	// take twice its scaling steps, GGUF's codes are taken out of their blocks first
	// (go test ./engine/kernels -bench MulNTInt). A format without one is priced at
	// int4's rate, as all were before calibration 16 (NVFP4's real-size step then
	// estimated at 0.76 of its measured time).
	IntRelative map[string]float64 `json:"int_relative,omitempty"`
	// GEMV is the AR step's product rate, in weights per second, by stored format
	// ("f32", "bf16", "int8", "int4", "nvfp4"): kernels.Matrix.MulVec over a matrix
	// that stays in the CPU's caches, so it is the kernel's decoding and arithmetic
	// speed, not the memory's.
	GEMV map[string]float64 `json:"gemv"`
	// GEMVStream is the same product's rate over a matrix far larger than the
	// caches: what an AR token of a real model's weights runs at, decoding and
	// reading from memory at once (the two overlap only in part: the int8 head of a
	// real-width model streams at about half of either rate alone). A format
	// missing here is taken at the longer of its GEMV and memory times. It is timed
	// over distinct matrices of a real-width layer's shapes, one product after
	// another, as an AR token's layers run them (steady.go).
	GEMVStream map[string]float64 `json:"gemv_stream"`
	// GEMVJob is the same over matrices of an expert's shapes run as the host model
	// runs an AR step's routed experts: one parallel call over the experts, whole
	// experts per worker (steady.go). A format missing here streams at GEMVStream.
	GEMVJob map[string]float64 `json:"gemv_job,omitempty"`
	// Cache is the CPU's last-level cache in bytes (0: unknown): weights that fit
	// stay there from one AR token to the next, and run at the GEMV rate.
	Cache int64 `json:"cache_bytes"`
	// MemRead is the bytes per second MulVec reads from memory: an f32 matrix far
	// larger than the caches.
	MemRead float64 `json:"mem_read"`
	// Spread is how the probes of some rates ranged over the calibration, each rate
	// being their median (steady.go), by the keys below (SpreadMemRead, …).
	Spread map[string]Spread `json:"spread,omitempty"`
	// Sampler is the logits per second the sampler's statistics take
	// (sampler.Tempered: soft-capped, tempered softmax, entropy and a draw).
	Sampler float64 `json:"sampler"`

	// What the host model does beside the weights' products, each timed as the
	// engine calls it; an estimate from rates without them (an older caller's)
	// counts only the products and the sampler's rate.
	//
	// Decode is the seconds per weight a canvas product (Matrix.MulNT with four or
	// more rows) spends decoding a stored format as it packs it, beyond float32's
	// packing (which the GEMM rates include), by format: each weight is decoded once
	// per product, however many rows it multiplies.
	Decode map[string]float64 `json:"decode"`
	// SoftEmbed is the next step's soft embedding's product, softmax(logits)·E
	// (Matrix.MulNN of a float32 E), in FLOP/s at [256, 4096]×[4096, N] for N in
	// GridSoftN.
	SoftEmbed []ShapeRate `json:"soft_embed"`
	// GEMVTimes is the AR product (MulVec) of a matrix in the caches, per format,
	// timed at a few sizes: its fixed cost per call, and one core against the
	// worker pool (a small product runs on the calling goroutine alone).
	GEMVTimes map[string]Curve `json:"gemv_times"`
	// GEMVRow is the seconds each row of a product costs beyond a square matrix's
	// of as many weights (a tall one, as the LM head [V, D], makes a dot product per
	// row), by format: from [4096, 64] against [512, 512].
	GEMVRow map[string]float64 `json:"gemv_row"`
	// Vec is the host model's passes over activations by kind (VecKinds), timed
	// at a few sizes: per call and per element.
	Vec map[string]Curve `json:"vec"`
	// HeadLogit is the seconds per logit a denoising step's fused head
	// (kernels.Head.Step: soft-cap, the sampler's statistics and the softmax taken
	// from each block of logits) spends beyond its two products, for an embedding
	// it packs ("packed": the products read float32 panels) and one it decodes
	// inside the products ("unpacked", beyond HeadPackBytes).
	HeadLogit map[string]float64 `json:"head_logit"`
	// DecodeToken is the seconds the tokenizer takes per token it decodes to text
	// (engine/tokenizer's Decode, timed on Darkroom Mini's tokenizer over a canvas of
	// text): every event the engine sends — each AR token, each denoising step and
	// guidance round — carries the answer's text so far, decoded again.
	DecodeToken float64 `json:"decode_token"`
	// Wake is the typical time the pool's workers take to start a part handed to
	// them after about 100 µs of serial work, as between a pass's products — however
	// the pool keeps its workers between jobs, spinning, yielding or parked (probe.go).
	// The kernels' rates above are timed one call after another; in a pass, each call
	// that hands parts to the pool waits up to this long for them, or runs them itself.
	Wake float64 `json:"wake"`
	// OpOverhead and StepOpOverhead are the engine's typical seconds per operation (a
	// work item: a product or a pass) outside the kernels and the wake-ups, in an
	// encoder pass and in a denoising step (probe.go).
	OpOverhead     float64 `json:"op_overhead"`
	StepOpOverhead float64 `json:"step_op_overhead"`
}

// The keys of Rates.Spread (the cached rates file's names too). A per-format
// rate's key is its prefix and the format: SpreadGEMV+"int4" is "gemv/int4".
const (
	SpreadGEMMPeak   = "gemm_peak"    // Rates.Peak
	SpreadMemRead    = "mem_read"     // Rates.MemRead
	SpreadGEMV       = "gemv/"        // Rates.GEMV's, in the caches
	SpreadGEMVStream = "gemv_stream/" // Rates.GEMVStream's, from memory
	SpreadGEMVJob    = "gemv_job/"    // Rates.GEMVJob's
)

// Curve is an operation's seconds at a few sizes (elements or weights), smallest
// first. At returns its time at any size.
type Curve []Point

// Point is one timed size.
type Point struct {
	N       float64 `json:"n"`
	Seconds float64 `json:"seconds"`
}

// At is the curve's seconds at size n: linear between the timed sizes, the
// smallest's time below it (a call's fixed cost), and the largest's rate above it.
func (c Curve) At(n float64) float64 {
	switch {
	case len(c) == 0 || n <= 0:
		return 0
	case n <= c[0].N:
		return c[0].Seconds
	}
	for i := 1; i < len(c); i++ {
		if n <= c[i].N {
			a, b := c[i-1], c[i]
			return a.Seconds + (b.Seconds-a.Seconds)*(n-a.N)/(b.N-a.N)
		}
	}
	last := c[len(c)-1]
	return last.Seconds * n / last.N
}

func (c Curve) valid() error {
	for i, p := range c {
		if !(p.N > 0) || !(p.Seconds > 0) || (i > 0 && !(p.N > c[i-1].N)) {
			return fmt.Errorf("bad point %+v", p)
		}
	}
	return nil
}

// The vector passes Measure times (Rates.Vec), each as the host model runs it.
const (
	VecRMSNorm = "rmsnorm" // kernels.RMSNorm over rows of 256
	VecSoftmax = "softmax" // kernels.Softmax over rows of 256 across the workers (attention, router)
	VecVocab   = "vocab"   // kernels.SoftCap then Softmax over rows of 4096 across the workers (the decoder's head)
	VecSoftCap = "softcap" // kernels.SoftCap over rows of 4096 across the workers (the encoder's head)
	VecGelu    = "gelu"    // kernels.GeluMul
	VecLoop    = "loop"    // a plain Go loop over float32s: residual adds, scaling, RoPE, copies and the attention's K/V gather
	VecSampler = "sampler" // sampler.Tempered over rows of 4096 (one row: an AR token's draw)
	VecGuide   = "guide"   // sampler.Guide.Round over rows of 4096: an AR guidance round's pick against both heads' logits
)

// VecKinds lists the kinds of Rates.Vec.
var VecKinds = []string{VecRMSNorm, VecSoftmax, VecVocab, VecSoftCap, VecGelu, VecLoop, VecSampler, VecGuide}

// GridSoftN are the soft embedding's widths timed (Rates.SoftEmbed).
var GridSoftN = []int{64, 512}

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
func (r *Rates) GEMMAt(m, k, n int) float64 { return gridAt(r.GEMM, m, k, n) }

// IntGEMMAt is IntGEMM's rate at [m, k]×[k, n], as GEMMAt (0 without IntGEMM).
func (r *Rates) IntGEMMAt(m, k, n int) float64 {
	if len(r.IntGEMM) == 0 {
		return 0
	}
	return gridAt(r.IntGEMM, m, k, n)
}

// gridAt is the rate of [m, k]×[k, n] from rates on the grid.
func gridAt(rates []ShapeRate, m, k, n int) float64 {
	at := func(i, j, l int) float64 {
		for _, g := range rates {
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
func (r *Rates) Peak() float64 { return peakOf(r.GEMM) }

// IntPeak is the highest IntGEMM rate measured (0 without the integer products).
func (r *Rates) IntPeak() float64 { return peakOf(r.IntGEMM) }

// PeakFor is the compute bound's rate for a model stored in profile p: IntPeak for
// the int8, int4 and NVFP4 profiles where the integer products take that format
// (their largest products go through them), else Peak.
func (r *Rates) PeakFor(p quant.Profile) float64 {
	if (p == quant.Int8Profile || p == quant.Int4Profile || p == quant.NVFP4Profile) && r.IntTakes(string(p)) && r.IntPeak() > r.Peak() {
		return r.IntPeak()
	}
	return r.Peak()
}

// IntTakes reports whether the canvas products of weights stored in format f were
// measured on the integer path (IntGEMM, IntFormats, IntGGUF).
func (r *Rates) IntTakes(f string) bool {
	return len(r.IntGEMM) > 0 && (slices.Contains(r.IntFormats, f) || slices.Contains(r.IntGGUF, f))
}

func peakOf(rates []ShapeRate) float64 {
	var p float64
	for _, d := range rates {
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
	if n := len(r.IntGEMM); n != 0 && n != len(r.GEMM) {
		return fmt.Errorf("%d integer GEMM rates, want %d", n, len(r.GEMM))
	}
	if len(r.IntGEMM) != 0 && !slices.Contains(r.IntFormats, "int4") {
		return fmt.Errorf("integer GEMM rates for formats %q, without int4", r.IntFormats)
	}
	for f, v := range r.IntRelative {
		if !(v > 0) || !r.IntTakes(f) {
			return fmt.Errorf("integer product of %s at %g of int4's rate", f, v)
		}
	}
	for _, d := range slices.Concat(r.GEMM, r.IntGEMM) {
		if !(d.FLOPS > 0) || !slices.Contains(GridM, d.M) || !slices.Contains(GridK, d.K) || !slices.Contains(GridN, d.N) {
			return fmt.Errorf("bad GEMM rate %+v", d)
		}
	}
	for f, v := range r.GEMV {
		if !(v > 0) {
			return fmt.Errorf("bad %s GEMV rate %g", f, v)
		}
	}
	for _, m := range []map[string]float64{r.GEMVStream, r.GEMVJob} {
		for f, v := range m {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("bad %s streaming GEMV rate %g", f, v)
			}
		}
	}
	for f, v := range r.Decode {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("bad %s decoding time %g", f, v)
		}
	}
	for _, d := range r.SoftEmbed {
		if !(d.FLOPS > 0) {
			return fmt.Errorf("bad soft embedding rate %+v", d)
		}
	}
	for k, v := range r.HeadLogit {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("bad %s head time %g", k, v)
		}
	}
	for f, v := range r.GEMVRow {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("bad %s GEMV row time %g", f, v)
		}
	}
	for f, c := range r.GEMVTimes {
		if err := c.valid(); err != nil {
			return fmt.Errorf("%s GEMV times: %w", f, err)
		}
	}
	if !(r.OpOverhead >= 0) || !(r.StepOpOverhead >= 0) || !(r.Wake >= 0) || math.IsInf(r.Wake, 0) ||
		!(r.DecodeToken >= 0) || math.IsInf(r.DecodeToken, 0) {
		return fmt.Errorf("bad overheads %g, %g, wake %g, decoding %g", r.OpOverhead, r.StepOpOverhead, r.Wake, r.DecodeToken)
	}
	for k, c := range r.Vec {
		if err := c.valid(); err != nil {
			return fmt.Errorf("%s times: %w", k, err)
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
func Key() string { return keyAt(calibrationVersion) }

// keyAt is Key for calibration version v.
func keyAt(v int) string {
	return fmt.Sprintf("%s | %d cores, GOMAXPROCS %d | %s/%s | kernels %s%s | calibration %d",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, kernelsBuild(), intKey(), v)
}

// intKey names the micro-kernels the rates were measured with: the float one, and
// the integer one where the integer products are on.
func intKey() string {
	k := ", " + kernels.GEMMKernel()
	if kernels.IntProducts() {
		k += ", integer " + kernels.IntKernel()
	}
	return k
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

// cacheFile is the file's layout. Each entry stays the JSON it was read as, so that
// entries of other machines and builds (a newer one's fields included) are written
// back as they were.
type cacheFile struct {
	Rates map[string]json.RawMessage `json:"rates"` // by Key
}

func (c *Cache) read() cacheFile {
	var f cacheFile
	if b, err := os.ReadFile(c.Path); err == nil {
		_ = json.Unmarshal(b, &f) // corrupt: measured again and rewritten
	}
	return f
}

// Get returns this machine's rates, measuring them (and writing the file) when the
// file holds none for it. A file that cannot be written is not an error: the rates
// are kept for this process.
func (c *Cache) Get(ctx context.Context) (*Rates, error) { return c.get(ctx, false) }

// Remeasure measures this machine's rates again and puts them in place of those the
// file held: a calibration taken while the machine was busy (a game, a download, a
// build beside it) reads every rate low, and Get would give it back for good.
func (c *Cache) Remeasure(ctx context.Context) (*Rates, error) { return c.get(ctx, true) }

func (c *Cache) get(ctx context.Context, again bool) (*Rates, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := c.Key
	if key == "" {
		key = Key()
	}
	if c.last != nil && c.last.Key == key && !again {
		return c.last, nil
	}
	if raw, ok := c.read().Rates[key]; ok && !again {
		var r Rates
		if json.Unmarshal(raw, &r) == nil && r.valid() == nil {
			c.last = &r
			return &r, nil
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
	// Read again: another process may have written its entry while this one measured.
	f := c.read()
	if f.Rates == nil {
		f.Rates = map[string]json.RawMessage{}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return r, nil
	}
	f.Rates[key] = raw
	if b, err := json.MarshalIndent(f, "", "  "); err == nil {
		if os.MkdirAll(filepath.Dir(c.Path), 0o755) == nil {
			_ = atomicfile.WriteFile(c.Path, b, 0o644) // unwritable: measured again next run
		}
	}
	return r, nil
}

// Measure times Darkroom's kernels on this CPU: the canvas GEMM on a grid of shapes,
// the AR product per weight format in cache and from memory, the sampler, and the
// rest of the host model's work (measureHost, measureOverhead). It takes about 6 s
// on a 2-core machine, and holds about 150 MB of matrices while it runs (the
// streaming probes', every format's views of the same bytes: steady.go).
//
// Everything is measured in calibrationPasses passes, and each rate kept at its
// median pass; the streaming rates at the median of several probes a pass
// (steady.go): a burst of another program's work, or a moment of faster memory,
// then moves no rate.
func Measure(ctx context.Context) (*Rates, error) {
	st, err := newStreams(probes.span())
	if err != nil {
		return nil, err
	}
	pass := probes.pass
	if pass == nil {
		pass = measureOnce
	}
	var passes []*Rates
	for range calibrationPasses {
		r, err := pass(ctx, st)
		if err != nil {
			return nil, err
		}
		passes = append(passes, r)
	}
	r := steady(passes)
	st.settle(r)
	return r, nil
}

// steady is the first of passes (measureOnce's: the same shapes, formats and sizes)
// with each rate its median over them, and the spreads of the rates darkroom hw
// prints: the in-cache AR products' and the GEMM's peak.
func steady(passes []*Rates) *Rates {
	a := passes[0]
	values := func(get func(*Rates) float64) []float64 {
		xs := make([]float64, len(passes))
		for i, p := range passes {
			xs[i] = get(p)
		}
		return xs
	}
	of := func(get func(*Rates) float64) float64 { return median(values(get)) }
	// The spreads first, from the passes as they were measured (a is one of them).
	spread := map[string]Spread{SpreadGEMMPeak: spreadOf(values((*Rates).Peak))}
	for f := range a.GEMV {
		spread[SpreadGEMV+f] = spreadOf(values(func(p *Rates) float64 { return p.GEMV[f] }))
	}
	for i := range a.GEMM {
		a.GEMM[i].FLOPS = of(func(p *Rates) float64 { return p.GEMM[i].FLOPS })
	}
	for i := range a.IntGEMM {
		a.IntGEMM[i].FLOPS = of(func(p *Rates) float64 { return p.IntGEMM[i].FLOPS })
	}
	for i := range a.SoftEmbed {
		a.SoftEmbed[i].FLOPS = of(func(p *Rates) float64 { return p.SoftEmbed[i].FLOPS })
	}
	for _, m := range []func(*Rates) map[string]float64{
		func(p *Rates) map[string]float64 { return p.GEMV },
		func(p *Rates) map[string]float64 { return p.Decode },
		func(p *Rates) map[string]float64 { return p.GEMVRow },
		func(p *Rates) map[string]float64 { return p.HeadLogit },
		func(p *Rates) map[string]float64 { return p.IntRelative },
	} {
		for f := range m(a) {
			m(a)[f] = of(func(p *Rates) float64 { return m(p)[f] })
		}
	}
	for _, m := range []func(*Rates) map[string]Curve{
		func(p *Rates) map[string]Curve { return p.GEMVTimes },
		func(p *Rates) map[string]Curve { return p.Vec },
	} {
		for k, c := range m(a) {
			for i := range c {
				c[i].Seconds = of(func(p *Rates) float64 { return m(p)[k][i].Seconds })
			}
		}
	}
	a.Sampler = of(func(p *Rates) float64 { return p.Sampler })
	a.OpOverhead = of(func(p *Rates) float64 { return p.OpOverhead })
	a.StepOpOverhead = of(func(p *Rates) float64 { return p.StepOpOverhead })
	a.Wake = of(func(p *Rates) float64 { return p.Wake })
	a.DecodeToken = of(func(p *Rates) float64 { return p.DecodeToken })
	a.Spread = spread
	return a
}

// measureOnce is one pass of Measure: every rate timed once, and st's streaming
// probes at the pass's start, middle and end.
func measureOnce(ctx context.Context, st *streams) (*Rates, error) {
	r := &Rates{Measured: time.Now().UTC(), GEMV: map[string]float64{}, GEMVStream: map[string]float64{}, Cache: cacheBytes()}
	st.probe()
	var err error
	if r.GEMM, err = measureGrid(ctx, func(k, n int) (func(m int) func() error, error) {
		b := fill(n * k)
		return func(m int) func() error {
			a, out := fill(m*k), make([]float32, m*n)
			return func() error { kernels.MulNT(out, a, b, m, n, k); return nil }
		}, nil
	}); err != nil {
		return nil, err
	}
	if kernels.IntProducts() {
		r.IntFormats, r.IntKernel = kernels.IntFormats(), kernels.IntKernel()
		for _, t := range ggufTypes {
			if slices.Contains(kernels.IntGGUF(), t.String()) {
				r.IntGGUF = append(r.IntGGUF, ggufFormat(t))
			}
		}
		r.IntGEMM, err = measureGrid(ctx, func(k, n int) (func(m int) func() error, error) {
			// Distinct matrices, 64 MB of them where they are that large, taken in
			// turn: each product reads its weights from memory, as a model's products
			// do (a canvas's experts read half a GB a layer).
			ws := make([]*kernels.Matrix, max(1, min(32, (64<<20)/max(1, n*k/2))))
			for i := range ws {
				var err error
				if ws[i], err = matrixOf("int4", n, k); err != nil {
					return nil, err
				}
			}
			return func(m int) func() error {
				a, out := fill(m*k), make([]float32, m*n)
				next := 0
				return func() error {
					next = (next + 1) % len(ws)
					if err := ws[next].MulNT(out, a, m); err != nil {
						return fmt.Errorf("int4 MulNT: %w", err)
					}
					return nil
				}
			}, nil
		})
		if err != nil {
			return nil, err
		}
		if r.IntRelative, err = measureIntRelative(ctx, slices.Concat(r.IntFormats, r.IntGGUF)); err != nil {
			return nil, err
		}
	}

	// The AR product in cache: 256 KiB to 1 MiB of weights whatever the format.
	const rows, cols = 512, 1024
	for _, f := range slices.Concat(formats, ggufFormats) {
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
	// From memory: the streaming probes (steady.go), whose median over the passes
	// Measure keeps.
	st.probe()

	// The sampler over 64 rows of 4096 logits.
	const sv, srows = 4096, 64
	logits, u := fill(sv*srows), make([]float64, srows)
	for i := range u {
		u[i] = float64(i) / srows
	}
	sec := best(func() { sampler.Tempered(logits, sv, 0.8, u) }, 0.05)
	r.Sampler = float64(sv*srows) / sec
	if err := measureHost(ctx, r); err != nil {
		return nil, err
	}
	st.probe()
	return r, ctx.Err()
}

// measureIntRelative times the canvas product (MulNT) of each integer format of
// formats but int4 against int4's at a 26B expert's shape, [64, 2816]×[2816, 704],
// the two in turn, and gives each format's rate over int4's (Rates.IntRelative).
func measureIntRelative(ctx context.Context, formats []string) (map[string]float64, error) {
	const m, k, n = 64, 2816, 704
	int4, err := matrixOf("int4", n, k)
	if err != nil {
		return nil, err
	}
	a, out := fill(m*k), make([]float32, m*n)
	timed := func(w *kernels.Matrix) (float64, error) {
		var merr error
		sec := best(func() {
			if err := w.MulNT(out, a, m); err != nil && merr == nil {
				merr = err
			}
		}, 0.04)
		if merr != nil {
			return 0, fmt.Errorf("%s MulNT: %w", w, merr)
		}
		return sec, nil
	}
	rel := map[string]float64{}
	for _, f := range formats {
		if f == "int4" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w, err := matrixOf(f, n, k)
		if err != nil {
			return nil, err
		}
		t4, err := timed(int4)
		if err != nil {
			return nil, err
		}
		tf, err := timed(w)
		if err != nil {
			return nil, err
		}
		rel[f] = t4 / tf
	}
	return rel, nil
}

// measureGrid times a product at every shape of the GEMM grid, the best of its calls,
// as FLOP/s: prepare(k, n) makes the shape's weights, once for every row count, and
// its result for m rows the call timed (the first error it returns ends the grid).
func measureGrid(ctx context.Context, prepare func(k, n int) (func(m int) func() error, error)) ([]ShapeRate, error) {
	var out []ShapeRate
	for _, k := range GridK {
		for _, n := range GridN {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			rows, err := prepare(k, n)
			if err != nil {
				return nil, err
			}
			for _, m := range GridM {
				call := rows(m)
				var cerr error
				sec := best(func() {
					if err := call(); err != nil && cerr == nil {
						cerr = err
					}
				}, 0.04)
				if cerr != nil {
					return nil, cerr
				}
				out = append(out, ShapeRate{M: m, K: k, N: n, FLOPS: 2 * float64(m*n*k) / sec})
			}
		}
	}
	return out, nil
}

// measureHost times what the host model does beside the canvas GEMM and the
// streaming AR product: decoding stored formats while packing, the soft
// embedding's product, small AR products, and the passes over activations.
func measureHost(ctx context.Context, r *Rates) error {
	r.Decode, r.GEMVTimes, r.GEMVRow, r.Vec = map[string]float64{}, map[string]Curve{}, map[string]float64{}, map[string]Curve{}

	// Decoding: the same canvas product, [64, 1024]×[1024, 1024], in each format
	// against float32, on the float path (the soft embedding's MulNN decodes int8 and
	// int4 so; their MulNT is IntGEMM's where the integer products run).
	intOn := kernels.SetIntProducts(false)
	defer kernels.SetIntProducts(intOn)
	const dm, dk, dn = 64, 1024, 1024
	a, out := fill(dm*dk), make([]float32, dm*dn)
	var f32 float64
	for _, f := range slices.Concat(formats, ggufFormats) {
		if err := ctx.Err(); err != nil {
			return err
		}
		w, err := matrixOf(f, dn, dk)
		if err != nil {
			return err
		}
		var merr error
		sec := best(func() { merr = w.MulNT(out, a, dm) }, 0.03)
		if merr != nil {
			return fmt.Errorf("%s MulNT: %w", f, merr)
		}
		if f == "f32" {
			f32 = sec
			continue
		}
		r.Decode[f] = max(0, sec-f32) / (dn * dk)
	}

	// The soft embedding: probabilities [256, 4096] times a float32 E [4096, N].
	const sm, sk = 256, 4096
	probs := fill(sm * sk)
	for _, n := range GridSoftN {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := matrixOf("f32", sk, n)
		if err != nil {
			return err
		}
		out := make([]float32, sm*n)
		var merr error
		sec := best(func() { merr = e.MulNN(out, probs, sm) }, 0.03)
		if merr != nil {
			return fmt.Errorf("MulNN: %w", merr)
		}
		r.SoftEmbed = append(r.SoftEmbed, ShapeRate{M: sm, K: sk, N: n, FLOPS: 2 * float64(sm*sk*n) / sec})
	}

	// Small AR products in the last-level cache: [32, 32] to [512, 512] (one core:
	// below the pool's threshold) and [1024, 1024] (split across the workers), each
	// timed over copies that together outgrow the cores' own caches, as a model's
	// layers do, so that every product reads its weights from the shared cache. They
	// take the path a model's do: the integer one where it is on (NVFP4's; the
	// decoding above had turned it off for these too, so NVFP4's were timed on the
	// float path its printer no longer takes).
	kernels.SetIntProducts(intOn)
	for _, f := range formats {
		for _, side := range []int{32, 64, 128, 256, 512, 1024} {
			sec, err := gemvTime(ctx, f, side, side)
			if err != nil {
				return err
			}
			r.GEMVTimes[f] = append(r.GEMVTimes[f], Point{N: float64(side * side), Seconds: sec})
		}
		tall, err := gemvTime(ctx, f, 4096, 64)
		if err != nil {
			return err
		}
		r.GEMVRow[f] = max(0, tall-r.GEMVTimes[f].At(4096*64)) / (4096 - 512)
	}

	// The passes over activations, at three sizes each.
	for _, kind := range VecKinds {
		width, sizes := 256, []int{64, 256, 16 << 10, 256 << 10}
		if kind == VecVocab || kind == VecSoftCap || kind == VecSampler || kind == VecGuide {
			width, sizes = 4096, []int{4096, 64 << 10, 1 << 20}
		}
		for _, n := range sizes {
			if err := ctx.Err(); err != nil {
				return err
			}
			run, err := vecPass(kind, min(width, n), n)
			if err != nil {
				return fmt.Errorf("%s pass: %w", kind, err)
			}
			r.Vec[kind] = append(r.Vec[kind], Point{N: float64(n), Seconds: best(run, 0.01)})
		}
	}
	if err := measureHead(ctx, r); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.Wake = measureWake()
	var err error
	if r.DecodeToken, err = measureDecode(); err != nil {
		return err
	}
	return measureOverhead(r)
}

// measureHead times the fused head's step on a packed float32 embedding [4096, 256]
// over a canvas of 256 and an int8 one too large to pack, [65536, 256], over 64
// rows, and keeps what each takes per logit beyond its products at the rates
// measured before it.
func measureHead(ctx context.Context, r *Rates) error {
	r.HeadLogit = map[string]float64{}
	for _, c := range []struct {
		kind, format string
		v, d, rows   int
	}{{"packed", "f32", 4096, 256, 256}, {"unpacked", "int8", 65536, 256, 64}} {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := matrixOf(c.format, c.v, c.d)
		if err != nil {
			return err
		}
		h, err := kernels.NewHead(*e)
		if err != nil {
			return err
		}
		if h.Packed() != (c.kind == "packed") {
			return fmt.Errorf("head [%d, %d] %s: packed %v", c.v, c.d, c.format, h.Packed())
		}
		hidden, soft := fill(c.rows*c.d), make([]float32, c.rows*c.d)
		pos, draws := make([]kernels.Position, c.rows), make([]float64, c.rows)
		for i := range draws {
			draws[i] = float64(i) / float64(c.rows)
		}
		var serr error
		sec := best(func() {
			serr = h.Step(soft, pos, hidden, c.rows, kernels.HeadStep{Softcap: 30, InvTemperature: 1, Draws: draws, SoftScale: 1})
		}, 0.05)
		if serr != nil {
			return fmt.Errorf("head step: %w", serr)
		}
		flops := 2 * float64(c.rows) * float64(c.v) * float64(c.d)
		gemm := r.GEMMAt(c.rows, c.d, c.v)
		products := flops/gemm + flops/r.softEmbedAt(c.d, gemm)
		if c.kind == "unpacked" {
			products += 2 * float64(c.v*c.d) * r.Decode[c.format]
		}
		r.HeadLogit[c.kind] = max(0, sec-products) / float64(c.rows*c.v)
	}
	return nil
}

// gemvTime is one MulVec of a [rows, cols] matrix in format f, over copies of it
// that together outgrow the cores' own caches (gemvSpan).
func gemvTime(ctx context.Context, f string, rows, cols int) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w, err := matrixOf(f, rows, cols)
	if err != nil {
		return 0, err
	}
	ws := []*kernels.Matrix{w}
	for size := len(w.Data) + len(w.Scales); size*len(ws) < gemvSpan; {
		c := *w
		c.Data, c.Scales, c.Mins = slices.Clone(w.Data), slices.Clone(w.Scales), slices.Clone(w.Mins)
		ws = append(ws, &c)
	}
	x, out := fill(cols), make([]float32, rows)
	i := 0
	return best(func() {
		_ = ws[i%len(ws)].MulVec(out, x)
		i++
	}, 0.01), nil
}

// gemvSpan is the bytes of weights the small AR products cycle through: more than
// the cores' own (L2) caches, less than a last-level cache.
const gemvSpan = 6 << 20

// vecPass is one call of vector pass kind over n elements in rows of width, as the
// host model makes it.
func vecPass(kind string, width, n int) (func(), error) {
	x, y, dst := fill(n), fill(n), make([]float32, n)
	rows := n / width
	switch kind {
	case VecRMSNorm:
		w := fill(width)
		return func() { kernels.RMSNorm(dst, x, w, width, 1e-6) }, nil
	case VecSoftmax:
		return func() {
			kernels.ParallelRows(rows, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					kernels.Softmax(dst[i*width:(i+1)*width], x[i*width:(i+1)*width], 1)
				}
			})
		}, nil
	case VecVocab:
		return func() {
			kernels.ParallelRows(rows, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					row := x[i*width : (i+1)*width]
					kernels.SoftCap(row, 30)
					kernels.Softmax(dst[i*width:(i+1)*width], row, 1)
				}
			})
		}, nil
	case VecSoftCap:
		return func() {
			kernels.ParallelRows(rows, func(lo, hi int) { kernels.SoftCap(x[lo*width:hi*width], 30) })
		}, nil
	case VecGelu:
		tmp := make([]float32, n)
		return func() { kernels.GeluMul(dst, x, y, tmp) }, nil
	case VecSampler:
		u := make([]float64, rows)
		for i := range u {
			u[i] = float64(i) / float64(rows)
		}
		return func() { sampler.Tempered(x, width, 0.8, u) }, nil
	case VecGuide:
		for r := range rows { // id 0 wins every row: no position changes, so none is skipped
			x[r*width] = 10
		}
		g, err := sampler.NewGuide(x, width, 0.5, nil)
		if err != nil {
			return nil, err
		}
		a := make([]int, rows)
		return func() { _, _, _ = g.Round(a, 0, rows, func(i int) []float32 { return y[i*width : (i+1)*width] }) }, nil
	}
	return func() { // VecLoop: the host model's residual add
		for j, v := range x {
			dst[j] += v
		}
	}, nil
}

// formats are the weight formats the AR product is timed in, in the caches and
// streaming from memory.
var formats = []string{"f32", "bf16", "int8", "int4", "nvfp4"}

// ggufTypes are a GGUF file's block types that the estimates price (the mixes' types,
// weights.GGUFType, and the others a community file may hold that Darkroom multiplies
// as stored, weights.GGUFLayout; a Q6_K embedding held as int8, int8G32; F16, rare,
// is priced as f32), timed as the formats are
// — the AR product (GEMV) in the caches and streaming (GEMVStream, GEMVJob: since the
// printer's GGUF products run in integers their kernels outrun the memory, and the
// memory's rate alone priced them a third too fast), the canvas product's decoding
// (Decode); ggufFormats their formats' names (ggufFormat).
var (
	ggufTypes = []gguf.Type{gguf.Q4_K, gguf.Q5_0, gguf.Q8_0, gguf.Q5_K, gguf.Q5_1, gguf.Q6_K,
		gguf.Q4_0, gguf.Q4_1, gguf.Q2_K, gguf.Q3_K, gguf.IQ4_NL, gguf.IQ4_XS}
	ggufFormats = func() (fs []string) {
		for _, t := range ggufTypes {
			fs = append(fs, ggufFormat(t))
		}
		return fs
	}()
)

// ggufFormat is GGUF type t's format name, its own in lower case ("q4_k").
func ggufFormat(t gguf.Type) string { return strings.ToLower(t.String()) }

// ggufTypeOf is the type of format f where it is one of ggufTypes.
func ggufTypeOf(f string) (gguf.Type, bool) {
	for _, t := range ggufTypes {
		if ggufFormat(t) == f {
			return t, true
		}
	}
	return 0, false
}

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
		t, ok := ggufTypeOf(f)
		if !ok {
			return nil, fmt.Errorf("no weight format %q", f)
		}
		// Whole blocks of patterned codes, each block's fp16 scales 1/64 (d, and
		// Q4_K's dmin; the rest of a block's bytes are codes or small scales).
		bb, bs := t.BlockBytes(), t.BlockSize()
		w.GGUF, w.Data = t, make([]byte, rows*cols/bs*bb)
		for i := range w.Data {
			w.Data[i] = byte(i * 37)
		}
		at := []int{0} // where the block's fp16 scales are (ggml's block layouts)
		switch t {
		case gguf.Q4_K, gguf.Q5_K, gguf.Q4_1, gguf.Q5_1:
			at = []int{0, 2} // d and dmin (m)
		case gguf.Q6_K:
			at = []int{208}
		case gguf.Q3_K:
			at = []int{108}
		case gguf.Q2_K:
			at = []int{80, 82}
		}
		for b := 0; b < len(w.Data); b += bb {
			for _, o := range at {
				binary.LittleEndian.PutUint16(w.Data[b+o:], 0x2400)
			}
		}
	}
	if spec.Bits != 0 {
		w.Spec = spec
		qw, qs := spec.Shapes([]int{rows, cols})
		w.Data = make([]byte, qw[0]*qw[1]*spec.DType().Size())
		for i := range w.Data {
			w.Data[i] = byte(i * 37)
		}
		w.Scales = unitScales(spec, qs[0]*qs[1]*spec.ScaleDType().Size())
		if spec.HasMin() {
			w.Mins = make([]byte, len(w.Scales))
		}
	}
	return w, w.Check()
}

// unitScales is n bytes of scales of about 1 in spec's scale type.
func unitScales(spec quant.Spec, n int) []byte {
	b, one := make([]byte, n), unitScale(spec)
	for i := 0; i+len(one) <= n; i += len(one) {
		copy(b[i:], one)
	}
	return b
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

// best runs f once to warm up, then repeatedly for about budget seconds (times
// passBudget: one pass's share of the calibration; at least twice, as the median of
// three passes leaves out one whose runs were all disturbed), and returns the
// fastest run's seconds: the machine's rate with the least interference from other
// programs.
func best(f func(), budget float64) float64 {
	budget *= passBudget
	f()
	var times []float64
	start := clock.Now()
	for len(times) < 2 || clock.Since(start).Seconds() < budget {
		t0 := clock.Now()
		f()
		times = append(times, max(clock.Since(t0).Seconds(), 1e-9))
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
