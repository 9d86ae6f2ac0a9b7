package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Type is a tensor's ggml type (enum ggml_type in ggml.h).
type Type uint32

// ggml types. Numbers are ggml's; 4 and 5 (Q4_2, Q4_3) and 31–33, 36–38 were removed
// upstream.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

// QK_K is the super-block size of the k-quants.
const QK_K = 256

type typeInfo struct {
	name      string
	blockSize int // elements per block
	typeSize  int // bytes per block
	dequant   func(dst []float32, src []byte)
}

// types lists block sizes from ggml.c's type_traits (blck_size, type_size), indexed
// by type (the removed numbers' entries empty: no name), so that the kernels can ask
// a block's size per row. Types with a nil dequant can be parsed (sizes are known)
// but not loaded.
var types = [...]typeInfo{
	F32:     {"F32", 1, 4, dequantF32},
	F16:     {"F16", 1, 2, dequantF16},
	BF16:    {"BF16", 1, 2, dequantBF16},
	Q4_0:    {"Q4_0", 32, 18, dequantQ4_0},
	Q4_1:    {"Q4_1", 32, 20, dequantQ4_1},
	Q5_0:    {"Q5_0", 32, 22, dequantQ5_0},
	Q5_1:    {"Q5_1", 32, 24, dequantQ5_1},
	Q8_0:    {"Q8_0", 32, 34, dequantQ8_0},
	Q8_1:    {"Q8_1", 32, 36, nil},
	Q2_K:    {"Q2_K", QK_K, 84, dequantQ2_K},
	Q3_K:    {"Q3_K", QK_K, 110, dequantQ3_K},
	Q4_K:    {"Q4_K", QK_K, 144, dequantQ4_K},
	Q5_K:    {"Q5_K", QK_K, 176, dequantQ5_K},
	Q6_K:    {"Q6_K", QK_K, 210, dequantQ6_K},
	Q8_K:    {"Q8_K", QK_K, 292, nil},
	IQ2_XXS: {"IQ2_XXS", QK_K, 66, nil},
	IQ2_XS:  {"IQ2_XS", QK_K, 74, nil},
	IQ3_XXS: {"IQ3_XXS", QK_K, 98, nil},
	IQ1_S:   {"IQ1_S", QK_K, 50, nil},
	IQ4_NL:  {"IQ4_NL", 32, 18, dequantIQ4_NL},
	IQ3_S:   {"IQ3_S", QK_K, 110, nil},
	IQ2_S:   {"IQ2_S", QK_K, 82, nil},
	IQ4_XS:  {"IQ4_XS", QK_K, 136, dequantIQ4_XS},
	I8:      {"I8", 1, 1, nil},
	I16:     {"I16", 1, 2, nil},
	I32:     {"I32", 1, 4, nil},
	I64:     {"I64", 1, 8, nil},
	F64:     {"F64", 1, 8, nil},
	IQ1_M:   {"IQ1_M", QK_K, 56, nil},
	TQ1_0:   {"TQ1_0", QK_K, 54, nil},
	TQ2_0:   {"TQ2_0", QK_K, 66, nil},
	MXFP4:   {"MXFP4", 32, 17, nil},
}

func (t Type) info() (typeInfo, bool) {
	if int64(t) >= int64(len(types)) || types[t].name == "" {
		return typeInfo{}, false
	}
	return types[t], true
}

func (t Type) mustInfo() typeInfo {
	i, _ := t.info()
	return i
}

func (t Type) String() string {
	if i, ok := t.info(); ok {
		return i.name
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// BlockSize is the number of elements per block (1 for float types; 0 for a type this
// package does not know).
func (t Type) BlockSize() int {
	if uint64(t) < uint64(len(types)) { // one field, not info's copy of the whole entry:
		return types[t].blockSize // the kernels ask for every row they pack
	}
	return 0
}

// BlockBytes is the number of bytes per block (0 for a type this package does not
// know).
func (t Type) BlockBytes() int {
	if uint64(t) < uint64(len(types)) {
		return types[t].typeSize
	}
	return 0
}

// Supported reports whether Darkroom can dequantize the type.
func (t Type) Supported() bool {
	i, ok := t.info()
	return ok && i.dequant != nil
}

// SupportedNames lists the types Darkroom can dequantize, for messages ("F32, F16, …").
func SupportedNames() string {
	var names []string
	for _, i := range types {
		if i.dequant != nil {
			names = append(names, i.name)
		}
	}
	return strings.Join(names, ", ")
}

// IsFloat reports whether the type is a plain float type (F32, F16, BF16).
func (t Type) IsFloat() bool { return t == F32 || t == F16 || t == BF16 }

// Dequantize converts whole blocks of type t in src to float32 in dst; len(dst) must
// be the element count of src.
func Dequantize(t Type, src []byte, dst []float32) error {
	info, ok := t.info()
	if !ok {
		return fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if info.dequant == nil {
		return fmt.Errorf("ggml type %s is not supported (Darkroom reads %s)", t, SupportedNames())
	}
	if len(src)%info.typeSize != 0 || len(src)/info.typeSize*info.blockSize != len(dst) {
		return fmt.Errorf("%s: %d bytes do not hold %d elements", t, len(src), len(dst))
	}
	info.dequant(dst, src)
	return nil
}

func fp16(b []byte) float32 { return HalfToFloat32(binary.LittleEndian.Uint16(b)) }

// HalfToFloat32 converts IEEE 754 binary16 bits to float32 (exactly: every half is a float32).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: mant·2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case 31: // Inf, NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

func dequantF32(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func dequantF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = fp16(src[2*i:])
	}
}

func dequantBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

// The block decoders below follow ggml/src/ggml-quants.c (dequantize_row_*) line by
// line, in float32 like the C code.

// Q4_0: {fp16 d; u8 qs[16]}; element j = (low nibble of qs[j] − 8)·d, element j+16 =
// (high nibble − 8)·d.
func dequantQ4_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		blk, y := src[b*18:], dst[b*32:]
		d := fp16(blk)
		qs := blk[2:18]
		for j := 0; j < 16; j++ {
			y[j] = float32(int(qs[j]&0x0F)-8) * d
			y[j+16] = float32(int(qs[j]>>4)-8) * d
		}
	}
}

// Q4_1: {fp16 d; fp16 m; u8 qs[16]}: q·d + m.
func dequantQ4_1(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		blk, y := src[b*20:], dst[b*32:]
		d, m := fp16(blk), fp16(blk[2:])
		qs := blk[4:20]
		for j := 0; j < 16; j++ {
			y[j] = float32(qs[j]&0x0F)*d + m
			y[j+16] = float32(qs[j]>>4)*d + m
		}
	}
}

// Q5_0: {fp16 d; u8 qh[4]; u8 qs[16]}: the fifth bit of element j is bit j of qh
// (little-endian uint32); (q − 16)·d.
func dequantQ5_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		blk, y := src[b*22:], dst[b*32:]
		d := fp16(blk)
		qh := binary.LittleEndian.Uint32(blk[2:])
		qs := blk[6:22]
		for j := 0; j < 16; j++ {
			xh0 := uint8((qh>>uint(j))<<4) & 0x10
			xh1 := uint8(qh>>uint(j+12)) & 0x10
			y[j] = float32(int32(qs[j]&0x0F|xh0)-16) * d
			y[j+16] = float32(int32(qs[j]>>4|xh1)-16) * d
		}
	}
}

// Q5_1: {fp16 d; fp16 m; u8 qh[4]; u8 qs[16]}: q·d + m.
func dequantQ5_1(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		blk, y := src[b*24:], dst[b*32:]
		d, m := fp16(blk), fp16(blk[2:])
		qh := binary.LittleEndian.Uint32(blk[4:])
		qs := blk[8:24]
		for j := 0; j < 16; j++ {
			xh0 := uint8((qh>>uint(j))<<4) & 0x10
			xh1 := uint8(qh>>uint(j+12)) & 0x10
			y[j] = float32(qs[j]&0x0F|xh0)*d + m
			y[j+16] = float32(qs[j]>>4|xh1)*d + m
		}
	}
}

// Q8_0: {fp16 d; i8 qs[32]}: q·d.
func dequantQ8_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		blk, y := src[b*34:], dst[b*32:]
		d := fp16(blk)
		for j := 0; j < 32; j++ {
			y[j] = float32(int8(blk[2+j])) * d
		}
	}
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j from the 12 scale bytes of
// a Q4_K/Q5_K block (get_scale_min_k4).
func scaleMinK4(j int, q []byte) (d, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0xF) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// Q4_K: {fp16 d; fp16 dmin; u8 scales[12]; u8 qs[128]} over 256 elements: eight
// sub-blocks of 32, each d·sc·q − dmin·m; a 32-byte run of qs holds two sub-blocks
// (low nibbles, then high nibbles).
func dequantQ4_K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk, y := src[b*144:], dst[b*QK_K:]
		d, min := fp16(blk), fp16(blk[2:])
		scales := blk[4:16]
		q := blk[16:144]
		is := 0
		for j := 0; j < QK_K; j += 64 {
			sc, m := scaleMinK4(is, scales)
			d1, m1 := d*float32(sc), min*float32(m)
			sc, m = scaleMinK4(is+1, scales)
			d2, m2 := d*float32(sc), min*float32(m)
			for l := 0; l < 32; l++ {
				y[j+l] = d1*float32(q[l]&0xF) - m1
				y[j+32+l] = d2*float32(q[l]>>4) - m2
			}
			q = q[32:]
			is += 2
		}
	}
}

// Q5_K: {fp16 d; fp16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: Q4_K plus a fifth
// bit per element from qh (bit 2k for the low-nibble sub-block of pair k, 2k+1 for
// the high one).
func dequantQ5_K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk, y := src[b*176:], dst[b*QK_K:]
		d, min := fp16(blk), fp16(blk[2:])
		scales := blk[4:16]
		qh := blk[16:48]
		ql := blk[48:176]
		is := 0
		u1, u2 := uint8(1), uint8(2)
		for j := 0; j < QK_K; j += 64 {
			sc, m := scaleMinK4(is, scales)
			d1, m1 := d*float32(sc), min*float32(m)
			sc, m = scaleMinK4(is+1, scales)
			d2, m2 := d*float32(sc), min*float32(m)
			for l := 0; l < 32; l++ {
				h1, h2 := uint8(0), uint8(0)
				if qh[l]&u1 != 0 {
					h1 = 16
				}
				if qh[l]&u2 != 0 {
					h2 = 16
				}
				y[j+l] = d1*float32(ql[l]&0xF+h1) - m1
				y[j+32+l] = d2*float32(ql[l]>>4+h2) - m2
			}
			ql = ql[32:]
			is += 2
			u1 <<= 2
			u2 <<= 2
		}
	}
}

// Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d}: sixteen sub-blocks of 16,
// each d·scale·(q − 32) with q's low 4 bits in ql and high 2 bits in qh.
func dequantQ6_K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk, y := src[b*210:], dst[b*QK_K:]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		d := fp16(blk[208:])
		for n := 0; n < QK_K; n += 128 {
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int8(ql[l]&0xF|((qh[l]>>0)&3)<<4) - 32
				q2 := int8(ql[l+32]&0xF|((qh[l]>>2)&3)<<4) - 32
				q3 := int8(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
				q4 := int8(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
				y[n+l] = d * float32(int8(sc[is])) * float32(q1)
				y[n+l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				y[n+l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				y[n+l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
			ql, qh, sc = ql[64:], qh[32:], sc[8:]
		}
	}
}

// Q2_K: {u8 scales[16]; u8 qs[64]; fp16 d; fp16 dmin} over 256 elements: sixteen
// sub-blocks of 16, each d·(sc & 15)·q − dmin·(sc >> 4) for 2-bit q. Each 128
// elements take 32 bytes of qs: the four 2-bit fields of byte l (bits 0–1, 2–3, 4–5,
// 6–7) are elements l, 32+l, 64+l and 96+l (ggml's dequantize_row_q2_K).
func dequantQ2_K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk, y := src[b*84:], dst[b*QK_K:]
		scales, q := blk[0:16], blk[16:80]
		d, min := fp16(blk[80:]), fp16(blk[82:])
		is := 0
		for n := 0; n < QK_K; n += 128 {
			for j := 0; j < 4; j++ {
				shift := 2 * j
				for half := 0; half < 2; half++ {
					sc := scales[is]
					is++
					dl, ml := d*float32(sc&0xF), min*float32(sc>>4)
					for l := 0; l < 16; l++ {
						y[n+32*j+16*half+l] = dl*float32(q[16*half+l]>>shift&3) - ml
					}
				}
			}
			q = q[32:]
		}
	}
}

// Q3KScales unpacks a Q3_K block's sixteen 6-bit scales from its 12 scale bytes, each
// less 32 (−32…31): the low four bits of scale s are byte s's low nibble (s < 8) or byte
// s−8's high nibble, its high two bits two bits of bytes 8–11 (ggml's kmask
// shuffle).
func Q3KScales(sc []byte) [16]int8 {
	_ = sc[11]
	a0, a1 := binary.LittleEndian.Uint32(sc), binary.LittleEndian.Uint32(sc[4:])
	tmp := binary.LittleEndian.Uint32(sc[8:])
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	aux := [4]uint32{
		a0&kmask2 | (tmp&kmask1)<<4,
		a1&kmask2 | ((tmp>>2)&kmask1)<<4,
		(a0>>4)&kmask2 | ((tmp>>4)&kmask1)<<4,
		(a1>>4)&kmask2 | ((tmp>>6)&kmask1)<<4,
	}
	var out [16]int8
	for i, a := range aux {
		// Each byte (0…63) less 32, none borrowing from the next: its top bit set
		// first, the difference's flipped back.
		v := ((a | 0x80808080) - 0x20202020) ^ 0x80808080
		for j := range 4 {
			out[4*i+j] = int8(v >> (8 * j))
		}
	}
	return out
}

// Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; fp16 d} over 256 elements: sixteen
// sub-blocks of 16, each d·(scale − 32)·(q − 4·(1 − h)) for a 2-bit q laid out as
// Q2_K's and its high bit h, bit k of hmask[l] for element 32k+l (ggml's
// dequantize_row_q3_K: h set keeps q, clear subtracts 4).
func dequantQ3_K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk, y := src[b*110:], dst[b*QK_K:]
		hm, q := blk[0:32], blk[32:96]
		scales := Q3KScales(blk[96:108])
		d := fp16(blk[108:])
		is := 0
		m := uint8(1)
		for n := 0; n < QK_K; n += 128 {
			for j := 0; j < 4; j++ {
				shift := 2 * j
				for half := 0; half < 2; half++ {
					dl := d * float32(scales[is])
					is++
					for l := 16 * half; l < 16*(half+1); l++ {
						v := int(q[l]>>shift&3) - 4
						if hm[l]&m != 0 {
							v += 4
						}
						y[n+32*j+l] = dl * float32(v)
					}
				}
				m <<= 1
			}
			q = q[32:]
		}
	}
}

// kvaluesIQ4NL are IQ4_NL's and IQ4_XS's sixteen non-linear levels (ggml's
// kvalues_iq4nl), a nibble's value before its scale.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4_NL: {fp16 d; u8 qs[16]} over 32 elements: d·kvalues[nibble], the low nibbles
// the first 16 elements, the high ones the next 16 (ggml's dequantize_row_iq4_nl).
func dequantIQ4_NL(dst []float32, src []byte) {
	for b := 0; b < len(dst)/32; b++ {
		blk, y := src[b*18:], dst[b*32:]
		d := fp16(blk)
		for j, q := range blk[2:18] {
			y[j] = d * float32(kvaluesIQ4NL[q&0xF])
			y[j+16] = d * float32(kvaluesIQ4NL[q>>4])
		}
	}
}

// IQ4_XS: {fp16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]} over 256 elements: eight
// groups of 32, group g d·(ls−32)·kvalues[nibble] with the 6-bit ls's low four bits
// nibble g%2 of scales_l[g/2] and its high two bits 2g of scales_h, its 16 qs bytes
// laid out as IQ4_NL's (ggml's dequantize_row_iq4_xs).
func dequantIQ4_XS(dst []float32, src []byte) {
	for b := 0; b < len(dst)/QK_K; b++ {
		blk, y := src[b*136:], dst[b*QK_K:]
		d := fp16(blk)
		sh := binary.LittleEndian.Uint16(blk[2:])
		for g := range 8 {
			ls := int(blk[4+g/2]>>(4*(g%2))&0xF) | int(sh>>(2*g)&3)<<4
			dl := d * float32(ls-32)
			for j, q := range blk[8+16*g : 8+16*g+16] {
				y[32*g+j] = dl * float32(kvaluesIQ4NL[q&0xF])
				y[32*g+j+16] = dl * float32(kvaluesIQ4NL[q>>4])
			}
		}
	}
}
