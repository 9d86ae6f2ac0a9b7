//go:build !noasm

package kernels

// addAVX2 adds n (a positive multiple of 8) values of x to dst (elementwise_amd64.s).
//
//go:noescape
func addAVX2(dst, x *float32, n int)
