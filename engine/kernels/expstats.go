package kernels

// ArgMax returns the index of the largest value of x, the first of equal ones, as the
// scalar scan `if x[j] > x[best]` finds it (a NaN is never larger; a NaN at x[0]
// gives 0). x must not be empty.
func ArgMax(x []float32) int {
	m := maxOf(x)
	for j, v := range x {
		if v == m {
			return j
		}
	}
	return argMaxGo(x) // m is a NaN: only x[0] can be (maxAVX2 skips the others)
}

// maxOf returns the largest value of x by `if v > m` from m = x[0], eight lanes at a
// time where AVX2 runs (a NaN is never larger, so only a NaN at x[0] comes back).
// x must not be empty.
func maxOf(x []float32) float32 {
	m := x[0]
	n := 0
	if useAVX2 && len(x) >= 8 {
		n = len(x) &^ 7
		m = maxAVX2(&x[0], n, m)
	}
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	return m
}

func argMaxGo(x []float32) int {
	am := 0
	for j, v := range x {
		if v > x[am] {
			am = j
		}
	}
	return am
}

// ExpMoments reads the exponentials e of a softmax over x with shift m and scale inv
// (e[j] = exp((x[j] − m)·inv), as ExpShift writes them): it sets each e[j] below floor
// to 0 (the clamped exponential's ~1e-38 is a zero) and returns, in float64,
// sum = Σ e[j] and moment = Σ e[j]·(x[j] − m)·inv — the sums a tempered softmax's
// entropy log(sum) − moment/sum needs. The vector part sums in four float64 lanes
// (each term rounded as the scalar formula rounds it), so the sums equal the scalar
// ones to float64 rounding.
func ExpMoments(e, x []float32, m, inv float64, floor float32) (sum, moment float64) {
	e = e[:len(x)]
	n := 0
	if useAVX2 && len(x) >= 4 {
		n = len(x) &^ 3
		sum, moment = expMomentsAVX2(&e[0], &x[0], n, m, inv, floor)
	}
	s, z := expMomentsGo(e[n:], x[n:], m, inv, floor)
	return sum + s, moment + z
}

func expMomentsGo(e, x []float32, m, inv float64, floor float32) (sum, moment float64) {
	for j, v := range x {
		if e[j] < floor {
			e[j] = 0
		}
		f := float64(e[j])
		sum += f
		moment += f * (float64(v) - m) * inv
	}
	return sum, moment
}
