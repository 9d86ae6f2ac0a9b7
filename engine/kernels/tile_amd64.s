//go:build !noasm

#include "textflag.h"

// func tile2x4AVX2(a0, a1, b0, b1, b2, b3 *float32, kv int, sums *[8]float32)
// Y0..Y3: a0·b0..b3, Y4..Y7: a1·b0..b3, 8 lanes each, reduced to the 8 dot products at
// the end; kv is a positive multiple of 8.
TEXT ·tile2x4AVX2(SB), NOSPLIT, $0-64
	MOVQ a0+0(FP), AX
	MOVQ a1+8(FP), BX
	MOVQ b0+16(FP), CX
	MOVQ b1+24(FP), DX
	MOVQ b2+32(FP), SI
	MOVQ b3+40(FP), DI
	MOVQ kv+48(FP), R8
	MOVQ sums+56(FP), R9
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ R10, R10
	SHLQ $2, R8 // bytes

loop:
	VMOVUPS (AX)(R10*1), Y8
	VMOVUPS (BX)(R10*1), Y9
	VMOVUPS (CX)(R10*1), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMOVUPS (DX)(R10*1), Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMOVUPS (SI)(R10*1), Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y6
	VMOVUPS (DI)(R10*1), Y13
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y13, Y9, Y7
	ADDQ $32, R10
	CMPQ R10, R8
	JLT  loop

	// Horizontal sums: hadd pairs twice, then fold the two 128-bit halves.
	VHADDPS Y1, Y0, Y8
	VHADDPS Y3, Y2, Y9
	VHADDPS Y9, Y8, Y10
	VEXTRACTF128 $1, Y10, X11
	VADDPS X11, X10, X10
	VMOVUPS X10, 0(R9)
	VHADDPS Y5, Y4, Y8
	VHADDPS Y7, Y6, Y9
	VHADDPS Y9, Y8, Y10
	VEXTRACTF128 $1, Y10, X11
	VADDPS X11, X10, X10
	VMOVUPS X10, 16(R9)
	VZEROUPPER
	RET

DATA expconst<>+0(SB)/4, $88.3762626647949
DATA expconst<>+4(SB)/4, $-87.3365447504
DATA expconst<>+8(SB)/4, $1.44269504088896341
DATA expconst<>+12(SB)/4, $0.693359375
DATA expconst<>+16(SB)/4, $-2.12194440e-4
DATA expconst<>+20(SB)/4, $1.9875691500e-4
DATA expconst<>+24(SB)/4, $1.3981999507e-3
DATA expconst<>+28(SB)/4, $8.3334519073e-3
DATA expconst<>+32(SB)/4, $4.1665795894e-2
DATA expconst<>+36(SB)/4, $1.6666665459e-1
DATA expconst<>+40(SB)/4, $5.0000001201e-1
DATA expconst<>+44(SB)/4, $1.0
DATA expconst<>+48(SB)/4, $127
GLOBL expconst<>(SB), RODATA|NOPTR, $52

// func expShiftAVX2(dst, src *float32, n int, shift, scale float32) float32
// dst[i] = exp((src[i]−shift)·scale) for n (a positive multiple of 8) values; returns Σ dst.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y14
	VBROADCASTSS scale+28(FP), Y15
	VBROADCASTSS expconst<>+0(SB), Y1  // hi
	VBROADCASTSS expconst<>+4(SB), Y2  // lo
	VBROADCASTSS expconst<>+8(SB), Y3  // log2e
	VBROADCASTSS expconst<>+12(SB), Y4 // c1
	VBROADCASTSS expconst<>+16(SB), Y5 // c2
	VBROADCASTSS expconst<>+44(SB), Y6 // 1
	VPBROADCASTD expconst<>+48(SB), Y7 // 127 (int)
	VXORPS Y13, Y13, Y13               // sum
	XORQ AX, AX

loop:
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS Y14, Y0, Y0
	VMULPS Y15, Y0, Y0
	VMINPS Y1, Y0, Y0
	VMAXPS Y2, Y0, Y0
	VMULPS Y3, Y0, Y8
	VROUNDPS $0, Y8, Y8               // fn = round(x·log2e)
	VFNMADD231PS Y4, Y8, Y0           // r = x − fn·c1
	VFNMADD231PS Y5, Y8, Y0           // r −= fn·c2
	VBROADCASTSS expconst<>+20(SB), Y9
	VBROADCASTSS expconst<>+24(SB), Y10
	VFMADD213PS Y10, Y0, Y9           // p = p·r + c
	VBROADCASTSS expconst<>+28(SB), Y10
	VFMADD213PS Y10, Y0, Y9
	VBROADCASTSS expconst<>+32(SB), Y10
	VFMADD213PS Y10, Y0, Y9
	VBROADCASTSS expconst<>+36(SB), Y10
	VFMADD213PS Y10, Y0, Y9
	VBROADCASTSS expconst<>+40(SB), Y10
	VFMADD213PS Y10, Y0, Y9
	VMULPS Y0, Y0, Y11                // r²
	VADDPS Y6, Y0, Y12                // r + 1
	VFMADD231PS Y11, Y9, Y12          // y = p·r² + r + 1
	VCVTPS2DQ Y8, Y8                  // n
	VPADDD Y7, Y8, Y8
	VPSLLD $23, Y8, Y8                // 2^n
	VMULPS Y8, Y12, Y12
	VMOVUPS Y12, (DI)(AX*4)
	VADDPS Y12, Y13, Y13
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  loop

	VEXTRACTF128 $1, Y13, X0
	VADDPS X0, X13, X13
	VHADDPS X13, X13, X13
	VHADDPS X13, X13, X13
	MOVSS X13, ret+32(FP)
	VZEROUPPER
	RET
