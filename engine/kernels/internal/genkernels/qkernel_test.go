package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestVEXVPDPBUSD: the VEX encoding against GNU as's (`{vex} vpdpbusd` with binutils
// 2.40, AT&T operand order src2, src1, dst as Go's), for the registers the kernel uses
// and for others in each half of the register file.
func TestVEXVPDPBUSD(t *testing.T) {
	for _, c := range []struct {
		src2, src1, dst int
		want            string
	}{
		{14, 12, 6, "c4 c2 1d 50 f6"},
		{14, 13, 7, "c4 c2 15 50 fe"},
		{14, 12, 8, "c4 42 1d 50 c6"},
		{14, 13, 9, "c4 42 15 50 ce"},
		{14, 12, 10, "c4 42 1d 50 d6"},
		{14, 13, 11, "c4 42 15 50 de"},
		{1, 2, 3, "c4 e2 6d 50 d9"},
		{0, 15, 8, "c4 62 05 50 c0"},
		{9, 3, 0, "c4 c2 65 50 c1"},
		{15, 15, 15, "c4 42 05 50 ff"},
	} {
		var got []string
		for _, m := range regexp.MustCompile(`\$0x([0-9a-f]{2})`).FindAllStringSubmatch(vexVPDPBUSD(c.src2, c.src1, c.dst), -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("VPDPBUSD Y%d, Y%d, Y%d: %s, want %s", c.src2, c.src1, c.dst, strings.Join(got, " "), c.want)
		}
	}
}

// TestAVXVNNIKernel: the AVX-VNNI kernels (groups of 32 and of 16) are the EVEX ones
// (which the kernels' tests run against the Go micro-kernel on AVX-512 machines)
// instruction for instruction, but for their names and each VPDPBUSD written in VEX
// bytes with the same operands.
func TestAVXVNNIKernel(t *testing.T) {
	text := func(k q256, gs int) []string {
		var b bytes.Buffer
		emitQ256(func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }, k, gs)
		return strings.Split(strings.ReplaceAll(b.String(), qName(k.name, gs), "NAME"), "\n")
	}
	var vex, evex q256
	for _, k := range q256Kernels {
		switch k.dot {
		case "vex":
			vex = k
		case "evex":
			evex = k
		}
	}
	for _, gs := range []int{32, 16} {
		v, e := text(vex, gs), text(evex, gs)
		if len(v) != len(e) {
			t.Fatalf("groups of %d: %d lines against %d", gs, len(v), len(e))
		}
		dots := 0
		for i := range v {
			if v[i] == e[i] {
				continue
			}
			var s2, s1, d int
			if _, err := fmt.Sscanf(strings.TrimSpace(e[i]), "VPDPBUSD Y%d, Y%d, Y%d", &s2, &s1, &d); err != nil {
				t.Fatalf("groups of %d, line %d differs: %q against %q", gs, i, v[i], e[i])
			}
			if want := "\t" + vexVPDPBUSD(s2, s1, d); v[i] != want {
				t.Fatalf("groups of %d, line %d: %q, want %q", gs, i, v[i], want)
			}
			dots++
		}
		if want := gs / 4 * 3 * 2; dots != want {
			t.Fatalf("groups of %d: %d VPDPBUSD lines, want %d", gs, dots, want)
		}
	}
}
