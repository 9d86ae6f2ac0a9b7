//go:build !noasm

package kernels

import "golang.org/x/sys/cpu"

var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expShiftAVX2 is ExpShift's vector part (exp_amd64.s); n is a positive multiple of 8.
//
//go:noescape
func expShiftAVX2(dst, src *float32, n int, shift, scale float32) float32

// softCapAVX2 is SoftCap's vector part (exp_amd64.s); n is a positive multiple of 8.
//
//go:noescape
func softCapAVX2(row *float32, n int, c, scale float32)

// maxAVX2 and scaleAVX2 are Softmax's vector passes (exp_amd64.s); n is a positive
// multiple of 8.
//
//go:noescape
func maxAVX2(x *float32, n int, m float32) float32

//go:noescape
func scaleAVX2(x *float32, n int, r float32)
