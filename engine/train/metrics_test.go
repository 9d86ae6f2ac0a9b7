package train

import (
	"bytes"
	"image/png"
	"math"
	"testing"
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
