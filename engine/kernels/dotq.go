package kernels

// permuteInt4X writes x's whole groups of 32 values in the order dotInt4Perm reads them:
// per group, values 0, 2, …, 14, then 1, 3, …, 15, then 16, 18, …, 30, then 17, …, 31 —
// the order of the low and high nibbles of a group's code bytes 0–7 and 8–15. An AR
// product permutes x once and dots every row with it.
func permuteInt4X(dst, x []float32) {
	for g := range len(x) / 32 {
		s, d := x[32*g:32*g+32], dst[32*g:32*g+32]
		for l := range 8 {
			d[l], d[8+l] = s[2*l], s[2*l+1]
			d[16+l], d[24+l] = s[16+2*l], s[17+2*l]
		}
	}
}
