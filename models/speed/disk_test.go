package speed

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/fit"
)

// TestMeasureDisk measures the disk under a test folder: a rate, and the probe's
// file gone afterwards; a folder not made yet, in the folder above; a folder that
// cannot be written (under a file) is an error.
func TestMeasureDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 256 MB")
	}
	dir := t.TempDir()
	d, err := MeasureDisk(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.BytesPerS <= 0 || math.IsInf(d.BytesPerS, 0) || d.Dir != dir {
		t.Errorf("%+v", d)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %d files", len(left))
	}
	// A models folder not made yet is measured in the folder above it, and left alone.
	if d, err := MeasureDisk(context.Background(), filepath.Join(dir, "models", "not yet")); err != nil || d.BytesPerS <= 0 {
		t.Errorf("a folder not made yet: %+v, %v", d, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("measuring a folder not made yet left %d files", len(left))
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := MeasureDisk(context.Background(), filepath.Join(file, "models")); err == nil {
		t.Error("a folder under a file was measured")
	}
	t.Logf("%.2f GB/s", d.BytesPerS/1e9)
}

// TestDiskCache: a folder's disk is measured once and kept in the file, which a new
// cache reads without measuring; a corrupt file is measured again; a failed
// measurement is an error, and nothing is kept.
func TestDiskCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "disk.json")
	calls := 0
	measure := func(_ context.Context, dir string) (DiskRate, error) {
		calls++
		if filepath.Base(dir) == "broken" {
			return DiskRate{}, errors.New("injected")
		}
		return DiskRate{Dir: dir, BytesPerS: 2e9}, nil
	}
	c := &DiskCache{Path: path, Measure: measure}
	for range 2 {
		if d, err := c.Get(context.Background(), "/models"); err != nil || d.BytesPerS != 2e9 {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	if calls != 1 {
		t.Errorf("measured %d times", calls)
	}
	if d, err := (&DiskCache{Path: path, Measure: measure}).Get(context.Background(), "/models"); err != nil || d.BytesPerS != 2e9 || calls != 1 {
		t.Errorf("a new cache: %+v, %v, %d measurements", d, err, calls)
	}
	if _, err := c.Get(context.Background(), "/broken"); err == nil {
		t.Error("a failed measurement was not an error")
	}
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls = 0
	if d, err := (&DiskCache{Path: path, Measure: measure}).Get(context.Background(), "/models"); err != nil || d.BytesPerS != 2e9 || calls != 1 {
		t.Errorf("a corrupt file: %+v, %v, %d measurements", d, err, calls)
	}
}

// TestFromDiskEstimate: a run from the disk costs an AR token its routed experts'
// share that memory cannot keep, at the disk's rate, and a denoising step the
// experts it touches beyond memory; with memory for every mapped weight it costs
// nothing, with none a token reads all its experts; the time falls as memory grows.
func TestFromDiskEstimate(t *testing.T) {
	cfg := catalog.DiffusionGemma26B()
	r := flat(1e11, 2e10, 2e10, 1e9)
	p := quant.NVFP4Profile
	base, err := Compute(cfg, p, r, Workload{})
	if err != nil {
		t.Fatal(err)
	}
	est, err := fit.Compute(cfg, p, fit.Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	rate := 1e9
	at := func(memory float64) *Estimate {
		e, err := Compute(cfg, p, r, Workload{FromDisk: &FromDisk{Memory: memory, Rate: rate}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	all := at(float64(est.Pageable))
	if all.AR.DiskBytes != 0 || all.Diffusion.DiskBytes != 0 || all.AR.UnitSeconds != base.AR.UnitSeconds {
		t.Errorf("memory for every mapped weight: %.0f and %.0f bytes from the disk, a token %.4f s against %.4f",
			all.AR.DiskBytes, all.Diffusion.DiskBytes, all.AR.UnitSeconds, base.AR.UnitSeconds)
	}
	none := at(0)
	t26 := &cfg.Text
	// A token's experts: k of E of every expert tensor (NVFP4: stored as is, mapped).
	var experts float64
	for _, s := range weights.Specs(cfg) {
		if strings.Contains(s.Name, ".experts.") {
			experts += float64(fit.TensorBytes(cfg, p, s))
		}
	}
	want := experts * float64(t26.TopKExperts) / float64(t26.NumExperts)
	if d := none.AR.DiskBytes/want - 1; math.Abs(d) > 1e-9 || none.AR.Bound != "disk" {
		t.Errorf("no memory: a token reads %.3f GB from the disk, want its experts' %.3f GB; bound %s", none.AR.DiskBytes/1e9, want/1e9, none.AR.Bound)
	}
	if d := none.AR.UnitSeconds - base.AR.UnitSeconds - none.AR.DiskBytes/rate; math.Abs(d) > 1e-9 {
		t.Errorf("no memory: a token %.4f s, want %.4f + %.4f", none.AR.UnitSeconds, base.AR.UnitSeconds, none.AR.DiskBytes/rate)
	}
	last := math.Inf(1)
	for _, share := range []float64{0.3, 0.5, 0.7, 0.9} {
		e := at(share * float64(est.Pageable))
		if e.AR.UnitSeconds >= last || e.AR.UnitSeconds <= base.AR.UnitSeconds || e.Diffusion.StepSeconds <= base.Diffusion.StepSeconds {
			t.Errorf("memory for %.0f%% of the mapped weights: a token %.4f s (before %.4f, in memory %.4f), a step %.2f s (in memory %.2f)",
				100*share, e.AR.UnitSeconds, last, base.AR.UnitSeconds, e.Diffusion.StepSeconds, base.Diffusion.StepSeconds)
		}
		last = e.AR.UnitSeconds
	}
	// DiskFor: the tight share of the RAM less what must stay in memory, for a
	// from-disk verdict with a known rate only.
	b := fit.Budget{Kind: "ram", Name: "RAM", Bytes: 16 << 30}
	d := DiskFor(est, b, fit.FromDisk, rate)
	if _, tight := fit.Limits(b); d == nil || d.Rate != rate || d.Memory != tight*float64(b.Bytes)-float64(est.Resident()) {
		t.Errorf("DiskFor: %+v", d)
	}
	if DiskFor(est, b, fit.Fits, rate) != nil || DiskFor(est, b, fit.FromDisk, 0) != nil {
		t.Error("DiskFor gave a disk to a model in memory, or to an unmeasured disk")
	}
}
