package htmlsafe

import (
	"strings"
	"testing"
)

func TestParsePage(t *testing.T) {
	d := Parse(`<h1>Unix</h1><p>An <em>operating</em> system from <a href="/wiki/Bell_Labs">Bell Labs</a>, see <code>ls</code>.</p>
<ul><li>one</li><li><strong>two</strong></li></ul><ol><li>first</li></ol><pre>  x := 1
  y := 2</pre><blockquote><p>quoted</p></blockquote><hr><table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>`)
	if d.Title != "Unix" {
		t.Errorf("title %q", d.Title)
	}
	kinds := []Kind{Heading, Paragraph, List, List, CodeBlock, Quote, Rule, Table}
	if len(d.Blocks) != len(kinds) {
		t.Fatalf("got %d blocks: %+v", len(d.Blocks), d.Blocks)
	}
	for i, k := range kinds {
		if d.Blocks[i].Kind != k {
			t.Errorf("block %d kind %v, want %v", i, d.Blocks[i].Kind, k)
		}
	}
	p := d.Blocks[1].Inlines
	want := []Inline{{Text: "An "}, {Text: "operating", Style: Italic}, {Text: " system from "}, {Text: "Bell Labs", Href: "/wiki/Bell_Labs"}, {Text: ", see "}, {Text: "ls", Style: Code}, {Text: "."}}
	if len(p) != len(want) {
		t.Fatalf("paragraph runs %+v", p)
	}
	for i := range want {
		if p[i] != want[i] {
			t.Errorf("run %d = %+v, want %+v", i, p[i], want[i])
		}
	}
	if !d.Blocks[3].Ordered || d.Blocks[2].Ordered {
		t.Error("ordered flags wrong")
	}
	if got := d.Blocks[2].Items[1][0].Inlines[0]; got.Style != Bold || got.Text != "two" {
		t.Errorf("bold item %+v", got)
	}
	if got := Text(d.Blocks[4].Inlines); got != "  x := 1\n  y := 2" {
		t.Errorf("pre %q", got)
	}
	if tb := d.Blocks[7]; len(tb.Rows) != 2 || !tb.Rows[0][0].Header || Text(tb.Rows[1][1].Inlines) != "2" {
		t.Errorf("table %+v", tb.Rows)
	}
	if links := d.Links(); len(links) != 1 || links[0].Href != "/wiki/Bell_Labs" {
		t.Errorf("links %+v", links)
	}
}

func TestHostile(t *testing.T) {
	deep := strings.Repeat("<div><span><b>", 20000) + "bottom" + strings.Repeat("</b></span></div>", 20000)
	huge := "<p>" + strings.Repeat("word ", 300000) + "</p>"
	tests := []struct {
		name, in   string
		forbid     []string // must not appear in Sanitize output
		wantText   string   // must appear in the parsed text
		wantNoLink bool
	}{
		{"script", `<p>hi</p><script>alert(1)</script><script src="http://x/y.js"></script>`, []string{"script", "alert"}, "hi", true},
		{"handlers", `<p onclick="evil()" onmouseover=evil()>click</p><a href="/wiki/X" onclick="evil()">x</a>`, []string{"onclick", "onmouseover", "evil"}, "click", false},
		{"javascript link", `<a href="javascript:alert(1)">js</a><a href="JaVaScRiPt:alert(1)">js2</a><a href=" javascript:alert(1)">js3</a>`, []string{"javascript", "alert"}, "js", true},
		{"remote link", `<a href="http://evil.example/">a</a><a href="//evil.example/x">b</a><a href="/\evil.example">c</a><a href="data:text/html,x">d</a>`, []string{"evil", "data:"}, "a", true},
		{"iframe", `<iframe src="http://evil.example"></iframe><p>after</p><object data="x"></object><embed src="y">`, []string{"iframe", "evil", "object", "embed"}, "after", true},
		{"images", `<img src="http://evil.example/a.png" onerror="evil()"><p>text</p><img src=x><picture><source srcset="http://e/x"></picture>`, []string{"img", "evil", "srcset", "http"}, "text", true},
		{"style", `<style>body{background:url(http://evil.example)}</style><p style="background:url(http://evil.example)">s</p>`, []string{"style", "evil", "url("}, "s", true},
		{"form", `<form action="http://evil.example"><input name=a><button formaction="http://evil.example">go</button></form>`, []string{"form", "input", "evil"}, "go", true},
		{"unclosed", `<h1>Title<p>para <b>bold <i>both`, nil, "bold", true},
		{"invalid utf8", "<p>ok \xff\xfe bad \xc3</p>", nil, "ok", true},
		{"deep", deep, nil, "bottom", true},
		{"huge", huge, nil, "word", true},
		{"meta refresh", `<meta http-equiv="refresh" content="0;url=http://evil.example"><link rel=stylesheet href="http://evil.example/x.css"><base href="http://evil.example/"><p>m</p>`, []string{"meta", "link", "base", "evil"}, "m", true},
		{"svg", `<svg><script>alert(1)</script><a xlink:href="javascript:alert(1)">x</a></svg><p>v</p>`, []string{"svg", "alert", "javascript"}, "v", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			safe := Sanitize(tc.in)
			low := strings.ToLower(safe)
			for _, f := range tc.forbid {
				if strings.Contains(low, f) {
					t.Errorf("sanitized output contains %q: %.200s", f, safe)
				}
			}
			d := Parse(tc.in)
			var all strings.Builder
			var walk func([]Block)
			walk = func(bs []Block) {
				for _, b := range bs {
					all.WriteString(Text(b.Inlines))
					for _, it := range b.Items {
						walk(it)
					}
					walk(b.Children)
					for _, r := range b.Rows {
						for _, c := range r {
							all.WriteString(Text(c.Inlines))
						}
					}
				}
			}
			walk(d.Blocks)
			if !strings.Contains(all.String(), tc.wantText) {
				t.Errorf("parsed text lacks %q: %.200s", tc.wantText, all.String())
			}
			for _, l := range d.Links() {
				if l.Href != "" && (tc.wantNoLink || !strings.HasPrefix(l.Href, "/wiki/")) {
					t.Errorf("unexpected link %+v", l)
				}
			}
		})
	}
}

func TestSafeHref(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"/wiki/Unix", true}, {"/ui/start-menu", true}, {"/", true},
		{"//evil.example", false}, {"/\\evil", false}, {"http://x", false}, {"javascript:x", false},
		{"wiki/Unix", false}, {"/wiki/a b", false}, {"/wiki/\x00", false}, {"", false},
	} {
		if _, ok := SafeHref(tc.in); ok != tc.ok {
			t.Errorf("SafeHref(%q) = %v, want %v", tc.in, ok, tc.ok)
		}
	}
}

func TestNoiseRuns(t *testing.T) {
	noise := NoiseText(5, 7)
	d := Parse("<h1>Ti" + noise + "tle</h1><p>" + NoiseText(3, 1) + "</p>")
	h := d.Blocks[0].Inlines
	if len(h) != 3 || h[1].Style&Noise == 0 || h[0].Style&Noise != 0 || len([]rune(h[1].Text)) != 5 {
		t.Fatalf("heading runs %+v", h)
	}
	if shown := ShowNoise(h[1].Text); strings.ContainsFunc(shown, IsNoise) || len([]rune(shown)) != 5 {
		t.Errorf("ShowNoise %q", shown)
	}
	if NoiseText(8, 1) == NoiseText(8, 2) {
		t.Error("noise does not vary with seed")
	}
}

func TestGroupsAndClickables(t *testing.T) {
	d := Parse(`<div data-id="win-editor" data-title="Editor"><h2>Editor</h2><button data-id="btn-save">Save</button><ul><li data-id="menu-open">Open</li></ul></div>`)
	if len(d.Blocks) != 1 || d.Blocks[0].Kind != Group || d.Blocks[0].ID != "win-editor" || d.Blocks[0].Title != "Editor" {
		t.Fatalf("blocks %+v", d.Blocks)
	}
	links := d.Links()
	if len(links) != 2 || links[0].ID != "btn-save" || links[0].Text != "Save" || links[1].ID != "menu-open" {
		t.Errorf("clickables %+v", links)
	}
}

// TestInlines: every run is visited once, in reading order, through lists,
// quotes and table cells (which the UI's noise counts used to skip), and a
// loop that stops early stops the walk.
func TestInlines(t *testing.T) {
	d := Parse(`<h1>A</h1><ul><li>b<blockquote><p>c</p></blockquote></li></ul>` +
		`<table><tr><th>d</th><td><a href="/wiki/E">e</a></td></tr></table><p>f</p>`)
	var got []string
	for r := range d.Inlines() {
		if s := strings.TrimSpace(r.Text); s != "" {
			got = append(got, s)
		}
	}
	if strings.Join(got, "") != "Abcdef" {
		t.Errorf("runs %q, want A to f in order", got)
	}
	n := 0
	for range d.Inlines() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("the walk went on after a break")
	}
	if links := d.Links(); len(links) != 1 || links[0].Href != "/wiki/E" {
		t.Errorf("links %+v", links)
	}
	for range (*Doc)(nil).Inlines() {
		t.Error("a nil document has runs")
	}
}
