package kernels

// Add adds x to dst elementwise (dst[j] += x[j], len(x) values; dst at least as
// long): the residual connections' sums, eight lanes at a time where AVX2 runs, each
// value the scalar sum.
func Add(dst, x []float32) {
	dst = dst[:len(x)]
	n := 0
	if useAVX2 && len(x) >= 8 {
		n = len(x) &^ 7
		addAVX2(&dst[0], &x[0], n)
	}
	for j := n; j < len(x); j++ {
		dst[j] += x[j]
	}
}

// Scale multiplies x by s in place (x[j] *= s), eight lanes at a time where AVX2
// runs, each value the scalar product (Softmax's scaling).
func Scale(x []float32, s float32) { scale(x, s) }
