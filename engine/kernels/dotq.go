package kernels

// permuteInt4X writes x's whole groups of 32 values in the order dotInt4Rows reads them
// on this CPU (an AR product permutes x once and dots every row with it): with AVX-512
// per group the even values 0, 2, …, 30, then the odd ones (the low and high nibbles of
// a group's 16 code bytes); with AVX2 values 0, 2, …, 14, then 1, 3, …, 15, then 16,
// 18, …, 30, then 17, …, 31 (the nibbles of bytes 0–7, then of bytes 8–15).
func permuteInt4X(dst, x []float32) {
	for g := range len(x) / 32 {
		s, d := x[32*g:32*g+32], dst[32*g:32*g+32]
		if useAVX512 {
			for l := range 16 {
				d[l], d[16+l] = s[2*l], s[2*l+1]
			}
			continue
		}
		for l := range 8 {
			d[l], d[8+l] = s[2*l], s[2*l+1]
			d[16+l], d[24+l] = s[16+2*l], s[17+2*l]
		}
	}
}
