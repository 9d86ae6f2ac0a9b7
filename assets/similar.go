package assets

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Similar are up to n titles of entries the leads hold that a topic they do
// not hold may have meant, best first: spelled within a typo or two of it
// (apart from case and separators, squash: none for a topic of up to 4
// letters, one edit up to 8, two beyond), then titles that begin with it as
// their first words ("linked" → "linked list"). The screens offer them over
// a page the model wrote alone: a misspelt "compilr" gets a page of the model's
// invention, and a link to the entry for "compiler". None for a topic of
// fewer than 3 letters, or one the leads hold (Find).
func (l *Leads) Similar(topic string, n int) []string {
	topic = TopicBare(CleanLine(topic))
	key := squash(topic)
	if l.Len() == 0 || n <= 0 || utf8.RuneCountInString(key) < 3 {
		return nil
	}
	if _, ok := l.Find(topic); ok {
		return nil
	}
	maxEdits := 0 // among the many short acronyms, one letter off is another term ("ABC", "ABP")
	switch k := utf8.RuneCountInString(key); {
	case k > 8:
		maxEdits = 2
	case k > 4:
		maxEdits = 1
	}
	type hit struct {
		title string
		rank  int // edits; a title that begins with the topic ranks after a typo or two
	}
	var hits []hit
	prefix := strings.ToLower(topic) + " "
	for _, t := range l.keys { // each title's squash, made once as it was held
		if d := editsWithin(key, t.squashed, maxEdits); d >= 0 {
			hits = append(hits, hit{t.title, d})
		} else if strings.HasPrefix(strings.ToLower(t.title), prefix) {
			hits = append(hits, hit{t.title, maxEdits + 1})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(len(a.title), len(b.title)), strings.Compare(a.title, b.title))
	})
	out := make([]string, 0, min(n, len(hits)))
	for _, h := range hits[:min(n, len(hits))] {
		out = append(out, h.title)
	}
	return out
}

// editsWithin is the edit distance (Levenshtein, on runes) between a and b
// where it is at most limit, else -1; it gives up as soon as every path is
// over limit.
func editsWithin(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return -1
	}
	prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return -1
		}
		prev, cur = cur, prev
	}
	if prev[len(rb)] > limit {
		return -1
	}
	return prev[len(rb)]
}

// Prefixed are up to n titles of entries the leads hold that begin with
// prefix, apart from case, shortest first (then in order): what the
// Encyclopedia's address bar offers as a topic is typed ("compi": compile,
// compiler, compiler-compiler…). None for an empty prefix. Its index is built
// at its first call: add no title after it.
func (l *Leads) Prefixed(prefix string, n int) []string {
	prefix = strings.ToLower(strings.TrimLeft(prefix, " "))
	if l.Len() == 0 || n <= 0 || prefix == "" {
		return nil
	}
	l.sortOnce.Do(func() {
		for title := range l.byTitle {
			l.sorted = append(l.sorted, strings.ToLower(title)+"\x00"+title)
		}
		slices.Sort(l.sorted)
	})
	// The range of keys that begin with prefix; at most prefixScan of them
	// are weighed, so that one letter does not sort thousands.
	var hits []string
	from, _ := slices.BinarySearch(l.sorted, prefix)
	for _, k := range l.sorted[from:] {
		if !strings.HasPrefix(k, prefix) || len(hits) == prefixScan {
			break
		}
		hits = append(hits, k[strings.IndexByte(k, 0)+1:])
	}
	slices.SortStableFunc(hits, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	return hits[:min(n, len(hits))]
}

// prefixScan bounds the titles Prefixed weighs.
const prefixScan = 500

// ChatSimilar are up to n titles of entries a chat message may have meant:
// where it asks about a topic the way the chat examples ask ("What is a
// compilr?") or alone ("compilr?": chatTerm) and the leads hold no entry for
// it (ChatStart finds none), the entries Similar offers for it. Chat offers
// them under the model's answer, which is its own writing there (or the
// Library answer, for a term asked alone).
func (l *Leads) ChatSimilar(message string, n int) []string {
	topic, _, _, ok := chatSubject(message)
	if !ok || l.Len() == 0 {
		return nil
	}
	return l.Similar(topic, n)
}
