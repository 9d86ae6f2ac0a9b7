// Package markup finds the debris of HTML tags in the text a page shows. A small
// model writes markup badly: the start of a link is lost and its end, `">`, is
// left in the sentence; an attribute (`href="/wiki/Unix"`) or a half tag (`<p`,
// `</`, `<a<a`) ends up where an HTML parser can only read text. Each such piece
// is a fragment: a browser shows it as characters, and so would the app.
//
// The one definition serves both sides of the problem: app/htmlsafe removes the
// fragments before a page is shown, and `darkroom train eval` (engine/train)
// counts them in the pages a model writes, before and after that repair. It lives
// under engine because the trainer must not import the app; it needs nothing but
// golang.org/x/net/html.
//
// Text inside code (pre, code, kbd, samp) is not searched: there, markup is the
// content ("the <p> element", Python's `<Color.RED: 1>`). Code holds text (and
// inline formatting): none of the 715 code blocks of the training pages holds
// an element, while a model that lost track writes a <pre> around its prose,
// links and paragraphs and tag debris with them; such an element is not code
// (IsCode) and its text is prose. Elsewhere anything that reads as a tag
// counts, including what the few real corpus pages write in prose ("<Cmd>",
// `"<="`): 91 of the 12,313 FOLDOC and Jargon File training pages have one,
// which is the measure's false-positive rate.
package markup

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// fragment matches one piece of tag debris in shown text. The alternatives, in
// the order a left-to-right scan tries them:
//
//   - a whole tag shown as text: "<" then a letter, "/", "!" or "?", up to the
//     next ">" on the same line (`<a href="/wiki/X">`, "</a>", "<Cmd>");
//   - a half tag: the same start with the rest of its name ("<p", "</", "<a"
//     twice in "<a<a"); "a < b" and "<3" are prose;
//   - an attribute with a quoted value, and the tag end after it
//     (`href="/wiki/Unix">`, `class='x'`; `x = "a"`, spaced, is prose);
//   - an attribute name "href" or "src" with "=" and an unquoted value;
//   - a tag end after a quote or a slash, with the attribute value glued to its
//     left (`languageset">`, `) ">`, `/>`);
//   - a site path shown as text ("/wiki/Unix"), a link's target as its words.
var fragment = regexp.MustCompile(`<[/!?A-Za-z][^<>\n]{0,80}>|<[/!?A-Za-z][^<>\s]*` +
	`|[A-Za-z][\w:.-]*=(?:"[^"<>]*"?|'[^'<>]*'?)(?:\s*/?>)?` +
	`|\b(?:href|src)\s*=[^\s<>]*` +
	`|[^\s"'<>]*["'/]\s*>` +
	`|/wiki/[^\s<>"']*`)

// Find returns the byte ranges [start, end) of the fragments in text, in order
// and without overlap.
func Find(text string) [][2]int {
	var out [][2]int
	for _, m := range fragment.FindAllStringIndex(text, -1) {
		out = append(out, [2]int{m[0], m[1]})
	}
	return out
}

// Inline reports whether a is an element a reader does not see as a break in
// the text: its text joins its neighbours' into one run, so `<b>&lt;</b>p`
// shows "<p".
func Inline(a atom.Atom) bool { return inline[a] }

var inline = map[atom.Atom]bool{
	atom.A: true, atom.Abbr: true, atom.B: true, atom.Bdi: true, atom.Bdo: true, atom.Cite: true,
	atom.Data: true, atom.Del: true, atom.Dfn: true, atom.Em: true, atom.Font: true, atom.I: true,
	atom.Ins: true, atom.Label: true, atom.Mark: true, atom.Q: true, atom.S: true, atom.Small: true,
	atom.Span: true, atom.Strike: true, atom.Strong: true, atom.Sub: true, atom.Sup: true,
	atom.Time: true, atom.Tt: true, atom.U: true, atom.Var: true, atom.Big: true,
}

// CodeTag reports whether n is an element that marks code: pre, code, kbd, samp,
// xmp or plaintext (code when it holds text only: IsCode).
func CodeTag(n *html.Node) bool { return n.Type == html.ElementNode && code[n.DataAtom] }

// code are the elements whose text is code when they hold text only (IsCode).
var code = map[atom.Atom]bool{
	atom.Pre: true, atom.Code: true, atom.Kbd: true, atom.Samp: true, atom.Xmp: true, atom.Plaintext: true,
}

// hidden are elements whose text is not prose on screen: elements a page never
// shows (script, style, the head…). Code is apart: see IsCode.
var hidden = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Title: true, atom.Head: true,
	atom.Textarea: true, atom.Noscript: true, atom.Iframe: true, atom.Noembed: true, atom.Noframes: true,
}

// IsCode reports whether n is code, whose markup-like text is content: a pre,
// code, kbd or samp element (or the old xmp and plaintext) holding text and
// inline formatting (bold, emphasis) only. One that holds a link or a block (a
// paragraph) is prose a model wrapped in a code tag, and is read as prose.
func IsCode(n *html.Node) bool {
	if !CodeTag(n) {
		return false
	}
	stack := []*html.Node{n}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := e.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if c.DataAtom == atom.A || !inline[c.DataAtom] && !code[c.DataAtom] {
				return false
			}
			stack = append(stack, c)
		}
	}
	return true
}

// Runs returns the text nodes under root that a reader sees as prose, grouped
// into runs: the nodes of one run read as one stretch of text (only inline
// elements between them), so a fragment may span several. Text in code
// (IsCode) and in elements that are not shown is left out. The walk is
// iterative: a hostile page's depth costs no stack.
func Runs(root *html.Node) [][]*html.Node {
	var out [][]*html.Node
	var cur []*html.Node
	end := func() {
		if len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	type item struct {
		n    *html.Node
		exit bool // leaving n: a block ends the run
	}
	stack := []item{{n: root}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := it.n
		if n.Type == html.TextNode {
			cur = append(cur, n)
			continue
		}
		if n.Type != html.ElementNode && n.Type != html.DocumentNode {
			continue
		}
		isBlock := n.Type == html.ElementNode && !inline[n.DataAtom]
		if it.exit {
			if isBlock {
				end()
			}
			continue
		}
		if n.Type == html.ElementNode && (hidden[n.DataAtom] || IsCode(n)) {
			end() // code reads apart from the prose around it
			continue
		}
		if isBlock {
			end()
		}
		stack = append(stack, item{n: n, exit: true})
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, item{n: c})
		}
	}
	end()
	return out
}

// Text is the text of a run, as a reader sees it joined.
func Text(run []*html.Node) string {
	var b strings.Builder
	for _, n := range run {
		b.WriteString(n.Data)
	}
	return b.String()
}

// Count returns the number of fragments in the prose a browser shows for page
// (an HTML document or a fragment of one, as a model writes it).
func Count(page string) int {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil { // deeper than the parser goes: count in the tokenizer's text
		return len(Find(tokenText(page)))
	}
	return CountNode(doc)
}

// CountNode is Count on a parsed page.
func CountNode(root *html.Node) int {
	n := 0
	for _, run := range Runs(root) {
		n += len(Find(Text(run)))
	}
	return n
}

// tokenText is the text of markup the tree parser refused, token by token
// (tags are dropped, each one a break).
func tokenText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		default:
			b.WriteByte('\n')
		}
	}
}
