package train

import (
	"bytes"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
)

func TestCheckPage(t *testing.T) {
	long := "<p>Unix is a family of multitasking multiuser computer operating systems that derive from the original AT&T Unix developed in the 1970s at Bell Labs by Ken Thompson.</p>"
	cases := []struct {
		name, page, title string
		structured        bool
		links             int
	}{
		{"good", `<h1>Unix</h1>` + long + `<p>See <a href="/wiki/Linux">Linux</a> and <a href="/wiki/BSD">BSD</a>.</p>`, "Unix", true, 2},
		{"title case and spaces differ", `<h1> unix </h1>` + long, "Unix", true, 0},
		{"wrong title", `<h1>Linux</h1>` + long, "Unix", false, 0},
		{"short paragraph", `<h1>Unix</h1><p>An operating system.</p>`, "Unix", false, 0},
		{"no h1", long, "Unix", false, 0},
		{"anchor without href", `<h1>Unix</h1>` + long + `<a>x</a>`, "Unix", true, 0},
	}
	for _, c := range cases {
		pc := CheckPage(c.page, c.title)
		if pc.Structured != c.structured || pc.Links != c.links || !pc.Parses {
			t.Errorf("%s: structured %v links %d parses %v; want %v %d", c.name, pc.Structured, pc.Links, pc.Parses, c.structured, c.links)
		}
	}
}

func TestWordsAndShares(t *testing.T) {
	got := Words("Don't use <b>built-in</b> C++ -- x86-64, 2 times!")
	want := []string{"don't", "use", "b", "built-in", "b", "c", "x86-64", "2", "times"}
	if len(got) != len(want) {
		t.Fatalf("Words = %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Words = %q, want %q", got, want)
		}
	}
	known := map[string]bool{"a": true, "b": true}
	if s := KnownShare([]string{"a", "b", "c", "a"}, known); s != 0.75 {
		t.Fatalf("KnownShare = %v", s)
	}
	if d := Distinct2([][]string{{"a", "b", "a", "b"}, {"a", "b"}}); math.Abs(d-2.0/4) > 1e-12 {
		t.Fatalf("Distinct2 = %v, want 0.5", d)
	}
}

func TestUnigramCE(t *testing.T) {
	// Counts 3×0, 1×1 over V = 2: p0 = 3.5/5, p1 = 1.5/5.
	ce := UnigramCE([][]int{{0, 0, 0, 1}}, [][]int{{0, 1}}, 2)
	want := -(math.Log(3.5/5) + math.Log(1.5/5)) / 2
	if math.Abs(ce-want) > 1e-12 {
		t.Fatalf("UnigramCE = %v, want %v", ce, want)
	}
}

func TestLossCurvesPNG(t *testing.T) {
	var ms []Metric
	for i := 1; i <= 50; i++ {
		ms = append(ms, Metric{Step: i, Loss: 10 / float64(i), Diffusion: 6 / float64(i), AR: 4 / float64(i)})
		if i%10 == 0 {
			ms = append(ms, Metric{Step: i, EvalLoss: 11 / float64(i)})
		}
	}
	b, err := LossCurvesPNG(ms, "test")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 900 || img.Bounds().Dy() != 560 {
		t.Fatalf("image %v", img.Bounds())
	}
	if _, err := LossCurvesPNG(nil, "empty"); err == nil {
		t.Fatal("no metrics: want an error")
	}
}

func TestRougeL(t *testing.T) {
	w := func(s string) []string { return Words(s) }
	for _, c := range []struct {
		cand, ref string
		want      float64
	}{
		{"a b c d", "a c d e", 0.75}, // LCS "a c d": 3/4 both ways
		{"a b", "a b", 1},
		{"x y", "a b", 0},
		{"", "a b", 0},
		{"the cat", "the cat sat on the mat", 2 * (1.0 * 2.0 / 6) / (1 + 2.0/6)}, // P 1, R 1/3
	} {
		if got := RougeL(w(c.cand), w(c.ref)); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("RougeL(%q, %q) = %v, want %v", c.cand, c.ref, got, c.want)
		}
	}
}

func TestBigramsAttested(t *testing.T) {
	b := NewBigrams([][]string{Words("the cat sat on the mat"), Words("the dog sat on the rug")})
	if h, n := b.Attested(Words("the cat sat on the rug"), nil); h != 5 || n != 5 {
		t.Errorf("real pairs: %d of %d, want 5 of 5", h, n)
	}
	if h, n := b.Attested(Words("rug the on sat cat the"), nil); h != 0 || n != 5 {
		t.Errorf("shuffled: %d of %d, want 0 of 5", h, n)
	}
	// Without the second text, only "sat on" and "on the" are vouched for by the first.
	if h, n := b.Attested(Words("the dog sat on the rug"), Words("the dog sat on the rug")); h != 2 || n != 5 {
		t.Errorf("left out: %d of %d, want 2 of 5", h, n)
	}
}

func TestShownWords(t *testing.T) {
	page := `<h1>Unix</h1><p>An <a href="/wiki/os">operating system</a>.</p><h1>Again</h1>`
	if got := ShownWords(page, true); strings.Join(got, " ") != "an operating system again" {
		t.Errorf("without the heading: %q", got)
	}
	if got := ShownWords(page, false); strings.Join(got, " ") != "unix an operating system again" {
		t.Errorf("with the heading: %q", got)
	}
}

func TestHeadingNames(t *testing.T) {
	for _, c := range []struct {
		answer, title string
		want          bool
	}{
		{"**compiler** (programming): A program that translates.", "compiler", true},
		{"  **Compiler**: a program", "compiler", true},
		{"**operating  system** (os): x", "operating system", true},
		{"**al compil**: A language used to be executed", "compiler", false},
		{"**a compiler**: x", "compiler", false},
		{"compiler: a program", "compiler", false},
		{"**compiler (programming): unclosed", "compiler", false},
		{"", "compiler", false},
	} {
		if got := HeadingNames(c.answer, c.title); got != c.want {
			t.Errorf("HeadingNames(%q, %q) = %v, want %v", c.answer, c.title, got, c.want)
		}
	}
}

// TestAnswerBody: the heading and its category are left out, whatever the
// form; an answer without a heading is all body.
func TestAnswerBody(t *testing.T) {
	for answer, want := range map[string]string{
		"**compiler** (programming, tool): A program that translates.": "A program that translates.",
		"**jp**: *character* An encoding.":                             "*character* An encoding.",
		"  **Unix** (os) : x":                                          "(os) : x",
		"**unclosed heading":                                           "**unclosed heading",
		"A plain answer (with parentheses): yes.":                      "A plain answer (with parentheses): yes.",
		"**bit** (unit): (b) binary digit.":                            "(b) binary digit.",
	} {
		if got := AnswerBody(answer); got != want {
			t.Errorf("AnswerBody(%q) = %q, want %q", answer, got, want)
		}
	}
}

// TestDeclines: an answer that opens with the Library answer's first words is
// counted as sent to the Library, whatever follows; anything else is not.
func TestDeclines(t *testing.T) {
	for answer, want := range map[string]bool{
		assets.ChatElsewhere(): true,
		"I am Darkroom Mini, a small computing encyclopedia that runs elsewhere.": true,
		"  i am  darkroom mini, a SMALL computing encyclopedia":                   true,
		"I am Darkroom Mini.":                   false,
		"**Unix** (operating system): An OS.":   false,
		"I am Darkroom Mini, a small computing": false,
		"":                                      false,
	} {
		if got := Declines(answer); got != want {
			t.Errorf("Declines(%q) = %v, want %v", answer, got, want)
		}
	}
}

func TestStutters(t *testing.T) {
	for text, want := range map[string]int{
		"It runs on Windows Windows and MS-DOS.":                   1,
		"used by later at macintoshacintosh, and necessarilyarily": 2,
		"The The term was was":                                     2,
		"version 3 3 of 1000 and ... the real pages":               0,
		"a quick brown fox":                                        0,
		"murmur":                                                   1, // a real word of the shape: the reference pages say how often
	} {
		if got := Stutters(Words(text)); got != want {
			t.Errorf("Stutters(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestLinkTopics(t *testing.T) {
	got := LinkTopics(`<p><a href="/wiki/operating_system">OS</a>, <a href="https://e.com/">e</a> and <a href="/wiki/C%2B%2B">C++</a>`)
	if want := []string{"operating system", "C++"}; !slices.Equal(got, want) {
		t.Errorf("LinkTopics = %q, want %q", got, want)
	}
}
