package htmlsafe

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestRelink(t *testing.T) {
	titles := map[string]bool{"virtual memory": true, "PDP-10": true, "MIT": true, "Unix": true, "machine code": true}
	known := func(t string) bool { return titles[t] }
	for _, tc := range []struct{ in, want string }{
		// The text names an entry and the topic does not: the link opens the text's.
		{`<p>Uses <a href="/wiki/virtual_program">virtual memory</a>.</p>`,
			`<p>Uses <a href="/wiki/virtual_memory">virtual memory</a>.</p>`},
		{`<a class="x" href="/wiki/PDP-10-10">PDP-10</a> and <a href="/wiki/Unix">Unix</a>`,
			`<a class="x" href="/wiki/PDP-10">PDP-10</a> and <a href="/wiki/Unix">Unix</a>`},
		// Text with markup and entities inside the link.
		{`<a href="/wiki/Massachusetts_of_Technology"><em>MIT</em></a>`,
			`<a href="/wiki/MIT"><em>MIT</em></a>`},
		// Not an entry, but another link of the page with that text opens one.
		{`<a href="/wiki/machine_code">machine language</a>, then <a href="/wiki/m_code">Machine language</a>`,
			`<a href="/wiki/machine_code">machine language</a>, then <a href="/wiki/machine_code">Machine language</a>`},
		// A known topic stays, whatever the text says; so does an unknown text.
		{`<a href="/wiki/Unix">MIT</a>`, `<a href="/wiki/Unix">MIT</a>`},
		{`<a href="/wiki/virtual_program">virtual prog</a>`, `<a href="/wiki/virtual_program">virtual prog</a>`},
		// Not an encyclopedia link; a link left open at the end; no link at all.
		{`<a href="https://example.com/">Unix</a>`, `<a href="https://example.com/">Unix</a>`},
		{`<p>see <a href="/wiki/Unixes">Unix`, `<p>see <a href="/wiki/Unix">Unix`},
		{`<p>no links</p>`, `<p>no links</p>`},
		// A second <a> closes the first (links do not nest), each decided alone.
		{`<a href="/wiki/x1">MIT<a href="/wiki/x2">PDP-10</a>`, `<a href="/wiki/MIT">MIT<a href="/wiki/PDP-10">PDP-10</a>`},
	} {
		if got := Relink(tc.in, known); got != tc.want {
			t.Errorf("Relink(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	if got := Relink(`<a href="/wiki/x">Unix</a>`, nil); got != `<a href="/wiki/x">Unix</a>` {
		t.Errorf("no leads: %q", got)
	}
}

// TestRelinkHostile: a relinked page is still only what Sanitize lets through,
// and link text that would break out of the attribute cannot.
func TestRelinkHostile(t *testing.T) {
	known := func(t string) bool { return t != "q" } // every text names an entry, the topic none
	for _, in := range []string{
		`<a href="/wiki/q">&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a>`,
		`<a href="/wiki/q">x" onclick="y</a>`,
	} {
		relinked := Relink(in, known)
		if relinked == in {
			t.Errorf("Relink(%q) changed nothing", in)
		}
		out := Sanitize(relinked)
		if strings.Contains(out, "<script") || strings.Contains(out, " onclick=") || strings.Count(out, `"`) != 2 {
			t.Errorf("Relink(%q) then Sanitize: %q", in, out)
		}
	}
}

// TestRelinkChangesOnlyHrefs: over random pages of links, text and broken
// markup, Relink rewrites hrefs and nothing else, and does rewrite some.
func TestRelinkChangesOnlyHrefs(t *testing.T) {
	pieces := []string{`<p>`, `</p>`, `<a href="/wiki/`, `">`, `</a>`, `<em>`, `</em>`, ` Unix`, ` virtual memory`,
		`PDP-10`, `_x`, `&amp;`, `"`, `<`, `>`, ` `, `<a href="http://e.com/">`, `<br>`, `%2F`}
	hrefs := regexp.MustCompile(`href="[^"]*"`)
	known := func(title string) bool { return len(title)%2 == 0 }
	rng := rand.New(rand.NewPCG(1, 2))
	changed := 0
	for range 3000 {
		var b strings.Builder
		for range 4 + rng.IntN(20) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := b.String()
		out := Relink(in, known)
		if hrefs.ReplaceAllString(in, "") != hrefs.ReplaceAllString(out, "") {
			t.Fatalf("Relink changed more than hrefs:\n in %q\nout %q", in, out)
		}
		if out != in {
			changed++
		}
	}
	if changed == 0 {
		t.Error("no page was relinked: the test exercises nothing")
	}
}
