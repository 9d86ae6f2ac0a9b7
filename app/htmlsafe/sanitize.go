// Package htmlsafe makes model-generated HTML safe to show. Sanitize turns untrusted
// HTML into a small, script-free subset that loads nothing remote (the local server
// serves this, and `darkroom wiki` prints it); Parse goes further and turns it into
// a small document tree (headings, paragraphs, lists, links, emphasis, code, quotes,
// rules, tables and clickable elements) that the desktop app renders as native
// widgets.
//
// Sanitize also repairs what a small model breaks, so that no screen shows markup
// as text: the pieces of tags the parser could only read as words (`">`,
// `href="…"`, `<p`, `</`; engine/markup defines them) are taken out, a link whose
// words were all such debris reads as its topic, and unclosed elements are closed
// where HTML closes them. Well-formed pages pass unchanged, byte for byte.
//
// The repair is made when a page is shown, not when the sampler accepts tokens.
// Every screen that shows model HTML already comes here, for every model (the
// Mini and a downloaded 26B alike) and every frame of a page still developing;
// a constraint at acceptance would need an HTML parser inside the sampler,
// would hold back the tokens that close a tag until those that open it are
// decided (against diffusion's any-order development), and would still leave
// other models' pages unrepaired. Showing costs one more parse of a few KB.
//
// Both accept anything: invalid UTF-8, unclosed tags, huge or deeply nested markup.
// Neither ever fetches anything; links survive only as site-relative paths
// ("/wiki/Slug", "/ui/ID"), everything with a scheme or a host is dropped.
package htmlsafe

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/microcosm-cc/bluemonday"
)

// Limits applied to every input. Model output is a few KB; anything larger is
// either a bug or hostile and is cut, not rejected, so the user still sees a page.
const (
	MaxInputBytes = 512 << 10 // input beyond this is cut at a rune boundary
	MaxDepth      = 48        // elements nested deeper are flattened into their text
	MaxBlocks     = 4000      // blocks beyond this are dropped
	MaxTextBytes  = 32 << 10  // text beyond this is cut ("…"): pages are a few KB
)

// localHref matches the only links we keep: a site-relative path. No scheme, no
// host ("//evil"), no backslash tricks ("/\evil"), no control characters.
var localHref = regexp.MustCompile(`^/[^/\\\x00-\x20\x7f][^\\\x00-\x20\x7f]*$|^/$`)

// elementID matches the ids clickable elements may carry.
var elementID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$`)

var (
	policyOnce sync.Once
	policy     *bluemonday.Policy
)

// Policy returns the shared bluemonday policy: structural and text-level elements
// only, site-relative links, ids on clickable elements; no scripts, styles, event
// handlers, forms, frames, images or any URL with a scheme or a host.
func Policy() *bluemonday.Policy {
	policyOnce.Do(func() {
		p := bluemonday.NewPolicy()
		p.AllowElements(
			"h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr",
			"ul", "ol", "li", "dl", "dt", "dd",
			"pre", "code", "kbd", "samp", "blockquote",
			"em", "i", "strong", "b", "u", "small", "sub", "sup", "mark", "s", "del", "ins", "abbr", "cite", "q",
			"span", "div", "section", "article", "header", "footer", "nav", "main", "aside",
			"figure", "figcaption", "menu", "button", "label",
			"table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption",
		)
		p.AllowAttrs("href").Matching(localHref).OnElements("a")
		p.AllowAttrs("id", "data-id").Matching(elementID).Globally()
		p.AllowAttrs("data-app", "data-kind", "data-title", "data-icon").Matching(regexp.MustCompile(`^[\p{L}\p{N} _.:\-]{0,80}$`)).Globally()
		p.AllowAttrs("class").Matching(regexp.MustCompile(`^[A-Za-z0-9 _\-]{0,80}$`)).Globally()
		p.AllowRelativeURLs(true)
		p.RequireParseableURLs(true)
		// No URL scheme is allowed at all, so absolute URLs (http, javascript, data,
		// file…) are removed; the href pattern also refuses "//host" paths.
		p.SkipElementsContent("script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math", "textarea", "select", "head")
		policy = p
	})
	return policy
}

// Sanitize returns untrusted HTML reduced to the safe subset (see Policy) and
// repaired: its text holds no markup fragment and its tags are balanced. It is
// safe to serve to a browser as the body of a page: it contains no script, no
// event handler and no reference to anything outside the site. Sanitize of its
// own output returns it unchanged.
func Sanitize(untrusted string) string {
	return repair(Policy().Sanitize(clean(untrusted)))
}

// clean cuts oversize input and replaces invalid UTF-8.
func clean(s string) string {
	if len(s) > MaxInputBytes {
		cut := MaxInputBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "")
}

// SafeHref reports whether href is a link the app may follow (a site-relative path)
// and returns it trimmed.
func SafeHref(href string) (string, bool) {
	href = strings.TrimSpace(href)
	if !localHref.MatchString(href) {
		return "", false
	}
	return href, true
}
