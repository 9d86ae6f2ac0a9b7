// Package htmlview is the widget that shows a sanitized page (an htmlsafe.Doc) as
// native Fyne objects: headings, paragraphs, lists, links, emphasis, code, quotes
// and rules become RichText segments; tables become a grid; groups (Desktop
// windows, the menu bar) become cards. Noise runs (positions of a page that is
// still developing) are drawn as dim scattered glyphs. It never loads anything:
// links call OnLink, they never open a browser.
package htmlview

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/htmlsafe"
)

// View shows one Doc at a time.
type View struct {
	widget.BaseWidget

	// OnLink is called on the UI goroutine when a link or clickable element is tapped.
	OnLink func(htmlsafe.Inline)

	box *fyne.Container
	doc *htmlsafe.Doc
}

// New returns an empty view.
func New(onLink func(htmlsafe.Inline)) *View {
	v := &View{OnLink: onLink, box: container.NewVBox()}
	v.ExtendBaseWidget(v)
	return v
}

// CreateRenderer implements fyne.Widget.
func (v *View) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(v.box)
}

// Doc returns the document shown.
func (v *View) Doc() *htmlsafe.Doc { return v.doc }

// SetDoc replaces the content. Call on the UI goroutine.
func (v *View) SetDoc(d *htmlsafe.Doc) {
	v.doc = d
	var objs []fyne.CanvasObject
	if d != nil {
		objs = v.blocks(d.Blocks)
	}
	v.box.Objects = objs
	v.box.Refresh()
}

// Links returns the tappable hyperlink segments currently shown (for tests and
// keyboard navigation), in reading order.
func (v *View) Links() []*widget.HyperlinkSegment {
	var out []*widget.HyperlinkSegment
	var walkSeg func(s widget.RichTextSegment)
	walkSeg = func(s widget.RichTextSegment) {
		switch t := s.(type) {
		case *widget.HyperlinkSegment:
			out = append(out, t)
		case *widget.ParagraphSegment:
			for _, c := range t.Texts {
				walkSeg(c)
			}
		case *widget.ListSegment:
			for _, c := range t.Items {
				walkSeg(c)
			}
		}
	}
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch t := o.(type) {
		case *widget.RichText:
			for _, s := range t.Segments {
				walkSeg(s)
			}
		case *fyne.Container:
			for _, c := range t.Objects {
				walk(c)
			}
		case *widget.Card:
			walk(t.Content)
		}
	}
	walk(v.box)
	return out
}

// blocks renders a block list: runs of text-like blocks share one RichText,
// tables and groups get their own objects.
func (v *View) blocks(bs []htmlsafe.Block) []fyne.CanvasObject {
	var objs []fyne.CanvasObject
	var segs []widget.RichTextSegment
	flush := func() {
		if len(segs) > 0 {
			objs = append(objs, wrapping(segs))
			segs = nil
		}
	}
	for _, b := range bs {
		switch b.Kind {
		case htmlsafe.Table:
			flush()
			objs = append(objs, v.table(b))
		case htmlsafe.Group:
			flush()
			objs = append(objs, v.group(b))
		default:
			segs = append(segs, v.segments(b)...)
		}
	}
	flush()
	return objs
}

func (v *View) segments(b htmlsafe.Block) []widget.RichTextSegment {
	switch b.Kind {
	case htmlsafe.Heading:
		size, style := theme.SizeNameText, fyne.TextStyle{Bold: true}
		switch b.Level {
		case 1:
			size = theme.SizeNameHeadingText
		case 2:
			size = theme.SizeNameSubHeadingText
		}
		return append(v.runs(b.Inlines, size, style), endBlock())
	case htmlsafe.Paragraph:
		return append(v.runs(b.Inlines, theme.SizeNameText, fyne.TextStyle{}), endBlock())
	case htmlsafe.List:
		l := &widget.ListSegment{Ordered: b.Ordered}
		for _, item := range b.Items {
			l.Items = append(l.Items, &widget.ParagraphSegment{Texts: v.itemRuns(item)})
		}
		return []widget.RichTextSegment{l}
	case htmlsafe.CodeBlock:
		return []widget.RichTextSegment{&widget.TextSegment{Style: widget.RichTextStyleCodeBlock, Text: htmlsafe.ShowNoise(htmlsafe.Text(b.Inlines))}}
	case htmlsafe.Quote:
		var parts []string
		for _, c := range b.Children {
			parts = append(parts, plain(c))
		}
		return []widget.RichTextSegment{&widget.TextSegment{Style: widget.RichTextStyleBlockquote, Text: htmlsafe.ShowNoise(strings.Join(parts, "\n"))}}
	case htmlsafe.Rule:
		return []widget.RichTextSegment{&widget.SeparatorSegment{}}
	}
	return nil
}

// itemRuns flattens a list item's blocks into one line of runs.
func (v *View) itemRuns(item []htmlsafe.Block) []widget.RichTextSegment {
	var out []widget.RichTextSegment
	for i, b := range item {
		if i > 0 {
			out = append(out, &widget.TextSegment{Style: widget.RichTextStyleInline, Text: " "})
		}
		switch b.Kind {
		case htmlsafe.List:
			for j, sub := range b.Items {
				sep := " — "
				if j > 0 {
					sep = "; "
				}
				out = append(out, &widget.TextSegment{Style: widget.RichTextStyleInline, Text: sep})
				out = append(out, v.itemRuns(sub)...)
			}
		default:
			out = append(out, v.runs(b.Inlines, theme.SizeNameText, fyne.TextStyle{})...)
		}
	}
	return out
}

// runs turns inline runs into inline segments of the given size and base style.
func (v *View) runs(in []htmlsafe.Inline, size fyne.ThemeSizeName, base fyne.TextStyle) []widget.RichTextSegment {
	var out []widget.RichTextSegment
	for _, r := range in {
		if (r.Href != "" || r.ID != "") && r.Style&htmlsafe.Noise == 0 {
			u := &url.URL{Path: r.Href}
			if r.Href == "" { // a clickable element without a link: its id
				u.Path = "/ui/" + r.ID
			}
			link := r
			tap := func() {
				if v.OnLink != nil {
					v.OnLink(link)
				}
			}
			text, rest := splitLongLink(r.Text)
			out = append(out, &widget.HyperlinkSegment{Text: text, URL: u, OnTapped: tap})
			if rest != "" {
				out = append(out, &widget.TextSegment{Text: " " + rest, Style: widget.RichTextStyle{Inline: true,
					SizeName: size, TextStyle: base, ColorName: theme.ColorNameHyperlink}})
			}
			continue
		}
		st := widget.RichTextStyle{Inline: true, SizeName: size, TextStyle: base, ColorName: theme.ColorNameForeground}
		text := r.Text
		if r.Style&htmlsafe.Bold != 0 {
			st.TextStyle.Bold = true
		}
		if r.Style&htmlsafe.Italic != 0 {
			st.TextStyle.Italic = true
		}
		if r.Style&htmlsafe.Code != 0 {
			st.TextStyle.Monospace = true
		}
		if r.Style&htmlsafe.Noise != 0 {
			st.ColorName = theme.ColorNamePlaceHolder
			st.TextStyle = fyne.TextStyle{Monospace: true}
			text = htmlsafe.ShowNoise(text)
		}
		out = append(out, &widget.TextSegment{Style: st, Text: text})
	}
	return out
}

// endBlock ends a paragraph or heading, as Fyne's markdown renderer does.
func endBlock() widget.RichTextSegment {
	return &widget.TextSegment{Style: widget.RichTextStyleParagraph}
}

func (v *View) table(b htmlsafe.Block) fyne.CanvasObject {
	cols := 0
	for _, row := range b.Rows {
		cols = max(cols, len(row))
	}
	rows := make([][]fyne.CanvasObject, len(b.Rows))
	for r, row := range b.Rows {
		for c := 0; c < cols; c++ {
			var segs []widget.RichTextSegment
			if c < len(row) {
				style := fyne.TextStyle{Bold: row[c].Header}
				segs = v.runs(row[c].Inlines, theme.SizeNameText, style)
			}
			rows[r] = append(rows[r], wrapping(segs))
		}
	}
	header := len(b.Rows) > 1 && len(b.Rows[0]) > 0 && b.Rows[0][0].Header
	return Table(rows, header)
}

// Table lays out a table's cells, rows of equally many: equal columns (a page
// or a chat bubble is narrower than most tables' natural width), each row as
// high as its own tallest cell — one grid made every row the tallest's — and
// rules above and below, and under the first row where it is a header. Chat
// draws its answers' markdown tables with it too.
func Table(rows [][]fyne.CanvasObject, header bool) fyne.CanvasObject {
	box := container.NewVBox(widget.NewSeparator())
	for r, row := range rows {
		box.Add(container.NewGridWithColumns(max(len(row), 1), row...))
		if r == 0 && header {
			box.Add(widget.NewSeparator())
		}
	}
	box.Add(widget.NewSeparator())
	return box
}

func (v *View) group(b htmlsafe.Block) fyne.CanvasObject {
	children := b.Children
	title := b.Title
	if title == "" && len(children) > 0 && children[0].Kind == htmlsafe.Heading {
		title = htmlsafe.ShowNoise(htmlsafe.Text(children[0].Inlines))
		children = children[1:]
	}
	if b.Tag == "nav" { // a menu bar: one row
		inner := container.NewVBox(v.blocks(children)...)
		return container.NewVBox(inner, widget.NewSeparator())
	}
	// The title goes inside the card as wrapping text: a Card's own title never
	// wraps, and a long one would widen the view and, through it, the window.
	objs := v.blocks(children)
	if title != "" {
		head := widget.NewRichText(&widget.TextSegment{Style: widget.RichTextStyleSubHeading, Text: title})
		head.Wrapping = fyne.TextWrapWord
		objs = append([]fyne.CanvasObject{head}, objs...)
	}
	return widget.NewCard("", "", container.NewVBox(objs...))
}

// plain is the text of a block, noise included, for styles that take one string.
func plain(b htmlsafe.Block) string {
	var parts []string
	if len(b.Inlines) > 0 {
		parts = append(parts, htmlsafe.Text(b.Inlines))
	}
	for _, it := range b.Items {
		for _, c := range it {
			parts = append(parts, "• "+plain(c))
		}
	}
	for _, c := range b.Children {
		parts = append(parts, plain(c))
	}
	return strings.Join(parts, "\n")
}

// longLink is the length (in runes) above which only the start of a link's text
// is the tappable hyperlink. Fyne 2.7 lays a hyperlink segment out as one box that
// never wraps nor moves to the next row (fyne-io/fyne#3393, fixed in 2.8 by #6201),
// so a long one — a small model's unclosed <a> can hold a whole paragraph — runs
// off the page and the text after it is squeezed into a column one letter wide.
const longLink = 32

// splitLongLink returns the hyperlink part of a link's text — all of it, or its
// first words up to longLink runes (at least one word) — and the rest, shown as
// wrapping text in the link colour.
func splitLongLink(text string) (link, rest string) {
	if utf8.RuneCountInString(text) <= longLink {
		return text, ""
	}
	words := strings.Fields(text)
	n, k := 0, 0
	for k < len(words) && (k == 0 || n+1+utf8.RuneCountInString(words[k]) <= longLink) {
		if k > 0 {
			n++
		}
		n += utf8.RuneCountInString(words[k])
		k++
	}
	if k == 0 {
		return text, ""
	}
	return strings.Join(words[:k], " "), strings.Join(words[k:], " ")
}

// wrapping is a word-wrapped RichText of segs. Fyne 2.7 places an inline link on
// the row it starts on whether or not it fits (fyne-io/fyne#3393, fixed in 2.8
// by #6201): a link near the right edge runs off it, and the text after it gets
// a negative width and is drawn one letter per row. So where segs hold links
// the RichText is laid out by linkRows, which starts a new row before a link
// that would not fit at the width it is given.
func wrapping(segs []widget.RichTextSegment) fyne.CanvasObject {
	rt := widget.NewRichText(segs...)
	rt.Wrapping = fyne.TextWrapWord
	if hasLink(segs) {
		return container.New(&linkRows{rt: rt, segs: segs}, rt)
	}
	return rt
}

// hasLink reports whether segs hold a link, in a paragraph or a list item too.
func hasLink(segs []widget.RichTextSegment) bool {
	for _, sg := range segs {
		switch t := sg.(type) {
		case *widget.HyperlinkSegment:
			return true
		case *widget.ParagraphSegment:
			if hasLink(t.Texts) {
				return true
			}
		case *widget.ListSegment:
			if hasLink(t.Items) {
				return true
			}
		}
	}
	return false
}

// linkRows lays out one RichText, re-breaking its rows before links whenever
// its width changes.
type linkRows struct {
	rt    *widget.RichText
	segs  []widget.RichTextSegment // as built, without breaks
	width float32                  // the width the breaks were made for
}

func (l *linkRows) MinSize([]fyne.CanvasObject) fyne.Size { return l.rt.MinSize() }

func (l *linkRows) Layout(_ []fyne.CanvasObject, size fyne.Size) {
	if size.Width != l.width {
		l.width = size.Width
		l.rt.Segments = breakBeforeLinks(l.segs, size.Width-2*theme.InnerPadding())
		l.rt.Refresh()
	}
	l.rt.Move(fyne.Position{})
	l.rt.Resize(size)
}

// breakBeforeLinks returns segs with a line break before each link that would
// run past width, following Fyne's word wrapping of the text before it: words
// fill a row up to the width, a block (paragraph, heading) starts a new row. It
// leaves a little slack, so a rounding difference never lets a link overflow.
// A list's items are rows of their own, each after its bullet (Fyne 2.7 draws an
// item as a paragraph: the bullet, then the item's runs at the same width).
func breakBeforeLinks(segs []widget.RichTextSegment, width float32) []widget.RichTextSegment {
	slack := fyne.MeasureText("MM", theme.TextSize(), fyne.TextStyle{}).Width
	out, _ := breakRuns(segs, 0, width, slack)
	return out
}

// breakRuns is breakBeforeLinks for runs whose first row starts at x; it
// returns where the last row ends.
func breakRuns(segs []widget.RichTextSegment, x, width, slack float32) ([]widget.RichTextSegment, float32) {
	out := make([]widget.RichTextSegment, 0, len(segs)+4)
	for _, sg := range segs {
		if l, ok := sg.(*widget.ListSegment); ok {
			out = append(out, breakList(l, width, slack))
			x = 0
			continue
		}
		switch t := sg.(type) {
		case *widget.HyperlinkSegment:
			w := fyne.MeasureText(t.Text, theme.TextSize(), fyne.TextStyle{}).Width
			if x > 0 && x+w > width-slack {
				out = append(out, &widget.TextSegment{Style: widget.RichTextStyleInline, Text: "\n"})
				x = 0
			}
			x += w
		case *widget.TextSegment:
			if !t.Inline() {
				x = 0
				break
			}
			size, style := theme.Size(t.Style.SizeName), t.Style.TextStyle
			if t.Style.SizeName == "" {
				size = theme.TextSize()
			}
			x = wrapEnd([]rune(t.Text), x, width, func(r []rune) float32 { return fyne.MeasureText(string(r), size, style).Width })
		default:
			x = 0 // rules: rows of their own
		}
		out = append(out, sg)
	}
	return out, x
}

// breakList is l with breaks before the links of its items that would run past
// width, each item's first row starting after its bullet (drawn as
// ListSegment.Segments draws it).
func breakList(l *widget.ListSegment, width, slack float32) *widget.ListSegment {
	c := *l
	c.Items = make([]widget.RichTextSegment, len(l.Items))
	for i, item := range l.Items {
		p, ok := item.(*widget.ParagraphSegment)
		if !ok {
			c.Items[i] = item
			continue
		}
		bullet := "• "
		if l.Ordered {
			bullet = strconv.Itoa(l.StartNumber()+i) + "."
		}
		x := fyne.MeasureText(bullet+" ", theme.TextSize(), fyne.TextStyle{Bold: true}).Width
		texts, _ := breakRuns(p.Texts, x, width, slack)
		c.Items[i] = &widget.ParagraphSegment{Texts: texts}
	}
	return &c
}

// wrapEnd is where the last row of text ends when it starts at x on rows of
// width: Fyne 2.7's word wrapping of a text segment (widget.RichText's
// lineBounds, TextWrapWord, and how updateRowBounds carries the row on), done
// the same way so that the breaks before links agree with the rows Fyne draws.
// Its rule that a guess by words would miss: when the first word after the
// segment's leading space does not fit the rest of the row, the row keeps the
// space alone and the words start the next row.
func wrapEnd(text []rune, x, width float32, measure func([]rune) float32) float32 {
	measureWidth := min(width-x, width)
	fits := func(lo, hi int) bool { return measure(text[lo:hi]) <= measureWidth }
	type row struct{ lo, hi int }
	var rows []row
	begin := 0
lines:
	for i := 0; i <= len(text); i++ { // each line, as splitLines cuts them
		if i < len(text) && text[i] != '\n' {
			continue
		}
		low, high, end := begin, i, i
		begin = i + 1
		if low == high {
			rows = append(rows, row{low, low})
			continue
		}
		for low < high {
			sub := text[low:high]
			subWidth := measure(sub)
			if subWidth <= measureWidth {
				rows = append(rows, row{low, high})
				low, high = high, end
				if low < high && unicode.IsSpace(text[low]) {
					low++
				}
				measureWidth = width
				continue
			}
			oldHigh := high
			fallback := fyneBinarySearch(fits, low, low+len(sub)-1) - low
			if fallback < 1 { // not even a letter fits
				rows = append(rows, row{low, low + 1})
				low++
				high = low + 1
				if high > end {
					break lines // as Fyne returns
				}
			} else {
				spaceIndex := fyneSpaceIndex(sub, fallback)
				if spaceIndex == 0 {
					spaceIndex = 1
				}
				high = low + spaceIndex
			}
			if high == fallback && subWidth <= width {
				rows = append(rows, row{low, low})
				high = oldHigh
				measureWidth = width
			}
		}
	}
	if len(rows) == 0 {
		return x
	}
	last := rows[len(rows)-1]
	if len(rows) == 1 {
		return x + measure(text[:last.hi])
	}
	return measure(text[last.lo:last.hi])
}

// fyneBinarySearch is Fyne 2.7's binarySearch: the largest high in [low,
// maxHigh] with fits(low, high), found as Fyne finds it.
func fyneBinarySearch(fits func(int, int) bool, low, maxHigh int) int {
	if low >= maxHigh {
		return low
	}
	if fits(low, maxHigh) {
		return maxHigh
	}
	high, delta := low, maxHigh-low
	for delta > 0 {
		delta /= 2
		if fits(low, high+delta) {
			high += delta
		}
	}
	for high < maxHigh && fits(low, high+1) {
		high++
	}
	return high
}

// fyneSpaceIndex is Fyne 2.7's findSpaceIndex: the last space at or before
// fallback, else fallback.
func fyneSpaceIndex(text []rune, fallback int) int {
	for i := fallback; i >= 0; i-- {
		if unicode.IsSpace(text[i]) {
			return i
		}
	}
	return fallback
}
