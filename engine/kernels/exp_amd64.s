//go:build !noasm

#include "textflag.h"

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
	VMOVSS X13, ret+32(FP)
	VZEROUPPER
	RET

DATA softconst<>+0(SB)/4, $0x7fffffff
GLOBL softconst<>(SB), RODATA|NOPTR, $4

// func softCapAVX2(row *float32, n int, c, scale float32)
// row[i] = c·(1 − e)/(1 + e) with e = exp(|row[i]|·scale) (scale = −2/c), negated where
// row[i] < 0: c·tanh(row[i]/c) with ExpShift's exponential, for n (a positive
// multiple of 8) values.
TEXT ·softCapAVX2(SB), NOSPLIT, $0-24
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS c+16(FP), Y14
	VBROADCASTSS scale+20(FP), Y15
	VBROADCASTSS expconst<>+0(SB), Y1  // hi
	VBROADCASTSS expconst<>+4(SB), Y2  // lo
	VBROADCASTSS expconst<>+8(SB), Y3  // log2e
	VBROADCASTSS expconst<>+12(SB), Y4 // c1
	VBROADCASTSS expconst<>+16(SB), Y5 // c2
	VBROADCASTSS expconst<>+44(SB), Y6 // 1
	VPBROADCASTD expconst<>+48(SB), Y7 // 127 (int)
	VPBROADCASTD softconst<>+0(SB), Y13 // |x| mask
	VXORPS Y10, Y10, Y10               // 0
	XORQ AX, AX

softloop:
	VMOVUPS (DI)(AX*4), Y11            // x
	VANDPS Y13, Y11, Y0                // |x|
	VMULPS Y15, Y0, Y0
	VMINPS Y1, Y0, Y0
	VMAXPS Y2, Y0, Y0
	VMULPS Y3, Y0, Y8
	VROUNDPS $0, Y8, Y8
	VFNMADD231PS Y4, Y8, Y0
	VFNMADD231PS Y5, Y8, Y0
	VBROADCASTSS expconst<>+20(SB), Y9
	VBROADCASTSS expconst<>+24(SB), Y12
	VFMADD213PS Y12, Y0, Y9
	VBROADCASTSS expconst<>+28(SB), Y12
	VFMADD213PS Y12, Y0, Y9
	VBROADCASTSS expconst<>+32(SB), Y12
	VFMADD213PS Y12, Y0, Y9
	VBROADCASTSS expconst<>+36(SB), Y12
	VFMADD213PS Y12, Y0, Y9
	VBROADCASTSS expconst<>+40(SB), Y12
	VFMADD213PS Y12, Y0, Y9
	VMULPS Y0, Y0, Y12                 // r²
	VADDPS Y6, Y0, Y0                  // r + 1
	VFMADD231PS Y12, Y9, Y0            // y = p·r² + r + 1
	VCVTPS2DQ Y8, Y8
	VPADDD Y7, Y8, Y8
	VPSLLD $23, Y8, Y8
	VMULPS Y8, Y0, Y0                  // e
	VSUBPS Y0, Y6, Y8                  // 1 − e
	VMULPS Y14, Y8, Y8                 // c·(1 − e)
	VADDPS Y6, Y0, Y0                  // 1 + e
	VDIVPS Y0, Y8, Y8                  // c·(1 − e)/(1 + e)
	VCMPPS $1, Y10, Y11, Y9            // x < 0
	VANDNPS Y9, Y13, Y12               // sign bit where x < 0
	VXORPS Y12, Y8, Y8
	VMOVUPS Y8, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  softloop
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int, m float32) float32
// The largest of m and n (a positive multiple of 8) values; a NaN among them is
// skipped (VMAXPS keeps its second operand, the running maximum, when the first is
// NaN), as the scalar loop `if v > m` does.
TEXT ·maxAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Y0
	XORQ AX, AX
maxloop:
	VMOVUPS (SI)(AX*4), Y1
	VMAXPS Y0, Y1, Y0
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  maxloop
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X0, X1, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAVX2(x *float32, n int, r float32)
// x[i] *= r for n (a positive multiple of 8) values.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS r+16(FP), Y1
	XORQ AX, AX
scaleloop:
	VMULPS (SI)(AX*4), Y1, Y0
	VMOVUPS Y0, (SI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  scaleloop
	VZEROUPPER
	RET
