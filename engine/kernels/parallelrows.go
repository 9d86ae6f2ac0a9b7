package kernels

// ParallelRows runs fn over [0, n) split into one contiguous range per worker of the
// package's pool (the calling goroutine runs the first) and returns when all are done:
// the row loops around the products (softmax, soft-cap) share the products' goroutines
// instead of starting new ones each call. fn never sees an empty range.
func ParallelRows(n int, fn func(lo, hi int)) {
	parts := min(workers(), n)
	if parts <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	parallel(parts, func(p int) { fn(n*p/parts, n*(p+1)/parts) })
}
