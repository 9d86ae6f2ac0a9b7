package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/htmlview"
	"github.com/darkroomlabs/darkroom/engine/markup"
)

// A message's markdown as Chat draws it. Fyne's renderer (CommonMark) has no
// tables: a GitHub table — which DiffusionGemma writes for any comparison —
// came out as one paragraph of pipes and dashes ("| Name | Size | |---|---|
// | int4 | 17 GB |"). And a code block was a wrapped run of monospace with no
// way to copy it alone. So the top-level tables and fenced code blocks are
// cut out of the markdown (splitMarkdown) and drawn as a grid and as a code
// box with its own Copy; the prose between them is Fyne's. A table or a fence
// indented under a list item stays in the list's markdown.

// mdKind is what a part of a message is.
type mdKind int

const (
	mdProse mdKind = iota // markdown for Fyne's renderer
	mdCode                // a fenced code block's text
	mdTable               // a table's rows
)

// mdPart is one part of a message, in order.
type mdPart struct {
	kind mdKind
	text string     // prose's markdown; code's text (no fences)
	lang string     // code's info string ("python"), if any
	rows [][]string // a table's cells, the header row first (each row as long as the header)
}

// splitMarkdown cuts md into prose, fenced code blocks and tables, in order.
// A fence is ``` or ~~~ (three or more) at the start of a line, closed by a line
// of the same character at least as long; one left open runs to the end (an
// answer still being written). A table is GitHub's: a row of cells between
// pipes, then a delimiter row with as many cells (---, :--, --:, :-:), then
// rows up to a blank line or a line without a pipe. Nothing inside a code block
// is a table, indented fences included.
func splitMarkdown(md string) []mdPart {
	var parts []mdPart
	lines := strings.Split(md, "\n")
	var prose []string
	flush := func() {
		if text := strings.Join(prose, "\n"); strings.TrimSpace(text) != "" {
			parts = append(parts, mdPart{kind: mdProse, text: text})
		}
		prose = nil
	}
	inFence := "" // the open fence of an indented code block, kept in the prose
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if inFence != "" {
			prose = append(prose, line)
			if closesFence(line, inFence) {
				inFence = ""
			}
			continue
		}
		if fence, info, ok := openFence(line); ok {
			if line[0] == ' ' { // under a list item: Fyne draws it there
				inFence = fence
				prose = append(prose, line)
				continue
			}
			flush()
			var code []string
			j := i + 1
			for ; j < len(lines) && !closesFence(lines[j], fence); j++ {
				code = append(code, lines[j])
			}
			parts = append(parts, mdPart{kind: mdCode, text: strings.Join(code, "\n"), lang: info})
			i = j // the closing fence, or past the end
			continue
		}
		if i+1 < len(lines) && line != "" && line[0] != ' ' && line[0] != '\t' {
			if head := tableCells(line); head != nil && isDelimiterRow(lines[i+1], len(head)) {
				flush()
				rows := [][]string{head}
				j := i + 2
				for ; j < len(lines) && strings.TrimSpace(lines[j]) != "" && strings.Contains(lines[j], "|"); j++ {
					row := tableCells(lines[j])
					row = append(row, make([]string, max(0, len(head)-len(row)))...)
					rows = append(rows, row[:len(head)])
				}
				parts = append(parts, mdPart{kind: mdTable, rows: rows})
				i = j - 1
				continue
			}
		}
		prose = append(prose, line)
	}
	flush()
	return parts
}

// openFence reports whether line opens a fenced code block (up to three spaces
// before it), with the fence ("```", "~~~~") and the info string's first word.
func openFence(line string) (fence, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	rest := strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(rest, "`") { // CommonMark: not a fence
		return "", "", false
	}
	if f := strings.Fields(rest); len(f) > 0 {
		info = f[0]
	}
	return t[:n], info, true
}

// closesFence reports whether line closes a code block opened with fence.
func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == "" && len(line)-len(strings.TrimLeft(line, " ")) <= 3
}

// tableCells splits a table row into its cells: the pipes at either end are
// optional, "\|" is a pipe inside a cell. Nil where the line has no pipe.
func tableCells(line string) []string {
	t := strings.TrimSpace(line)
	if !strings.Contains(t, "|") {
		return nil
	}
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, `\|`) {
		t = t[:len(t)-1]
	}
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '\\' && i+1 < len(t) && t[i+1] == '|':
			cell.WriteByte('|')
			i++
		case t[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(t[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// isDelimiterRow reports whether line is a table's delimiter row for n
// columns: n cells of dashes, each with an optional colon at either end.
func isDelimiterRow(line string, n int) bool {
	cells := tableCells(line)
	if len(cells) != n {
		return false
	}
	for _, c := range cells {
		c = strings.TrimSuffix(strings.TrimPrefix(c, ":"), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

// messageBody draws a message's markdown: the prose through render
// (markdownText for what the user typed, answerText for a reply), tables as a
// grid under a bold header row, code blocks in a box of their own with a
// Copy code button (copy puts text on the clipboard and shows note). One prose
// part alone is its RichText, as before.
func messageBody(md string, render func(string) *widget.RichText, copy func(text, note string)) fyne.CanvasObject {
	parts := splitMarkdown(md)
	if len(parts) == 0 || (len(parts) == 1 && parts[0].kind == mdProse) {
		return render(md)
	}
	var objs []fyne.CanvasObject
	for _, p := range parts {
		switch p.kind {
		case mdProse:
			objs = append(objs, render(p.text))
		case mdTable:
			objs = append(objs, tableView(p.rows, render))
		case mdCode:
			objs = append(objs, codeView(p.text, p.lang, copy))
		}
	}
	return container.NewVBox(objs...)
}

// tableView is a table as the Encyclopedia's pages draw theirs
// (htmlview.Table), the header bold.
func tableView(rows [][]string, render func(string) *widget.RichText) fyne.CanvasObject {
	cells := make([][]fyne.CanvasObject, len(rows))
	for r, row := range rows {
		for _, cell := range row {
			rt := render(cell)
			if r == 0 {
				walkSegments(rt.Segments, func(t *widget.TextSegment) { t.Style.TextStyle.Bold = true })
			}
			cells[r] = append(cells[r], rt)
		}
	}
	return htmlview.Table(cells, true)
}

// codeView is a code block: its language, if named, and Copy code over the
// code in monospace on the window's background. The code wraps: a horizontal
// scroller would take the mouse wheel from the chat's own scrolling.
func codeView(code, lang string, copy func(text, note string)) fyne.CanvasObject {
	rt := widget.NewRichText(&widget.TextSegment{Style: widget.RichTextStyleCodeBlock, Text: code})
	rt.Wrapping = fyne.TextWrapWord
	label := widget.NewLabel(lang)
	secondaryText(label)
	copyB := widget.NewButtonWithIcon("Copy code", theme.ContentCopyIcon(), func() {
		copy(code, "Code copied to the clipboard")
	})
	copyB.Importance = widget.LowImportance
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	return container.NewStack(bg, container.NewVBox(container.NewBorder(nil, nil, nil, copyB, label), rt))
}

// markdownText renders a message's markdown. Fyne's parser (CommonMark) leaves
// emphasis markers it cannot pair as text — "**Note:**this", "**bold" cut by
// a canvas boundary — so the stray "**" and "__" left in plain text are dropped.
func markdownText(md string) *widget.RichText {
	rt := widget.NewRichTextFromMarkdown(md)
	rt.Wrapping = fyne.TextWrapWord
	walkSegments(rt.Segments, func(t *widget.TextSegment) {
		if !t.Style.TextStyle.Monospace {
			t.Text = strings.NewReplacer("**", "", "__", "").Replace(t.Text)
		}
	})
	return rt
}

// walkSegments calls fn on every text segment under segs, through blocks
// (paragraphs, lists).
func walkSegments(segs []widget.RichTextSegment, fn func(*widget.TextSegment)) {
	for _, s := range segs {
		switch t := s.(type) {
		case *widget.TextSegment:
			fn(t)
		case widget.RichTextBlock:
			walkSegments(t.Segments(), fn)
		}
	}
}

// answerText renders a model's reply: its markdown, less the markup fragments
// Fyne would show as text (engine/markup: a half tag "<a dup", an attribute
// end `eraer">`). A small model mixes its pages' HTML into answers; Fyne drops
// a whole inline tag and keeps its text, but shows the debris of a broken one
// — the pages' "no broken markup on screen", kept in Chat too. Code is left as
// written. The user's own messages are shown as typed (markdownText).
func answerText(md string) *widget.RichText {
	rt := markdownText(md)
	walkSegments(rt.Segments, func(t *widget.TextSegment) {
		found := markup.Find(t.Text)
		if t.Style.TextStyle.Monospace || len(found) == 0 {
			return
		}
		var b strings.Builder
		last := 0
		for _, f := range found {
			b.WriteString(t.Text[last:f[0]])
			last = f[1]
		}
		b.WriteString(t.Text[last:])
		t.Text = b.String()
	})
	return rt
}
