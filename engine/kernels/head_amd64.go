//go:build !noasm

package kernels

// softCapArgMax512 is softCapMax's AVX-512 part (head_amd64.s): SoftCap's vector
// arithmetic on n (a positive multiple of 16) values, and per lane the largest result
// and its first index (−1 where none is larger than −∞).
//
//go:noescape
func softCapArgMax512(row *float32, n int, c, scale float32, max *[16]float32, idx *[16]int32)

// expShift512 is ExpShift's vector part with AVX-512 (head_amd64.s), the same values
// and the same sum as expShiftAVX2; n is a positive multiple of 8.
//
//go:noescape
func expShift512(dst, src *float32, n int, shift, scale float32) float32
