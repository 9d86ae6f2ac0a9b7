package kernels

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAsmVEXOnly reads this package's amd64 assembly, its macros expanded, and fails
// on two things that cost nothing on the Intel machines the kernels were first timed
// on and a great deal on others:
//
//   - a legacy (non-VEX) SSE instruction on an X register — MOVL AX, X15 for VMOVD,
//     MOVSS for VMOVSS — in a function: after a 256-bit instruction has left the
//     registers' upper halves in use, each one stalls an AMD EPYC (Zen 3) core for
//     about as long as a row of the printer takes; one such MOVL in dotNVFP4IntAVX2's
//     preamble ran [2816,2816] at 4.1 GB/s against 16, one in BLOCK_D ran Q5_0 at 0.37
//     against 19.7, and the NVFP4 26B's AR token took 643 ms against 177;
//   - a return without VZEROUPPER after the function touched a Y or Z register, which
//     would leave Go's own SSE code (every float the compiler writes) to pay it.
func TestAsmVEXOnly(t *testing.T) {
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no amd64 assembly found (%v)", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range asmVEXProblems(string(src)) {
			t.Errorf("%s: %s", f, p)
		}
	}
}

// TestAsmVEXProblems: asmVEXProblems finds each kind of problem, in a macro's
// expansion too, and passes VEX code.
func TestAsmVEXProblems(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      int
	}{
		{"vex", "TEXT ·f(SB), 0, $0\n\tVMOVD AX, X1\n\tVPBROADCASTD X1, Y1\n\tVMOVSS X0, ret+0(FP)\n\tVZEROUPPER\n\tRET\n", 0},
		{"legacy movl", "TEXT ·f(SB), 0, $0\n\tVPBROADCASTD X1, Y1\n\tMOVL AX, X2\n\tVZEROUPPER\n\tRET\n", 1},
		{"legacy movss store", "TEXT ·f(SB), 0, $0\n\tVADDPS Y0, Y1, Y1\n\tMOVSS X0, ret+0(FP)\n\tVZEROUPPER\n\tRET\n", 1},
		{"in a macro", "#define D(x) \\\n\tMOVWLZX 0(SI), AX; \\\n\tMOVL AX, x; \\\n\tVCVTPH2PS x, x\n\nTEXT ·f(SB), 0, $0\n\tD(X4)\n\tRET\n", 1},
		{"no vzeroupper", "TEXT ·f(SB), 0, $0\n\tVADDPS Y0, Y1, Y1\n\tRET\n", 1},
		{"vzeroupper too early", "TEXT ·f(SB), 0, $0\n\tVZEROUPPER\n\tVADDPS Z0, Z1, Z1\n\tRET\n", 1},
		{"x only", "TEXT ·f(SB), 0, $0\n\tVADDSS X0, X1, X1\n\tMOVQ AX, ret+0(FP)\n\tRET\n", 0},
	} {
		if got := asmVEXProblems(c.src); len(got) != c.want {
			t.Errorf("%s: %d problems %q, want %d", c.name, len(got), got, c.want)
		}
	}
}

var (
	asmDefine = regexp.MustCompile(`^#define\s+(\w+)(\(([^)]*)\))?\s*(.*)$`)
	asmCall   = regexp.MustCompile(`^(\w+)\s*(\((.*)\))?$`)
	asmText   = regexp.MustCompile(`^TEXT\s+(\S+)\(SB\)`)
	asmVecReg = regexp.MustCompile(`\b[XYZ]([0-9]|[12][0-9]|3[01])\b`)
	asmWide   = regexp.MustCompile(`\b[YZ]([0-9]|[12][0-9]|3[01])\b`)
)

// asmVEXProblems lists TestAsmVEXOnly's problems in one assembly file.
func asmVEXProblems(src string) []string {
	// Join continued lines and drop comments.
	var lines []string
	var cur strings.Builder
	for _, l := range strings.Split(src, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimRight(l, " \t")
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(strings.TrimSuffix(l, `\`))
			continue
		}
		cur.WriteString(l)
		lines = append(lines, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	type macro struct {
		params []string
		body   string
	}
	macros := map[string]macro{}
	var expand func(stmt string, depth int) []string
	expand = func(stmt string, depth int) []string {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			return nil
		}
		m := asmCall.FindStringSubmatch(stmt)
		if m != nil && depth < 8 {
			if mac, ok := macros[m[1]]; ok {
				body := mac.body
				if len(mac.params) > 0 {
					args := strings.Split(m[3], ",")
					for i, p := range mac.params {
						if i < len(args) {
							body = regexp.MustCompile(`\b`+regexp.QuoteMeta(p)+`\b`).ReplaceAllLiteralString(body, strings.TrimSpace(args[i]))
						}
					}
				}
				var out []string
				for _, s := range strings.Split(body, ";") {
					out = append(out, expand(s, depth+1)...)
				}
				return out
			}
		}
		return []string{stmt}
	}
	var problems []string
	fn, wide := "", false // the function, and whether it has used a Y or Z register since its last VZEROUPPER
	for _, l := range lines {
		if m := asmDefine.FindStringSubmatch(l); m != nil {
			var params []string
			for _, p := range strings.Split(m[3], ",") {
				if p = strings.TrimSpace(p); p != "" {
					params = append(params, p)
				}
			}
			macros[m[1]] = macro{params, m[4]}
			continue
		}
		if m := asmText.FindStringSubmatch(l); m != nil {
			fn, wide = m[1], false
			continue
		}
		if fn == "" || l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for _, s := range strings.Split(l, ";") {
			for _, ins := range expand(s, 0) {
				if strings.HasSuffix(ins, ":") {
					continue
				}
				op, args, _ := strings.Cut(ins, " ")
				switch {
				case op == "VZEROUPPER":
					wide = false
				case op == "RET":
					if wide {
						problems = append(problems, fn+": RET after a Y or Z register without VZEROUPPER")
					}
				case op == "DATA" || op == "GLOBL":
				case !strings.HasPrefix(op, "V") && !strings.HasPrefix(op, "K") && asmVecReg.MatchString(args):
					problems = append(problems, fn+": legacy SSE "+ins+" (use its VEX form, V"+op+" or VMOVD)")
				}
				if asmWide.MatchString(args) {
					wide = true
				}
			}
		}
	}
	return problems
}
