//go:build !noasm

#include "textflag.h"

// The fused head's row passes with AVX-512: softCapAVX2 and expShiftAVX2
// (exp_amd64.s) sixteen lanes at a time, operation for operation, so every value is
// the same; the running sum of expShift512 is kept in eight lanes, added in the
// order expShiftAVX2 adds them, so the sum is too. softCapArgMax512 also keeps each
// lane's maximum and where it first was, so the row's argmax needs no second pass.

DATA headconst<>+0(SB)/4, $88.3762626647949
DATA headconst<>+4(SB)/4, $-87.3365447504
DATA headconst<>+8(SB)/4, $1.44269504088896341
DATA headconst<>+12(SB)/4, $0.693359375
DATA headconst<>+16(SB)/4, $-2.12194440e-4
DATA headconst<>+20(SB)/4, $1.9875691500e-4
DATA headconst<>+24(SB)/4, $1.3981999507e-3
DATA headconst<>+28(SB)/4, $8.3334519073e-3
DATA headconst<>+32(SB)/4, $4.1665795894e-2
DATA headconst<>+36(SB)/4, $1.6666665459e-1
DATA headconst<>+40(SB)/4, $5.0000001201e-1
DATA headconst<>+44(SB)/4, $1.0
DATA headconst<>+48(SB)/4, $127
DATA headconst<>+52(SB)/4, $0x7fffffff
DATA headconst<>+56(SB)/4, $0x80000000
DATA headconst<>+60(SB)/4, $0xff800000
DATA headconst<>+64(SB)/4, $16
GLOBL headconst<>(SB), RODATA|NOPTR, $68

DATA headiota<>+0(SB)/4, $0
DATA headiota<>+4(SB)/4, $1
DATA headiota<>+8(SB)/4, $2
DATA headiota<>+12(SB)/4, $3
DATA headiota<>+16(SB)/4, $4
DATA headiota<>+20(SB)/4, $5
DATA headiota<>+24(SB)/4, $6
DATA headiota<>+28(SB)/4, $7
DATA headiota<>+32(SB)/4, $8
DATA headiota<>+36(SB)/4, $9
DATA headiota<>+40(SB)/4, $10
DATA headiota<>+44(SB)/4, $11
DATA headiota<>+48(SB)/4, $12
DATA headiota<>+52(SB)/4, $13
DATA headiota<>+56(SB)/4, $14
DATA headiota<>+60(SB)/4, $15
GLOBL headiota<>(SB), RODATA|NOPTR, $64

// func softCapArgMax512(row *float32, n int, c, scale float32, max *[16]float32, idx *[16]int32)
// row[i] = c·tanh(row[i]/c) as softCapAVX2 computes it, for n (a positive multiple of
// 16) values; max and idx get, per lane l (the i ≡ l mod 16), the largest result and
// the first i that has it (a result replaces the lane's only when greater, so NaNs
// never do; idx −1 and max −∞ where none did).
TEXT ·softCapArgMax512(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS c+16(FP), Z14
	VBROADCASTSS scale+20(FP), Z15
	VBROADCASTSS headconst<>+0(SB), Z1  // hi
	VBROADCASTSS headconst<>+4(SB), Z2  // lo
	VBROADCASTSS headconst<>+8(SB), Z3  // log2e
	VBROADCASTSS headconst<>+12(SB), Z4 // c1
	VBROADCASTSS headconst<>+16(SB), Z5 // c2
	VBROADCASTSS headconst<>+44(SB), Z6 // 1
	VPBROADCASTD headconst<>+48(SB), Z7 // 127 (int)
	VPBROADCASTD headconst<>+52(SB), Z13 // |x| mask
	VBROADCASTSS headconst<>+20(SB), Z17 // the polynomial
	VBROADCASTSS headconst<>+24(SB), Z18
	VBROADCASTSS headconst<>+28(SB), Z19
	VBROADCASTSS headconst<>+32(SB), Z20
	VBROADCASTSS headconst<>+36(SB), Z21
	VBROADCASTSS headconst<>+40(SB), Z22
	VPBROADCASTD headconst<>+56(SB), Z23 // sign bit
	VPBROADCASTD headconst<>+60(SB), Z16 // the lanes' maxima: −∞
	VPTERNLOGD $0xff, Z24, Z24, Z24      // their indices: −1
	VMOVDQU32 headiota<>(SB), Z25        // this step's indices
	VPBROADCASTD headconst<>+64(SB), Z26 // 16
	VPXORD Z10, Z10, Z10                 // 0
	XORQ AX, AX

capmaxloop:
	VMOVUPS (DI)(AX*4), Z11              // x
	VPANDD Z13, Z11, Z0                  // |x|
	VMULPS Z15, Z0, Z0
	VMINPS Z1, Z0, Z0
	VMAXPS Z2, Z0, Z0
	VMULPS Z3, Z0, Z8
	VRNDSCALEPS $0, Z8, Z8
	VFNMADD231PS Z4, Z8, Z0
	VFNMADD231PS Z5, Z8, Z0
	VMOVAPS Z17, Z9
	VFMADD213PS Z18, Z0, Z9
	VFMADD213PS Z19, Z0, Z9
	VFMADD213PS Z20, Z0, Z9
	VFMADD213PS Z21, Z0, Z9
	VFMADD213PS Z22, Z0, Z9
	VMULPS Z0, Z0, Z12                   // r²
	VADDPS Z6, Z0, Z0                    // r + 1
	VFMADD231PS Z12, Z9, Z0              // y = p·r² + r + 1
	VCVTPS2DQ Z8, Z8
	VPADDD Z7, Z8, Z8
	VPSLLD $23, Z8, Z8
	VMULPS Z8, Z0, Z0                    // e
	VSUBPS Z0, Z6, Z8                    // 1 − e
	VMULPS Z14, Z8, Z8                   // c·(1 − e)
	VADDPS Z6, Z0, Z0                    // 1 + e
	VDIVPS Z0, Z8, Z8                    // c·(1 − e)/(1 + e)
	VCMPPS $1, Z10, Z11, K1              // x < 0
	VPXORD Z23, Z8, K1, Z8               // negated there
	VMOVUPS Z8, (DI)(AX*4)
	VCMPPS $0x1e, Z16, Z8, K2            // greater than the lane's maximum (ordered)
	VMOVAPS Z8, K2, Z16
	VMOVDQA32 Z25, K2, Z24
	VPADDD Z26, Z25, Z25
	ADDQ $16, AX
	CMPQ AX, CX
	JLT  capmaxloop

	MOVQ max+24(FP), DI
	VMOVUPS Z16, (DI)
	MOVQ idx+32(FP), DI
	VMOVDQU32 Z24, (DI)
	VZEROUPPER
	RET

// EXPBODY: Z12 = exp((Z0 − Z14)·Z15) by expShiftAVX2's steps (constants in Z1–Z7,
// Z17–Z22); clobbers Z0, Z8–Z12.
#define EXPBODY \
	VSUBPS Z14, Z0, Z0 \
	VMULPS Z15, Z0, Z0 \
	VMINPS Z1, Z0, Z0 \
	VMAXPS Z2, Z0, Z0 \
	VMULPS Z3, Z0, Z8 \
	VRNDSCALEPS $0, Z8, Z8 \
	VFNMADD231PS Z4, Z8, Z0 \
	VFNMADD231PS Z5, Z8, Z0 \
	VMOVAPS Z17, Z9 \
	VFMADD213PS Z18, Z0, Z9 \
	VFMADD213PS Z19, Z0, Z9 \
	VFMADD213PS Z20, Z0, Z9 \
	VFMADD213PS Z21, Z0, Z9 \
	VFMADD213PS Z22, Z0, Z9 \
	VMULPS Z0, Z0, Z11 \
	VADDPS Z6, Z0, Z12 \
	VFMADD231PS Z11, Z9, Z12 \
	VCVTPS2DQ Z8, Z8 \
	VPADDD Z7, Z8, Z8 \
	VPSLLD $23, Z8, Z8 \
	VMULPS Z8, Z12, Z12

// func expShift512(dst, src *float32, n int, shift, scale float32) float32
// dst[i] = exp((src[i]−shift)·scale) as expShiftAVX2 computes it, for n (a positive
// multiple of 8) values; returns Σ dst summed as expShiftAVX2 sums it.
TEXT ·expShift512(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Z14
	VBROADCASTSS scale+28(FP), Z15
	VBROADCASTSS headconst<>+0(SB), Z1
	VBROADCASTSS headconst<>+4(SB), Z2
	VBROADCASTSS headconst<>+8(SB), Z3
	VBROADCASTSS headconst<>+12(SB), Z4
	VBROADCASTSS headconst<>+16(SB), Z5
	VBROADCASTSS headconst<>+44(SB), Z6
	VPBROADCASTD headconst<>+48(SB), Z7
	VBROADCASTSS headconst<>+20(SB), Z17
	VBROADCASTSS headconst<>+24(SB), Z18
	VBROADCASTSS headconst<>+28(SB), Z19
	VBROADCASTSS headconst<>+32(SB), Z20
	VBROADCASTSS headconst<>+36(SB), Z21
	VBROADCASTSS headconst<>+40(SB), Z22
	VXORPS Y13, Y13, Y13                 // the sum, eight lanes
	MOVQ CX, DX
	ANDQ $-16, DX                        // the sixteen-lane part
	XORQ AX, AX
	CMPQ DX, $0
	JEQ  exptail

exploop:
	VMOVUPS (SI)(AX*4), Z0
	EXPBODY
	VMOVUPS Z12, (DI)(AX*4)
	VADDPS Y12, Y13, Y13                 // elements 0–7, then 8–15, as eight-lane steps
	VEXTRACTF64X4 $1, Z12, Y12
	VADDPS Y12, Y13, Y13
	ADDQ $16, AX
	CMPQ AX, DX
	JLT  exploop

exptail:
	CMPQ AX, CX
	JGE  expdone
	VMOVUPS (SI)(AX*4), Y0               // the last eight (the upper lanes zero)
	EXPBODY
	VMOVUPS Y12, (DI)(AX*4)
	VADDPS Y12, Y13, Y13

expdone:
	VEXTRACTF128 $1, Y13, X0
	VADDPS X0, X13, X13
	VHADDPS X13, X13, X13
	VHADDPS X13, X13, X13
	VMOVSS X13, ret+32(FP)
	VZEROUPPER
	RET
