package assets

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The link protocol of generated pages and screens. An encyclopedia link is
// href="/wiki/" + Slug(title); a Desktop element is href="/ui/" + ID. The app
// turns a clicked href back into a topic with TitleFromHref or into a click with
// UIElementFromHref.
const (
	WikiPrefix = "/wiki/"
	UIPrefix   = "/ui/"
)

// Slug encodes a title for a /wiki/ link, Wikipedia style but exactly
// reversible: a space becomes "_"; ASCII letters, digits and "-" stay; "." stays
// except as the first character (so no slug is "." or ".."); every other byte,
// "_" included, becomes %XX (upper-case hex) of its UTF-8 encoding.
// TitleFromSlug(Slug(t)) == t for every t.
//
//	Slug("Unix") == "Unix"
//	Slug("operating system") == "operating_system"
//	Slug("C++") == "C%2B%2B"
func Slug(title string) string {
	var b strings.Builder
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(title); i++ {
		c := title[i]
		switch {
		case c == ' ':
			b.WriteByte('_')
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// TitleFromSlug decodes a slug written by Slug. It is lenient with slugs a model
// made up: a "%" not followed by two hex digits stays as is, and bytes that do not
// form valid UTF-8 become U+FFFD.
func TitleFromSlug(slug string) string {
	var b []byte
	for i := 0; i < len(slug); i++ {
		c := slug[i]
		switch {
		case c == '_':
			b = append(b, ' ')
		case c == '%' && i+2 < len(slug) && isHex(slug[i+1]) && isHex(slug[i+2]):
			b = append(b, unhex(slug[i+1])<<4|unhex(slug[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// WikiHref returns the link target of a topic's page: "/wiki/" + Slug(title).
func WikiHref(title string) string { return WikiPrefix + Slug(title) }

// TitleFromHref returns the topic a /wiki/ link points to. A query or fragment
// is ignored; ok is false for any other href and for a topic that is not
// readable text (ReadableTitle), an empty one included.
func TitleFromHref(href string) (title string, ok bool) {
	rest, found := strings.CutPrefix(stripQuery(href), WikiPrefix)
	if !found {
		return "", false
	}
	title = CleanLine(TitleFromSlug(rest))
	if ReadableTitle(title) != nil {
		return "", false
	}
	return title, true
}

// ReadableTitle says why title is no topic a page can be written for, or nil:
// a topic is printable text with at least one letter, digit, punctuation mark
// or symbol. A slug may decode to anything — a control character (/wiki/%00),
// bytes that are not UTF-8 (/wiki/%FF, which TitleFromSlug turns into U+FFFD),
// only blanks or invisible characters (/wiki/___, /wiki/%E2%80%8B) — and none
// of that may reach the model, from a link in a page, an address typed in the
// app or the browser, or the command line. The reason completes "… has no
// page: ".
func ReadableTitle(title string) error {
	seen := false
	for _, r := range title {
		switch {
		case r == utf8.RuneError:
			return errors.New("its title holds U+FFFD, the mark of bytes that are not UTF-8 text")
		case unicode.IsControl(r):
			return fmt.Errorf("its title holds the control character %U", r)
		case !unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r): // Cf: joiners and marks some scripts need
			return fmt.Errorf("its title holds %U, which is not a printable character", r)
		}
		seen = seen || unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S)
	}
	if !seen {
		return errors.New("its title has nothing to read, only blanks or invisible characters")
	}
	return nil
}

// UIElementFromHref returns the Desktop element ID a /ui/ link points to. ok is
// false for any other href and for IDs that are not 1–64 letters, digits, "-" or "_".
func UIElementFromHref(href string) (id string, ok bool) {
	rest, found := strings.CutPrefix(stripQuery(href), UIPrefix)
	if !found || rest == "" || len(rest) > 64 {
		return "", false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", false
		}
	}
	return rest, true
}

func stripQuery(href string) string {
	if i := strings.IndexAny(href, "?#"); i >= 0 {
		return href[:i]
	}
	return href
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
