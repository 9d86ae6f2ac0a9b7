package train

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// knFixture is a tiny corpus of training pages (kind "page").
var knFixture = []string{
	"<h1>Unix</h1><p>Unix is an operating system. It is a family of operating systems that derive from the original Unix.</p>",
	"<h1>Linux</h1><p>Linux is an operating system kernel. It is a clone of Unix written from scratch.</p>",
	"<h1>BSD</h1><p>BSD is an operating system that derives from the original Unix. It is a family of systems.</p>",
	"<h1>Plan 9</h1><p>Plan 9 is a distributed operating system from Bell Labs. It is a successor of Unix.</p>",
	"<h1>Kernel</h1><p>The kernel is the part of an operating system that runs the programs. It is a program.</p>",
}

func knFixtureTexts() [][]string {
	var texts [][]string
	for _, p := range knFixture {
		texts = append(texts, ShownWords(p, false))
	}
	return texts
}

// naiveKN computes interpolated Kneser-Ney from its definition, by counting
// over the list of training trigrams for every probability: the reference
// KneserNey's incremental counts are checked against.
type naiveKN struct {
	tri   [][3]string
	vocab map[string]bool
}

func newNaiveKN(texts [][]string) *naiveKN {
	n := &naiveKN{vocab: map[string]bool{}}
	c := map[string]int{}
	for _, ws := range texts {
		for _, w := range ws {
			c[w]++
		}
	}
	for w, k := range c {
		if k > 1 {
			n.vocab[w] = true
		}
	}
	for _, ws := range texts {
		d := append([]string{"<s>", "<s>"}, n.norm(ws)...)
		for i := 2; i < len(d); i++ {
			n.tri = append(n.tri, [3]string{d[i-2], d[i-1], d[i]})
		}
	}
	return n
}

// words are the vocabulary and <unk>, sorted.
func (n *naiveKN) words() []string {
	ws := []string{"<unk>"}
	for w := range n.vocab {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	return ws
}

func (n *naiveKN) norm(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = "<unk>"
		if n.vocab[w] {
			out[i] = w
		}
	}
	return out
}

// distinct counts the distinct values of pick over the trigrams that match.
func (n *naiveKN) distinct(match func(t [3]string) bool, pick func(t [3]string) string) int {
	seen := map[string]bool{}
	for _, t := range n.tri {
		if match(t) {
			seen[pick(t)] = true
		}
	}
	return len(seen)
}

func (n *naiveKN) p1(w string) float64 {
	cont := func(w string) int { // N1+(••w): distinct v with some (u, v, w)
		return n.distinct(func(t [3]string) bool { return t[2] == w }, func(t [3]string) string { return t[1] })
	}
	total := 0
	for _, x := range n.words() {
		total += cont(x)
	}
	return float64(cont(w)+1) / float64(total+len(n.vocab)+1)
}

func (n *naiveKN) p2(v, w string) float64 {
	cont := func(x string) int { // N1+(•vx)
		return n.distinct(func(t [3]string) bool { return t[1] == v && t[2] == x }, func(t [3]string) string { return t[0] })
	}
	total, followers := 0, 0
	for _, x := range n.words() {
		if k := cont(x); k > 0 {
			total += k
			followers++
		}
	}
	if total == 0 {
		return n.p1(w)
	}
	return math.Max(float64(cont(w))-0.75, 0)/float64(total) + 0.75*float64(followers)/float64(total)*n.p1(w)
}

func (n *naiveKN) p3(u, v, w string) float64 {
	c, cw := 0, 0
	for _, t := range n.tri {
		if t[0] == u && t[1] == v {
			c++
			if t[2] == w {
				cw++
			}
		}
	}
	if c == 0 {
		return n.p2(v, w)
	}
	followers := n.distinct(func(t [3]string) bool { return t[0] == u && t[1] == v }, func(t [3]string) string { return t[2] })
	return math.Max(float64(cw)-0.75, 0)/float64(c) + 0.75*float64(followers)/float64(c)*n.p2(v, w)
}

// TestKneserNeyMatchesDefinition checks every p(w|u,v) over the vocabulary,
// <unk> and the start padding against naiveKN, and that each context's
// distribution sums to 1 over the vocabulary and <unk>.
func TestKneserNeyMatchesDefinition(t *testing.T) {
	texts := knFixtureTexts()
	m, ref := NewKneserNey(texts), newNaiveKN(texts)
	words := ref.words()
	if m.Vocabulary() != len(words) {
		t.Fatalf("Vocabulary() = %d, want %d (words seen twice or more, and <unk>)", m.Vocabulary(), len(words))
	}
	// Prob's spelling of the padding and of a word outside the vocabulary.
	arg := func(w string) string {
		switch w {
		case "<s>":
			return ""
		case "<unk>":
			return "zzz-not-a-word"
		}
		return w
	}
	contexts := append([]string{"<s>"}, words...)
	for _, u := range contexts {
		for _, v := range contexts {
			if v == "<s>" && u != "<s>" {
				continue // the padding only comes first
			}
			sum := 0.0
			for _, w := range words {
				got, want := m.Prob(arg(u), arg(v), arg(w)), ref.p3(u, v, w)
				if math.Abs(got-want) > 1e-12 {
					t.Fatalf("p(%s | %s %s) = %v, want %v", w, u, v, got, want)
				}
				sum += got
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("p(· | %s %s) sums to %v, want 1", u, v, sum)
			}
		}
	}
}

// TestKneserNeyAgreesWithKnPy compares with kn.py, the measure's Python
// prototype (issue 15's sweep, /work/sweep13/kn.py): its own fitting code run
// on knFixture printed these numbers. The harness wrote knFixture as
// train.jsonl and ran kn.py up to its report function with the corpus paths
// pointed there:
//
//	src = open("kn.py").read().replace("/work/main/train-runs/corpus/", FIXTURE_DIR)
//	exec(src[:src.index("def report")])
//	print(V); print(bits(text.split())); print(p3(u, v, "a"), p3(u, v, "unix"))
func TestKneserNeyAgreesWithKnPy(t *testing.T) {
	m := NewKneserNey(knFixtureTexts())
	if m.Vocabulary() != 20 {
		t.Errorf("V = %d, kn.py: 20", m.Vocabulary())
	}
	for _, c := range []struct {
		text string
		bits float64
	}{
		{"it is a family of operating systems", 11.49065700485542},
		{"systems operating of family a is it", 35.654284313097406},
		{"minix is an operating system from scratch", 14.135784436420279},
	} {
		b, n := m.Bits(strings.Fields(c.text))
		if n != 7 || math.Abs(b-c.bits) > 1e-9 {
			t.Errorf("Bits(%q) = %v over %d words; kn.py: %v over 7", c.text, b, n, c.bits)
		}
	}
	for _, c := range []struct {
		u, v    string
		a, unix float64
	}{
		{"", "", 0.01584507042253521, 0.12711267605633803},
		{"it", "is", 0.8828345070422535, 0.003961267605633803},
		{"operating", "system", 0.012676056338028168, 0.03169014084507042},
		{"is", "a", 0.00528169014084507, 0.013204225352112676},
		{"zzz", "zzz", 0.01056338028169014, 0.02640845070422535}, // kn.py: <unk> <unk>
	} {
		if a, u := m.Prob(c.u, c.v, "a"), m.Prob(c.u, c.v, "unix"); math.Abs(a-c.a) > 1e-12 || math.Abs(u-c.unix) > 1e-12 {
			t.Errorf("p(a | %q %q) = %v, p(unix | …) = %v; kn.py: %v, %v", c.u, c.v, a, u, c.a, c.unix)
		}
	}
}

// TestOrderGain: a sentence in the training pages' order gains over its words
// shuffled; the same words reversed lose, and so does a page of one word
// repeated, which no order can help.
func TestOrderGain(t *testing.T) {
	m := NewKneserNey(knFixtureTexts())
	gain := func(text string) float64 {
		var s OrderScore
		s.Add(m, strings.Fields(text), rand.New(rand.NewPCG(1, 3)))
		if s.Words != len(strings.Fields(text)) || s.BitsPerWord() <= 0 {
			t.Fatalf("%q: %d words, %v bits/word", text, s.Words, s.BitsPerWord())
		}
		return s.OrderGain()
	}
	real := "linux is a family of operating systems that derive from the original unix"
	ws := strings.Fields(real)
	slices.Reverse(ws)
	reversed := strings.Join(ws, " ")
	if g, r := gain(real), gain(reversed); !(g > 1 && r < 0) {
		t.Errorf("order gain: as written %.2f, reversed %.2f bits/word; want > 1 and < 0", g, r)
	}
	if g := gain("unix unix unix unix"); g != 0 {
		t.Errorf("one word repeated: gain %v, want 0", g)
	}
	var empty OrderScore
	if empty.OrderGain() != 0 || empty.BitsPerWord() != 0 {
		t.Errorf("no words: %v, %v", empty.OrderGain(), empty.BitsPerWord())
	}
}

// TestKneserNeyWithout: taking a text's counts out gives the model fitted
// without it, p(w|u,v) for every context and word, when the vocabulary stays
// the same; Without(nil) is the model itself.
func TestKneserNeyWithout(t *testing.T) {
	extra := ShownWords("<h1>Unix</h1><p>It is a family of operating systems from the original Unix.</p>", false)
	others := knFixtureTexts()
	full := NewKneserNey(append(slices.Clone(others), extra))
	refit, without := NewKneserNey(others), full.Without(extra)
	if refit.Vocabulary() != full.Vocabulary() {
		t.Fatalf("fixture: the vocabulary changes without the text (%d, %d words)", refit.Vocabulary(), full.Vocabulary())
	}
	if full.Without(nil) != full {
		t.Errorf("Without(nil) is a new model")
	}
	words := append(newNaiveKN(others).words(), "")
	changed := 0
	for _, u := range words {
		for _, v := range words {
			for _, w := range words[:len(words)-1] {
				got, want := without.Prob(u, v, w), refit.Prob(u, v, w)
				if math.Abs(got-want) > 1e-12 {
					t.Fatalf("p(%s | %q %q) without the text = %v, fitted without it %v", w, u, v, got, want)
				}
				if math.Abs(got-full.Prob(u, v, w)) > 1e-12 {
					changed++
				}
			}
		}
	}
	if changed == 0 {
		t.Fatal("fixture: the text changes no probability")
	}
	out, _ := without.Bits(extra)
	in, _ := full.Bits(extra)
	if out <= in {
		t.Errorf("the text scores %v bits left out, %v seen; want more left out", out, in)
	}
}
