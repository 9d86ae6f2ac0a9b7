package htmlsafe

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/markup"
)

// repair is Sanitize's last step, on the policy's output. It removes what the
// parser turned into text from tags the model wrote badly (markup.Find: `">`,
// `href="…"`, `<p`, `</`, a site path as words), gives a link whose words were
// all debris its topic as text ("/wiki/Unix" reads "Unix"), and closes the
// elements left open. Well-formed pages come back byte for byte; anything else
// is re-rendered from the parsed tree, so tags are balanced and properly nested.
func repair(safe string) string {
	safe = balance(safe)
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(safe), body)
	if err != nil { // deeper than the parser goes: keep the words
		return html.EscapeString(dropFragments(tokensText(safe)))
	}
	for _, n := range nodes {
		body.AppendChild(n)
	}
	changed := unwrapProse(body)
	changed = repairRuns(body) || changed
	if fixLinks(body, true) { // the topics are text too: they may end a fragment
		changed = true
		repairRuns(body)
		fixLinks(body, false)
	}
	if !changed {
		return safe
	}
	var b strings.Builder
	for n := body.FirstChild; n != nil; n = n.NextSibling {
		if err := html.Render(&b, n); err != nil {
			return html.EscapeString(dropFragments(tokensText(safe)))
		}
	}
	return b.String()
}

// unwrapProse takes away the code tags around prose (a <pre> holding links and
// paragraphs: not markup.IsCode), keeping what they hold where they were: the
// model's prose, repaired and shown as prose, not in a monospace box that would
// flatten its links to text. It reports whether it changed anything.
func unwrapProse(root *html.Node) bool {
	changed := false
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, c)
		}
		if !markup.CodeTag(n) || markup.IsCode(n) || n.Parent == nil {
			continue
		}
		changed = true
		for c := n.FirstChild; c != nil; c = n.FirstChild {
			n.RemoveChild(c)
			n.Parent.InsertBefore(c, n)
		}
		n.Parent.RemoveChild(n)
	}
	return changed
}

// repairRuns removes the fragments of every run of text under root.
func repairRuns(root *html.Node) bool {
	changed := false
	for _, run := range markup.Runs(root) {
		changed = repairRun(run) || changed
	}
	return changed
}

// repairRun removes the fragments of one run of text nodes, again until none is
// left (taking one out can bring the text on either side together). It reports
// whether it changed anything.
func repairRun(run []*html.Node) bool {
	changed := false
	for {
		text := markup.Text(run)
		spans := markup.Find(text)
		if len(spans) == 0 {
			return changed
		}
		changed = true
		// One sweep: each node keeps its text outside the spans; a span's gap
		// goes where it starts.
		k, off := 0, 0
		for _, n := range run {
			ns, ne := off, off+len(n.Data)
			off = ne
			var b strings.Builder
			pos := ns
			for k < len(spans) && spans[k][0] < ne {
				s, e := spans[k][0], spans[k][1]
				if s > pos {
					b.WriteString(text[pos:s])
				}
				if s >= ns {
					b.WriteString(gap(text, s, e))
				}
				if e > ne { // the span goes on into the next node
					pos = ne
					break
				}
				pos = e
				k++
			}
			if pos < ne {
				b.WriteString(text[pos:ne])
			}
			n.Data = b.String()
		}
	}
}

// dropFragments removes the fragments of plain text.
func dropFragments(text string) string {
	for {
		spans := markup.Find(text)
		if len(spans) == 0 {
			return text
		}
		var b strings.Builder
		last := 0
		for _, sp := range spans {
			b.WriteString(text[last:sp[0]])
			b.WriteString(gap(text, sp[0], sp[1]))
			last = sp[1]
		}
		b.WriteString(text[last:])
		text = b.String()
	}
}

// gap is what replaces the fragment text[s:e]: a space where it stood between
// two words, so they do not run together; nothing otherwise.
func gap(text string, s, e int) string {
	if s > 0 && e < len(text) && !isSpace(text[s-1]) && !isSpace(text[e]) {
		return " "
	}
	return ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// fixLinks gives each encyclopedia link whose text is gone (it was all debris,
// or only quotes) or is its raw slug ("Bell_Labs") the topic it links to as its
// text; with retitle false, it takes such links out instead, keeping whatever
// text they hold. Links of symbols ("++", "*") are real and stay; a link still
// developing (noise in its text) is left as it is. It reports whether it
// changed anything.
func fixLinks(root *html.Node, retitle bool) bool {
	changed := false
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type != html.ElementNode || n.DataAtom != atom.A {
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				stack = append(stack, c)
			}
			continue
		}
		href := attr(n, "href")
		topic, ok := assets.TitleFromHref(href)
		text := strings.TrimSpace(textContent(n))
		debris := strings.Trim(text, `"' `) == "" || // emptied by the repair, or never written
			text == strings.TrimPrefix(href, assets.WikiPrefix) && text != topic // the raw slug
		if !ok || !debris || strings.ContainsFunc(text, IsNoise) {
			continue // links do not nest: nothing under n to look at
		}
		changed = true
		if topic = dropFragments(topic); retitle && strings.TrimSpace(topic) != "" {
			for c := n.FirstChild; c != nil; c = n.FirstChild {
				n.RemoveChild(c)
			}
			n.AppendChild(&html.Node{Type: html.TextNode, Data: topic})
			continue
		}
		for c := n.FirstChild; c != nil; c = n.FirstChild { // unwrap
			n.RemoveChild(c)
			n.Parent.InsertBefore(c, n)
		}
		n.Parent.RemoveChild(n)
	}
	return changed
}

// void elements have no end tag.
var void = map[atom.Atom]bool{
	atom.Area: true, atom.Base: true, atom.Br: true, atom.Col: true, atom.Embed: true, atom.Hr: true,
	atom.Img: true, atom.Input: true, atom.Link: true, atom.Meta: true, atom.Param: true,
	atom.Source: true, atom.Track: true, atom.Wbr: true,
}

// closesP are the elements whose start ends an open paragraph (HTML's rule).
var closesP = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Div: true,
	atom.Dl: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.H1: true,
	atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true,
	atom.Hr: true, atom.Main: true, atom.Menu: true, atom.Nav: true, atom.Ol: true, atom.P: true,
	atom.Pre: true, atom.Section: true, atom.Table: true, atom.Ul: true,
}

// balance closes the elements of s where HTML closes them, token by token: an
// element left open ends with its parent (`<p><em>text</p>` gets its `</em>`
// there, not re-opened in every later paragraph, as a browser would), a new
// paragraph, heading, list item or link ends the open one, an end tag with no
// open element is dropped, and what is open at the end is closed. Tags already
// in order come back byte for byte.
func balance(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	var open []string
	changed := false
	closeTo := func(i int) { // close open[i:], innermost first
		for j := len(open) - 1; j >= i; j-- {
			b.WriteString("</" + open[j] + ">")
		}
		open = open[:i]
	}
	// find is the index of the innermost open name reachable from the top
	// crossing only the elements in through; -1 if none.
	find := func(names func(atom.Atom) bool, through func(atom.Atom) bool) int {
		for i := len(open) - 1; i >= 0; i-- {
			a := atom.Lookup([]byte(open[i]))
			if names(a) {
				return i
			}
			if !through(a) {
				return -1
			}
		}
		return -1
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if len(open) > 0 {
				closeTo(0)
				changed = true
			}
			if !changed {
				return s
			}
			return b.String()
		case html.StartTagToken, html.SelfClosingTagToken: // "<p/>" opens a p all the same
			name, _ := z.TagName()
			a := atom.Lookup(name)
			i := -1
			switch {
			case a == atom.A:
				i = find(func(x atom.Atom) bool { return x == atom.A }, markup.Inline)
			case a == atom.Li:
				i = find(func(x atom.Atom) bool { return x == atom.Li }, func(x atom.Atom) bool { return markup.Inline(x) || x == atom.P })
			case a == atom.Dt || a == atom.Dd:
				i = find(func(x atom.Atom) bool { return x == atom.Dt || x == atom.Dd }, func(x atom.Atom) bool { return markup.Inline(x) || x == atom.P })
			case closesP[a]:
				i = find(func(x atom.Atom) bool { return x == atom.P || headings[x] && headings[a] }, markup.Inline)
			}
			if i >= 0 {
				closeTo(i)
				changed = true
			}
			b.Write(z.Raw())
			if !void[a] {
				open = append(open, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			i := len(open) - 1
			for i >= 0 && open[i] != string(name) {
				i--
			}
			if i < 0 { // nothing open to close: drop it
				changed = true
				continue
			}
			if i < len(open)-1 {
				changed = true
			}
			closeTo(i + 1)
			b.Write(z.Raw())
			open = open[:i]
		default:
			b.Write(z.Raw())
		}
	}
}

var headings = map[atom.Atom]bool{atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true}
