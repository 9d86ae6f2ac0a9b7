//go:build !noasm

package kernels

// dotInt4PermAVX2 is dotAVX2 on decodeInt4RunsAVX2's values, over x permuted by
// permuteInt4X (dotq_amd64.s).
//
//go:noescape
func dotInt4PermAVX2(x *float32, codes *byte, groups int, scales, mins *float32, off int32, affine bool) float32

// dotInt4Perm returns dot(values, x) for the values decodeInt4Runs(values, codes,
// scales, mins, off) writes, bit for bit, xp being x permuted by permuteInt4X and affine
// whether mins may be non-zero (false: they are all 0), and whether it could (AVX2;
// otherwise the caller decodes).
func dotInt4Perm(xp []float32, codes []byte, scales, mins []float32, off int32, affine bool) (float32, bool) {
	groups := len(codes) / 16
	if !useAVX2 || groups == 0 {
		return 0, false
	}
	_, _, _, _ = xp[32*groups-1], codes[16*groups-1], scales[groups-1], mins[groups-1]
	return dotInt4PermAVX2(&xp[0], &codes[0], groups, &scales[0], &mins[0], off, affine), true
}

// dotInt8AVX2 is dotAVX2 on decodeInt8AVX2's values, widened in registers
// (dotq_amd64.s).
//
//go:noescape
func dotInt8AVX2(x *float32, codes *byte, n int, s float32) float32

// dotInt8 returns dot(values, x) for the values decodeInt8(values, codes, s) writes, bit
// for bit, without writing them; tail is scratch of len(x) floats (with AVX2 only the
// last len(x) mod 32 values are decoded into it).
func dotInt8(x []float32, codes []byte, s float32, tail []float32) float32 {
	n := 0
	var sum float32
	if useAVX2 && len(x) >= 32 {
		n = len(x) &^ 31
		_ = codes[n-1]
		sum = dotInt8AVX2(&x[0], &codes[0], n, s)
	}
	t := tail[:len(x)-n]
	decodeInt8Go(t, codes[n:len(x)], s)
	return sum + dotGo(t, x[n:])
}
