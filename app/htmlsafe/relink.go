package htmlsafe

import (
	"html"
	"strings"

	xhtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/darkroomlabs/darkroom/assets"
)

// Relink points an encyclopedia link at what its text says when its own topic
// is not an entry known reports: at the entry its text names, else at the entry
// another link of the page with the same text opens. A parallel decoder writes a
// link's target and its text as two copies of one phrase and garbles them apart
// ("virtual memory" linking to /wiki/virtual_program, "PDP-10" to
// /wiki/PDP-10-10), so a click would open a page on a topic the link does not
// name; the text is what the reader chose. A link whose topic is known, or whose
// text leads nowhere known, is left as written. page may be untrusted HTML:
// Relink changes only the href of such links, every other byte stays, and what it
// writes is a /wiki/ link (assets.WikiHref) for Sanitize to check like any
// other. known nil (a model without leads) changes nothing.
func Relink(page string, known func(title string) bool) string {
	if known == nil || !strings.Contains(page, assets.WikiPrefix) {
		return page
	}
	type link struct {
		at    int    // offset of the start tag in page
		tag   string // the start tag as written
		topic string
		text  string
	}
	var links []link
	z := xhtml.NewTokenizer(strings.NewReader(page))
	var text strings.Builder
	open, pos := false, 0
	closeLink := func() {
		if open {
			links[len(links)-1].text = assets.CleanLine(html.UnescapeString(text.String()))
		}
		open = false
		text.Reset()
	}
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			break
		}
		raw := string(z.Raw())
		switch tt {
		case xhtml.StartTagToken, xhtml.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) != atom.A {
				break
			}
			closeLink() // links do not nest: a new one (or an end tag) closes the open one
			if h := hrefAttr(raw); tt == xhtml.StartTagToken && h != "" {
				if t, ok := assets.TitleFromHref(hrefValue(h)); ok {
					links = append(links, link{at: pos, tag: raw, topic: t})
					open = true
				}
			}
		case xhtml.TextToken:
			if open {
				text.WriteString(raw)
			}
		}
		pos += len(raw)
	}
	closeLink()
	// The entries the page's own links open, by their text.
	opens := map[string]string{}
	for _, l := range links {
		if k := strings.ToLower(l.text); k != "" && known(l.topic) && opens[k] == "" {
			opens[k] = l.topic
		}
	}
	out, changed := page, false
	for i := len(links) - 1; i >= 0; i-- { // from the end, so earlier offsets hold
		l := links[i]
		if l.text == "" || known(l.topic) {
			continue
		}
		to := opens[strings.ToLower(l.text)]
		if to == "" && known(l.text) {
			to = l.text
		}
		if to == "" || strings.EqualFold(to, l.topic) {
			continue
		}
		tag := strings.Replace(l.tag, hrefAttr(l.tag), `href="`+assets.WikiHref(to)+`"`, 1)
		out = out[:l.at] + tag + out[l.at+len(l.tag):]
		changed = true
	}
	if !changed {
		return page
	}
	return out
}

// hrefAttr is the raw `href="…"` attribute of a start tag as written (double
// quotes only, as the model writes them), or "".
func hrefAttr(tag string) string {
	i := strings.Index(tag, `href="`)
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(tag[i+len(`href="`):], '"')
	if j < 0 {
		return ""
	}
	return tag[i : i+len(`href="`)+j+1]
}

// hrefValue is the unescaped value of an attribute hrefAttr returned.
func hrefValue(attr string) string {
	return html.UnescapeString(strings.TrimSuffix(strings.TrimPrefix(attr, `href="`), `"`))
}
