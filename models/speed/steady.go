package speed

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/darkroomlabs/darkroom/engine/clock"
	"github.com/darkroomlabs/darkroom/engine/kernels"
)

// A calibration that holds still. A shared or virtual machine's rates wander over
// seconds: on the 2-core test VM, idle, three calibrations within 20 s read memory at
// 25.5, 26.5 and 33.4 GB/s and int4's AR product at 34.9, 34.8 and 41.6 G weights/s,
// each rate then the fastest of two passes. A fastest-of keeps a lucky moment as the
// machine's rate, and no answer of many tokens runs in that moment only. So Measure
// makes calibrationPasses passes, each timing every rate once (its fastest run over a
// short budget: the kernel's arithmetic with the least interference), and keeps each
// rate at its median over the passes: one pass disturbed either way — another
// program's burst, a moment of fast memory — moves no rate. The streaming rates,
// which wander the most and cost little to probe, are probed streamProbesPerPass
// times in each pass, at its start, middle and end, and kept at the median of all
// those probes. Rates.Spread records how the printed rates' probes ranged.

// calibrationPasses is the passes Measure makes: three, so that the median leaves
// out one disturbed pass; each times every rate within a budget of passBudget times
// its single pass's of before, so the calibration takes about as long as two did.
const calibrationPasses = 3

// passBudget scales each rate's timing budget within a pass (best's budget).
const passBudget = 2.0 / 3

// streamProbesPerPass is how many times a pass probes the streaming rates.
const streamProbesPerPass = 3

// Spread is how one rate's probes ranged: the slowest and the fastest of N, in the
// rate's unit.
type Spread struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	N  int     `json:"n"`
}

// spreadOf is xs's Spread.
func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	return Spread{Lo: slices.Min(xs), Hi: slices.Max(xs), N: len(xs)}
}

// median is the middle of xs (the mean of the middle two for an even count), 0 for
// none. xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// The streaming probes run what an AR token of a real-width model runs: distinct
// matrices of one layer's shapes (DiffusionGemma 26B's: the attention's q, k, v and
// o, the dense MLP's gate, up and down), each product in turn across the pool
// (Matrix.MulVec, split as the model's are: kernels.Parts), and, for the experts,
// matrices of an expert's gate_up and down shapes run as the host model runs an AR
// step's routed experts — one parallel call, whole experts per worker
// (kernels.ParallelRows). Together each set holds at least three times the last-level
// cache (at least 96 MiB), so that no sweep finds a matrix still cached from the one
// before, as no AR token of a real model does; the f32 set's stream is the memory
// read rate.
var (
	layerShapes  = [][2]int{{4096, 2816}, {2048, 2816}, {2048, 2816}, {2816, 4096}, {2112, 2816}, {2112, 2816}, {2816, 2112}}
	expertShapes = [][2]int{{1408, 2816}, {2816, 704}}
)

// expertsPerJob is the routed experts an AR step runs in one parallel call (the
// 26B's top-8): a job sweep's matrices go in groups of twice that, gate_up and down.
const expertsPerJob = 8

// streamSet is one format's streaming probe: the layer's matrices and the experts',
// both views of the streams' shared bytes (their values do not matter, only that they
// are not cached), and what each sweep reads.
type streamSet struct {
	format          string
	layer, experts  []*kernels.Matrix
	layerW, expertW float64 // weights a sweep multiplies
	layerB          float64 // bytes a layer sweep reads
	rates, jobs     []float64
	reads           []float64 // the f32 set's: bytes a second
}

// streamData is n bytes that read as plain float32 values whose low halves are zero,
// so that they read as plain bf16 values too (no denormals to slow either), and as
// any codes in the quantized formats: every format's streaming set shares them.
func streamData(n int) []byte {
	b := make([]byte, n)
	const period = 13 // values, then again: copied in doubling runs (a whole period each)
	for i := 0; i < period && 4*i+4 <= n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(i)/period)&^0xffff)
	}
	for done := 4 * period; done < n; done *= 2 {
		copy(b[done:], b[:done])
	}
	return b
}

// streamBytes is the bytes streamData must hold for sets over span: span and a
// layer's largest float32 matrix beyond (the last cut may pass span by that much).
func streamBytes(span int64) int { return int(span) + 4*4096*2816 + 64*len(layerShapes) }

// newStreamSet is format f's matrices over data's first span bytes: shapes in turn,
// again and again, each matrix's weights on a cache line of their own, until they
// hold span; each format's unit scales (matrixOf's) in a buffer of their own, a GGUF
// type's in its blocks (of the shapes its blocks divide).
func newStreamSet(f string, span int64, data []byte) (*streamSet, error) {
	s := &streamSet{format: f}
	cut := func(shapes [][2]int, n, b *float64) ([]*kernels.Matrix, error) {
		var ws []*kernels.Matrix
		layouts := map[[2]int]*kernels.Matrix{} // per shape: the format's layout, its rows at 64 columns
		t, blocks := ggufTypeOf(f)
		for i, d := 0, 0; int64(d) < span; i++ {
			sh := shapes[i%len(shapes)]
			var v kernels.Matrix
			var dl int // the bytes of its codes (a GGUF type's, its blocks: their scales inside)
			if blocks {
				// A GGUF type's matrices are its blocks alone: the shapes whose rows are
				// whole blocks of it, as a file's are.
				if sh[1]%t.BlockSize() != 0 {
					continue
				}
				v = kernels.Matrix{Rows: sh[0], Cols: sh[1], GGUF: t}
				dl = sh[0] * sh[1] / t.BlockSize() * t.BlockBytes()
			} else {
				w := layouts[sh]
				if w == nil {
					var err error
					if w, err = matrixOf(f, sh[0], 64); err != nil {
						return nil, err
					}
					layouts[sh] = w
				}
				v = *w
				v.Cols = sh[1]
				dl = len(w.Data) / 64 * sh[1]
				if w.Spec.Bits != 0 {
					_, qs := w.Spec.Shapes([]int{sh[0], sh[1]})
					v.Scales = unitScales(w.Spec, qs[0]*qs[1]*w.Spec.ScaleDType().Size())
					if w.Spec.HasMin() {
						v.Mins = make([]byte, len(v.Scales))
					}
				}
			}
			if d+dl > len(data) {
				return nil, fmt.Errorf("streaming probe: %d bytes do not hold %s matrices over %d", len(data), f, span)
			}
			v.Data = data[d : d+dl]
			if err := v.Check(); err != nil {
				return nil, err
			}
			ws = append(ws, &v)
			d = (d + dl + 63) &^ 63
			*n += float64(sh[0] * sh[1])
			if b != nil {
				*b += float64(len(v.Data) + len(v.Scales))
			}
		}
		return ws, nil
	}
	var err error
	if s.layer, err = cut(layerShapes, &s.layerW, &s.layerB); err != nil {
		return nil, err
	}
	if s.experts, err = cut(expertShapes, &s.expertW, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// probe times one layer sweep and one experts sweep and keeps their rates: a
// disturbed sweep is one probe of many, which their median leaves out.
func (s *streamSet) probe(x, out []float32) {
	sec := probes.sweep(s.layer, false, x, out)
	s.rates = append(s.rates, s.layerW/sec)
	if s.format == "f32" {
		s.reads = append(s.reads, s.layerB/sec)
	}
	s.jobs = append(s.jobs, s.expertW/probes.sweep(s.experts, true, x, out))
}

// sweep runs ws once: each MulVec in turn, or (job) in groups of an AR step's
// experts, each group one parallel call with whole matrices per worker; it returns
// the seconds.
func sweep(ws []*kernels.Matrix, job bool, x, out []float32) float64 {
	t0 := clock.Now()
	if !job {
		for _, w := range ws {
			_ = w.MulVec(out, x)
		}
		return max(clock.Since(t0).Seconds(), 1e-9)
	}
	for i := 0; i < len(ws); i += 2 * expertsPerJob {
		group := ws[i:min(i+2*expertsPerJob, len(ws))]
		kernels.ParallelRows(len(group), func(lo, hi int) {
			buf := make([]float32, 4096)
			for _, w := range group[lo:hi] {
				_ = w.MulVec(buf, x)
			}
		})
	}
	return max(clock.Since(t0).Seconds(), 1e-9)
}

// streamFormats are the formats the streaming probes time: Darkroom's and GGUF's.
var streamFormats = slices.Concat(formats, ggufFormats)

// probes is what Measure runs (a test's stand-ins): a calibration pass (nil:
// measureOnce), a streaming sweep, and the bytes each streaming set holds.
var probes = struct {
	pass  func(ctx context.Context, st *streams) (*Rates, error)
	sweep func(ws []*kernels.Matrix, job bool, x, out []float32) float64
	span  func() int64
}{nil, sweep, streamSpan}

// streamSpan is the bytes each streaming set holds: three times the last-level
// cache, at least 96 MiB.
func streamSpan() int64 { return max(3*cacheBytes(), 96<<20) }

// streams is every format's streaming probe, kept for the whole calibration so that
// its probes spread across it.
type streams struct {
	sets   []*streamSet
	x, out []float32
}

// newStreams is every format's streaming set over span bytes, all of them views
// of the same bytes.
func newStreams(span int64) (*streams, error) {
	st := &streams{x: fill(4096), out: make([]float32, 4096)}
	data := streamData(streamBytes(span))
	for _, f := range streamFormats {
		s, err := newStreamSet(f, span, data)
		if err != nil {
			return nil, err
		}
		st.sets = append(st.sets, s)
	}
	return st, nil
}

// probe probes every format once.
func (st *streams) probe() {
	if st == nil {
		return
	}
	for _, s := range st.sets {
		s.probe(st.x, st.out)
	}
}

// settle sets r's streaming rates and the memory read rate to their probes'
// medians, with their spreads.
func (st *streams) settle(r *Rates) {
	r.GEMVStream, r.GEMVJob = map[string]float64{}, map[string]float64{}
	if r.Spread == nil {
		r.Spread = map[string]Spread{}
	}
	for _, s := range st.sets {
		r.GEMVStream[s.format], r.GEMVJob[s.format] = median(s.rates), median(s.jobs)
		r.Spread[SpreadGEMVStream+s.format], r.Spread[SpreadGEMVJob+s.format] = spreadOf(s.rates), spreadOf(s.jobs)
		if s.format == "f32" {
			r.MemRead, r.Spread[SpreadMemRead] = median(s.reads), spreadOf(s.reads)
		}
	}
}
