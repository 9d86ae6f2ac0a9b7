package chats

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Search over the threads, for the chat list's search box: a thread matches a query
// when each of the query's words occurs in its title or its messages (the
// thinking and the system prompt are not searched: the list shows what was said),
// in any case, anywhere in a word ("lisp" finds "Lisp" and "Lisping"). Folding is
// rune by rune (unicode.ToLower), so a match's position in the folded text is its
// position in the text as written, and the snippet shows the words as written.

// Match reports whether the thread matches query (see above); an empty query, or
// one of spaces, matches every thread. snippet is where the thread matches when
// its title alone does not show it: about snippetRunes of the first message
// holding the first word the title lacks, that word in the middle, on one line
// ("…" where it is cut); "" when the title holds every word.
func (t *Thread) Match(query string) (snippet string, ok bool) {
	words := strings.Fields(query)
	if len(words) == 0 {
		return "", true
	}
	for _, w := range words {
		fw := fold(w)
		if indexFold(t.Title, fw) >= 0 {
			continue
		}
		found := false
		for i := range t.Messages {
			at := indexFold(t.Messages[i].Content, fw)
			if at < 0 {
				continue
			}
			if snippet == "" {
				snippet = around([]rune(t.Messages[i].Content), at, len(fw))
			}
			found = true
			break
		}
		if !found {
			return "", false
		}
	}
	return snippet, true
}

// snippetRunes is about how many runes of a message Match shows, snippetSlack how
// far from that it may go to end at a word's end or at the message's.
const snippetRunes, snippetSlack = 60, 12

// fold is s lower-cased rune by rune: as many runes as s.
func fold(s string) []rune {
	r := []rune(s)
	for i, c := range r {
		r[i] = unicode.ToLower(c)
	}
	return r
}

// indexFold is the first position, in runes, of the folded word fw in text
// folded, or -1. Text and word in ASCII (most chats) are compared byte by byte,
// folded as read: a search runs at every keystroke over every chat, and folding
// each message into runes first made one over 1,000 chats of 5 KB take 30 ms.
func indexFold(text string, fw []rune) int {
	if isASCII(text) && isASCIIRunes(fw) {
		return indexASCIIFold(text, fw)
	}
	return index(fold(text), fw)
}

// indexASCIIFold is indexFold for ASCII text and a folded ASCII word: the
// word's first letter found in either case by strings.IndexByte (vectorised),
// the rest compared from there.
func indexASCIIFold(text string, fw []rune) int {
	n := len(fw)
	if n == 0 {
		return 0
	}
	lo := byte(fw[0])
	up := lo
	if 'a' <= lo && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	nextLo, nextUp := -2, -2 // the next place of each, from `from` on (-1: none; -2: not looked for)
	for from := 0; from+n <= len(text); {
		if nextLo != -1 && nextLo < from {
			nextLo = strings.IndexByte(text[from:], lo)
			if nextLo >= 0 {
				nextLo += from
			}
		}
		if nextUp != -1 && nextUp < from {
			nextUp = strings.IndexByte(text[from:], up)
			if nextUp >= 0 {
				nextUp += from
			}
		}
		i := nextLo
		if i < 0 || (nextUp >= 0 && nextUp < i) {
			i = nextUp
		}
		if i < 0 || i+n > len(text) {
			return -1
		}
		j := 1
		for j < n && lowerASCII(text[i+j]) == byte(fw[j]) {
			j++
		}
		if j == n {
			return i
		}
		from = i + 1
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isASCIIRunes(r []rune) bool {
	for _, c := range r {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// index is the first position of sub in s, in runes, or -1.
func index(s, sub []rune) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && s[i+j] == sub[j] {
			j++
		}
		if j == len(sub) {
			return i
		}
	}
	return -1
}

// around is text's runes about [at, at+n) widened to about snippetRunes (the word
// in the first third), cut at spaces where it can be, its runs of white space (new lines included) one space,
// with "…" where text goes on.
func around(text []rune, at, n int) string {
	lo := max(0, at-(snippetRunes-n)/3)
	hi := min(len(text), max(at+n, lo+snippetRunes))
	lo = max(0, min(lo, hi-snippetRunes))
	// A message's first or last few runes are shown rather than cut off; else cut
	// at a space near each end rather than inside a word.
	if lo < snippetSlack {
		lo = 0
	}
	if len(text)-hi < snippetSlack {
		hi = len(text)
	}
	if lo > 0 {
		for i := lo; i < at && i < lo+snippetSlack; i++ {
			if unicode.IsSpace(text[i]) {
				lo = i + 1
				break
			}
		}
	}
	if hi < len(text) {
		for i := hi; i > at+n && i > hi-snippetSlack; i-- {
			if unicode.IsSpace(text[i-1]) {
				hi = i - 1
				break
			}
		}
	}
	s := strings.Join(strings.Fields(string(text[lo:hi])), " ")
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(text) {
		s += "…"
	}
	return s
}
