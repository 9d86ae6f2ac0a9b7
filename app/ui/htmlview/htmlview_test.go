package htmlview

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/htmlsafe"
)

// TestHostileInput renders hostile pages and checks that nothing is fetched, no
// link leaves the app and nothing panics.
func TestHostileInput(t *testing.T) {
	test.NewTempApp(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u := srv.URL
	deep := strings.Repeat("<ul><li><blockquote><div>", 3000) + "deep" + strings.Repeat("</div></blockquote></li></ul>", 3000)
	pages := map[string]string{
		"script":     `<h1>T</h1><script>fetch("` + u + `")</script><script src="` + u + `/x.js"></script><p>ok</p>`,
		"handlers":   `<p onclick="fetch('` + u + `')" onload="x()">click</p><a href="/wiki/A" onmouseover="fetch('` + u + `')">A</a>`,
		"javascript": `<a href="javascript:fetch('` + u + `')">js</a><a href="  JAVASCRIPT:alert(1)">js2</a>`,
		"iframes":    `<iframe src="` + u + `/frame"></iframe><frameset><frame src="` + u + `"></frameset><p>after</p>`,
		"images":     `<img src="` + u + `/a.png"><p><img src="` + u + `/b.png" onerror="x()">text</p><picture><source srcset="` + u + `/c.png"></picture><input type=image src="` + u + `/d.png">`,
		"css":        `<style>@import url(` + u + `/s.css)</style><link rel=stylesheet href="` + u + `/l.css"><p style="background:url(` + u + `/bg.png)">styled</p>`,
		"remote":     `<a href="` + u + `/page">remote</a><a href="//` + strings.TrimPrefix(u, "http://") + `/x">proto-relative</a>`,
		"forms":      `<form action="` + u + `" method=post><input name=q><button>go</button></form>`,
		"unclosed":   `<h1>Open <b>bold <i>both <a href="/wiki/X">link <ul><li>item <table><tr><td>cell`,
		"invalid":    "<p>bad \xff\xfe\xfd utf8 \xc3(</p><h2>\x00nul</h2>",
		"deep":       deep,
		"huge":       "<p>" + strings.Repeat("<b>w</b> <i>x</i> ", 40000) + "</p>",
		"table":      `<table><tr><th>a</th></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>`,
		"meta":       `<meta http-equiv="refresh" content="0;url=` + u + `"><base href="` + u + `/"><p>m</p>`,
	}
	for name, html := range pages {
		t.Run(name, func(t *testing.T) {
			v := New(func(htmlsafe.Inline) {})
			w := test.NewTempWindow(t, v)
			w.Resize(fyne.NewSize(800, 600))
			v.SetDoc(htmlsafe.Parse(html))
			for _, o := range test.LaidOutObjects(w.Content()) {
				switch x := o.(type) {
				case *widget.Hyperlink:
					if x.URL == nil || x.URL.Scheme != "" || x.URL.Host != "" || !strings.HasPrefix(x.URL.Path, "/") {
						t.Errorf("link leaves the app: %v", x.URL)
					}
					if x.OnTapped == nil {
						t.Errorf("link %q would open a browser", x.Text)
					}
				}
			}
			for _, l := range v.Links() {
				if l.OnTapped == nil || l.URL.Scheme != "" || l.URL.Host != "" {
					t.Errorf("link segment %q → %v", l.Text, l.URL)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d network requests made while rendering", n)
	}
}

func TestLinkTapCallsOnLink(t *testing.T) {
	v, got := tappedView(t, 600, 400)
	v.SetDoc(htmlsafe.Parse(`<ul><li>See <a href="/wiki/Unix">Unix</a></li></ul><table><tr><td><a href="/wiki/C">C</a></td></tr></table>`))
	links := v.Links()
	if len(links) != 2 {
		t.Fatalf("%d links", len(links))
	}
	links[0].OnTapped()
	if got.Href != "/wiki/Unix" || got.Text != "Unix" {
		t.Errorf("tapped %+v", got)
	}
	test.AssertObjectRendersToMarkup(t, "list_and_table.xml", v)
}

// TestLongLinkWraps: a link whose text is a whole paragraph (what an unclosed <a>
// from a small model gives) keeps its first words as the hyperlink and wraps the
// rest with the page, instead of running off it and squeezing the text after it
// into a one-letter column (Fyne 2.7 never wraps a hyperlink segment).
func TestLongLinkWraps(t *testing.T) {
	v, got := tappedView(t, 400, 600)
	long := strings.Repeat("locing any interrongboongineeres data ", 6)
	v.SetDoc(htmlsafe.Parse(`<p>An <a href="/wiki/Slop">` + long + `</a> tail words after the link.</p>`))
	for _, o := range test.LaidOutObjects(v) {
		switch x := o.(type) {
		case *widget.Hyperlink:
			if x.Size().Width > 400 {
				t.Errorf("link %q is %.0f wide in a 400-wide page", x.Text, x.Size().Width)
			}
		case *canvas.Text:
			if x.Position().X > 400 {
				t.Errorf("text %q laid out at x=%.0f, off a 400-wide page", x.Text, x.Position().X)
			}
			if len([]rune(strings.TrimSpace(x.Text))) == 1 {
				t.Errorf("a one-letter line %q: the text after the link is squeezed", x.Text)
			}
		}
	}
	links := v.Links()
	if len(links) != 1 || links[0].Text != "locing any interrongboongineeres" {
		t.Fatalf("links shown: %d, first %q", len(links), links[0].Text)
	}
	links[0].OnTapped()
	if got.Href != "/wiki/Slop" {
		t.Errorf("tapping the link followed %+v", got)
	}
	// Short links stay whole.
	v.SetDoc(htmlsafe.Parse(`<p><a href="/wiki/Unix">Unix operating system</a></p>`))
	if l := v.Links(); len(l) != 1 || l[0].Text != "Unix operating system" {
		t.Errorf("short link shown as %d segments", len(l))
	}
}

// TestLinkNearTheEdgeStartsANewRow: a link that starts near the right edge moves
// to the next row instead of running off the page and squeezing the text after
// it into a column one letter wide (the Race's polaroid pane showed "u t i l i t
// y" one letter per row): whatever text comes before the link, every row fits.
func TestLinkNearTheEdgeStartsANewRow(t *testing.T) {
	v, _ := tappedView(t, 400, 600)
	for n := range 24 {
		before := strings.Repeat("word ", n) + strings.Repeat("x", n%5)
		v.SetDoc(htmlsafe.Parse(`<p>` + before + ` <a href="/wiki/Electron">electron</a>utility and then ` +
			`<a href="/wiki/Microsoft">Microsoft</a> and <a href="/wiki/Unix">Unix</a> too</p>`))
		checkRows(t, v, fmt.Sprintf("%d words before", n))
	}
}

// TestLinkInAListItemStartsANewRow: a list item's links wrap as a paragraph's
// do. The Race's printer wrote "• Microsoft's Unix command to be a terminal
// emulators." (three links in one item) and the last link ran off its pane at
// 800×600 (window-check), cut at "terminal emu": the breaks before links were
// made for paragraphs only, not for the rows of a list.
func TestLinkInAListItemStartsANewRow(t *testing.T) {
	v, _ := tappedView(t, 340, 600)
	for n := range 12 {
		before := strings.Repeat("word ", n)
		for _, list := range []string{"ul", "ol"} {
			v.SetDoc(htmlsafe.Parse(`<h1>Unix</h1><p><em>operating system</em></p><` + list + `><li>` + before +
				`<a href="/wiki/Microsoft">Microsoft</a>'s <a href="/wiki/Unix">Unix</a> command to be a ` +
				`<a href="/wiki/terminal_emulator">terminal emulators</a>.</li><li>A second <a href="/wiki/item">item</a></li></` + list + `>`))
			checkRows(t, v, fmt.Sprintf("<%s>, %d words before", list, n))
		}
	}
}

// checkRows fails the test where the page's rows do not fit v: an object that
// ends past its width, or a row of one letter (the text squeezed into a column).
// A lone "x" is the fixtures' own one-letter word.
func checkRows(t *testing.T, v *View, what string) {
	t.Helper()
	var rt *widget.RichText
	for _, o := range test.LaidOutObjects(v) {
		if x, ok := o.(*widget.RichText); ok && rt == nil { // the page's, not a link's own
			rt = x
		}
	}
	if rt == nil {
		t.Fatal("no rich text shown")
	}
	width := v.Size().Width
	for _, o := range test.WidgetRenderer(rt).Objects() {
		// Where its text ends: Fyne 2.7 sizes a link that ends a row to the
		// page's whole width, wherever it starts.
		end := o.Position().X + o.Size().Width
		if c, ok := o.(*fyne.Container); ok && len(c.Objects) > 0 {
			if l, ok := c.Objects[0].(*widget.Hyperlink); ok {
				end = o.Position().X + fyne.MeasureText(l.Text, theme.TextSize(), fyne.TextStyle{}).Width
			}
		}
		if end > width+1 {
			t.Errorf("%s: %T ends at x=%.0f, off a %.0f-wide page", what, o, end, width)
		}
		if x, ok := o.(*canvas.Text); ok {
			if r := []rune(strings.TrimSpace(x.Text)); len(r) == 1 && unicode.IsLetter(r[0]) && r[0] != 'x' {
				t.Errorf("%s: a one-letter row %q", what, x.Text)
			}
		}
	}
}

// tappedView shows a View in a test window of the given size; *got is the last
// link its OnLink received.
func tappedView(t *testing.T, width, height float32) (v *View, got *htmlsafe.Inline) {
	t.Helper()
	test.NewTempApp(t)
	got = new(htmlsafe.Inline)
	v = New(func(l htmlsafe.Inline) { *got = l })
	test.NewTempWindow(t, v).Resize(fyne.NewSize(width, height))
	return v, got
}

// TestLongGroupTitleWraps: a Desktop window's title (its <h2>) wraps with the
// page. A small model's title can be a whole sentence, or noise while the screen
// develops; a title that cannot wrap widens the view's minimum size, and a Fyne
// window grows to its content's minimum and never shrinks back, so one such
// screen left every later screen wider than the display.
func TestLongGroupTitleWraps(t *testing.T) {
	v, _ := tappedView(t, 400, 600)
	long := strings.Repeat("Soennster Onable heweightxtended ", 8)
	v.SetDoc(htmlsafe.Parse(`<nav><a href="/ui/menu-apps">Applications</a> <a href="/ui/menu-help">Help</a></nav>` +
		`<h1>Desktop</h1><section><h2>` + long + `</h2><p>text</p></section>`))
	if w := v.MinSize().Width; w > 200 {
		t.Errorf("a long window title makes the page at least %.0f wide", w)
	}
	var shown bool
	for _, o := range test.LaidOutObjects(v) {
		if x, ok := o.(*canvas.Text); ok && strings.Contains(x.Text, "Soennster") {
			shown = true
			if x.Position().X+x.Size().Width > 400 {
				t.Errorf("title text %q runs off a 400-wide page", x.Text)
			}
		}
	}
	if !shown {
		t.Error("the window title is not shown")
	}
}

// TestTextAfterLinksWrapsAsFyneDoes: where the text after a link does not fit
// the rest of its row, Fyne 2.7 starts it on the next row (the row keeps only
// its leading space), which the breaks before links had not foreseen: at 800×600
// the Race's Unix page — its entry's first sentence, four links in a row — ran
// "Bell Labs" off the pane and drew "left the" one letter per row (window-check).
// At any width, every row fits and none is one letter.
func TestTextAfterLinksWrapsAsFyneDoes(t *testing.T) {
	page := `<h1>Unix</h1><p><em>operating system</em></p><p>(Or "UNIX", in the authors' words, "A weak pun on Multics") ` +
		`Plural "Unices". An interactive <a href="/wiki/time-sharing">time-sharing</a> <a href="/wiki/operating_system">operating ` +
		`system</a> invented in 1969 by <a href="/wiki/Ken_Thompson">Ken Thompson</a> after <a href="/wiki/Bell_Laboratories">Bell ` +
		`Labs</a> left the <a href="/wiki/Multics">Multics</a> project, originally so he could play games on his scavenged ` +
		`<a href="/wiki/PDP-7">PDP-7</a>. It has been ported to the <a href="/wiki/X_Window_System">X Window System</a>.</p>`
	for width := float32(260); width <= 520; width++ {
		v, _ := tappedView(t, width, 900)
		v.SetDoc(htmlsafe.Parse(page))
		checkRows(t, v, fmt.Sprintf("width %.0f", width))
	}
}

// TestTableRowsKeepTheirOwnHeight: a table's rows are each as high as their
// own tallest cell, the header ruled off. One grid made every row as high as
// the tallest: a long cell in one row left a screen's gap under every other.
func TestTableRowsKeepTheirOwnHeight(t *testing.T) {
	v, _ := tappedView(t, 500, 800)
	long := strings.Repeat("words that wrap ", 30)
	v.SetDoc(htmlsafe.Parse(`<table><tr><th>Name</th><th>About</th></tr><tr><td>a</td><td>short</td></tr><tr><td>b</td><td>` + long + `</td></tr></table>`))
	box := v.box.Objects[0].(*fyne.Container)
	var rows []*fyne.Container
	rules := 0
	for _, o := range box.Objects {
		switch x := o.(type) {
		case *fyne.Container:
			rows = append(rows, x)
		case *widget.Separator:
			rules++
		}
	}
	if len(rows) != 3 || rules != 3 {
		t.Fatalf("%d rows and %d rules, want 3 and 3 (above, under the header, below)", len(rows), rules)
	}
	if h0, h1, h2 := rows[0].Size().Height, rows[1].Size().Height, rows[2].Size().Height; h1 >= h2/3 || h0 >= h2/3 {
		t.Errorf("row heights %.0f, %.0f, %.0f: the short rows are as high as the long one", h0, h1, h2)
	}
}
