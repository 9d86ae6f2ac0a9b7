package chats

import (
	"strings"
	"unicode"
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
	title := fold(t.Title)
	texts := make([][]rune, len(t.Messages)) // folded as needed
	folded := func(i int) []rune {
		if texts[i] == nil {
			texts[i] = fold(t.Messages[i].Content)
		}
		return texts[i]
	}
	for _, w := range words {
		fw := fold(w)
		if index(title, fw) >= 0 {
			continue
		}
		found := false
		for i := range t.Messages {
			at := index(folded(i), fw)
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
