package main

import "fmt"

// emitQ writes an int8 micro-kernel of engine/kernels' qgemm.go (qkernel_amd64.s):
// qMR = 6 rows of quantized activations against qNR = 32 columns of unsigned weight
// codes, one group of gs inputs (32, or NVFP4's 16) at a time. Per group, each (row,
// 16-column half) sums its gs code products exactly in an int32 accumulator
// (VPDPBUSD: four unsigned weight bytes times four signed activation bytes, added
// into each lane), then adds it into the float32 tile as sa·(sw⊙sum) + mw·asum — the activation row's scale sa
// and code sum asum (times sa) broadcast from the row's scale pairs, the weights'
// scales sw and minimums mw loaded from the group's 64 floats.
//
// Registers: Z0–Z11 the float tile (row r, half h in Z(2r+h)), Z12–Z23 the group's
// integer sums, Z24–Z25 the two halves of b, Z26 a's broadcast, Z27 the converted
// sum, Z28–Z29 the minimums.
func emitQ(p func(string, ...any), gs int) {
	const mr = 6
	name := qName("qkernel6x32VNNI", gs)
	facc := func(r, h int) string { return fmt.Sprintf("Z%d", 2*r+h) }
	iacc := func(r, h int) string { return fmt.Sprintf("Z%d", 12+2*r+h) }
	// Row r of a (R8 = lda, R9 = 3·lda, R10 = 5·lda) and of the scale pairs (R11 =
	// lds, R12 = 3·lds, R13 = 5·lds), as operand formats taking the byte offset.
	rowA := func(r int) string {
		return [...]string{"%d(AX)", "%d(AX)(R8*1)", "%d(AX)(R8*2)", "%d(AX)(R9*1)", "%d(AX)(R8*4)", "%d(AX)(R10*1)"}[r]
	}
	rowS := func(r int) string {
		return [...]string{"%d(SI)", "%d(SI)(R11*1)", "%d(SI)(R11*2)", "%d(SI)(R12*1)", "%d(SI)(R11*4)", "%d(SI)(R13*1)"}[r]
	}
	p("// func %s(groups int, a *int8, lda int, sa *float32, lds int, b *uint8, bs *float32, c *float32, ldc int, accumulate bool)", name)
	p("TEXT ·%s(SB), NOSPLIT, $0-73", name)
	p("\tMOVQ groups+0(FP), CX")
	p("\tMOVQ a+8(FP), AX")
	p("\tMOVQ lda+16(FP), R8")
	p("\tLEAQ (R8)(R8*2), R9")
	p("\tLEAQ (R8)(R8*4), R10")
	p("\tMOVQ sa+24(FP), SI")
	p("\tMOVQ lds+32(FP), R11")
	p("\tLEAQ (R11)(R11*2), R12")
	p("\tLEAQ (R11)(R11*4), R13")
	p("\tMOVQ b+40(FP), BX")
	p("\tMOVQ bs+48(FP), DX")
	for r := range mr {
		for h := range 2 {
			p("\tVPXORD %s, %s, %s", facc(r, h), facc(r, h), facc(r, h))
		}
	}
	p("%s_group:", name)
	for r := range mr {
		for h := range 2 {
			p("\tVPXORD %s, %s, %s", iacc(r, h), iacc(r, h), iacc(r, h))
		}
	}
	for q := range gs / 4 {
		p("\tVMOVDQU32 %d(BX), Z24", 128*q)
		p("\tVMOVDQU32 %d(BX), Z25", 128*q+64)
		for r := range mr {
			p("\tVPBROADCASTD "+rowA(r)+", Z26", 4*q)
			p("\tVPDPBUSD Z26, Z24, %s", iacc(r, 0))
			p("\tVPDPBUSD Z26, Z25, %s", iacc(r, 1))
		}
	}
	p("\tVMOVUPS 128(DX), Z28")
	p("\tVMOVUPS 192(DX), Z29")
	for r := range mr {
		for h := range 2 {
			p("\tVCVTDQ2PS %s, Z27", iacc(r, h))
			p("\tVMULPS %d(DX), Z27, Z27", 64*h)
			p("\tVFMADD231PS.BCST "+rowS(r)+", Z27, %s", 0, facc(r, h))
			p("\tVFMADD231PS.BCST "+rowS(r)+", Z%d, %s", 4, 28+h, facc(r, h))
		}
	}
	emitQEnd(p, name, gs, mr, 64, facc)
}

// qName is the name of the kernel called base for groups of gs inputs: base for 32,
// base + "G16" for 16.
func qName(base string, gs int) string {
	if gs == 32 {
		return base
	}
	return fmt.Sprintf("%sG%d", base, gs)
}

// q256 is one of the 3×16 integer micro-kernels over ymm registers, which the Go side
// calls four times for qgemm.go's 6×32 tile (3 rows of a against one 16-column half
// of a packed panel at a time).
type q256 struct {
	name string
	dot  string // how a quad's bytes are multiplied and summed: "maddubs", "evex" or "vex"
}

// q256Kernels: AVX2's, and VPDPBUSD on ymm registers in its two encodings — AVX-VNNI's
// VEX one (Intel's cores since Alder Lake, which have no AVX-512), and AVX-512 VL's EVEX
// one, which runs on AVX-512 VNNI machines such as ours so that the tests can hold the
// VEX kernel's instructions, identical but for that encoding, to qKernelGo.
var q256Kernels = []q256{
	{name: "qkernel3x16AVX2", dot: "maddubs"},
	{name: "qkernel3x16AVXVNNI", dot: "vex"},
	{name: "qkernel3x16VNNI256", dot: "evex"},
}

// vexVPDPBUSD is AVX-VNNI's VPDPBUSD ymm[dst] += Σ u8(ymm[src1]) · s8(ymm[src2]) (Go's
// operand order: src2, src1, dst) as bytes, which Go's assembler does not write (it
// knows only the EVEX form): the three-byte VEX prefix C4 (R̄X̄B̄ and map 0F38; W0,
// the inverted src1, L256 and pp 66), opcode 50, and ModRM with both operands in
// registers.
func vexVPDPBUSD(src2, src1, dst int) string {
	b1 := 0xc4
	b2 := (^dst>>3&1)<<7 | 1<<6 | (^src2>>3&1)<<5 | 0x02
	b3 := (^src1&15)<<3 | 1<<2 | 0x01
	modrm := 0xc0 | (dst&7)<<3 | src2&7
	return fmt.Sprintf("BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x50; BYTE $0x%02x // VPDPBUSD Y%d, Y%d, Y%d (VEX)",
		b1, b2, b3, modrm, src2, src1, dst)
}

// emitQ256 writes a q256 kernel for groups of gs inputs (32, or NVFP4's 16). Per
// group each (row, 8-column vector) sums its gs code products exactly, then the float
// steps are the VNNI kernel's, so every q256 kernel agrees with it bit for bit on the
// codes it takes:
//
//   - maddubs (AVX2, no VNNI): a quad takes two instructions, VPMADDUBSW multiplying
//     unsigned weight bytes by signed activation bytes and adding adjacent pairs into
//     16-bit words, and VPADDW summing the group's quads into a 16-bit
//     accumulator; VPMADDWD by ones then widens each column's two words into its
//     int32 sum. Exact only for codes up to 15 (int4, Q4_K) in groups of 32: a word
//     holds at most 16 products of 15·127, 30,480 < 2¹⁵; int8's codes (up to 255)
//     would saturate it, so the AVX2 path does not take them. In groups of 16 a word
//     holds 8 products, so codes up to 32 are exact: NVFP4's, up to 24 (8·24·127 =
//     24,384).
//   - vex, evex: VPDPBUSD, four byte products added into each int32 lane, any code.
//
// Registers: Y0–Y5 the float tile (row r, 8-column vector v in Y(2r+v)), Y6–Y11 the
// group's sums, Y12–Y13 the quad's two vectors of b, Y14 a's broadcast, Y15 a product
// (maddubs); at the group's end Y12 holds the ones (maddubs) and Y14–Y15 the row's
// scale pair.
func emitQ256(p func(string, ...any), k q256, gs int) {
	const mr = 3
	name := qName(k.name, gs)
	facc := func(r, v int) string { return fmt.Sprintf("Y%d", 2*r+v) }
	iaccN := func(r, v int) int { return 6 + 2*r + v }
	iacc := func(r, v int) string { return fmt.Sprintf("Y%d", iaccN(r, v)) }
	rowA := func(r int) string { return [...]string{"%d(AX)", "%d(AX)(R8*1)", "%d(AX)(R8*2)"}[r] }
	rowS := func(r int) string { return [...]string{"%d(SI)", "%d(SI)(R11*1)", "%d(SI)(R11*2)"}[r] }
	p("// func %s(groups int, a *int8, lda int, sa *float32, lds int, b *uint8, bs *float32, c *float32, ldc int, accumulate bool)", name)
	p("TEXT ·%s(SB), NOSPLIT, $0-73", name)
	p("\tMOVQ groups+0(FP), CX")
	p("\tMOVQ a+8(FP), AX")
	p("\tMOVQ lda+16(FP), R8")
	p("\tMOVQ sa+24(FP), SI")
	p("\tMOVQ lds+32(FP), R11")
	p("\tMOVQ b+40(FP), BX")
	p("\tMOVQ bs+48(FP), DX")
	for r := range mr {
		for v := range 2 {
			p("\tVXORPS %s, %s, %s", facc(r, v), facc(r, v), facc(r, v))
		}
	}
	p("%s_group:", name)
	if k.dot != "maddubs" {
		for r := range mr {
			for v := range 2 {
				p("\tVPXOR %s, %s, %s", iacc(r, v), iacc(r, v), iacc(r, v))
			}
		}
	}
	for q := range gs / 4 {
		// Quad q's 16 columns: the half's 64 bytes, 128 bytes a quad.
		p("\tVMOVDQU %d(BX), Y12", 128*q)
		p("\tVMOVDQU %d(BX), Y13", 128*q+32)
		for r := range mr {
			p("\tVPBROADCASTD "+rowA(r)+", Y14", 4*q)
			for v := range 2 {
				switch {
				case k.dot == "vex":
					p("\t%s", vexVPDPBUSD(14, 12+v, iaccN(r, v)))
				case k.dot == "evex":
					p("\tVPDPBUSD Y14, Y%d, %s", 12+v, iacc(r, v))
				case q == 0:
					p("\tVPMADDUBSW Y14, Y%d, %s", 12+v, iacc(r, v))
				default:
					p("\tVPMADDUBSW Y14, Y%d, Y15", 12+v)
					p("\tVPADDW Y15, %s, %s", iacc(r, v), iacc(r, v))
				}
			}
		}
	}
	if k.dot == "maddubs" {
		p("\tVPCMPEQW Y12, Y12, Y12")
		p("\tVPSRLW $15, Y12, Y12")
	}
	for r := range mr {
		p("\tVBROADCASTSS "+rowS(r)+", Y14", 0)
		p("\tVBROADCASTSS "+rowS(r)+", Y15", 4)
		for v := range 2 {
			if k.dot == "maddubs" {
				p("\tVPMADDWD Y12, %s, %s", iacc(r, v), iacc(r, v))
			}
			p("\tVCVTDQ2PS %s, %s", iacc(r, v), iacc(r, v))
			p("\tVMULPS %d(DX), %s, %s", 32*v, iacc(r, v), iacc(r, v))
			p("\tVFMADD231PS Y14, %s, %s", iacc(r, v), facc(r, v))
			p("\tVFMADD231PS %d(DX), Y15, %s", 128+32*v, facc(r, v))
		}
	}
	emitQEnd(p, name, gs, mr, 32, facc)
}

// emitQEnd writes an integer micro-kernel's end: the step to the next group of gs
// inputs (gs bytes of a, one scale pair, gs/4 quads of 128 bytes of b, 64 floats of
// bs) and the loop, then the mr×2 float tile (vectors of vb bytes, registers facc(row, vector))
// added to c (accumulate) or stored there.
func emitQEnd(p func(string, ...any), name string, gs, mr, vb int, facc func(r, v int) string) {
	p("\tADDQ $%d, AX", gs)
	p("\tADDQ $8, SI")
	p("\tADDQ $%d, BX", 32*gs)
	p("\tADDQ $256, DX")
	p("\tDECQ CX")
	p("\tJNZ %s_group", name)
	p("\tMOVQ c+56(FP), DI")
	p("\tMOVQ ldc+64(FP), R14")
	p("\tSHLQ $2, R14")
	p("\tCMPB accumulate+72(FP), $0")
	p("\tJEQ %s_store", name)
	for r := range mr {
		for v := range 2 {
			p("\tVADDPS %d(DI), %s, %s", vb*v, facc(r, v), facc(r, v))
		}
		if r < mr-1 {
			p("\tADDQ R14, DI")
		}
	}
	p("\tMOVQ c+56(FP), DI")
	p("%s_store:", name)
	for r := range mr {
		for v := range 2 {
			p("\tVMOVUPS %s, %d(DI)", facc(r, v), vb*v)
		}
		if r < mr-1 {
			p("\tADDQ R14, DI")
		}
	}
	p("\tVZEROUPPER")
	p("\tRET")
}
