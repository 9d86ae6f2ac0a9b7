package corpus

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/assets"
)

// Catalog holds the entries of all dictionaries by title and resolves cross
// references to the title of the page they lead to.
type Catalog struct {
	Entries []Entry           // one per distinct title, in load order
	exact   map[string]int    // title → index in Entries
	lower   map[string]string // lower-cased title, alias or headword → title
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	return &Catalog{exact: map[string]int{}, lower: map[string]string{}}
}

// Add adds an entry unless one with the same title is there already (the first
// dictionary loaded wins: FOLDOC, which includes much of the Jargon File, comes
// first). headwords are the index keys that point to the entry. It reports
// whether the entry was added.
func (c *Catalog) Add(e Entry, headwords ...string) bool {
	if _, dup := c.exact[e.Title]; dup {
		c.alias(e.Title, headwords...)
		return false
	}
	c.exact[e.Title] = len(c.Entries)
	c.Entries = append(c.Entries, e)
	c.alias(e.Title, e.Title)
	c.alias(e.Title, e.Aliases...)
	c.alias(e.Title, headwords...)
	return true
}

func (c *Catalog) alias(title string, names ...string) {
	for _, n := range names {
		k := strings.ToLower(assets.CleanLine(n))
		if _, taken := c.lower[k]; !taken && k != "" {
			c.lower[k] = title
		}
	}
}

// Resolve returns the title of the page a cross reference to target leads to:
// the entry with exactly that title, else the entry whose title, alias or
// headword matches case-insensitively (also after dropping a plural ending),
// else target itself (a page the model
// may still be asked to write).
func (c *Catalog) Resolve(target string) string {
	t := assets.CleanLine(target)
	if _, ok := c.exact[t]; ok {
		return t
	}
	l := strings.ToLower(t)
	if title, ok := c.lower[l]; ok {
		return title
	}
	// {metasyntactic variables} → "metasyntactic variable", {libraries} → "library".
	for _, suf := range [][2]string{{"ies", "y"}, {"es", ""}, {"s", ""}} {
		if stem, ok := strings.CutSuffix(l, suf[0]); ok && stem != "" {
			if title, ok := c.lower[stem+suf[1]]; ok {
				return title
			}
		}
	}
	return t
}

// known reports whether title is an entry's title, alias or headword, in any case.
func (c *Catalog) known(title string) bool {
	_, ok := c.lower[strings.ToLower(assets.CleanLine(title))]
	return ok
}

// Has reports whether a page exists for title.
func (c *Catalog) Has(title string) bool { _, ok := c.exact[title]; return ok }

var reEmphasis = regexp.MustCompile(`(^|[\s(“"‘])\*([\pL\pN][^*]{0,60}?)\*($|[\s.,;:!?)”"’'])`)

// inlineHTML renders inline text as HTML: {refs} become /wiki/ links, *x*
// becomes <em>x</em>, everything else is escaped.
func (c *Catalog) inlineHTML(s string) string {
	var b strings.Builder
	forEachRef(s, func(text string) {
		b.WriteString(emphasisHTML(text))
	}, func(text, target string) {
		b.WriteString(`<a href="`)
		b.WriteString(assets.WikiHref(c.Resolve(target)))
		b.WriteString(`">`)
		b.WriteString(emphasisHTML(text))
		b.WriteString(`</a>`)
	})
	return b.String()
}

// emphasisHTML escapes s and turns *x* into <em>x</em>.
func emphasisHTML(s string) string {
	s = reEmphasis.ReplaceAllString(s, "$1\x02$2\x03$3")
	s = assets.EscapeText(s)
	return strings.NewReplacer("\x02", "<em>", "\x03", "</em>").Replace(s)
}

// PlainText renders inline text without markup: refs become their text,
// *emphasis* stays (it is Markdown, which chat answers are).
func PlainText(s string) string {
	var b strings.Builder
	forEachRef(s, func(text string) { b.WriteString(text) }, func(text, _ string) { b.WriteString(text) })
	return b.String()
}

// forEachRef walks s, calling plain for text outside {…} and ref for each
// cross reference. An unmatched "{" is plain text.
func forEachRef(s string, plain func(string), ref func(text, target string)) {
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			plain(s)
			return
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			plain(s)
			return
		}
		end += open
		if open > 0 {
			plain(s[:open])
		}
		text, target := splitRef(s[open+1 : end])
		if text != "" {
			if target == "" || isExternal(target) {
				plain(text)
			} else {
				ref(text, target)
			}
		}
		s = s[end+1:]
	}
}

// Page renders an entry as an encyclopedia page (the format is documented in
// package assets): the title as <h1>, the category as an emphasized line, then
// blocks while the page stays within maxChars bytes. The first block that does
// not fit is cut at a sentence (paragraph), item (list) or line (pre) boundary
// when at least one piece of it fits, or, if it is the first body block, keeps
// its first piece regardless; nothing follows it.
func (c *Catalog) Page(e Entry, maxChars int) string {
	parts := []string{"<h1>" + emphasisHTML(e.Title) + "</h1>"}
	if e.Category != "" {
		parts = append(parts, "<p><em>"+assets.EscapeText(e.Category)+"</em></p>")
	}
	size := func() int { return len(strings.Join(parts, "\n")) }
	body := 0
	for _, b := range e.Blocks {
		full := c.blockHTML(b, -1)
		if size()+1+len(full) <= maxChars {
			parts = append(parts, full)
			body++
			continue
		}
		cut := ""
		if budget := maxChars - size() - 1; budget > 0 {
			cut = c.blockHTML(b, budget)
		}
		if cut == "" && body == 0 {
			cut = c.blockHTML(b, 0)
		}
		if cut != "" {
			parts = append(parts, cut)
		}
		break
	}
	return strings.Join(parts, "\n")
}

// blockHTML renders a block. budget < 0 renders all of it; otherwise it renders
// the longest prefix of whole sentences / items / lines within budget bytes,
// "" if none fits, except budget == 0 which renders exactly the first piece.
func (c *Catalog) blockHTML(b Block, budget int) string {
	switch b.Kind {
	case Pre:
		lines := strings.Split(b.Text, "\n")
		return prefixWithin(len(lines), budget, func(n int) string {
			return "<pre>" + assets.EscapeText(strings.Join(lines[:n], "\n")) + "</pre>"
		})
	case List:
		whole := prefixWithin(len(b.Items), budget, func(n int) string {
			return c.listHTML(b.Items[:n])
		})
		if whole != "" || budget < 0 {
			return whole
		}
		// Not even the first item fits whole: cut it at a sentence.
		sents := Sentences(b.Items[0])
		return prefixWithin(len(sents), budget, func(n int) string {
			return c.listHTML([]string{strings.Join(sents[:n], " ")})
		})
	default:
		sents := Sentences(b.Text)
		return prefixWithin(len(sents), budget, func(n int) string {
			return "<p>" + c.inlineHTML(strings.Join(sents[:n], " ")) + "</p>"
		})
	}
}

func (c *Catalog) listHTML(items []string) string {
	var s strings.Builder
	s.WriteString("<ul>")
	for _, it := range items {
		s.WriteString("<li>" + c.inlineHTML(it) + "</li>")
	}
	s.WriteString("</ul>")
	return s.String()
}

// prefixWithin returns render(n) for the largest n in [1, total] whose output
// fits budget (budget < 0: n = total; budget == 0: n = 1), or "".
func prefixWithin(total, budget int, render func(n int) string) string {
	switch {
	case total == 0:
		return ""
	case budget < 0:
		return render(total)
	case budget == 0:
		return render(1)
	}
	best := ""
	for n := 1; n <= total; n++ {
		out := render(n)
		if len(out) > budget {
			break
		}
		best = out
	}
	return best
}

// abbreviations that end with a period but not a sentence.
var abbreviations = map[string]bool{
	"e.g.": true, "i.e.": true, "etc.": true, "ca.": true, "c.": true, "cf.": true, "vs.": true, "viz.": true,
	"Dr.": true, "Mr.": true, "Mrs.": true, "Ms.": true, "Prof.": true, "St.": true, "Inc.": true, "Ltd.": true,
	"Corp.": true, "Co.": true, "al.": true, "approx.": true, "no.": true, "No.": true, "Vol.": true, "vol.": true,
	"pp.": true, "p.": true, "Jr.": true, "Sr.": true, "U.S.": true, "U.K.": true, "n.": true, "adj.": true,
	"v.": true, "vt.": true, "vi.": true, "interj.": true, "adv.": true, "prep.": true, "pl.": true, "esp.": true,
	"Fig.": true, "fig.": true, "Ed.": true, "ed.": true, "Eds.": true,
}

// Sentences splits inline text into sentences at ". ", "! " and "? " (after an
// optional closing quote or bracket) followed by an upper-case letter, digit,
// quote, bracket or cross reference, never inside a {cross reference}, after a
// known abbreviation or after a single-letter initial. Joining the result with
// single spaces gives the text back.
func Sentences(s string) []string {
	var out []string
	depth := 0
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
			continue
		case '}':
			if depth > 0 {
				depth--
			}
			continue
		case '.', '!', '?':
		default:
			continue
		}
		if depth > 0 {
			continue
		}
		j := i + 1
		for j < len(s) && strings.IndexByte(`"')]`, s[j]) >= 0 {
			j++
		}
		if j < len(s) {
			if r, n := utf8.DecodeRuneInString(s[j:]); r == '”' || r == '’' {
				j += n
			}
		}
		if j >= len(s) || s[j] != ' ' {
			continue
		}
		k := j + 1
		if k >= len(s) {
			continue
		}
		next, _ := utf8.DecodeRuneInString(s[k:])
		if !(unicode.IsUpper(next) || unicode.IsDigit(next) || strings.ContainsRune(`"'({[“‘`, next)) {
			continue
		}
		if s[i] == '.' {
			w := lastWord(s[start : i+1])
			if abbreviations[w] || (utf8.RuneCountInString(w) == 2 && unicode.IsUpper([]rune(w)[0])) {
				continue
			}
		}
		out = append(out, s[start:j])
		start = k
		i = j
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func lastWord(s string) string {
	if i := strings.LastIndexAny(s, " ({"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ChatAnswer is the answer of the chat examples for an entry: the entry's
// opening sentences (at most maxChars bytes, at least one sentence) as plain
// Markdown text, after the bold title and the category:
//
//	**Unix** (operating system): An interactive time-sharing operating system …
//
// ok is false when the entry has no paragraph or list to open with.
func ChatAnswer(e Entry, maxChars int) (string, bool) {
	head := "**" + e.Title + "**"
	if e.Category != "" {
		head += " (" + e.Category + ")"
	}
	head += ": "
	text, ok := Opening(e, maxChars-len(head))
	if !ok {
		return "", false
	}
	return head + text, true
}

// Opening is the entry's opening sentences as plain Markdown text: those of
// its first paragraph or list item that fit in maxChars bytes, and at least
// one. ok is false when the entry has no paragraph or list to open with.
func Opening(e Entry, maxChars int) (string, bool) {
	var opening string
	for _, b := range e.Blocks {
		if b.Kind == Paragraph {
			opening = b.Text
			break
		}
		if b.Kind == List {
			opening = b.Items[0]
			break
		}
	}
	if opening == "" {
		return "", false
	}
	sents := Sentences(opening)
	text := PlainText(sents[0])
	for _, s := range sents[1:] {
		next := text + " " + PlainText(s)
		if len(next) > maxChars {
			break
		}
		text = next
	}
	return text, true
}
