package gguf

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestSplitJoin: each kept type's blocks split into parts of PartSizes and join back
// bit for bit; parts of the wrong size, a partial block and a type not kept are
// errors that leave the parts as they were.
func TestSplitJoin(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 1))
	for _, typ := range []Type{Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, IQ4_XS} {
		c, s, u, ok := PartSizes(typ)
		if !ok || c+s+u != typ.BlockBytes() {
			t.Fatalf("%s: parts %d+%d+%d (%v), a block is %d bytes", typ, c, s, u, ok, typ.BlockBytes())
		}
		const blocks = 5
		raw := make([]byte, blocks*typ.BlockBytes())
		for i := range raw {
			raw[i] = byte(r.UintN(256))
		}
		codes, scales, supers := make([]byte, blocks*c), make([]byte, blocks*s), make([]byte, blocks*u)
		if err := Split(typ, raw, codes, scales, supers); err != nil {
			t.Fatal(err)
		}
		back := make([]byte, len(raw))
		if err := Join(typ, back, codes, scales, supers); err != nil || !bytes.Equal(back, raw) {
			t.Errorf("%s: joined blocks differ from the split ones (%v)", typ, err)
		}
		before := bytes.Clone(codes)
		if err := Split(typ, raw[:len(raw)-1], codes, scales, supers); err == nil {
			t.Errorf("%s: a partial block split", typ)
		}
		if err := Split(typ, raw, codes[:len(codes)-1], scales, supers); err == nil {
			t.Errorf("%s: short codes accepted", typ)
		}
		if !bytes.Equal(codes, before) {
			t.Errorf("%s: a refused split wrote its parts", typ)
		}
	}
	if _, _, _, ok := PartSizes(Q8_1); ok {
		t.Error("Q8_1 has parts")
	}
	if err := Split(Q8_1, make([]byte, Q8_1.BlockBytes()), nil, nil, nil); err == nil {
		t.Error("Q8_1 split")
	}
}
