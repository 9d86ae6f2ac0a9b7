package train

import (
	"bufio"
	"hash/maphash"
	"math"
	"os"
	"strings"
	"unicode"

	"github.com/darkroomlabs/darkroom/assets"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// PageCheck is what the eval measures on one generated encyclopedia page.
type PageCheck struct {
	Parses     bool // golang.org/x/net/html builds a tree with an <h1>
	TitleH1    bool // the first <h1>'s text is the requested title
	LongPara   bool // at least one <p> of ≥ 20 words
	Links      int  // <a href> elements
	Words      []string
	Structured bool // TitleH1 && LongPara
}

// CheckPage parses generated page HTML and checks it against the page format.
func CheckPage(page, title string) PageCheck {
	var pc PageCheck
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return pc
	}
	pc.Parses = true
	var h1 *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "h1":
				if h1 == nil {
					h1 = n
				}
			case "p":
				if len(Words(textOf(n))) >= 20 {
					pc.LongPara = true
				}
			case "a":
				for _, a := range n.Attr {
					if a.Key == "href" && a.Val != "" {
						pc.Links++
						break
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if h1 != nil {
		pc.TitleH1 = normalizeTitle(textOf(h1)) == normalizeTitle(title)
	}
	pc.Words = Words(textOf(doc))
	pc.Structured = pc.TitleH1 && pc.LongPara
	return pc
}

func normalizeTitle(s string) string { return strings.ToLower(assets.CleanLine(s)) }

// textOf concatenates the text nodes under n, separating elements by spaces.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode {
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// Words splits text into lower-case words: maximal runs of letters and digits
// (an inner apostrophe or hyphen joins, e.g. "don't", "built-in").
func Words(s string) []string {
	var out []string
	var cur []rune
	rs := []rune(s)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		case (r == '\'' || r == '-') && len(cur) > 0 && i+1 < len(rs) && (unicode.IsLetter(rs[i+1]) || unicode.IsDigit(rs[i+1])):
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// LoadWordSet reads a word list (one word per line, e.g. the corpus's
// words.txt), normalizing each line with Words.
func LoadWordSet(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	set := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		for _, w := range Words(sc.Text()) {
			set[w] = true
		}
	}
	return set, sc.Err()
}

// WordSetOf collects the words of texts.
func WordSetOf(texts []string) map[string]bool {
	set := map[string]bool{}
	for _, t := range texts {
		for _, w := range Words(t) {
			set[w] = true
		}
	}
	return set
}

// KnownShare is the share of words found in known (NaN for no words).
func KnownShare(words []string, known map[string]bool) float64 {
	if len(words) == 0 {
		return math.NaN()
	}
	n := 0
	for _, w := range words {
		if known[w] {
			n++
		}
	}
	return float64(n) / float64(len(words))
}

// Distinct2 is the number of distinct word bigrams over the total number of
// bigrams, pooled over all texts (the usual corpus-level distinct-2).
func Distinct2(texts [][]string) float64 {
	seen := map[[2]string]bool{}
	total := 0
	for _, ws := range texts {
		for i := 1; i < len(ws); i++ {
			seen[[2]string{ws[i-1], ws[i]}] = true
			total++
		}
	}
	if total == 0 {
		return 0
	}
	return float64(len(seen)) / float64(total)
}

// UnigramCE is the cross-entropy (nats/token) of targets under the unigram
// distribution of train, with add-½ smoothing over a vocabulary of size v: the
// baseline a model must beat.
func UnigramCE(train [][]int, targets [][]int, v int) float64 {
	counts := make([]float64, v)
	total := 0.0
	for _, seq := range train {
		for _, t := range seq {
			if t >= 0 && t < v {
				counts[t]++
				total++
			}
		}
	}
	denom := total + 0.5*float64(v)
	sum, n := 0.0, 0
	for _, seq := range targets {
		for _, t := range seq {
			if t >= 0 && t < v {
				sum -= math.Log((counts[t] + 0.5) / denom)
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Bigrams is the reference of the "reads like English" measure: the word
// bigrams (Words, in order) of a body of real text with their counts. Real
// prose reuses the word pairs of other real prose ("of the", "a program",
// "used to"); shuffled words and word salad form pairs no writer wrote.
type Bigrams struct {
	seed maphash.Seed
	n    map[uint64]int32
}

// NewBigrams counts the word bigrams of texts.
func NewBigrams(texts [][]string) *Bigrams {
	b := &Bigrams{seed: maphash.MakeSeed(), n: map[uint64]int32{}}
	for _, ws := range texts {
		b.Add(ws)
	}
	return b
}

// Add counts the bigrams of one more text.
func (b *Bigrams) Add(words []string) {
	for i := 1; i < len(words); i++ {
		b.n[b.key(words[i-1], words[i])]++
	}
}

func (b *Bigrams) key(w1, w2 string) uint64 { return maphash.String(b.seed, w1+"\x00"+w2) }

// Attested counts the bigrams of words that occur in the reference (hit) and
// all of them (total). without is a text that the reference holds but that
// must not vouch for words: the corpus entry of the page's own title, so a
// seen page that copies its entry scores what the real page scores, and the
// real page is not scored against itself.
func (b *Bigrams) Attested(words, without []string) (hit, total int) {
	own := map[uint64]int32{}
	for i := 1; i < len(without); i++ {
		own[b.key(without[i-1], without[i])]++
	}
	for i := 1; i < len(words); i++ {
		k := b.key(words[i-1], words[i])
		if b.n[k]-own[k] > 0 {
			hit++
		}
		total++
	}
	return hit, total
}

// RougeL is the ROUGE-L F1 of a candidate text against a reference, on words:
// the longest common subsequence over the candidate's length (precision) and
// the reference's (recall), combined as their harmonic mean. 0 when either is
// empty.
func RougeL(cand, ref []string) float64 {
	if len(cand) == 0 || len(ref) == 0 {
		return 0
	}
	prev, cur := make([]int, len(ref)+1), make([]int, len(ref)+1)
	for _, c := range cand {
		for j, r := range ref {
			if c == r {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	lcs := float64(prev[len(ref)])
	if lcs == 0 {
		return 0
	}
	p, r := lcs/float64(len(cand)), lcs/float64(len(ref))
	return 2 * p * r / (p + r)
}

// ShownWords are the words of a page's text (Words), as the page shows it: the
// text of its parsed tree. With noHeading the first <h1> is left out (the title,
// held, says nothing about what the page knows).
func ShownWords(page string, noHeading bool) []string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return Words(page)
	}
	if noHeading {
		var h1 *html.Node
		var find func(n *html.Node)
		find = func(n *html.Node) {
			for c := n.FirstChild; c != nil && h1 == nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.DataAtom == atom.H1 {
					h1 = c
					return
				}
				find(c)
			}
		}
		find(doc)
		if h1 != nil {
			h1.Parent.RemoveChild(h1)
		}
	}
	return Words(textOf(doc))
}

// Stutters counts the stutters of a text's words (Words): a word with a letter
// written twice side by side ("windows windows"), and a word that ends in the
// same run of three or more characters twice ("macintoshacintosh",
// "necessarilyarily") — what a parallel decoder writes when neighbouring
// positions guess the same piece. Real words of that shape ("murmur") count too;
// the real pages, scored the same way, say how often.
func Stutters(words []string) int {
	n := 0
	for i, w := range words {
		if i > 0 && w == words[i-1] && strings.IndexFunc(w, unicode.IsLetter) >= 0 {
			n++
			continue
		}
		for k := 3; 2*k <= len(w); k++ {
			if w[len(w)-2*k:len(w)-k] == w[len(w)-k:] {
				n++
				break
			}
		}
	}
	return n
}

// LinkTopics are the topics of a page's encyclopedia links
// (assets.TitleFromHref), in order.
func LinkTopics(page string) []string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return nil
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.A {
			for _, a := range n.Attr {
				if a.Key == "href" {
					if t, ok := assets.TitleFromHref(a.Val); ok {
						out = append(out, t)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}
