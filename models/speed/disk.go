package speed

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/darkroomlabs/darkroom/models/fit"
)

// The disk. A model that runs from the disk (models/fit's FromDisk: its mapped
// weights do not all fit in memory) reads, for every AR token, the routed experts
// memory could not keep — each a few MB in one piece, the k of a layer read ahead
// together (engine/model prefetch.go). DiskRate measures that: a file of diskProbeBytes
// written into the models folder, dropped from the system's cache, and read back in
// diskChunk pieces at random places, diskQueue at a time.
const (
	diskProbeBytes = 256 << 20
	diskChunk      = 2 << 20
	diskQueue      = 8
)

// DiskRate is the models folder's disk read rate, measured by MeasureDisk.
type DiskRate struct {
	Dir       string    `json:"dir"`
	BytesPerS float64   `json:"bytes_per_s"`
	Measured  time.Time `json:"measured"`
}

// MeasureDisk measures how fast the disk holding dir reads what is not in memory
// (DiskRate), writing and then removing a file of 256 MB in dir — or in the nearest
// folder above it that exists (a models folder not made yet: on the same disk, most
// likely). It fails where the system cannot be made to read past its cache
// (uncached), or the folder cannot be written.
func MeasureDisk(ctx context.Context, dir string) (DiskRate, error) {
	at := dir
	for {
		if _, err := os.Stat(at); err == nil || filepath.Dir(at) == at {
			break
		}
		at = filepath.Dir(at)
	}
	f, err := os.CreateTemp(at, ".darkroom-disk-probe-*")
	if err != nil {
		return DiskRate{}, fmt.Errorf("measure the disk: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	buf := make([]byte, diskChunk)
	rng := rand.New(rand.NewPCG(1, 2)) // not zeros: a compressing file system would not read them
	for at := 0; at < diskProbeBytes; at += len(buf) {
		for i := 0; i+8 <= len(buf); i += 8 {
			v := rng.Uint64()
			for j := range 8 {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return DiskRate{}, fmt.Errorf("measure the disk: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return DiskRate{}, fmt.Errorf("measure the disk: %w", err)
	}
	if err := f.Close(); err != nil {
		return DiskRate{}, fmt.Errorf("measure the disk: %w", err)
	}
	r, closeFile, err := uncached(path)
	if err != nil {
		return DiskRate{}, fmt.Errorf("measure the disk: %w", err)
	}
	defer closeFile()
	// Each reader takes its turn at chunks in a shuffled order, so that every chunk is
	// read once, from the disk.
	order := rand.New(rand.NewPCG(3, 4)).Perm(diskProbeBytes / diskChunk)
	var next int
	var mu sync.Mutex
	var firstErr error
	start := clock.Now()
	var wg sync.WaitGroup
	for range diskQueue {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := alignedBuffer(diskChunk)
			for {
				mu.Lock()
				if next == len(order) || firstErr != nil || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				at := int64(order[next]) * diskChunk
				next++
				mu.Unlock()
				if _, err := r.ReadAt(b, at); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	took := clock.Since(start).Seconds()
	if err := cmp.Or(firstErr, ctx.Err()); err != nil {
		return DiskRate{}, fmt.Errorf("measure the disk: %w", err)
	}
	if took <= 0 {
		return DiskRate{}, errors.New("measure the disk: no time passed")
	}
	return DiskRate{Dir: dir, BytesPerS: diskProbeBytes / took, Measured: time.Now()}, nil
}

// alignedBuffer is n bytes starting on a 4096-byte boundary, as reads past the
// system's cache want (Windows' FILE_FLAG_NO_BUFFERING).
func alignedBuffer(n int) []byte {
	b := make([]byte, n+4096)
	off := int((4096 - uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4096) % 4096)
	return b[off : off+n : off+n]
}

// DiskCache keeps measured disk rates by models folder in a JSON file beside the
// CPU's calibration (DiskPath), so that each folder's disk is measured once.
type DiskCache struct {
	Path    string                                                  // the JSON file
	Measure func(ctx context.Context, dir string) (DiskRate, error) // nil: MeasureDisk

	mu   sync.Mutex
	seen map[string]DiskRate
}

// DiskPath is disk.json in Darkroom's folder of the user's cache.
func DiskPath() (string, error) {
	p, err := DefaultPath()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "disk.json"), nil
}

// Get returns the disk rate of dir, measuring it (and writing the file) when the
// file holds none for it. A file that cannot be written is not an error.
func (c *DiskCache) Get(ctx context.Context, dir string) (DiskRate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if r, ok := c.seen[dir]; ok {
		return r, nil
	}
	all := map[string]DiskRate{}
	if b, err := os.ReadFile(c.Path); err == nil {
		_ = json.Unmarshal(b, &all) // corrupt: measured again and rewritten
	}
	r, ok := all[dir]
	if !ok || r.BytesPerS <= 0 {
		measure := c.Measure
		if measure == nil {
			measure = MeasureDisk
		}
		var err error
		if r, err = measure(ctx, dir); err != nil {
			return DiskRate{}, err
		}
		all[dir] = r
		if b, err := json.MarshalIndent(all, "", "  "); err == nil && os.MkdirAll(filepath.Dir(c.Path), 0o755) == nil {
			_ = atomicfile.WriteFile(c.Path, b, 0o644)
		}
	}
	if c.seen == nil {
		c.seen = map[string]DiskRate{}
	}
	c.seen[dir] = r
	return r, nil
}

// DiskFor is the FromDisk of a model whose memory estimate est is judged v against
// budget b, on a disk that reads rate bytes/s: what the system can keep of its
// mapped weights is b's tight share less what must stay in memory (fit.Limits,
// fit.Estimate.Resident). It is nil where the model does not run from the disk, or
// the disk's rate is unknown (rate ≤ 0).
func DiskFor(est *fit.Estimate, b fit.Budget, v fit.Verdict, rate float64) *FromDisk {
	if v != fit.FromDisk || est == nil || rate <= 0 {
		return nil
	}
	_, tightAt := fit.Limits(b)
	return &FromDisk{Memory: max(0, tightAt*float64(b.Bytes)-float64(est.Resident())), Rate: rate}
}

var (
	diskMu    sync.Mutex
	diskCache *DiskCache
)

// DiskHere is the disk rate of the models folder dir from the process's DiskCache at
// DiskPath, measured the first time a folder is asked for (a second or two).
func DiskHere(ctx context.Context, dir string) (DiskRate, error) {
	diskMu.Lock()
	if diskCache == nil {
		p, err := DiskPath()
		if err != nil {
			diskMu.Unlock()
			return DiskRate{}, err
		}
		diskCache = &DiskCache{Path: p}
	}
	c := diskCache
	diskMu.Unlock()
	return c.Get(ctx, dir)
}
