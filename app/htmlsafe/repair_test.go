package htmlsafe

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/darkroomlabs/darkroom/engine/markup"
)

// garbled are pages Darkroom Mini wrote (the "Compiler" page and
// `train eval --samples` pages from assets/training/eval.json), cut to the
// broken parts.
var garbled = []string{
	`<h1>Compiler</h1>
<p>object-oriented language language languageset">Symbolic. Its of viol", C. B. It is a Basic) ">word, A/onforming of converting</p>`,
	`<p>See most red to the it locate, the executable  bigot__designinance_t</a> . Rurrently the and tendency great a worstall and tit Chines of the , hol) A Recurry of the <a href="/wiki/ome_storage">">data</a></a>. +8 contains it</p>`,
	`<p>(F", from "LL) <aagnet_p">mm</a>  <a 0 can occur in (LS An image</a> and a machine screen from "i".". Later '..</p>`,
	`<p><em>(code, The company state of a said for temporarying a inside the, television of typing to either "erape</a> to individuals</p>
<p>(HP. "eak you you in the operating hands</p>`,
	`<p>A <a href="/wiki/object">object</a> that is a <a href="/wiki/University_of_California_at_Berkeley">University of California at the <a href="/wiki/Computer_Aided_Design">CADA</a>.</p>`,
	`<p>the <a href="/wiki/Unix">/wiki/Unix</a> and <a href="/wiki/Plan_9">href="/wiki/Plan_9"></a> systems<a<a href="/wiki/x">x</a> <p`,
	`<p>a &lt;p&gt; shown, &lt;&lt;pp and </`,
}

// TestRepairGarbled: the pages the Mini writes show no fragment once sanitized
// and have their tags balanced, where the sanitizer alone left fragments on
// screen or elements open.
func TestRepairGarbled(t *testing.T) {
	for _, in := range garbled {
		if old := Policy().Sanitize(in); markup.Count(old) == 0 && balanced(old) {
			t.Errorf("test page is neither broken nor unbalanced unrepaired: %q", in)
		}
		out := Sanitize(in)
		if n := markup.Count(out); n != 0 {
			t.Errorf("%d fragments left in\n%s\nfrom\n%s", n, out, in)
		}
		if again := Sanitize(out); again != out {
			t.Errorf("not idempotent:\n%s\n%s", out, again)
		}
		if !balanced(out) {
			t.Errorf("tags left unbalanced: %s", out)
		}
		if f := docFragments(Parse(in)); len(f) > 0 {
			t.Errorf("the app's view shows %q (from %q)", f, in)
		}
	}
}

// docFragments returns the fragments in the text of d as the app shows it:
// each block's runs joined (code aside, as engine/markup leaves it), noise as
// its glyphs.
func docFragments(d *Doc) []string {
	var out []string
	check := func(in []Inline) {
		var b strings.Builder
		for _, r := range in {
			if r.Style&Code == 0 {
				b.WriteString(ShowNoise(r.Text))
			}
		}
		text := b.String()
		for _, f := range markup.Find(text) {
			out = append(out, text[f[0]:f[1]])
		}
	}
	var walk func([]Block)
	walk = func(bs []Block) {
		for _, b := range bs {
			if b.Kind != CodeBlock {
				check(b.Inlines)
			}
			for _, it := range b.Items {
				walk(it)
			}
			walk(b.Children)
			for _, row := range b.Rows {
				for _, c := range row {
					check(c.Inlines)
				}
			}
		}
	}
	walk(d.Blocks)
	return out
}

// balanced reports whether every element of s is closed, in order.
func balanced(s string) bool {
	return balance(s) == s
}

func TestRepair(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"tag end glued to a word", `<p>language languageset">Symbolic. a Basic) ">word</p>`,
			`<p>language Symbolic. a Basic) word</p>`},
		{"link text that is debris", `<p>the <a href="/wiki/ome_storage">">data</a></a>.</p>`,
			`<p>the <a href="/wiki/ome_storage">data</a>.</p>`},
		{"link text of quotes", `<p>a <a href="/wiki/Unix">"</a> b</p>`, `<p>a <a href="/wiki/Unix">Unix</a> b</p>`},
		{"link text that is its own target", `<p><a href="/wiki/Plan_9">/wiki/Plan_9</a> and <a href="/wiki/Bell_Labs">Bell_Labs</a></p>`,
			`<p><a href="/wiki/Plan_9">Plan 9</a> and <a href="/wiki/Bell_Labs">Bell Labs</a></p>`},
		{"escaped tags in prose", `<p>a &lt;p&gt; b &lt;&lt;pp c, 2 &lt; 3</p>`, `<p>a  b &lt; c, 2 &lt; 3</p>`},
		{"half tag at the end", `<p>text <p`, `<p>text </p>`},
		{"tag across inline elements", `<p>x<b>&lt;</b>p y</p>`, `<p>x<b></b> y</p>`},
		{"unclosed inline ends with its paragraph", `<p><em>one</p><p>two</p>`, `<p><em>one</em></p><p>two</p>`},
		{"paragraph left open", `<h1>T</h1><p>one<p>two`, `<h1>T</h1><p>one</p><p>two</p>`},
		{"a link inside a link", `<p><a href="/wiki/A">a <a href="/wiki/B">b</a> c</p>`,
			`<p><a href="/wiki/A">a </a><a href="/wiki/B">b</a> c</p>`},
		{"stray end tags", `<p>a</a> b</em></p></p>`, `<p>a b</p>`},
		{"a code tag around prose is not code", "<pre>import&#34;&gt;import of <a href=\"/wiki/procedure\">proced</a>.\n<p>It is.</p></pre>",
			"import of <a href=\"/wiki/procedure\">proced</a>.\n<p>It is.</p>"},
		{"an inline code tag around a link", `<p>a <code>x&#34;&gt; <a href="/wiki/Unix">Unix</a></code> b</p>`,
			`<p>a  <a href="/wiki/Unix">Unix</a> b</p>`},
		{"code keeps its markup", `<p>the <code>&lt;p&gt;</code> element</p><pre>&lt;a href="x"&gt;</pre>`,
			`<p>the <code>&lt;p&gt;</code> element</p><pre>&lt;a href=&#34;x&#34;&gt;</pre>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Sanitize(tc.in); got != tc.want {
				t.Errorf("Sanitize(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestRepairKeepsCleanPages: well-formed pages come back byte for byte, as the
// policy alone returns them.
func TestRepairKeepsCleanPages(t *testing.T) {
	for _, in := range []string{
		"<h1>Unix</h1>\n<p><em>operating system</em></p>\n<p>An <a href=\"/wiki/operating_system\">operating system</a> from <a href=\"/wiki/Bell_Labs\">Bell Labs</a>; see <code>ls</code>.</p>",
		`<h2>Lists</h2><ul><li>one</li><li><strong>two</strong></li></ul><ol><li>first</li></ol><hr><p>a<br>b</p><blockquote><p>q &amp; a, 2 &lt; 3</p></blockquote>`,
		`<nav><a href="/ui/menu-apps">Applications</a> <a href="/ui/menu-help">Help</a></nav><section data-id="win-editor" data-title="Editor"><h2>Editor</h2><button data-id="btn-save">Save</button></section>`,
		`<table><tbody><tr><th>A</th><td>1</td></tr></tbody></table>`,
		// Links of symbols are real (FOLDOC's "bump", "--C-=C-C--").
		`<p>C&#39;s <a href="/wiki/increment_operator">++</a> operator, <a href="/wiki/%26%26">&amp;&amp;</a> and <a href="/wiki/oblique_stroke">/</a></p>`,
	} {
		if got := Sanitize(in); got != in {
			t.Errorf("clean page changed:\n got %q\nwant %q", got, in)
		}
		if got, want := Sanitize(in), Policy().Sanitize(in); got != want {
			t.Errorf("repair changed the policy's output:\n got %q\nwant %q", got, want)
		}
	}
}

// TestRepairDeveloping: a page still developing keeps its noise where the
// words are undecided (a link of noise stays a link of noise), and loses the
// fragments of what is decided.
func TestRepairDeveloping(t *testing.T) {
	noise := NoiseText(4, 3)
	in := `<h1>Unix</h1><p>An <a href="/wiki/operating_system">` + noise + `</a> from` + noise + `">Bell`
	out := Sanitize(in)
	if !strings.Contains(out, `<a href="/wiki/operating_system">`+noise+`</a>`) {
		t.Errorf("the developing link lost its noise: %q", out)
	}
	if n := markup.Count(out); n != 0 {
		t.Errorf("%d fragments in %q", n, out)
	}
	// What the screen shows for noise never reads as markup, alone or next to
	// text ("a" + `"` + glyph ">" would).
	shown := ShowNoise(NoiseText(4000, 1))
	if len(markup.Find(shown)) > 0 || strings.ContainsAny(shown, `<>/="'`) {
		t.Errorf("noise glyphs hold markup characters: %q", noiseGlyphs)
	}
}

// FuzzSanitize: whatever the model writes, the page shown has no fragment, is
// balanced, is what Sanitize returns again, and stays within the policy.
func FuzzSanitize(f *testing.F) {
	for _, s := range garbled {
		f.Add(s)
	}
	for _, s := range []string{
		`<h1>Unix</h1><p>An <a href="/wiki/x">x</a>.</p>`, `<p><em>a<p>b`, `<table>&lt;<tr><td>p</td></tr></table>`,
		`<ul><li>a<li>b</ul>`, `<a href="/wiki/x"><p>y</p></a>`, `<b><i>x</b></i>`, "<p>" + NoiseText(9, 2) + `">x</p>`,
		`<script>alert(1)</script><a href="javascript:x">j</a>`, `<pre>a</p>b`, `<h1><h2>x</h1>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Sanitize(in)
		if n := markup.Count(out); n != 0 {
			t.Fatalf("%d fragments in %q (from %q)", n, out, in)
		}
		if again := Sanitize(out); again != out {
			t.Fatalf("not idempotent:\n%q\n%q\nfrom %q", out, again, in)
		}
		if f := docFragments(Parse(in)); len(f) > 0 {
			t.Fatalf("the app's view shows %q (from %q)", f, in)
		}
		// Only the policy's elements and attributes, and only local links.
		nodes, err := html.ParseFragment(strings.NewReader(out), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
		if err != nil {
			return // too deep to check this way; the policy made it
		}
		for len(nodes) > 0 {
			n := nodes[len(nodes)-1]
			nodes = nodes[:len(nodes)-1]
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				nodes = append(nodes, c)
			}
			if n.Type != html.ElementNode {
				continue
			}
			if !allowed[n.Data] {
				t.Fatalf("element %q in %q (from %q)", n.Data, out, in)
			}
			for _, a := range n.Attr {
				if _, ok := SafeHref(a.Val); a.Key == "href" && !ok || !allowedAttr[a.Key] {
					t.Fatalf("attribute %s=%q in %q (from %q)", a.Key, a.Val, out, in)
				}
			}
		}
	})
}

var allowed = map[string]bool{}

var allowedAttr = map[string]bool{"href": true, "id": true, "data-id": true, "class": true,
	"data-app": true, "data-kind": true, "data-title": true, "data-icon": true}

func init() {
	for _, e := range strings.Fields(`a h1 h2 h3 h4 h5 h6 p br hr ul ol li dl dt dd pre code kbd samp blockquote
		em i strong b u small sub sup mark s del ins abbr cite q span div section article header footer nav main aside
		figure figcaption menu button label table thead tbody tfoot tr th td caption`) {
		allowed[e] = true
	}
}
