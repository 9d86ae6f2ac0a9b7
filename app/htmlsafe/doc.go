package htmlsafe

import (
	"iter"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Kind is what a Block is.
type Kind int

const (
	Paragraph Kind = iota
	Heading        // Level 1–6
	List           // Items; Ordered
	CodeBlock      // Inlines hold one preformatted text
	Quote          // Children
	Rule
	Table // Rows
	Group // a container with an id (a Desktop window, a menu…): Children
)

// Style is a set of inline text styles.
type Style uint8

const (
	Bold Style = 1 << iota
	Italic
	Code
	// Noise marks text that stands for not-yet-developed tokens (see NoiseRune).
	Noise
)

// Inline is a run of text with one style. A run with Href is a link the app can
// follow; a run with ID is a clickable element (a Desktop button, icon or menu item).
type Inline struct {
	Text  string
	Style Style
	Href  string // site-relative path, already checked
	ID    string // element id of the clickable element this run belongs to
}

// Cell is one table cell.
type Cell struct {
	Inlines []Inline
	Header  bool
}

// Block is one block-level element of a Doc.
type Block struct {
	Kind     Kind
	Level    int      // Heading
	Ordered  bool     // List
	Inlines  []Inline // Paragraph, Heading, CodeBlock
	Items    [][]Block
	Children []Block  // Quote, Group
	Rows     [][]Cell // Table
	ID       string   // Group: the element id; any block: id of the element it came from
	Title    string   // Group: data-title, if any
	Tag      string   // Group: the element it came from ("section", "nav", "div"…)
}

// Doc is a parsed, safe page.
type Doc struct {
	Title  string // text of the first h1, if any
	Blocks []Block
}

// Text returns the plain text of inlines.
func Text(in []Inline) string {
	var b strings.Builder
	for _, r := range in {
		b.WriteString(r.Text)
	}
	return b.String()
}

// Inlines yields every inline run of the document in reading order: each
// block's own, then its list items', its children's and its table cells'.
func (d *Doc) Inlines() iter.Seq[Inline] {
	return func(yield func(Inline) bool) {
		each := func(in []Inline) bool {
			for _, r := range in {
				if !yield(r) {
					return false
				}
			}
			return true
		}
		var walk func([]Block) bool
		walk = func(bs []Block) bool {
			for _, b := range bs {
				if !each(b.Inlines) {
					return false
				}
				for _, it := range b.Items {
					if !walk(it) {
						return false
					}
				}
				if !walk(b.Children) {
					return false
				}
				for _, row := range b.Rows {
					for _, c := range row {
						if !each(c.Inlines) {
							return false
						}
					}
				}
			}
			return true
		}
		if d != nil {
			walk(d.Blocks)
		}
	}
}

// Links returns every followable link of the document in reading order.
func (d *Doc) Links() []Inline {
	var out []Inline
	for r := range d.Inlines() {
		if r.Href != "" || r.ID != "" {
			out = append(out, r)
		}
	}
	return out
}

// Parse sanitizes untrusted HTML and turns it into a Doc. It never fails: what it
// cannot make sense of becomes text or is dropped.
func Parse(untrusted string) *Doc {
	safe := Sanitize(untrusted)
	nodes, err := html.ParseFragment(strings.NewReader(safe), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	d := &Doc{}
	p := &parser{}
	if err != nil { // e.g. nesting deeper than x/net/html accepts: keep the words
		p.run = appendText(nil, tokensText(safe), inlineCtx{})
		p.flush()
		d.Blocks = p.out
		return d
	}
	for _, n := range nodes {
		p.block(n, 0, inlineCtx{})
	}
	p.flush()
	d.Blocks = p.out
	for _, b := range d.Blocks {
		if b.Kind == Heading && b.Level == 1 {
			d.Title = strings.TrimSpace(Text(b.Inlines))
			break
		}
	}
	return d
}

// inlineCtx is the style and link state inherited by text inside inline elements.
type inlineCtx struct {
	style Style
	href  string
	id    string
}

// parser builds blocks; run collects the inline run of the paragraph being built.
type parser struct {
	out    []Block
	run    []Inline
	blocks int
	text   int // bytes of text kept so far (shared with sub-parsers)
}

func (p *parser) add(b Block) {
	if p.blocks >= MaxBlocks {
		return
	}
	p.blocks++
	p.out = append(p.out, b)
}

// flush ends the current implicit paragraph.
func (p *parser) flush() {
	in := trimInlines(p.run)
	p.run = nil
	in = p.budget(in)
	if len(in) > 0 {
		p.add(Block{Kind: Paragraph, Inlines: in})
	}
}

// budget keeps at most MaxTextBytes of text over the whole document (a page that
// long is hostile; a UI cannot lay it out in reasonable time anyway).
func (p *parser) budget(in []Inline) []Inline {
	for i := range in {
		p.text += len(in[i].Text)
		if p.text > MaxTextBytes {
			cut := len(in[i].Text) - (p.text - MaxTextBytes)
			for cut > 0 && !utf8.RuneStart(in[i].Text[cut]) {
				cut--
			}
			in[i].Text = in[i].Text[:max(cut, 0)] + "…"
			return in[:i+1]
		}
	}
	return in
}

// sub parses children of n as a separate block list (list items, quotes, groups).
func (p *parser) sub(n *html.Node, depth int, ctx inlineCtx) []Block {
	q := &parser{blocks: p.blocks, text: p.text}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		q.block(c, depth+1, ctx)
	}
	q.flush()
	p.blocks, p.text = q.blocks, q.text
	return q.out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func nodeID(n *html.Node) string {
	if v := attr(n, "data-id"); v != "" {
		return v
	}
	return attr(n, "id")
}

// block handles n in block context.
func (p *parser) block(n *html.Node, depth int, ctx inlineCtx) {
	if p.blocks >= MaxBlocks {
		return
	}
	if n.Type == html.TextNode {
		p.run = appendText(p.run, n.Data, ctx)
		return
	}
	if n.Type != html.ElementNode {
		return
	}
	if depth > MaxDepth {
		// Too deep to be a real page: keep the words, drop the structure.
		p.run = appendText(p.run, " "+textContent(n)+" ", ctx)
		return
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		p.flush()
		level := int(n.Data[1] - '0')
		in := p.budget(trimInlines(p.inlines(n, depth, ctx)))
		if len(in) > 0 {
			p.add(Block{Kind: Heading, Level: level, Inlines: in, ID: nodeID(n)})
		}
	case atom.P, atom.Dt, atom.Dd, atom.Figcaption, atom.Caption, atom.Label:
		p.flush()
		in := p.budget(trimInlines(p.inlines(n, depth, ctx)))
		if len(in) > 0 {
			p.add(Block{Kind: Paragraph, Inlines: in, ID: nodeID(n)})
		}
	case atom.Ul, atom.Ol, atom.Menu:
		p.flush()
		l := Block{Kind: List, Ordered: n.DataAtom == atom.Ol, ID: nodeID(n)}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.DataAtom == atom.Li {
				item := p.sub(c, depth+1, p.itemCtx(c, ctx))
				if len(item) > 0 {
					l.Items = append(l.Items, item)
				}
			} else if c.Type == html.TextNode && strings.TrimSpace(c.Data) == "" {
				continue
			} else { // stray content in a list: an item of its own
				q := &parser{blocks: p.blocks, text: p.text}
				q.block(c, depth+1, ctx)
				q.flush()
				p.blocks, p.text = q.blocks, q.text
				if len(q.out) > 0 {
					l.Items = append(l.Items, q.out)
				}
			}
		}
		if len(l.Items) > 0 {
			p.add(l)
		}
	case atom.Li: // li outside a list
		p.flush()
		item := p.sub(n, depth, p.itemCtx(n, ctx))
		if len(item) > 0 {
			p.add(Block{Kind: List, Items: [][]Block{item}})
		}
	case atom.Pre:
		p.flush()
		text := strings.TrimRight(strings.TrimPrefix(textContent(n), "\n"), "\n ")
		if in := p.budget(splitNoise(text, Code, "", "")); text != "" && len(in) > 0 {
			p.add(Block{Kind: CodeBlock, Inlines: in, ID: nodeID(n)})
		}
	case atom.Blockquote:
		p.flush()
		ch := p.sub(n, depth, ctx)
		if len(ch) > 0 {
			p.add(Block{Kind: Quote, Children: ch, ID: nodeID(n)})
		}
	case atom.Hr:
		p.flush()
		p.add(Block{Kind: Rule})
	case atom.Br:
		p.run = append(p.run, Inline{Text: "\n", Style: ctx.style, Href: ctx.href, ID: ctx.id})
	case atom.Table:
		p.flush()
		if t := p.table(n, depth, ctx); len(t.Rows) > 0 {
			p.add(t)
		}
	case atom.Div, atom.Section, atom.Article, atom.Header, atom.Footer, atom.Nav, atom.Main, atom.Aside, atom.Figure, atom.Dl:
		p.flush()
		id := nodeID(n)
		// Windows (<section>) and menu bars (<nav>) of a Desktop screen, and any
		// element with an id, stay groups; other structure is flattened.
		keep := id != "" || n.DataAtom == atom.Section || n.DataAtom == atom.Nav
		if !keep { // plain structure: its blocks join ours
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				p.block(c, depth+1, ctx)
			}
			p.flush()
			return
		}
		ch := p.sub(n, depth, ctx)
		if len(ch) > 0 || id != "" {
			p.add(Block{Kind: Group, ID: id, Title: attr(n, "data-title"), Tag: n.Data, Children: ch})
		}
	default: // inline element in block context: part of the current paragraph
		p.run = append(p.run, p.inlineElem(n, depth, ctx)...)
	}
}

// itemCtx makes a whole list item clickable when it carries an id (Desktop menus).
func (p *parser) itemCtx(li *html.Node, ctx inlineCtx) inlineCtx {
	if id := nodeID(li); id != "" && ctx.href == "" {
		ctx.id = id
	}
	return ctx
}

// inlines collects the inline content of n (block children are flattened to text).
func (p *parser) inlines(n *html.Node, depth int, ctx inlineCtx) []Inline {
	var out []Inline
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			out = appendText(out, c.Data, ctx)
		case html.ElementNode:
			out = append(out, p.inlineElem(c, depth+1, ctx)...)
		}
	}
	return out
}

// inlineElem returns the runs of an element in inline context.
func (p *parser) inlineElem(n *html.Node, depth int, ctx inlineCtx) []Inline {
	if depth > MaxDepth {
		return appendText(nil, textContent(n), ctx)
	}
	switch n.DataAtom {
	case atom.Strong, atom.B:
		ctx.style |= Bold
	case atom.Em, atom.I, atom.Cite, atom.Q:
		ctx.style |= Italic
	case atom.Code, atom.Kbd, atom.Samp:
		ctx.style |= Code
	case atom.A:
		if href, ok := SafeHref(attr(n, "href")); ok {
			ctx.href = href
		}
		if id := nodeID(n); id != "" {
			ctx.id = id
		}
	case atom.Button:
		if id := nodeID(n); id != "" {
			ctx.id = id
		}
	case atom.Br:
		return []Inline{{Text: "\n", Style: ctx.style, Href: ctx.href, ID: ctx.id}}
	case atom.Span, atom.Label:
		if id := nodeID(n); id != "" && ctx.href == "" && ctx.id == "" {
			ctx.id = id
		}
	}
	return p.inlines(n, depth, ctx)
}

func (p *parser) table(n *html.Node, depth int, ctx inlineCtx) Block {
	t := Block{Kind: Table, ID: nodeID(n)}
	var rows func(*html.Node, int)
	rows = func(n *html.Node, d int) {
		if d > MaxDepth {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Thead, atom.Tbody, atom.Tfoot:
				rows(c, d+1)
			case atom.Tr:
				var row []Cell
				for cell := c.FirstChild; cell != nil; cell = cell.NextSibling {
					if cell.Type == html.ElementNode && (cell.DataAtom == atom.Td || cell.DataAtom == atom.Th) {
						row = append(row, Cell{Inlines: p.budget(trimInlines(p.inlines(cell, d+1, ctx))), Header: cell.DataAtom == atom.Th})
					}
				}
				if len(row) > 0 && p.blocks < MaxBlocks {
					p.blocks++
					t.Rows = append(t.Rows, row)
				}
			}
		}
	}
	rows(n, depth)
	return t
}

// textContent is all text under n, iteratively (no recursion on hostile depth).
func textContent(n *html.Node) string {
	var b strings.Builder
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
			continue
		}
		if c.Type == html.ElementNode && c.DataAtom == atom.Br {
			b.WriteByte('\n')
		}
		for k := c.LastChild; k != nil; k = k.PrevSibling {
			stack = append(stack, k)
		}
		if b.Len() > MaxInputBytes {
			break
		}
	}
	return b.String()
}

// tokensText is the text of markup the tree parser refused, token by token.
func tokensText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	for b.Len() < MaxTextBytes {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), " ") {
				b.WriteByte(' ')
			}
		}
	}
	return b.String()
}

// collapse folds runs of whitespace into one space, as browsers do outside <pre>.
func collapse(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '\r', '\f':
			if !space {
				b.WriteByte(' ')
			}
			space = true
		default:
			b.WriteRune(r)
			space = false
		}
	}
	return b.String()
}

func appendText(out []Inline, text string, ctx inlineCtx) []Inline {
	text = collapse(text)
	if text == "" {
		return out
	}
	if n := len(out); n > 0 && strings.HasSuffix(out[n-1].Text, " ") && strings.HasPrefix(text, " ") {
		text = text[1:]
		if text == "" {
			return out
		}
	}
	return append(out, splitNoise(text, ctx.style, ctx.href, ctx.id)...)
}

// splitNoise splits text into runs of real text and runs of noise runes.
func splitNoise(text string, style Style, href, id string) []Inline {
	var out []Inline
	start, noisy := 0, false
	for i, r := range text {
		n := IsNoise(r)
		if i > start && n != noisy {
			out = append(out, mkRun(text[start:i], style, noisy, href, id))
			start = i
		}
		noisy = n
	}
	if start < len(text) {
		out = append(out, mkRun(text[start:], style, noisy, href, id))
	}
	return out
}

func mkRun(t string, style Style, noisy bool, href, id string) Inline {
	if noisy {
		style |= Noise
	}
	return Inline{Text: t, Style: style, Href: href, ID: id}
}

// trimInlines drops leading/trailing spaces of a block's runs and merges
// neighbouring runs of the same style and target.
func trimInlines(in []Inline) []Inline {
	var out []Inline
	for _, r := range in {
		if n := len(out); n > 0 && out[n-1].Style == r.Style && out[n-1].Href == r.Href && out[n-1].ID == r.ID {
			out[n-1].Text += r.Text
			continue
		}
		out = append(out, r)
	}
	for len(out) > 0 {
		out[0].Text = strings.TrimLeft(out[0].Text, " ")
		if out[0].Text != "" {
			break
		}
		out = out[1:]
	}
	for len(out) > 0 {
		n := len(out) - 1
		out[n].Text = strings.TrimRight(out[n].Text, " \n")
		if out[n].Text != "" {
			break
		}
		out = out[:n]
	}
	return out
}
