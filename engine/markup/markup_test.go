package markup

import (
	"reflect"
	"testing"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		// The "Compiler" page.
		{`object-oriented language language languageset">Symbolic. Its of viol", C. B. It is a Basic) ">word, A/onforming`,
			[]string{`languageset">`, `">`}},
		{`see href="/wiki/Unix">Unix</a> and </`, []string{`href="/wiki/Unix">`, `</a>`, `</`}},
		{`x<a<ay and <p`, []string{`<a`, `<ay`, `<p`}},
		{`it is <Cmd>-<Power switch>!`, []string{`<Cmd>`, `<Power switch>`}},
		{`the /wiki/foo_bar link, class='x' and src=/x.png`, []string{`/wiki/foo_bar`, `class='x'`, `src=/x.png`}},
		{`<br/> and a/>`, []string{`<br/>`, `a/>`}},
		// Prose that only looks like markup.
		{`a < b, <3, x = "a", 2 > 1, -> and "quoted", it's, and/or, 1/2`, nil},
	} {
		var got []string
		for _, sp := range Find(tc.text) {
			got = append(got, tc.text[sp[0]:sp[1]])
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Find(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		page string
		want int
	}{
		{`<h1>Unix</h1><p>An <a href="/wiki/operating_system">operating system</a>, 2 &lt; 3.</p>`, 0},
		{`<p>A Recurry of the <a href="/wiki/ome_storage">">data</a></a>.</p>`, 1},
		{`<p>a &lt;p&gt; b</p>`, 1},
		{`<p>x<b>&lt;</b>p</p>`, 1},                                      // one run across inline elements
		{`<p>x&lt;</p><p>p</p>`, 0},                                      // paragraphs are apart
		{`<p>the <code>&lt;p&gt;</code> tag</p><pre>a="b"&gt;</pre>`, 0}, // code is content
		{`<script>a="b"></script><p>ok</p>`, 0},
		// A code tag around the model's prose and links is not code.
		{`<pre>import&#34;&gt;import of <a href="/wiki/procedure">proced</a>.<p>It is</p></pre>`, 1},
		{`<p>a <code>x&#34;&gt; <a href="/wiki/Unix">Unix</a></code></p>`, 1},
		{`<pre>a="b"&gt; <b>bold</b> <code>&lt;p&gt;</code></pre>`, 0}, // formatting in code is code
		{"<p>half <p", 0}, // the parser drops a tag cut off at the end
		{"<p>half &lt;/", 1},
	} {
		if got := Count(tc.page); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.page, got, tc.want)
		}
	}
}
