package corpus

import (
	"regexp"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
)

// Entry is one dictionary definition, cleaned up into blocks. Inline text keeps
// the dictionary's own markup until it is rendered: {cross reference},
// {text (target)} and *emphasis*.
type Entry struct {
	Source   string   // the dictionary ("foldoc", "jargon") or ExtraSource ("wordnet", "vera", "python")
	Title    string   // the entry's own spelling of its headword (first header line)
	Aliases  []string // other headwords in the header
	Category string   // FOLDOC's subject, e.g. "operating system" ("" if none)
	Blocks   []Block
}

// BlockKind tells how a block renders.
type BlockKind int

const (
	Paragraph BlockKind = iota // <p>
	List                       // <ul><li>…
	Pre                        // <pre>, verbatim
)

// Block is one paragraph, list or verbatim block of an entry.
type Block struct {
	Kind  BlockKind
	Text  string   // Paragraph and Pre (Pre keeps its newlines)
	Items []string // List
}

var (
	reEmail      = regexp.MustCompile(`\s*<[^<>\s@]+@[^<>\s]+>`)
	reDateOnly   = regexp.MustCompile(`^\(\d{4}-\d{2}(-\d{2})?\)\.?$`)
	reBareURL    = regexp.MustCompile(`(?i)\b(?:https?|ftp|telnet|gopher|news|mailto):[^\s{}]+`)
	reCategory   = regexp.MustCompile(`^<([^<>@]{1,40})>\s*`)
	rePronounce  = regexp.MustCompile(`^/[^/\s][^/]{0,40}/[,;]?\s*`)
	reListItem   = regexp.MustCompile(`^(?:\d{1,2}\.|[*•])\s+`)
	reHasWord    = regexp.MustCompile(`[\pL\pN]`)
	reEmptyParen = regexp.MustCompile(`\(\s*\)`)
	reMultiSpace = regexp.MustCompile(`[ \t]{2,}`)
	reSpacePunct = regexp.MustCompile(` +([.,;:])`)
)

// ParseEntry turns the raw text of one dictd definition into an Entry. ok is
// false for dictionary metadata (the 00-database-* entries) and for entries that
// have no text left after cleaning.
//
// The raw layout: header lines up to the first blank line (the headword, then
// FOLDOC's aliases unindented or the Jargon File's indented pronunciation and
// part of speech), then paragraphs separated by blank lines at the body's
// indentation. A paragraph indented deeper than the body is verbatim (Pre); one
// indented less continues the previous paragraph (FOLDOC wraps long URLs at
// column 0). Paragraphs starting "1. " or "* " are list items. Dropped: the
// date stamps "(1996-06-01)", paragraphs that are only a bracketed citation
// ("[{Jargon File}]"), e-mail addresses, external links and bare URLs.
func ParseEntry(source, raw string) (Entry, bool) {
	lines := strings.Split(strings.ReplaceAll(raw, "\t", "        "), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return Entry{}, false
	}
	e := Entry{Source: source, Title: assets.CleanLine(lines[0])}
	if e.Title == "" || strings.HasPrefix(e.Title, "00-database") || strings.HasPrefix(e.Title, "00database") {
		return Entry{}, false
	}
	i := 1
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		if indent(lines[i]) == 0 {
			if a := assets.CleanLine(lines[i]); a != "" && a != e.Title {
				e.Aliases = append(e.Aliases, a)
			}
		}
	}
	paras := splitParagraphs(lines[i:])
	first := true
	for _, p := range paras {
		if p.pre {
			e.Blocks = append(e.Blocks, Block{Kind: Pre, Text: p.text})
			continue
		}
		text := cleanText(p.text)
		if text == "" {
			continue
		}
		item := false
		if m := reListItem.FindString(text); m != "" {
			item = true
			text = text[len(m):]
		}
		if m := reCategory.FindStringSubmatch(text); m != nil {
			if e.Category == "" && first && !item {
				e.Category = assets.CleanLine(m[1])
				text = text[len(m[0]):]
			} else {
				text = "*" + assets.CleanLine(m[1]) + "* " + text[len(m[0]):]
			}
		}
		if first {
			text = rePronounce.ReplaceAllString(text, "")
		}
		if !reHasWord.MatchString(text) {
			continue
		}
		first = false
		if item {
			if n := len(e.Blocks); n > 0 && e.Blocks[n-1].Kind == List {
				e.Blocks[n-1].Items = append(e.Blocks[n-1].Items, text)
			} else {
				e.Blocks = append(e.Blocks, Block{Kind: List, Items: []string{text}})
			}
			continue
		}
		e.Blocks = append(e.Blocks, Block{Kind: Paragraph, Text: text})
	}
	if !hasText(e.Blocks) {
		return Entry{}, false
	}
	return e, true
}

func hasText(blocks []Block) bool {
	for _, b := range blocks {
		if b.Kind != Pre {
			return true
		}
	}
	return false
}

type rawPara struct {
	text string
	pre  bool
}

// splitParagraphs groups body lines into paragraphs (see ParseEntry).
func splitParagraphs(lines []string) []rawPara {
	base := -1
	var out []rawPara
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		first := indent(cur[0])
		switch {
		case base < 0:
			base = first
			fallthrough
		case first == base || (first < base && len(out) == 0):
			out = append(out, rawPara{text: joinTrimmed(cur)})
		case first < base:
			prev := &out[len(out)-1]
			if prev.pre {
				out = append(out, rawPara{text: joinTrimmed(cur)})
			} else {
				prev.text += " " + joinTrimmed(cur)
			}
		default:
			out = append(out, rawPara{text: dedent(cur), pre: true})
		}
		cur = nil
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		cur = append(cur, strings.TrimRight(l, " \r"))
	}
	flush()
	return out
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

func joinTrimmed(lines []string) string {
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = strings.TrimSpace(l)
	}
	return strings.Join(parts, " ")
}

func dedent(lines []string) string {
	m := -1
	for _, l := range lines {
		if n := indent(l); m < 0 || n < m {
			m = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[m:]
	}
	return strings.Join(out, "\n")
}

// cleanText drops what a page must not carry (e-mail addresses, external links,
// URLs, date stamps, citation-only paragraphs) and normalizes spacing.
func cleanText(s string) string {
	s = assets.CleanLine(s)
	if reDateOnly.MatchString(s) || isBracketOnly(s) {
		return ""
	}
	s = reEmail.ReplaceAllString(s, "")
	if !reHasWord.MatchString(reBareURL.ReplaceAllString(stripExternalRefs(s, false), "")) {
		return "" // only external links: "{Home page (http://…)}."
	}
	s = stripExternalRefs(s, true)
	s = reBareURL.ReplaceAllString(s, "")
	s = reEmptyParen.ReplaceAllString(s, "")
	s = reMultiSpace.ReplaceAllString(s, " ")
	s = reSpacePunct.ReplaceAllString(s, "$1")
	s = strings.TrimSpace(s)
	if strings.TrimLeft(s, ".,;: ") == "" || isBracketOnly(s) {
		return ""
	}
	return s
}

// isBracketOnly reports a paragraph that is one [bracketed citation].
func isBracketOnly(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return false
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 && i != len(s)-1 {
				return false
			}
		}
	}
	return depth == 0
}

// stripExternalRefs replaces {text (http://…)} by text (or by nothing unless
// keepText) and drops {(http://…)} and {http://…}: links leave the encyclopedia
// only as plain text.
func stripExternalRefs(s string, keepText bool) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			b.WriteString(s)
			return b.String()
		}
		end += open
		b.WriteString(s[:open])
		inner := s[open+1 : end]
		text, target := splitRef(inner)
		switch {
		case isExternal(target):
			if keepText {
				b.WriteString(text)
			}
		case isExternal(text):
		default:
			b.WriteString(s[open : end+1])
		}
		s = s[end+1:]
	}
}

var reRefTarget = regexp.MustCompile(`^(.*?)\s*\(([^()]+)\)$`)

// splitRef splits the inside of a cross reference "text (target)" into its parts;
// a plain "text" is its own target.
func splitRef(inner string) (text, target string) {
	inner = strings.TrimSpace(inner)
	if m := reRefTarget.FindStringSubmatch(inner); m != nil {
		return strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
	}
	return inner, inner
}

func isExternal(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "://") || strings.HasPrefix(l, "news:") || strings.HasPrefix(l, "mailto:") ||
		strings.HasSuffix(l, ".html") || strings.HasSuffix(l, ".htm") || strings.HasPrefix(l, "www.")
}
