//go:build !noasm

#include "textflag.h"

// func unpackQ3KAVX2(dst, src *byte, blocks int)
//
// The codes (0…7) of Q3_K blocks (110 bytes: hmask[32], qs[64], scales[12], d) in
// input order, 256 a block, unpackQ3KGo's: input 128n + 32j + l is qs[32n + l]'s bits
// 2j and 2j+1 (Y1, Y2 for n = 0, 1; shifted down, masked to 3 by Y15) and hmask[l]'s
// bit 4n + j (Y0, shifted onto each byte's bit 2, masked to 4 by Y14). Word shifts
// move no kept bit across a byte: the bits kept are at most 5 places from where they
// land, inside their byte.
TEXT ·unpackQ3KAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x04040404, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
q3kloop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	// inputs 0…31: qs bits 0, hmask bit 0
	VPAND Y15, Y1, Y3
	VPSLLW $2, Y0, Y4
	VPAND Y14, Y4, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 0(DI)
	// inputs 32…63: qs bits 2, hmask bit 1
	VPSRLW $2, Y1, Y3
	VPAND Y15, Y3, Y3
	VPSLLW $1, Y0, Y4
	VPAND Y14, Y4, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 32(DI)
	// inputs 64…95: qs bits 4, hmask bit 2
	VPSRLW $4, Y1, Y3
	VPAND Y15, Y3, Y3
	VPAND Y14, Y0, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 64(DI)
	// inputs 96…127: qs bits 6, hmask bit 3
	VPSRLW $6, Y1, Y3
	VPAND Y15, Y3, Y3
	VPSRLW $1, Y0, Y4
	VPAND Y14, Y4, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 96(DI)
	// inputs 128…159: qs bits 0, hmask bit 4
	VPAND Y15, Y2, Y3
	VPSRLW $2, Y0, Y4
	VPAND Y14, Y4, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 128(DI)
	// inputs 160…191: qs bits 2, hmask bit 5
	VPSRLW $2, Y2, Y3
	VPAND Y15, Y3, Y3
	VPSRLW $3, Y0, Y4
	VPAND Y14, Y4, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 160(DI)
	// inputs 192…223: qs bits 4, hmask bit 6
	VPSRLW $4, Y2, Y3
	VPAND Y15, Y3, Y3
	VPSRLW $4, Y0, Y4
	VPAND Y14, Y4, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 192(DI)
	// inputs 224…255: qs bits 6, hmask bit 7
	VPSRLW $6, Y2, Y3
	VPAND Y15, Y3, Y3
	VPSRLW $5, Y0, Y4
	VPAND Y14, Y4, Y4
	VPOR Y4, Y3, Y3
	VMOVDQU Y3, 224(DI)
	ADDQ $110, SI
	ADDQ $256, DI
	DECQ CX
	JNZ q3kloop
	VZEROUPPER
	RET

// func unpackQ2KAVX2(dst, src *byte, blocks int)
//
// The codes (0…3) of Q2_K blocks (84 bytes: scales[16], qs[64], d, dmin) in input
// order, 256 a block, unpackQ2KGo's: input 128n + 32j + l is qs[32n + l]'s bits 2j and
// 2j+1.
TEXT ·unpackQ2KAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
q2kloop:
	VMOVDQU 16(SI), Y1
	VMOVDQU 48(SI), Y2
	VPAND Y15, Y1, Y3
	VMOVDQU Y3, 0(DI)
	VPSRLW $2, Y1, Y3
	VPAND Y15, Y3, Y3
	VMOVDQU Y3, 32(DI)
	VPSRLW $4, Y1, Y3
	VPAND Y15, Y3, Y3
	VMOVDQU Y3, 64(DI)
	VPSRLW $6, Y1, Y3
	VPAND Y15, Y3, Y3
	VMOVDQU Y3, 96(DI)
	VPAND Y15, Y2, Y3
	VMOVDQU Y3, 128(DI)
	VPSRLW $2, Y2, Y3
	VPAND Y15, Y3, Y3
	VMOVDQU Y3, 160(DI)
	VPSRLW $4, Y2, Y3
	VPAND Y15, Y3, Y3
	VMOVDQU Y3, 192(DI)
	VPSRLW $6, Y2, Y3
	VPAND Y15, Y3, Y3
	VMOVDQU Y3, 224(DI)
	ADDQ $84, SI
	ADDQ $256, DI
	DECQ CX
	JNZ q2kloop
	VZEROUPPER
	RET
