package corpus

import (
	"html"
	"regexp"
	"strings"
	"unicode"
)

var reTag = regexp.MustCompile(`<[^<>]*>`)

// Words returns the words of a text or HTML page, lower-cased: HTML tags are
// removed, entities decoded, and a word is a maximal run of letters and digits
// (an apostrophe or hyphen between two of them stays inside: "don't",
// "time-sharing"). words.txt lists the Words of every training answer; the eval
// splits generated pages with the same function.
func Words(s string) []string {
	s = html.UnescapeString(reTag.ReplaceAllString(s, " "))
	rs := []rune(strings.ToLower(s))
	isW := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	var out []string
	start := -1
	for i := 0; i <= len(rs); i++ {
		switch {
		case i < len(rs) && isW(rs[i]):
			if start < 0 {
				start = i
			}
		case i < len(rs) && start >= 0 && (rs[i] == '\'' || rs[i] == '-' || rs[i] == '’') && i+1 < len(rs) && isW(rs[i+1]):
			// joiner inside a word
		default:
			if start >= 0 {
				out = append(out, string(rs[start:i]))
				start = -1
			}
		}
	}
	return out
}
