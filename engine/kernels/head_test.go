package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// headCases are shapes that are not multiples of the micro-tiles, of the cache blocks
// or of a head block: a vocabulary of 1000 (not a multiple of 32 or of blockK), a
// depth of 300 (two depth blocks for h·Eᵀ), 257 words (two for p·E), fewer than four
// rows (the dot-product path), and Darkroom Mini's [256, 64]×[64, 4096].
var headCases = []struct{ v, d, rows int }{
	{1000, 67, 37}, {257, 300, 20}, {33, 5, 3}, {70, 16, 1}, {4096, 64, 256},
}

var headFormats = []struct {
	name string
	make func(t testing.TB, rng *rand.Rand, n, k int) testMatrix
}{
	{"f32", ggufMatrix(gguf.F32)}, {"bf16", ggufMatrix(gguf.BF16)}, {"int8", quantMatrix(quant.Int8)},
}

// headInputs are hidden rows of a size that makes the soft-cap matter (logits of a
// few tens against c = 30) and the draws.
func headInputs(rng *rand.Rand, rows, d int) (hidden []float32, draws []float64) {
	hidden = make([]float32, rows*d)
	for i := range hidden {
		hidden[i] = float32(rng.NormFloat64() * 12 / math.Sqrt(float64(d)))
	}
	draws = make([]float64, rows)
	for i := range draws {
		draws[i] = rng.Float64()
	}
	return hidden, draws
}

// unfusedStep is the head as the unfused path computes it: Matrix.MulNT, SoftCap,
// Tempered and Softmax on each row, Matrix.MulNN, then the scale.
func unfusedStep(t *testing.T, e *Matrix, hidden []float32, rows int, s HeadStep) (logits, soft []float32, pos []Position) {
	t.Helper()
	v, d := e.Rows, e.Cols
	logits = make([]float32, rows*v)
	if err := e.MulNT(logits, hidden, rows); err != nil {
		t.Fatal(err)
	}
	probs, buf := make([]float32, rows*v), make([]float32, v)
	pos = make([]Position, rows)
	for i := range rows {
		row := logits[i*v : (i+1)*v]
		SoftCap(row, s.Softcap)
		pos[i] = Tempered(row, buf, s.InvTemperature, s.Draws[i])
		Softmax(probs[i*v:(i+1)*v], row, float32(s.InvTemperature))
	}
	soft = make([]float32, rows*d)
	if err := e.MulNN(soft, probs, rows); err != nil {
		t.Fatal(err)
	}
	for i := range soft {
		soft[i] *= s.SoftScale
	}
	return logits, soft, pos
}

// TestHeadMatchesUnfused: Head.Step and Head.Logits give bit for bit what the unfused
// products and row functions give, with E packed and as stored, in float32, bf16 and
// int8, with every micro-kernel this CPU has, on shapes with edge tiles everywhere;
// soft and pos start as garbage and must be overwritten.
func TestHeadMatchesUnfused(t *testing.T) {
	defer SetIntProducts(SetIntProducts(false)) // the unfused products in float32, as the head's
	saved := gemmKernel
	defer func() { gemmKernel = saved }()
	for _, kern := range gemmKernels() {
		gemmKernel = kern
		for _, f := range headFormats {
			for _, c := range headCases {
				for _, packed := range []bool{true, false} {
					name := fmt.Sprintf("%s/%s/v%d-d%d-rows%d/packed=%v", kern.name, f.name, c.v, c.d, c.rows, packed)
					t.Run(name, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(uint64(c.v), uint64(c.rows)))
						m := f.make(t, rng, c.v, c.d)
						h, err := NewHead(*m.w)
						if err != nil {
							t.Fatal(err)
						}
						if !h.Packed() {
							t.Fatal("a small embedding was not packed")
						}
						if !packed {
							h.nt, h.nn = nil, nil
						}
						hidden, draws := headInputs(rng, c.rows, c.d)
						s := HeadStep{Softcap: 30, InvTemperature: 1 / 0.7, Draws: draws, SoftScale: 8}
						wantLogits, wantSoft, wantPos := unfusedStep(t, m.w, hidden, c.rows, s)
						for range 2 { // the second call reuses the scratch
							soft, pos := slices.Repeat([]float32{float32(math.NaN())}, c.rows*c.d), make([]Position, c.rows)
							for i := range pos {
								pos[i] = Position{-1, -1, -1}
							}
							if err := h.Step(soft, pos, hidden, c.rows, s); err != nil {
								t.Fatal(err)
							}
							if !slices.Equal(pos, wantPos) {
								t.Fatalf("positions differ:\nfused   %v\nunfused %v", pos[:min(4, c.rows)], wantPos[:min(4, c.rows)])
							}
							if i := firstDiff(soft, wantSoft); i >= 0 {
								t.Fatalf("soft[%d] = %g, unfused %g", i, soft[i], wantSoft[i])
							}
						}
						logits := slices.Repeat([]float32{float32(math.NaN())}, c.rows*c.v)
						if err := h.Logits(logits, hidden, c.rows, s.Softcap); err != nil {
							t.Fatal(err)
						}
						if i := firstDiff(logits, wantLogits); i >= 0 {
							t.Fatalf("logits[%d] = %g, unfused %g", i, logits[i], wantLogits[i])
						}
					})
				}
			}
		}
	}
}

// firstDiff is the first index where a and b differ bit for bit, or −1.
func firstDiff(a, b []float32) int {
	for i := range b {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestHeadVsFloat64: the fused step against a float64 reference of the same formulas
// over the dequantized embedding — logits c·tanh(h·Eᵀ/c), the tempered softmax, its
// entropy, the soft embedding p·E·scale — and each draw inside the interval of the
// reference CDF that its uniform falls in (within rounding).
func TestHeadVsFloat64(t *testing.T) {
	const softcap, temp, sc = 30, 0.7, 8
	for _, f := range headFormats {
		for _, c := range headCases {
			t.Run(fmt.Sprintf("%s/v%d-d%d-rows%d", f.name, c.v, c.d, c.rows), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(c.d), 7))
				m := f.make(t, rng, c.v, c.d)
				h, err := NewHead(*m.w)
				if err != nil {
					t.Fatal(err)
				}
				hidden, draws := headInputs(rng, c.rows, c.d)
				soft, pos := make([]float32, c.rows*c.d), make([]Position, c.rows)
				if err := h.Step(soft, pos, hidden, c.rows, HeadStep{Softcap: softcap, InvTemperature: 1 / temp, Draws: draws, SoftScale: sc}); err != nil {
					t.Fatal(err)
				}
				logits := make([]float32, c.rows*c.v)
				if err := h.Logits(logits, hidden, c.rows, softcap); err != nil {
					t.Fatal(err)
				}
				e := m.want
				for i := range c.rows {
					z := make([]float64, c.v)
					for j := range z {
						var dot float64
						for p := range c.d {
							dot += float64(hidden[i*c.d+p]) * float64(e[j*c.d+p])
						}
						z[j] = softcap * math.Tanh(dot/softcap)
						if d := math.Abs(float64(logits[i*c.v+j]) - z[j]); d > 1e-5*(1+math.Abs(z[j])) {
							t.Fatalf("row %d: logit %d = %g, want %g", i, j, logits[i*c.v+j], z[j])
						}
					}
					mx := slices.Max(z)
					if z[pos[i].Argmax] < mx-1e-5*(1+math.Abs(mx)) {
						t.Fatalf("row %d: argmax %d has %g, the max is %g", i, pos[i].Argmax, z[pos[i].Argmax], mx)
					}
					p := make([]float64, c.v)
					var s float64
					for j := range p {
						p[j] = math.Exp((z[j] - mx) / temp)
						s += p[j]
					}
					var entropy float64
					for j := range p {
						p[j] /= s
						if p[j] > 0 {
							entropy -= p[j] * math.Log(p[j])
						}
					}
					if d := math.Abs(float64(pos[i].Entropy) - entropy); d > 1e-4*(1+entropy) {
						t.Fatalf("row %d: entropy %g, want %g", i, pos[i].Entropy, entropy)
					}
					var below float64
					for j := range pos[i].Sampled {
						below += p[j]
					}
					if u := draws[i]; u < below-1e-5 || u > below+p[pos[i].Sampled]+1e-5 {
						t.Fatalf("row %d: draw %g gave id %d, whose CDF interval is [%g, %g]", i, u, pos[i].Sampled, below, below+p[pos[i].Sampled])
					}
					// The exponentials' float32 arguments (|z−m|/T up to 87) carry a relative
					// error of about |z−m|/T·2⁻²⁴ into each term: 3e-5 of the terms' sum.
					for q := range c.d {
						var want, abs float64
						for j := range p {
							want += p[j] * float64(e[j*c.d+q])
							abs += p[j] * math.Abs(float64(e[j*c.d+q]))
						}
						want, abs = want*sc, abs*sc
						if d := math.Abs(float64(soft[i*c.d+q]) - want); d > 3e-5*abs+1e-7 {
							t.Fatalf("row %d: soft[%d] = %g, want %g", i, q, soft[i*c.d+q], want)
						}
					}
				}
			})
		}
	}
}

// TestHeadRowPasses: the fused head's one-pass soft-cap and argmax, and its
// exponentials, against SoftCap then ArgMax and ExpShift (values and sum bit for bit),
// with AVX-512 and without, on lengths around the 8- and 16-lane steps, with ties,
// zeros of both signs, infinities and NaNs (at 0 and elsewhere).
func TestHeadRowPasses(t *testing.T) {
	saved := useAVX512
	defer func() { useAVX512 = saved }()
	rng := rand.New(rand.NewPCG(4, 4))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, avx512 := range []bool{saved, false} {
		useAVX512 = avx512
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 47, 100, 4096} {
			for trial := range 8 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * 25)
				}
				switch trial {
				case 1:
					for i := range x {
						x[i] = float32(rng.IntN(5) - 2) // ties, and zeros
					}
					x[rng.IntN(n)] = float32(math.Copysign(0, -1))
				case 2:
					x[rng.IntN(n)], x[rng.IntN(n)] = inf, -inf
				case 3:
					x[rng.IntN(n)] = nan
				case 4:
					x[0] = nan
				case 5:
					x[n-1] = 1e4
				}
				for _, c := range []float32{30, 0} {
					want, got := slices.Clone(x), slices.Clone(x)
					SoftCap(want, c)
					am := softCapMax(got, c)
					if i := firstDiff(got, want); i >= 0 && !(want[i] != want[i] && got[i] != got[i]) {
						t.Fatalf("avx512=%v n=%d trial %d c=%g: capped[%d] = %g, SoftCap %g", avx512, n, trial, c, i, got[i], want[i])
					}
					if wantAm := ArgMax(want); am != wantAm {
						t.Fatalf("avx512=%v n=%d trial %d c=%g: argmax %d, ArgMax %d", avx512, n, trial, c, am, wantAm)
					}
				}
				if trial >= 2 && trial <= 4 {
					continue // ExpShift of ±∞ and NaN: checked by its own tests
				}
				shift := float32(slices.Max(x))
				wantE, gotE := make([]float32, n), make([]float32, n)
				wantS, gotS := ExpShift(wantE, x, shift, 1/0.7), expShift(gotE, x, shift, 1/0.7)
				if i := firstDiff(gotE, wantE); i >= 0 || math.Float32bits(gotS) != math.Float32bits(wantS) {
					t.Fatalf("avx512=%v n=%d trial %d: exponentials differ at %d, sums %g and %g", avx512, n, trial, i, gotS, wantS)
				}
			}
		}
	}
}

// TestInverseCDF: the skipping search gives the running-sum scan's answer — on rows
// of every length around its blocks, with zeros, a huge dynamic range and all-zero
// rows, for uniform targets, for targets exactly at a running sum and a rounding
// either side of it (the ties the skip must send back to the scan), and past the
// total.
func TestInverseCDF(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{1, 3, 63, 64, 65, 128, 200, 4096} {
		for trial := range 6 {
			e := make([]float32, n)
			for i := range e {
				switch trial {
				case 1: // many zeros
					if rng.IntN(3) == 0 {
						e[i] = float32(rng.Float64())
					}
				case 2: // a huge dynamic range
					e[i] = float32(math.Exp(-rng.Float64() * 80))
				case 3: // nothing
				default:
					e[i] = float32(rng.Float64())
				}
			}
			var total float64
			sums := make([]float64, n)
			for i, v := range e {
				total += float64(v)
				sums[i] = total
			}
			targets := []float64{0, total, total * 2, math.Nextafter(total, 0)}
			for range 50 {
				targets = append(targets, rng.Float64()*total)
			}
			for range 20 {
				a := sums[rng.IntN(n)]
				targets = append(targets, a, math.Nextafter(a, 0), math.Nextafter(a, math.Inf(1)))
			}
			for _, target := range targets {
				if got, want := inverseCDF(e, target, total), inverseCDFScan(e, target); got != want {
					t.Fatalf("n=%d trial %d target %v: %d, the scan %d", n, trial, target, got, want)
				}
			}
		}
	}
}

// TestHeadRefusals: short slices are errors, not panics, and a damaged embedding is
// refused by NewHead with the matrix named.
func TestHeadRefusals(t *testing.T) {
	m := ggufMatrix(gguf.F32)(t, rand.New(rand.NewPCG(1, 1)), 40, 8)
	h, err := NewHead(*m.w)
	if err != nil {
		t.Fatal(err)
	}
	s := HeadStep{Softcap: 30, InvTemperature: 1, Draws: make([]float64, 4), SoftScale: 1}
	if err := h.Step(make([]float32, 4*8), make([]Position, 4), make([]float32, 3*8), 4, s); err == nil {
		t.Error("Step with 3 hidden rows for 4 accepted")
	}
	if err := h.Step(make([]float32, 4*8), make([]Position, 3), make([]float32, 4*8), 4, s); err == nil {
		t.Error("Step with 3 positions for 4 rows accepted")
	}
	s.Draws = s.Draws[:2]
	if err := h.Step(make([]float32, 4*8), make([]Position, 4), make([]float32, 4*8), 4, s); err == nil {
		t.Error("Step with 2 draws for 4 rows accepted")
	}
	if err := h.Logits(make([]float32, 3*40), make([]float32, 4*8), 4, 30); err == nil {
		t.Error("Logits into 3 rows for 4 accepted")
	}
	bad := *m.w
	bad.Data = bad.Data[:len(bad.Data)-4]
	if _, err := NewHead(bad); err == nil {
		t.Error("a truncated embedding accepted")
	}
}

// BenchmarkHead: Darkroom Mini's step head ([256, 64] against a 4096-word embedding),
// fused against the unfused products and row functions, and the raw product h·Eᵀ
// alone (the head's arithmetic is two of these).
func BenchmarkHead(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	const v, d, rows = 4096, 64, 256
	m := ggufMatrix(gguf.F32)(b, rng, v, d)
	h, err := NewHead(*m.w)
	if err != nil {
		b.Fatal(err)
	}
	hidden, draws := headInputs(rng, rows, d)
	s := HeadStep{Softcap: 30, InvTemperature: 1 / 0.7, Draws: draws, SoftScale: 8}
	soft, pos := make([]float32, rows*d), make([]Position, rows)
	b.Run("fused", func(b *testing.B) {
		for range b.N {
			if err := h.Step(soft, pos, hidden, rows, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("matmul", func(b *testing.B) {
		logits := make([]float32, rows*v)
		for range b.N {
			_ = m.w.MulNT(logits, hidden, rows)
		}
	})
	b.Run("unfused", func(b *testing.B) {
		logits, probs := make([]float32, rows*v), make([]float32, rows*v)
		for range b.N {
			_ = m.w.MulNT(logits, hidden, rows)
			ParallelRows(rows, func(lo, hi int) {
				buf := make([]float32, v)
				for i := lo; i < hi; i++ {
					row := logits[i*v : (i+1)*v]
					SoftCap(row, s.Softcap)
					pos[i] = Tempered(row, buf, s.InvTemperature, draws[i])
					Softmax(probs[i*v:(i+1)*v], row, float32(s.InvTemperature))
				}
			})
			_ = m.w.MulNN(soft, probs, rows)
		}
	})
}
