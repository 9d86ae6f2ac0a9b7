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
