//go:build !noasm

#include "textflag.h"

DATA dotq4const<>+0(SB)/4, $0x0f
GLOBL dotq4const<>(SB), RODATA|NOPTR, $4

// func dotInt4PermAVX2(x *float32, codes *byte, groups int, scales, mins *float32, off int32, affine bool) float32
// dotAVX2 on the values decodeInt4RunsAVX2 would write, without writing them, and
// without putting the nibbles in value order: x holds each group's 32 values permuted
// (permuteInt4X: the even values, then the odd ones, per half group), so the code bytes
// widen straight to dwords and the low nibble (AND) and high one (shift) pair with x in
// place — two shuffles per 32 values instead of eight. Each accumulator lane sums the
// same values in the same order as a dotAVX2 lane does on the decoded row; the lanes are put back in
// dotAVX2's places before its final sum, so the result is bit for bit the same. Without
// affine the minimums are not added: a symmetric value + 0 differs only in a zero's
// sign, which a sum that starts at +0 cannot tell.
TEXT ·dotInt4PermAVX2(SB), NOSPLIT, $0-52
	MOVQ x+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVQ scales+24(FP), DX
	MOVQ mins+32(FP), R10
	MOVL off+40(FP), AX
	MOVBLZX affine+44(FP), BX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPBROADCASTD dotq4const<>+0(SB), Y14
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	TESTQ BX, BX
	JNZ  q4affine
q4sym:
	VBROADCASTSS (DX), Y13
	VPMOVZXBD (SI), Y0
	VPMOVZXBD 8(SI), Y2
	VPAND Y14, Y0, Y4                // values 0, 2, …, 14
	VPSRLD $4, Y0, Y5                // 1, 3, …, 15
	VPAND Y14, Y2, Y6                // 16, 18, …, 30
	VPSRLD $4, Y2, Y7                // 17, 19, …, 31
	VPSUBD Y15, Y4, Y4
	VPSUBD Y15, Y5, Y5
	VPSUBD Y15, Y6, Y6
	VPSUBD Y15, Y7, Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y13, Y4, Y4
	VMULPS Y13, Y5, Y5
	VMULPS Y13, Y6, Y6
	VMULPS Y13, Y7, Y7
	VFMADD231PS (DI), Y4, Y8
	VFMADD231PS 32(DI), Y5, Y9
	VFMADD231PS 64(DI), Y6, Y10
	VFMADD231PS 96(DI), Y7, Y11
	ADDQ $16, SI
	ADDQ $128, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q4sym
	JMP  q4sum
q4affine:
	VBROADCASTSS (DX), Y13
	VBROADCASTSS (R10), Y12
	VPMOVZXBD (SI), Y0
	VPMOVZXBD 8(SI), Y2
	VPAND Y14, Y0, Y4
	VPSRLD $4, Y0, Y5
	VPAND Y14, Y2, Y6
	VPSRLD $4, Y2, Y7
	VPSUBD Y15, Y4, Y4
	VPSUBD Y15, Y5, Y5
	VPSUBD Y15, Y6, Y6
	VPSUBD Y15, Y7, Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y13, Y4, Y4
	VMULPS Y13, Y5, Y5
	VMULPS Y13, Y6, Y6
	VMULPS Y13, Y7, Y7
	VADDPS Y12, Y4, Y4
	VADDPS Y12, Y5, Y5
	VADDPS Y12, Y6, Y6
	VADDPS Y12, Y7, Y7
	VFMADD231PS (DI), Y4, Y8
	VFMADD231PS 32(DI), Y5, Y9
	VFMADD231PS 64(DI), Y6, Y10
	VFMADD231PS 96(DI), Y7, Y11
	ADDQ $16, SI
	ADDQ $128, DI
	ADDQ $4, DX
	ADDQ $4, R10
	DECQ CX
	JNZ  q4affine
q4sum:
	// Y8 lane l sums value 2l of each group, Y9 2l+1, Y10 16+2l, Y11 17+2l: interleave
	// them back into dotAVX2's Y0…Y3 (values 0–7, 8–15, 16–23, 24–31).
	VUNPCKLPS Y9, Y8, Y0             // 0 1 2 3 | 8 9 10 11
	VUNPCKHPS Y9, Y8, Y1             // 4 5 6 7 | 12 13 14 15
	VUNPCKLPS Y11, Y10, Y2
	VUNPCKHPS Y11, Y10, Y3
	VPERM2F128 $0x20, Y1, Y0, Y4     // 0–7
	VPERM2F128 $0x31, Y1, Y0, Y5     // 8–15
	VPERM2F128 $0x20, Y3, Y2, Y6     // 16–23
	VPERM2F128 $0x31, Y3, Y2, Y7     // 24–31
	VADDPS Y5, Y4, Y0
	VADDPS Y7, Y6, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET
