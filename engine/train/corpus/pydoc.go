package corpus

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/markup"
)

// The Python documentation (python3.11-doc) is Sphinx HTML. Its glossary is a
// <dl class="glossary"> of terms; the tutorial, the HOWTOs and the FAQ are
// nested <section>s, each with its heading (h1–h6, numbered "4.1. " in a
// span.section-number, ending in a "¶" permalink) and its own paragraphs,
// lists and highlighted code blocks before its subsections.

// pyDocDirs are the folders of the Python documentation the corpus reads (the
// library and language references are API listings, not prose).
var pyDocDirs = []string{"tutorial", "howto", "faq"}

// QA is a question with its answer: a FAQ entry, which becomes a chat example
// asking Question and answered by Entry's opening sentences.
type QA struct {
	Question string
	Entry    Entry
}

// genericTitles are section headings that name no topic of their own; a page
// under such a title would teach the model that "Introduction" means Python.
var genericTitles = map[string]bool{}

func init() {
	for _, t := range strings.Split("introduction|summary|examples|example|footnotes|overview|references|reference|"+
		"see also|acknowledgements|acknowledgments|conclusion|contents|background|usage|notes|tips|motivation|"+
		"abstract|further reading|related topics|basic usage|advanced usage|getting started|the basics|basics|"+
		"other|limitations|caveats|solution|problem|discussion|more information|what now?|details|"+
		"quick start|api|glossary|terminology|definitions|recipes|a simple example|simple example|"+
		"the problem|the solution|future work|credits|history|index|rationale|closing thoughts|complete example|"+
		"putting it all together|first steps|next steps|pure python equivalents|a complete example|practical use|"+
		"conclusions|miscellaneous|resources|prerequisites|requirements|installation|configuration|testing|"+
		"revision history and acknowledgements|revision history|practical application|what's new|changes|"+
		"number 1|planet|others|recap|primer|concepts|open issues|odds and ends|random remarks|"+
		"who should read this|wrapping it up|other resources|for more information|python documentation|"+
		"getting a little more advanced|the short explanation|technical tutorial|common problems|advanced topics|"+
		"complete practical example|function examples|timeperiod|validator class|using object", "|") {
		genericTitles[t] = true
	}
}

// ParsePythonDocs reads the Python documentation under fsys (the html/
// folder of python3.11-doc): the glossary's terms (category "Python") and the
// tutorial's and HOWTOs' sections (category "Python tutorial" or "Python
// HOWTO") as entries, the FAQ's questions as QAs. Sections with a generic
// heading ("Introduction") or with no paragraph are left out, and a title
// seen before (case-insensitive) keeps its first entry. Files are read in
// name order, so the result does not depend on the file system.
func ParsePythonDocs(fsys fs.FS) ([]Entry, []QA, error) {
	var entries []Entry
	var qas []QA
	seen := map[string]bool{}
	add := func(e Entry) {
		k := strings.ToLower(e.Title)
		if seen[k] || genericTitles[k] || !hasText(e.Blocks) {
			return
		}
		seen[k] = true
		entries = append(entries, e)
	}
	g, err := fs.ReadFile(fsys, "glossary.html")
	if err != nil {
		return nil, nil, fmt.Errorf("python docs: %w", err)
	}
	terms, err := parseGlossary(g)
	if err != nil {
		return nil, nil, fmt.Errorf("python docs: glossary.html: %w", err)
	}
	for _, e := range terms {
		add(e)
	}
	for _, dir := range pyDocDirs {
		names, err := fs.Glob(fsys, dir+"/*.html")
		if err != nil {
			return nil, nil, fmt.Errorf("python docs: %w", err)
		}
		if len(names) == 0 {
			return nil, nil, fmt.Errorf("python docs: no %s/*.html", dir)
		}
		sort.Strings(names)
		category := map[string]string{"tutorial": "Python tutorial", "howto": "Python HOWTO", "faq": "Python FAQ"}[dir]
		for _, name := range names {
			if path.Base(name) == "index.html" {
				continue
			}
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				return nil, nil, fmt.Errorf("python docs: %w", err)
			}
			secs, err := parseSections(b, category)
			if err != nil {
				return nil, nil, fmt.Errorf("python docs: %s: %w", name, err)
			}
			for _, e := range secs {
				if dir != "faq" {
					add(e)
					continue
				}
				k := strings.ToLower(e.Title)
				if strings.HasSuffix(e.Title, "?") && !seen[k] && hasText(e.Blocks) {
					seen[k] = true
					qas = append(qas, QA{Question: e.Title, Entry: e})
				}
			}
		}
	}
	return entries, qas, nil
}

// mainBody returns the page's <div role="main"> (Sphinx's body), or the whole
// document if there is none.
func mainBody(doc *html.Node) *html.Node {
	var found *html.Node
	walk(doc, func(n *html.Node) bool {
		if found == nil && n.Type == html.ElementNode && n.DataAtom == atom.Div && attr(n, "role") == "main" {
			found = n
		}
		return found == nil
	})
	if found == nil {
		return doc
	}
	return found
}

// parseGlossary returns the terms of the <dl class="glossary"> lists.
func parseGlossary(page []byte) ([]Entry, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	var out []Entry
	walk(mainBody(doc), func(n *html.Node) bool {
		if n.Type != html.ElementNode || n.DataAtom != atom.Dl || !hasClass(n, "glossary") {
			return true
		}
		var cur *Entry
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.DataAtom {
			case atom.Dt:
				if cur != nil && len(cur.Blocks) == 0 { // several terms for one definition: the first is the title
					continue
				}
				if cur != nil {
					out = append(out, *cur)
				}
				cur = &Entry{Source: "python", Title: assets.CleanLine(plainInline(c)), Category: "Python"}
			case atom.Dd:
				if cur != nil {
					cur.Blocks = append(cur.Blocks, contentBlocks(c)...)
				}
			}
		}
		if cur != nil {
			out = append(out, *cur)
		}
		return false
	})
	var kept []Entry
	for _, e := range out {
		var ok bool
		if e.Blocks, ok = finishBlocks(e.Blocks); ok && usableTitle(e.Title) && reHasWord.MatchString(e.Title) {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// parseSections returns one entry for each <section> of the page: its heading
// (without the number and the permalink) as the title, and the paragraphs,
// lists and code blocks that belong to it and not to a subsection.
func parseSections(page []byte, category string) ([]Entry, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	var out []Entry
	walk(mainBody(doc), func(n *html.Node) bool {
		if n.Type != html.ElementNode || n.DataAtom != atom.Section {
			return true
		}
		e := Entry{Source: "python", Category: category}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.DataAtom {
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				if e.Title == "" {
					e.Title = assets.CleanLine(plainInline(c))
				}
			case atom.Section:
			default:
				e.Blocks = append(e.Blocks, contentBlocks(c)...)
			}
		}
		var ok bool
		if e.Blocks, ok = finishBlocks(e.Blocks); ok && usableTitle(e.Title) && reHasWord.MatchString(e.Title) {
			out = append(out, e)
		}
		return true // subsections are sections of their own
	})
	return out, nil
}

// droppedBlock marks where contentBlocks left out a paragraph it could not keep
// whole; finishBlocks removes the marks.
var droppedBlock = Block{Kind: Paragraph}

// finishBlocks removes the dropped marks from blocks; ok is false when the
// first text block was dropped, so that what is left would start mid-thought
// (a FAQ answer that begins with its second paragraph answers something else).
func finishBlocks(blocks []Block) (out []Block, ok bool) {
	ok = true
	first := true
	for _, b := range blocks {
		if b.Kind == Pre {
			out = append(out, b)
			continue
		}
		if b.Kind == Paragraph && b.Text == "" {
			ok = ok && !first
		} else {
			out = append(out, b)
		}
		first = false
	}
	return out, ok
}

// contentBlocks converts a block-level node into entry blocks: <p> into a
// paragraph, <ul>/<ol> into a list of its items' text, a highlighted code
// block into Pre; notes, warnings and other containers contribute their own
// paragraphs. A paragraph inlineText cannot keep whole is left out, marked
// by droppedBlock; scripts, styles, tables, footnotes, navigation and the
// rest are dropped unmarked.
func contentBlocks(n *html.Node) []Block {
	if n.Type != html.ElementNode {
		return nil
	}
	switch n.DataAtom {
	case atom.P:
		if hasClass(n, "admonition-title") {
			return nil
		}
		t, lost := inlineText(n)
		switch {
		case lost:
			return []Block{droppedBlock}
		case t != "":
			return []Block{{Kind: Paragraph, Text: t}}
		}
		return nil
	case atom.Ul, atom.Ol:
		var items []string
		for li := n.FirstChild; li != nil; li = li.NextSibling {
			if li.DataAtom != atom.Li {
				continue
			}
			if t, lost := inlineText(li); !lost && t != "" {
				items = append(items, t)
			}
		}
		if len(items) == 0 {
			return nil
		}
		return []Block{{Kind: List, Items: items}}
	case atom.Pre:
		if t := strings.Trim(textContent(n), "\n"); strings.TrimSpace(t) != "" {
			return []Block{{Kind: Pre, Text: t}}
		}
		return nil
	case atom.Script, atom.Style, atom.Table, atom.Nav, atom.Form, atom.Aside, atom.Footer, atom.Header, atom.Noscript, atom.Iframe:
		return nil
	case atom.Div, atom.Blockquote, atom.Dd:
		if hasClass(n, "admonition-title") || hasClass(n, "footnote") || hasClass(n, "versionadded") || hasClass(n, "versionchanged") || hasClass(n, "deprecated") {
			return nil
		}
		var out []Block
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			out = append(out, contentBlocks(c)...)
		}
		return out
	}
	return nil
}

// inlineText renders a paragraph's content in the entry's inline format:
// links into the glossary become {cross references}, <em>/<strong> *emphasis*,
// code its plain text, other links their text; footnote marks and scripts
// are dropped. The second result, lost, reports text that cannot be kept
// whole: literal braces, a link whose text is an address, or code that reads
// as markup (engine/markup's fragments); "" if no word is left.
func inlineText(n *html.Node) (string, bool) {
	var b strings.Builder
	braces := false // or an address
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				if strings.ContainsAny(c.Data, "{}") {
					braces = true
				}
				b.WriteString(strings.ReplaceAll(c.Data, "¶", ""))
				continue
			case html.ElementNode:
			default:
				continue
			}
			switch c.DataAtom {
			case atom.Script, atom.Style, atom.Sup, atom.Img, atom.Ul, atom.Ol, atom.Pre, atom.Div, atom.Table:
			case atom.A:
				if hasClass(c, "headerlink") || hasClass(c, "footnote-reference") {
					continue
				}
				text := assets.CleanLine(textContent(c))
				if strings.ContainsAny(text, "{}") || isExternal(text) || reBareURL.MatchString(text) {
					braces = true
				}
				if isGlossaryLink(attr(c, "href")) && text != "" {
					b.WriteString("{" + text + "}")
				} else {
					b.WriteString(text)
				}
			case atom.Em, atom.Strong:
				text := assets.CleanLine(textContent(c))
				if strings.ContainsAny(text, "{}") {
					braces = true
				}
				if text != "" && !strings.Contains(text, "*") {
					b.WriteString("*" + text + "*")
				} else {
					b.WriteString(text)
				}
			default:
				rec(c)
			}
		}
	}
	rec(n)
	if braces {
		return "", true
	}
	// Not cleanText: its dictionary rules would glue code to the word before it
	// (no space before punctuation: "the .profile file") and take the call out
	// of "iter()" (no empty parentheses).
	s := reBareURL.ReplaceAllString(assets.CleanLine(b.String()), "")
	s = strings.TrimSpace(reMultiSpace.ReplaceAllString(s, " "))
	if !reHasWord.MatchString(s) {
		return "", false
	}
	// Code shown as prose that reads as markup (realm="REALM", <module>) would
	// be a fragment on screen and teach the model to write one.
	if len(markup.Find(s)) > 0 {
		return "", true
	}
	return s, false
}

// isGlossaryLink reports a link to a glossary term: "#term-x" inside the
// glossary, "glossary.html#term-x" or "../glossary.html#term-x" elsewhere.
func isGlossaryLink(href string) bool {
	page, term, ok := strings.Cut(href, "#term-")
	return ok && term != "" && (page == "" || path.Base(page) == "glossary.html")
}

// plainInline is a heading's or term's text: its text without the section
// number and the permalink.
func plainInline(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				b.WriteString(strings.ReplaceAll(c.Data, "¶", ""))
			case c.Type != html.ElementNode:
			case c.DataAtom == atom.Script || c.DataAtom == atom.Style:
			case hasClass(c, "headerlink") || hasClass(c, "section-number"):
			default:
				rec(c)
			}
		}
	}
	rec(n)
	return b.String()
}

// textContent is all the text under n except scripts and styles.
func textContent(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode && (c.DataAtom == atom.Script || c.DataAtom == atom.Style) {
			return false
		}
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return true
	})
	return b.String()
}

// walk calls f on n and, while f returns true, on its descendants in order.
func walk(n *html.Node, f func(*html.Node) bool) {
	if !f(n) {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}
