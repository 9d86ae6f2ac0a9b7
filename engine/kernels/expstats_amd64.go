//go:build !noasm

package kernels

// expMomentsAVX2 is ExpMoments' vector part over n (a positive multiple of 4) values
// (expstats_amd64.s).
//
//go:noescape
func expMomentsAVX2(e, x *float32, n int, m, inv float64, floor float32) (sum, moment float64)
