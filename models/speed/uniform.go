package speed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
)

// UniformSampler is the sampler's rate in Uniform's rates, in logits per second.
const UniformSampler = 300e6

// Uniform is rates with known arithmetic, for tests that check what is computed
// from a calibration rather than this machine's load: every GEMM shape at gemm
// FLOP/s, every stored format's AR product at gemv weights per second in the caches
// and at memRead/2 from memory (two bytes a weight, bf16's), memory reads at
// memRead bytes per second and the sampler at UniformSampler. The host model's
// other timings are left out, so an estimate counts the products and the sampler
// alone. Key is this machine's (Key()); a test changes any field it needs otherwise.
func Uniform(gemm, gemv, memRead float64) *Rates {
	r := &Rates{Key: Key(), GEMV: map[string]float64{}, GEMVStream: map[string]float64{}, MemRead: memRead, Sampler: UniformSampler}
	for _, m := range GridM {
		for _, k := range GridK {
			for _, n := range GridN {
				r.GEMM = append(r.GEMM, ShapeRate{M: m, K: k, N: n, FLOPS: gemm})
			}
		}
	}
	for _, f := range formats {
		r.GEMV[f], r.GEMVStream[f] = gemv, memRead/2
	}
	return r
}

// Prime writes r as this machine's entry (Key()) in the calibration file at
// DefaultPath, in place of any there and beside other machines' entries, so that
// Default (and any Cache there) reads r and measures nothing. It is for tests,
// which point the user's cache folder at a temporary one first (XDG_CACHE_HOME on
// Linux). Rates that are not valid, or a file that cannot be written, are an error.
func Prime(r *Rates) error {
	path, err := DefaultPath()
	if err != nil {
		return err
	}
	if err := r.valid(); err != nil {
		return fmt.Errorf("prime the speed calibration: %w", err)
	}
	entry := *r
	entry.Key = Key()
	raw, err := json.Marshal(&entry)
	if err != nil {
		return fmt.Errorf("prime the speed calibration: %w", err)
	}
	f := (&Cache{Path: path}).read()
	if f.Rates == nil {
		f.Rates = map[string]json.RawMessage{}
	}
	f.Rates[entry.Key] = raw
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("prime the speed calibration: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("prime the speed calibration: %w", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("prime the speed calibration: %w", err)
	}
	return nil
}
