package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// withQPath runs f with the integer products on path p (nil: the float path), its
// helpers in the forms a CPU whose best path p is takes (AVX2's for the ymm kernels on
// an AVX-512 machine).
func withQPath(t testing.TB, p *qPath, f func()) {
	t.Helper()
	was, helpers := qActive, qHelpers2
	defer func() { qActive, qHelpers2 = was, helpers }()
	qActive = nil
	if p != nil {
		p.use()
	}
	f()
}

// testPaths is every integer path this CPU runs, and the Go micro-kernel.
func testPaths() []*qPath { return append(qPaths(), qGo) }

// helperForms is the helpers' forms the tests compare with their Go ones: this CPU's
// and, where those are AVX-512's, AVX2's.
func helperForms() []bool {
	if qHelpers2 {
		return []bool{true}
	}
	return []bool{false, true}
}

// withHelpers runs f with the helpers in their AVX2 (or Go) forms or not.
func withHelpers(form bool, f func()) {
	defer func(h bool) { qHelpers2 = h }(qHelpers2)
	qHelpers2 = form
	f()
}

// TestQuantizeRow32: the vector quantizers give quantizeRowGo's codes and pairs bit
// for bit, in groups of 32 (quantizeRow32, scaled or not) and of 16 (quantizeRow16),
// on groups that are ordinary, all zero, below 2⁻¹²⁰, at the rounding ties, and
// holding an infinity or a NaN.
func TestQuantizeRow32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const groups = 9
	a := randWeights(rng, groups*qGroup)
	clear(a[qGroup : 2*qGroup])
	for i := range qGroup {
		a[2*qGroup+i] = float32(math.Ldexp(rng.Float64(), -122))
		a[3*qGroup+i] = float32(i-16) / 2 // amax 8: codes at 127/16 steps, some ties
	}
	a[4*qGroup+3] = float32(math.Inf(-1))
	a[5*qGroup+7] = float32(math.NaN())
	a[6*qGroup] = 1e30
	a[7*qGroup+31] = -3e-30
	scale := randWeights(rng, len(a))
	for _, form := range helperForms() {
		for _, c := range []struct {
			gs int
			sc []float32
		}{{qGroup, nil}, {qGroup, scale}, {16, nil}} {
			got, want := make([]int8, len(a)), make([]int8, len(a))
			gp, wp := make([]float32, 2*len(a)/c.gs), make([]float32, 2*len(a)/c.gs)
			withHelpers(form, func() {
				if c.gs == 16 {
					quantizeRow16(got, gp, a)
				} else {
					quantizeRow32(got, gp, a, c.sc)
				}
			})
			quantizeRowGo(want, wp, a, c.sc, c.gs)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("avx2 %v, groups of %d, scaled %v: code %d = %d, want %d", form, c.gs, c.sc != nil, i, got[i], want[i])
				}
			}
			for i := range gp {
				if math.Float32bits(gp[i]) != math.Float32bits(wp[i]) {
					t.Fatalf("avx2 %v, groups of %d, scaled %v: pair value %d = %g, want %g", form, c.gs, c.sc != nil, i, gp[i], wp[i])
				}
			}
		}
	}
	// A last group that is zero (or not finite) writes its codes, no further: rows of
	// groups of 16 end on such groups (a[32:64] is zero, a[4·32+3] −∞), guarded.
	for _, form := range helperForms() {
		for _, end := range []int{48, 64, 4*qGroup + 16} {
			for _, gs := range []int{16, qGroup} {
				if end%gs != 0 {
					continue
				}
				buf := make([]int8, end+qGroup)
				for i := range buf {
					buf[i] = 0x55
				}
				pairs := make([]float32, 2*end/gs)
				withHelpers(form, func() {
					if gs == 16 {
						quantizeRow16(buf[:end], pairs, a[:end])
					} else {
						quantizeRow32(buf[:end], pairs, a[:end], nil)
					}
				})
				for i := end; i < len(buf); i++ {
					if buf[i] != 0x55 {
						t.Fatalf("avx2 %v, groups of %d, %d values: wrote code byte %d past the row", form, gs, end, i)
					}
				}
			}
		}
	}
	want, wp := make([]int8, len(a)), make([]float32, 2*groups)
	quantizeRow32Go(want, wp, a, nil)
	if !math.IsNaN(float64(wp[8])) || !math.IsNaN(float64(wp[10])) || wp[2] != 0 || wp[4] != 0 {
		t.Fatalf("special groups' scales %v", wp)
	}
	// The codes times the scale give a back within half a step.
	for g := range groups {
		s := wp[2*g]
		if s == 0 || math.IsNaN(float64(s)) {
			continue
		}
		for i := range qGroup {
			p := g*qGroup + i
			if d := math.Abs(float64(a[p]) - float64(s)*float64(want[p])); d > 0.5001*float64(s) {
				t.Fatalf("a[%d] = %g, code %d × %g off by %g", p, a[p], want[p], s, d)
			}
		}
	}
}

// TestUnpackNibbles, TestTransposeWords and TestInterleave4: the vector helpers
// against their Go forms (unpackNibbles through both its tables).
func TestUnpackNibbles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, form := range helperForms() {
		for _, n := range []int{1, 15, 16, 31, 32, 33, 48, 64, 128, 200} {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			got, want := make([]byte, 2*n), make([]byte, 2*n)
			for _, lut := range []*[16]byte{&nibbleCodes, &nvfp4Codes} {
				withHelpers(form, func() { unpackNibbles(got, src, lut) })
				unpackNibblesGo(want, src, lut)
				if string(got) != string(want) {
					t.Fatalf("avx2 %v, n=%d, table %v: %v, want %v", form, n, lut, got, want)
				}
			}
			unpackNibblesGo(want, src, &nibbleCodes)
			for i, b := range src {
				if want[2*i] != b&15 || want[2*i+1] != b>>4 {
					t.Fatalf("byte %#x: nibbles %d and %d", b, want[2*i], want[2*i+1])
				}
			}
			got, want = got[:n], want[:n]
			withHelpers(form, func() { xor80(got, src) })
			for i, b := range src {
				want[i] = byte(int8(b)) + 128
			}
			if string(got) != string(want) {
				t.Fatalf("xor80 avx2 %v, n=%d: %v, want %v", form, n, got, want)
			}
		}
	}
}

func TestUnpackQ4K(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	src := make([]byte, 3*144)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	got, want := make([]byte, 3*256), make([]byte, 3*256)
	unpackQ4K(got, src, 3)
	unpackQ4KGo(want, src, 3)
	if string(got) != string(want) {
		t.Fatalf("%v\nwant %v", got, want)
	}
	if want[256+64+32+5] != src[144+16+32+5]>>4 || want[2*256+3] != src[2*144+16+3]&15 {
		t.Fatal("unpackQ4KGo's order moved")
	}
}

// TestUnpackQ3KQ2K: the vector unpacking of Q3_K's and Q2_K's codes (AVX2 where
// the CPU has it) gives the Go one's bytes, on random blocks; and the Go one reads
// each code's bits where gguf's decoders do (input 128 + 64 + 5 of a block: qs's
// bits 4–5, and for Q3_K hmask's bit 6).
func TestUnpackQ3KQ2K(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		name        string
		bb          int
		fast, plain func(dst, src []byte, nb int)
	}{{"Q3_K", 110, unpackQ3K, unpackQ3KGo}, {"Q2_K", 84, unpackQ2K, unpackQ2KGo}} {
		src := make([]byte, 3*c.bb)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		got, want := make([]byte, 3*256), make([]byte, 3*256)
		c.fast(got, src, 3)
		c.plain(want, src, 3)
		if string(got) != string(want) {
			t.Fatalf("%s: %v\nwant %v", c.name, got, want)
		}
		blk, code := src[c.bb:], want[256+128+64+5]
		wantCode := blk[16+32+5] >> 4 & 3 // Q2_K: qs from byte 16
		if c.name == "Q3_K" {
			wantCode = blk[32+32+5]>>4&3 | (blk[5]>>6&1)<<2
		}
		if code != wantCode {
			t.Fatalf("%s: input 197's code %d, want %d", c.name, code, wantCode)
		}
	}
}

func TestInterleave4(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var rows [4][]byte
	for i := range rows {
		rows[i] = make([]byte, 64)
		for j := range rows[i] {
			rows[i][j] = byte(rng.Uint32())
		}
	}
	const stride = 300
	got, want := make([]byte, stride+128), make([]byte, stride+128)
	interleave4(got, stride, &rows, 64)
	interleave4Go(want, stride, &rows, 64)
	if string(got) != string(want) {
		t.Fatalf("%v\nwant %v", got, want)
	}
	if want[0] != rows[0][0]^0x80 || want[3] != rows[3][0]^0x80 || want[64+4] != rows[0][17]^0x80 || want[stride+1] != rows[1][32]^0x80 {
		t.Fatal("interleave4Go's layout moved")
	}
}

func TestTransposeWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, form := range helperForms() {
		for _, kc := range []int{64, 192, 256} {
			src := make([]byte, 16*kc)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			got, want := make([]byte, 32*kc), make([]byte, 32*kc)
			withHelpers(form, func() { transposeWords(got, src, kc) })
			transposeWordsGo(want, src, kc)
			for p := range kc / 4 {
				if g, w := got[128*p:128*p+64], want[128*p:128*p+64]; string(g) != string(w) {
					t.Fatalf("avx2 %v, kc=%d, word column %d differs", form, kc, p)
				}
			}
		}
	}
}

// TestQKernel: each vector micro-kernel against the Go one on random codes and
// scales, storing and adding, with strides wider than the tile, in groups of 32 and
// of 16 — the AVX2 kernel on codes up to 15 (up to 24 in groups of 16: NVFP4's), and
// at its 16-bit sums' limit (every code 15 or 24, every activation ±127) — and the
// vector kernels bit for bit alike on the codes they all take.
func TestQKernel(t *testing.T) {
	paths := qPaths()
	if len(paths) == 0 {
		t.Skip("this CPU has no vector integer kernel")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const inputs, lda, ldc = 5 * qGroup, 7 * qGroup, 40
	lds := 8 * 19
	pairs := randWeights(rng, qMR*lds/4)
	bs := randWeights(rng, 2*qNR*inputs/16)
	a := make([]int8, qMR*lda)
	b := make([]byte, 32*inputs)
	for _, gs := range []int{qGroup, 16} {
		groups := inputs / gs
		narrow := map[int]int{qGroup: 15, 16: 24}[gs] // the largest code every path takes
		run := func(kern qKernelFunc, acc bool, c0 []float32) []float32 {
			c := append([]float32(nil), c0...)
			kern(groups, &a[0], lda, &pairs[0], lds, &b[0], &bs[0], &c[0], ldc, acc)
			return c
		}
		for _, codes := range []string{"random", "narrow", "limit"} {
			for i := range a {
				a[i] = int8(rng.IntN(255) - 127)
				if codes == "limit" {
					a[i] = int8(127 * (1 - 2*(i/gs%2))) // a group all +127, the next all −127
				}
			}
			for i := range b {
				b[i] = byte(rng.Uint32())
				switch codes {
				case "narrow":
					b[i] %= byte(narrow + 1)
				case "limit":
					b[i] = byte(narrow)
				}
			}
			for _, acc := range []bool{false, true} {
				c0 := randWeights(rng, qMR*ldc)
				want := run(qGo.kernel(gs), acc, c0)
				var first []float32
				for _, p := range paths {
					if codes == "random" && !p.wide {
						continue
					}
					got := run(p.kernel(gs), acc, c0)
					for r := range qMR {
						for j := range ldc {
							g, w := got[r*ldc+j], want[r*ldc+j]
							if j >= qNR {
								if g != c0[r*ldc+j] {
									t.Fatalf("%s, groups of %d, %s codes, accumulate=%v: wrote c[%d, %d] outside the tile", p.name, gs, codes, acc, r, j)
								}
								continue
							}
							if math.Abs(float64(g-w)) > 1e-5*math.Abs(float64(w))+1e-3 {
								t.Fatalf("%s, groups of %d, %s codes, accumulate=%v: c[%d, %d] = %g, want %g", p.name, gs, codes, acc, r, j, g, w)
							}
							if first != nil && math.Float32bits(g) != math.Float32bits(first[r*ldc+j]) {
								t.Fatalf("%s, groups of %d, %s codes: c[%d, %d] = %g, %s's %g", p.name, gs, codes, r, j, g, paths[0].name, first[r*ldc+j])
							}
						}
					}
					if first == nil {
						first = got
					}
				}
			}
		}
	}
}

// TestQPathVerified: every path this CPU runs passes the start-up check, and a kernel
// one code off, in groups of 32 or of 16, fails it.
func TestQPathVerified(t *testing.T) {
	for _, p := range testPaths() {
		if !p.verified() {
			t.Errorf("%s fails its check", p.name)
		}
	}
	off := func(kern qKernelFunc) qKernelFunc {
		return func(groups int, a *int8, lda int, sa *float32, lds int, b *uint8, bs *float32, c *float32, ldc int, accumulate bool) {
			codes := unsafe.Slice(b, 1000+1)
			saved := codes[1000]
			codes[1000]++
			kern(groups, a, lda, sa, lds, b, bs, c, ldc, accumulate)
			codes[1000] = saved
		}
	}
	for _, p := range []*qPath{
		{name: "off", wide: true, kern: off(qKernelGo), kern16: qKernelGo16},
		{name: "off16", wide: true, kern: qKernelGo, kern16: off(qKernelGo16)},
	} {
		if p.verified() {
			t.Errorf("%s: a kernel one code off passes the check", p.name)
		}
	}
}

// TestMulNTInt: every format the integer product takes (Darkroom's int8 and int4,
// GGUF's Q4_K), on row counts, column counts and depths off the tile and the blocks,
// against (1) the float64 product of the quantized activations with the decoded
// weights — the integer path's own arithmetic, to float32 rounding — and (2) the
// float32 path on the activations as given, within the activations' rounding; a
// RowRange's product is those rows' of the whole, bit for bit. Each integer path this
// CPU runs (its AVX2 one with the AVX2 helpers) and the Go micro-kernel run the same
// shapes through the same driver.
func TestMulNTInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, p := range testPaths() {
		for _, f := range formats {
			if tm := f.make(t, rng, 1, 256); !tm.w.intCodes(p) {
				continue
			}
			for _, c := range [][3]int{{4, 1, 32}, {6, 32, 64}, {5, 20, 80}, {7, 33, 96}, {13, 70, 288}, {40, 257, 768}, {17, 64, 2816}} {
				m, n, k := c[0], c[1], c[2]
				k = max(f.block, k/f.block*f.block)
				t.Run(fmt.Sprintf("%s/%s/%dx%dx%d", p.name, f.name, m, n, k), func(t *testing.T) {
					tm := f.make(t, rng, n, k)
					if !tm.w.intCodes(p) {
						t.Skipf("%d inputs a row are no whole groups of %d", k, tm.w.intGroup(p))
					}
					a := randWeights(rng, m*k)
					for i := range k { // a row with an outlier, as model activations have
						a[k+i] *= 0.01
					}
					a[k+5] = 40
					got := randWeights(rng, m*n)
					withQPath(t, p, func() {
						if err := tm.w.MulNT(got, a, m); err != nil {
							t.Fatal(err)
						}
						if n <= 2 {
							return
						}
						sub, err := tm.w.RowRange(1, n-1)
						if err != nil {
							t.Fatal(err)
						}
						part := make([]float32, m*(n-2))
						if err := sub.MulNT(part, a, m); err != nil {
							t.Fatal(err)
						}
						for i := range m {
							for j := range n - 2 {
								if part[i*(n-2)+j] != got[i*n+j+1] {
									t.Fatalf("rows [1, %d): out[%d, %d] = %g, whole %g", n-1, i, j, part[i*(n-2)+j], got[i*n+j+1])
								}
							}
						}
					})
					aq := quantized(a, nil, m, k, tm.w.intGroup(p))
					checkIntProduct(t, got, aq, tm.want, m, n, k)
					var want []float32
					withQPath(t, nil, func() {
						want = make([]float32, m*n)
						if err := tm.w.MulNT(want, a, m); err != nil {
							t.Fatal(err)
						}
					})
					var d2, w2 float64
					for i := range want {
						d := float64(got[i] - want[i])
						d2 += d * d
						w2 += float64(want[i]) * float64(want[i])
					}
					// About 0.5% for normal activations: a statistic over many outputs (a
					// handful can land anywhere near it).
					if e := math.Sqrt(d2 / w2); m*n >= 64 && e > 1e-2 {
						t.Fatalf("relative error %.2g against the float path", e)
					}
				})
			}
		}
	}
}

// quantized is a [m, k] (each column times scale's, where not nil) as the integer
// product reads it in groups of gs: each row's codes times their group's scale,
// divided by scale.
func quantized(a, scale []float32, m, k, gs int) []float32 {
	kp := ceilDiv(k, gs) * gs // rows padded with zeros to whole groups
	ap, sp := make([]float32, m*kp), []float32(nil)
	for i := range m {
		copy(ap[i*kp:], a[i*k:(i+1)*k])
	}
	if scale != nil {
		sp = make([]float32, kp)
		copy(sp, scale)
	}
	qa, pairs := make([]int8, m*kp), make([]float32, 2*m*kp/gs)
	for i := range m {
		quantizeRowGo(qa[i*kp:(i+1)*kp], pairs[2*i*kp/gs:2*(i+1)*kp/gs], ap[i*kp:(i+1)*kp], sp, gs)
	}
	aq := make([]float32, m*k)
	for i := range m {
		for p := range k {
			v := float64(qa[i*kp+p]) * float64(pairs[2*((i*kp+p)/gs)])
			if scale != nil {
				v /= float64(scale[p])
			}
			aq[i*k+p] = float32(v)
		}
	}
	return aq
}

// TestMulNNInt: MulNN on int8 weights with a scale per row (the soft embedding's
// product) in integer arithmetic against the float64 product of the quantized
// activations with the decoded weights, and within the activations' rounding of the
// float path, on shapes off the blocks; probability rows (most values tiny) included;
// on each path that takes int8 codes.
func TestMulNNInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, p := range testPaths() {
		if p.wide {
			testMulNNInt(t, rng, p)
		}
	}
}

func testMulNNInt(t *testing.T, rng *rand.Rand, p *qPath) {
	for _, name := range []string{"int8", "int8-bf16"} {
		for _, c := range [][3]int{{4, 30, 32}, {7, 97, 64}, {13, 300, 96}, {40, 4096, 192}} {
			m, rows, cols := c[0], c[1], c[2]
			t.Run(fmt.Sprintf("%s/%s/%dx%dx%d", p.name, name, m, rows, cols), func(t *testing.T) {
				tm := formatNamed(name)(t, rng, rows, cols)
				if !tm.w.intCodesNN(p) {
					t.Fatal("not taken by the integer MulNN")
				}
				a := randWeights(rng, m*rows)
				for i := range rows { // row 1: a softmax over the rows
					a[rows+i] = float32(math.Exp(float64(4 * a[rows+i])))
				}
				got := randWeights(rng, m*cols)
				withQPath(t, p, func() {
					if err := tm.w.MulNN(got, a, m); err != nil {
						t.Fatal(err)
					}
				})
				scale := make([]float32, rows)
				tm.w.scales(scale, tm.w.Scales, 0)
				// The weights transposed: the product a·w as checkIntProduct's a·wᵀ.
				wt := make([]float32, cols*rows)
				for i := range rows {
					for j := range cols {
						wt[j*rows+i] = tm.want[i*cols+j]
					}
				}
				checkIntProduct(t, got, quantized(a, scale, m, rows, qGroup), wt, m, cols, rows)
				var want []float32
				withQPath(t, nil, func() {
					want = make([]float32, m*cols)
					if err := tm.w.MulNN(want, a, m); err != nil {
						t.Fatal(err)
					}
				})
				// Row 1's values span e⁻⁴ to e⁴ and more, so its groups' small values are
				// coarse steps of their largest: a few percent where normal rows see 0.5
				// (up to 1.5 over a contraction of one group, whose few roundings can
				// happen to align).
				normal := map[bool]float64{false: 1e-2, true: 2e-2}[rows <= qGroup]
				for i := range m {
					var d2, w2 float64
					for j := range cols {
						d := float64(got[i*cols+j] - want[i*cols+j])
						d2 += d * d
						w2 += float64(want[i*cols+j]) * float64(want[i*cols+j])
					}
					if e, tol := math.Sqrt(d2/w2), map[bool]float64{false: normal, true: 3e-2}[i == 1]; e > tol {
						t.Fatalf("row %d: relative error %.2g against the float path", i, e)
					}
				}
			})
		}
	}
}

// checkIntProduct is checkProduct for the integer product: each group's sum is
// exact, but it is scaled as sw·Σ qa·u + mw·Σ qa, two float32 terms that cancel where
// a code sits at the format's offset (8 for int4), so the tolerance is relative to
// Σ|a|·max|w| (the size of those terms) instead of Σ|a·w|.
func checkIntProduct(t *testing.T, out, a, want []float32, m, n, k int) {
	t.Helper()
	for i := range m {
		for j := range n {
			var s, abs, wmax float64
			for p := range k {
				s += float64(a[i*k+p]) * float64(want[j*k+p])
				abs += math.Abs(float64(a[i*k+p]))
				wmax = max(wmax, math.Abs(float64(want[j*k+p])))
			}
			if got := float64(out[i*n+j]); math.Abs(got-s) > 2e-6*abs*wmax+1e-30 || math.IsNaN(got) {
				t.Fatalf("out[%d, %d] = %g, want %g (Σ|a|·max|w| %g)", i, j, got, s, abs*wmax)
			}
		}
	}
}

// TestMulNTIntLargestCodes: every 5-bit code at its largest (31: Q5_0's, Q5_1's and
// Q5_K's) against activations that round to 127 gives the exact product on every path
// that takes the format: on AVX2, whose 16-bit words would hold 16 such products of a
// group of 32 as 62,992, the groups of 16 (intGroup) keep each word at 31,496.
func TestMulNTIntLargestCodes(t *testing.T) {
	const n, m, k = 3, dotRows, 512
	for _, typ := range []gguf.Type{gguf.Q5_0, gguf.Q5_1, gguf.Q5_K} {
		x := make([]float32, n*k)
		for i := range x {
			// Each group of 32 all codes 31 but its first, 0: Q5_1's and Q5_K's
			// minimum 0 and largest 1; Q5_0's d = −1.5/16 puts 1.5 at code 0 and
			// −1.4 at 31.
			x[i] = 1
			if typ == gguf.Q5_0 {
				x[i] = -1.4
			}
			if i%32 == 0 {
				x[i] = 0
				if typ == gguf.Q5_0 {
					x[i] = 1.5
				}
			}
		}
		data, err := gguf.Quantize(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		w := &Matrix{Rows: n, Cols: k, GGUF: typ, Data: data}
		codes, sc, mn := make([]byte, k), make([]float32, k/16), make([]float32, k/16)
		w.rowCodes(codes, sc, mn, 0)
		if c := bytes.Count(codes, []byte{31}); c != k/32*31 {
			t.Fatalf("%s: %d codes of 31 in a row of %d, want 31 of each 32", typ, c, k)
		}
		want := make([]float32, n*k)
		if err := gguf.Dequantize(typ, data, want); err != nil {
			t.Fatal(err)
		}
		a := make([]float32, m*k)
		for i := range a {
			a[i] = 3 // rounds to 127 in every group
		}
		for _, p := range testPaths() {
			if !w.intCodes(p) {
				continue
			}
			got := make([]float32, m*n)
			withQPath(t, p, func() {
				if err := w.MulNT(got, a, m); err != nil {
					t.Fatal(err)
				}
			})
			for j := range n {
				var ref float64
				for q := range k {
					ref += 3 * float64(want[j*k+q])
				}
				if d := math.Abs(float64(got[j]) - ref); d > 1e-5*math.Abs(ref) {
					t.Errorf("%s on %s: out[0, %d] = %g, want %g", typ, p.name, j, got[j], ref)
				}
			}
		}
	}
}

// TestMulNTIntNonFinite: an infinity or a NaN in a row of a makes that row's products
// NaN, as the float path's are, and leaves the other rows alone, in groups of 32
// (int4) and of 16 (NVFP4).
func TestMulNTIntNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const m, n, k = 8, 40, 96
	a := randWeights(rng, m*k)
	a[2*k+40] = float32(math.Inf(1))
	a[5*k+3] = float32(math.NaN())
	for _, format := range []string{"int4", "nvfp4"} {
		tm := formatNamed(format)(t, rng, n, k)
		for _, p := range testPaths() {
			out := make([]float32, m*n)
			withQPath(t, p, func() {
				if err := tm.w.MulNT(out, a, m); err != nil {
					t.Fatal(err)
				}
			})
			for i := range m {
				for j := range n {
					if nan := math.IsNaN(float64(out[i*n+j])); nan != (i == 2 || i == 5) {
						t.Fatalf("%s, %s: out[%d, %d] = %g", p.name, format, i, j, out[i*n+j])
					}
				}
			}
		}
	}
}

// BenchmarkMulNTInt: a 26B expert's product [m, 2816]×[2816, 704] at the canvas's 256
// rows and at 16 (an expert's share of a canvas: 256 positions × 8 of 128 experts),
// int4, int8, NVFP4 and GGUF's K types, Q5_0 and Q8_0 (a Q4_K_M file's down projections,
// whose 704 inputs are no whole K-quant block), each integer path that takes the format
// against the float path with each float micro-kernel (on an AVX-512 machine, the
// AVX2 pair too: what a CPU without AVX-512 runs).
func BenchmarkMulNTInt(b *testing.B) {
	const n, k = 704, 2816
	for _, name := range []string{"int4", "int8", "nvfp4", "q4_k", "q3_k", "q2_k", "q5_0", "q5_k", "q6_k", "q8_0"} {
		f := formatNamed(name)
		for _, m := range []int{16, 256} {
			tm := f(b, rand.New(rand.NewPCG(1, 1)), n, k)
			a, out := randWeights(rand.New(rand.NewPCG(2, 2)), m*k), make([]float32, m*n)
			run := func(b *testing.B) {
				for b.Loop() {
					if err := tm.w.MulNT(out, a, m); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			}
			for _, kern := range gemmKernels() {
				if kern == goKernel {
					continue
				}
				b.Run(fmt.Sprintf("%s/m=%d/float-%s", name, m, kern.name), func(b *testing.B) {
					defer func(saved *microKernel) { gemmKernel = saved }(gemmKernel)
					gemmKernel = kern
					withQPath(b, nil, func() { run(b) })
				})
			}
			for _, p := range qPaths() {
				if !tm.w.intCodes(p) {
					continue
				}
				b.Run(fmt.Sprintf("%s/m=%d/int-%s", name, m, p.name), func(b *testing.B) {
					withQPath(b, p, func() { run(b) })
				})
			}
		}
	}
}

// BenchmarkMulNTSplit: an expert's gate and up rows ([2F, D] = [1408, 2816] for the
// 26B) as one product, as a fused gate_up_proj is multiplied, against two of F rows
// each — one after the other, and side by side on the pool, as engine/model
// multiplies them where they are stored apart (a ModelOpt export's modules, a GGUF
// file's split experts) — at an AR token's one row and a canvas's few and a prompt's
// many rows per expert.
func BenchmarkMulNTSplit(b *testing.B) {
	const n, k = 1408, 2816
	for _, name := range []string{"int4", "nvfp4", "q4_k"} {
		for _, m := range []int{1, 16, 64} {
			tm := formatNamed(name)(b, rand.New(rand.NewPCG(1, 1)), n, k)
			a, out := randWeights(rand.New(rand.NewPCG(2, 2)), m*k), make([]float32, m*n)
			gate, err := tm.w.RowRange(0, n/2)
			if err != nil {
				b.Fatal(err)
			}
			up, err := tm.w.RowRange(n/2, n)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/m=%d/one", name, m), func(b *testing.B) {
				for b.Loop() {
					if err := tm.w.MulNT(out, a, m); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/m=%d/two", name, m), func(b *testing.B) {
				for b.Loop() {
					if err := gate.MulNT(out[:m*n/2], a, m); err != nil {
						b.Fatal(err)
					}
					if err := up.MulNT(out[m*n/2:], a, m); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/m=%d/two-side-by-side", name, m), func(b *testing.B) {
				for b.Loop() {
					ParallelRows(2, func(lo, hi int) {
						for j := lo; j < hi; j++ {
							if err := []Matrix{gate, up}[j].MulNT(out[j*m*n/2:(j+1)*m*n/2], a, m); err != nil {
								panic(err)
							}
						}
					})
				}
			})
		}
	}
}

// formatNamed is the maker of formats' entry of that name.
func formatNamed(name string) func(testing.TB, *rand.Rand, int, int) testMatrix {
	for _, f := range formats {
		if f.name == name {
			return f.make
		}
	}
	panic("no format " + name)
}

// BenchmarkMulNNInt: the soft embedding's product, probabilities [256, V] times an
// int8 embedding [V, 2816] with a scale per row (V = 16,384 here, a sixteenth of the
// 26B's), integer against float.
func BenchmarkMulNNInt(b *testing.B) {
	const m, v, d = 256, 16384, 2816
	tm := formatNamed("int8")(b, rand.New(rand.NewPCG(1, 1)), v, d)
	probs, out := randWeights(rand.New(rand.NewPCG(2, 2)), m*v), make([]float32, m*d)
	for _, p := range []*qPath{nil, qBest} {
		if p != nil && !p.wide {
			continue
		}
		b.Run(fmt.Sprintf("int=%v", p != nil), func(b *testing.B) {
			withQPath(b, p, func() {
				for b.Loop() {
					if err := tm.w.MulNN(out, probs, m); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(2*float64(m*v*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestRowCodes: for every format the integer product takes, each row's codes, scales
// and minimums give the stored weights back, s·u + mn (in float64) against the float
// decoder's values within float32 rounding — and the codes stay below 16 where the
// AVX2 kernel takes the format in groups of 32 (below 32 in groups of 16).
func TestRowCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, f := range formats {
		const n, k = 5, 512
		tm := f.make(t, rng, n, k)
		if !tm.w.intCodes(qGo) {
			continue
		}
		gs := tm.w.codeGroup()
		codes, s, mn := make([]byte, k), make([]float32, k/gs), make([]float32, k/gs)
		// A narrow kernel's 16-bit words sum 16 products of a group of 32, 8 of one
		// of 16: codes to 15, and to 31 (intGroup).
		narrow := &qPath{kern: qKernelGo}
		limit := map[int]byte{qGroup: 15, 16: 31}[tm.w.intGroup(narrow)]
		for r := range n {
			tm.w.rowCodes(codes, s, mn, r)
			for p := range k {
				g := p / gs
				got := float64(s[g])*float64(codes[p]) + float64(mn[g])
				want := float64(tm.want[r*k+p])
				if d := math.Abs(got - want); d > 1e-6*(math.Abs(want)+math.Abs(float64(mn[g]))) {
					t.Fatalf("%s: w[%d, %d] = %g·%d + %g = %g, decoded %g", f.name, r, p, s[g], codes[p], mn[g], got, want)
				}
				if codes[p] > limit && tm.w.intCodes(narrow) {
					t.Fatalf("%s: code %d above %d in a format the narrow kernels take", f.name, codes[p], limit)
				}
			}
		}
	}
}

// BenchmarkRowCodes: the canvas product's weight decoding (rowCodes: a row's integer
// codes, scales and minimums, which packQB transposes into panels) for each format the
// integer path takes, over a 26B expert's gate_up rows [1408, 2816]; weights/s.
func BenchmarkRowCodes(b *testing.B) {
	const n, k = 1408, 2816
	for _, name := range []string{"int4", "nvfp4", "q4_k", "q3_k", "q2_k", "q5_k", "q6_k", "q5_0", "q8_0"} {
		tm := formatNamed(name)(b, rand.New(rand.NewPCG(1, 1)), n, k)
		gs := tm.w.codeGroup()
		codes, s, mn := make([]byte, k), make([]float32, k/gs), make([]float32, k/gs)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for r := range n {
					tm.w.rowCodes(codes, s, mn, r)
				}
			}
			b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
		})
	}
}

// TestQ4KHeaders: the canvas packing's Q4_K scales and minimums (q4kHeaders: AVX2 and
// F16C where the CPU has them) are bit for bit the Go decoding's, subnormal and
// infinite fp16 d and dmin among them.
func TestQ4KHeaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	const nb = 37
	src := randBlocks(rng, gguf.Q4_K, nb)
	binary.LittleEndian.PutUint16(src[144*3:], 0x0001)   // the smallest subnormal d
	binary.LittleEndian.PutUint16(src[144*5+2:], 0x7c00) // an infinite dmin
	s, mn := make([]float32, 8*nb), make([]float32, 8*nb)
	ws, wmn := make([]float32, 8*nb), make([]float32, 8*nb)
	q4kHeaders(s, mn, src)
	q4kHeadersGo(ws, wmn, src)
	for i := range s {
		if math.Float32bits(s[i]) != math.Float32bits(ws[i]) || math.Float32bits(mn[i]) != math.Float32bits(wmn[i]) {
			t.Fatalf("block %d group %d: scale %g minimum %g, want %g and %g", i/8, i%8, s[i], mn[i], ws[i], wmn[i])
		}
	}
}

// TestCodes32Vector: the canvas packing's Q5_0 and Q8_0 rows in vector code
// (codes32Vector) give rowCodes32Go's codes, scales and offsets bit for bit,
// subnormal and infinite fp16 d among the blocks.
func TestCodes32Vector(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	const nb = 29
	for _, typ := range []gguf.Type{gguf.Q5_0, gguf.Q8_0} {
		bb := typ.BlockBytes()
		row := randBlocks(rng, typ, nb)
		binary.LittleEndian.PutUint16(row[bb*2:], 0x0001) // the smallest subnormal
		binary.LittleEndian.PutUint16(row[bb*7:], 0xfc00) // −∞
		codes, s, mn := make([]byte, 32*nb), make([]float32, nb), make([]float32, nb)
		if !codes32Vector(codes, s, mn, row, typ, nb) {
			t.Skipf("no vector packing of %v on this CPU (or build)", typ)
		}
		wc, ws, wmn := make([]byte, 32*nb), make([]float32, nb), make([]float32, nb)
		rowCodes32Go(wc, ws, wmn, row, typ, nb)
		for i := range codes {
			if codes[i] != wc[i] {
				t.Fatalf("%v block %d value %d: code %d, want %d", typ, i/32, i%32, codes[i], wc[i])
			}
		}
		for b := range nb {
			if math.Float32bits(s[b]) != math.Float32bits(ws[b]) || math.Float32bits(mn[b]) != math.Float32bits(wmn[b]) {
				t.Fatalf("%v block %d: scale %g offset %g, want %g and %g", typ, b, s[b], mn[b], ws[b], wmn[b])
			}
		}
	}
}

// TestPanelScalesNVFP4: the vector code writes 16 NVFP4 rows' block scales into a
// panel bit for bit as nvfp4PanelScalesGo does, over every FP8 code but NaN's
// (subnormal, negative, zero), scale_2 halves from 2⁻¹⁴⁰ to 2¹²⁰, whole quads of
// groups and a tail; and nvfp4PanelScalesGo's are rowCodesNVFP4's values in
// transposeScales' places.
func TestPanelScalesNVFP4(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, form := range helperForms() {
		for _, groups := range []int{4, 6, 44, 176} {
			stride := groups + quant.NVFP4ScaleBytes
			fp8 := make([]byte, 16*stride)
			for i := range fp8 {
				for fp8[i] = byte(rng.Uint32()); fp8[i]&0x7f == 0x7f; fp8[i] = byte(rng.Uint32()) {
				}
			}
			var h [16]float32
			for r := range h {
				h[r] = float32(math.Ldexp(1+rng.Float64(), rng.IntN(260)-140))
			}
			h[0], h[1] = 1, 0.5
			got, want := make([]float32, 2*qNR*groups), make([]float32, 2*qNR*groups)
			var g int
			withHelpers(form, func() { g = nvfp4ScalesVector(got, fp8, stride, &h, groups) })
			if g != 0 && g != groups/4*4 {
				t.Fatalf("%d groups: the vector code took %d", groups, g)
			}
			nvfp4PanelScalesGo(got, fp8, stride, &h, g, groups)
			nvfp4PanelScalesGo(want, fp8, stride, &h, 0, groups)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("avx2 %v, %d groups: value %d (group %d, place %d) %v, want %v", form, groups, i, i/(2*qNR), i%(2*qNR), got[i], want[i])
				}
			}
		}
	}
	// The values and places packQB had: rowCodesNVFP4's scales and minimums,
	// transposed.
	const groups = 12
	w := Matrix{Rows: 16, Cols: 16 * groups, Spec: quant.NVFP4}
	w.Data = make([]byte, w.Rows*w.Cols/2)
	w.Scales = make([]byte, w.Rows*(groups+quant.NVFP4ScaleBytes))
	for r := range w.Rows {
		row := w.Scales[r*(groups+quant.NVFP4ScaleBytes) : (r+1)*(groups+quant.NVFP4ScaleBytes)]
		codes := make([]byte, groups)
		for i := range codes {
			codes[i] = byte(rng.IntN(0x7f))
		}
		if err := quant.PutNVFP4ScaleRow(row, codes, float32(rng.Float64()+0.1)); err != nil {
			t.Fatal(err)
		}
	}
	var h [16]float32
	codes := make([]byte, w.Cols)
	rs := make([]float32, 2*16*groups)
	for r := range 16 {
		h[r] = w.codesNVFP4(codes, r)
		w.rowCodesNVFP4(codes, rs[r*groups:(r+1)*groups], rs[(16+r)*groups:(17+r)*groups], r)
	}
	got, want := make([]float32, 2*qNR*(groups+2)), make([]float32, 2*qNR*(groups+2))
	w.panelScalesNVFP4(got, 0, &h, groups+2)
	transposeScales(want, rs[:16*groups], groups)
	transposeScales(want[qNR:], rs[16*groups:], groups)
	if !slices.Equal(got, want) {
		t.Fatal("panelScalesNVFP4's panel differs from rowCodesNVFP4's scales transposed")
	}
}
