package gguf

import "fmt"

// Block parts: the graph path keeps some block types as they are stored, their
// blocks taken apart into up to three runs of bytes — the codes, the scales, and a
// third part (the K-quants' fp16 super-block scales, Q4_1 and Q5_1's fp16 minimums)
// — so that each run is one dense tensor (engine/quant's block formats, and int8
// with fp16 scales for Q8_0) and the graph unpacks them in place. Split and Join
// move the bytes only: a block joined from its parts is the block it was split from,
// bit for bit.

// blockPart is a byte range [from, to) of a block.
type blockPart struct{ from, to int }

// blockParts lists where a type's codes, scales and third part lie in one block (an
// empty range: the type has no such part).
var blockParts = map[Type][3]blockPart{
	// {fp16 d; fp16 dmin; u8 scales[12]; u8 qs[128]}
	Q4_K: {{16, 144}, {4, 16}, {0, 4}},
	// {fp16 d; fp16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: codes qh then qs
	Q5_K: {{16, 176}, {4, 16}, {0, 4}},
	// {u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d}: codes ql then qh
	Q6_K: {{0, 192}, {192, 208}, {208, 210}},
	// {fp16 d; i8 qs[32]}: the codes and their one scale
	Q8_0: {{2, 34}, {0, 2}, {0, 0}},
	// {fp16 d; u8 qs[16]}
	Q4_0: {{2, 18}, {0, 2}, {0, 0}},
	// {fp16 d; fp16 m; u8 qs[16]}: the minimum third
	Q4_1: {{4, 20}, {0, 2}, {2, 4}},
	// {fp16 d; u8 qh[4]; u8 qs[16]}: codes qh then qs
	Q5_0: {{2, 22}, {0, 2}, {0, 0}},
	// {fp16 d; fp16 m; u8 qh[4]; u8 qs[16]}
	Q5_1: {{4, 24}, {0, 2}, {2, 4}},
	// {u8 scales[16]; u8 qs[64]; fp16 d; fp16 dmin}
	Q2_K: {{16, 80}, {0, 16}, {80, 84}},
	// {u8 hmask[32]; u8 qs[64]; u8 scales[12]; fp16 d}: codes hmask then qs
	Q3_K: {{0, 96}, {96, 108}, {108, 110}},
	// {fp16 d; u8 qs[16]}
	IQ4_NL: {{2, 18}, {0, 2}, {0, 0}},
	// {fp16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: scales scales_h then scales_l
	IQ4_XS: {{8, 136}, {2, 8}, {0, 2}},
}

// PartSizes is the bytes a block of type t puts in each part — codes, scales, the
// third — and false for a type Split does not take apart.
func PartSizes(t Type) (codes, scales, supers int, ok bool) {
	p, ok := blockParts[t]
	if !ok {
		return 0, 0, 0, false
	}
	return p[0].to - p[0].from, p[1].to - p[1].from, p[2].to - p[2].from, true
}

// Split takes whole blocks of type t in raw apart: each block's codes, scales and
// third part (supers) appended, in block order, to codes, scales and supers, which
// must hold exactly their share (PartSizes × the block count).
func Split(t Type, raw, codes, scales, supers []byte) error {
	return moveParts(t, raw, [3][]byte{codes, scales, supers}, false)
}

// Join is Split's inverse: it writes whole blocks of type t into raw from their parts.
func Join(t Type, raw, codes, scales, supers []byte) error {
	return moveParts(t, raw, [3][]byte{codes, scales, supers}, true)
}

func moveParts(t Type, raw []byte, parts [3][]byte, join bool) error {
	layout, ok := blockParts[t]
	if !ok {
		return fmt.Errorf("%s blocks are not taken apart (no part layout for that type)", t)
	}
	size := t.BlockBytes()
	if len(raw)%size != 0 {
		return fmt.Errorf("%s: %d bytes are not whole blocks of %d", t, len(raw), size)
	}
	blocks := len(raw) / size
	for i, p := range layout {
		if w := p.to - p.from; len(parts[i]) != blocks*w {
			return fmt.Errorf("%s: part %d holds %d bytes, want %d for %d blocks", t, i, len(parts[i]), blocks*w, blocks)
		}
	}
	for b := range blocks {
		blk := raw[b*size : (b+1)*size]
		for i, p := range layout {
			w := p.to - p.from
			if w == 0 {
				continue
			}
			dst, src := parts[i][b*w:(b+1)*w], blk[p.from:p.to]
			if join {
				dst, src = src, dst
			}
			copy(dst, src)
		}
	}
	return nil
}
