package kernels

import (
	"runtime"
	"sync"
)

// Tile sizes of the cache blocking: kBlock contraction values per pass (2 KiB rows),
// nBlock rows of b per pass (nBlock·kBlock·4 B = 128 KiB, L2-resident).
const (
	kBlock = 512
	nBlock = 64
)

// MulNT computes out = a·bᵀ for row-major a [m, k] and b [n, k] (both contracted on
// their contiguous last axis), out [m, n]: out[i·n+j] = Σ_p a[i·k+p]·b[j·k+p].
// out is overwritten. The rows of out are split across GOMAXPROCS goroutines.
func MulNT(out, a, b []float32, m, n, k int) {
	if len(a) < m*k || len(b) < n*k || len(out) < m*n {
		panic("gemm.MulNT: slices shorter than their shapes")
	}
	clear(out[:m*n])
	workers := min(runtime.GOMAXPROCS(0), (m+1)/2)
	if workers <= 1 || m*n*k < 1<<16 {
		mulNTRows(out, a, b, 0, m, n, k)
		return
	}
	// Stripes of whole row pairs.
	pairs := (m + 1) / 2
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := 2*(pairs*w/workers), min(m, 2*(pairs*(w+1)/workers))
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mulNTRows(out, a, b, lo, hi, n, k)
		}()
	}
	wg.Wait()
}

// mulNTRows accumulates rows [lo, hi) of out += a·bᵀ.
func mulNTRows(out, a, b []float32, lo, hi, n, k int) {
	for p0 := 0; p0 < k; p0 += kBlock {
		kl := min(kBlock, k-p0)
		kv := kl &^ 7 // the vector kernel's part; the rest is done in Go
		for j0 := 0; j0 < n; j0 += nBlock {
			j1 := min(j0+nBlock, n)
			for i := lo; i < hi; i += 2 {
				a0 := a[i*k+p0 : i*k+p0+kl]
				a1 := a0
				two := i+1 < hi
				if two {
					a1 = a[(i+1)*k+p0 : (i+1)*k+p0+kl]
				}
				o0 := out[i*n : i*n+n]
				o1 := o0
				if two {
					o1 = out[(i+1)*n : (i+1)*n+n]
				}
				j := j0
				for ; j+4 <= j1; j += 4 {
					b0 := b[j*k+p0 : j*k+p0+kl]
					b1 := b[(j+1)*k+p0 : (j+1)*k+p0+kl]
					b2 := b[(j+2)*k+p0 : (j+2)*k+p0+kl]
					b3 := b[(j+3)*k+p0 : (j+3)*k+p0+kl]
					var s [8]float32
					if kv > 0 {
						tile2x4(&a0[0], &a1[0], &b0[0], &b1[0], &b2[0], &b3[0], kv, &s)
					}
					for p := kv; p < kl; p++ {
						x0, x1 := a0[p], a1[p]
						s[0] += x0 * b0[p]
						s[1] += x0 * b1[p]
						s[2] += x0 * b2[p]
						s[3] += x0 * b3[p]
						s[4] += x1 * b0[p]
						s[5] += x1 * b1[p]
						s[6] += x1 * b2[p]
						s[7] += x1 * b3[p]
					}
					o0[j] += s[0]
					o0[j+1] += s[1]
					o0[j+2] += s[2]
					o0[j+3] += s[3]
					if two {
						o1[j] += s[4]
						o1[j+1] += s[5]
						o1[j+2] += s[6]
						o1[j+3] += s[7]
					}
				}
				for ; j < j1; j++ {
					bj := b[j*k+p0 : j*k+p0+kl]
					o0[j] += dot(a0, bj)
					if two {
						o1[j] += dot(a1, bj)
					}
				}
			}
		}
	}
}

func dot(x, y []float32) float32 {
	var s0, s1, s2, s3 float32
	y = y[:len(x)]
	p := 0
	for ; p+4 <= len(x); p += 4 {
		s0 += x[p] * y[p]
		s1 += x[p+1] * y[p+1]
		s2 += x[p+2] * y[p+2]
		s3 += x[p+3] * y[p+3]
	}
	for ; p < len(x); p++ {
		s0 += x[p] * y[p]
	}
	return (s0 + s1) + (s2 + s3)
}

// tile2x4Go is the portable tile: sums[4·r+c] = Σ_{p<kv} a_r[p]·b_c[p] for the first kv
// (a multiple of 8) values, accumulated in 8 lanes (p mod 8) as the vector kernel does.
func tile2x4Go(a0, a1, b0, b1, b2, b3 []float32, kv int, sums *[8]float32) {
	var acc [64]float32
	a0, a1 = a0[:kv], a1[:kv]
	b0, b1, b2, b3 = b0[:kv], b1[:kv], b2[:kv], b3[:kv]
	for p := 0; p < kv; p += 8 {
		for l := range 8 {
			x0, x1 := a0[p+l], a1[p+l]
			acc[l] += x0 * b0[p+l]
			acc[8+l] += x0 * b1[p+l]
			acc[16+l] += x0 * b2[p+l]
			acc[24+l] += x0 * b3[p+l]
			acc[32+l] += x1 * b0[p+l]
			acc[40+l] += x1 * b1[p+l]
			acc[48+l] += x1 * b2[p+l]
			acc[56+l] += x1 * b3[p+l]
		}
	}
	for r := range 8 {
		v := acc[8*r : 8*r+8]
		sums[r] = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))
	}
}
