package corpus

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/markup"
)

// WordNet's dictd layout (dict-wn): the headword on its own line, then senses
//
//	n 1: a machine for performing calculations automatically [syn:
//	     {computer}, {computing machine}]
//	2: an expert at calculation
//	v 1: …
//
// a part of speech before the first sense of each group, each sense a gloss,
// examples in double quotes after "; ", and [syn: {…}] / [ant: {…}] lists.
var (
	reWNSense   = regexp.MustCompile(`^\s+(?:(n|v|adj|adv)\s+)?(\d+):\s*(.*)$`)
	reWNList    = regexp.MustCompile(`\[(syn|ant):\s*([^\]]*)\]`)
	reWNRef     = regexp.MustCompile(`\{([^{}]*)\}`)
	reWNDomain  = regexp.MustCompile(`^\(([A-Za-z]+(?: [A-Za-z]+){0,2})\)\s+`)
	reWNExample = regexp.MustCompile(`"([^"]+)"`)
)

var wnPartOfSpeech = map[string]string{"n": "noun", "v": "verb", "adj": "adjective", "adv": "adverb"}

// maxSynonyms bounds the synonyms a WordNet sense lists (some have dozens).
const maxSynonyms = 4

type wnSense struct{ pos, text string }

// ParseWordNet turns one dict-wn definition into an Entry: the part of speech
// of the first group is the category, each sense a sentence (its gloss, its
// first example, its synonyms and antonyms as cross references), a group of
// several senses a list, and each later part of speech an emphasized line
// before its own senses. ok is false for the 00-database metadata and for a
// definition with no sense.
func ParseWordNet(raw string) (Entry, bool) {
	lines := strings.Split(strings.ReplaceAll(raw, "\t", "        "), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return Entry{}, false
	}
	e := Entry{Source: "wordnet", Title: assets.CleanLine(lines[0])}
	if !usableTitle(e.Title) {
		return Entry{}, false
	}
	var senses []wnSense
	pos := ""
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if m := reWNSense.FindStringSubmatch(l); m != nil {
			if m[1] != "" {
				pos = wnPartOfSpeech[m[1]]
			}
			if pos == "" {
				return Entry{}, false // a sense before any part of speech: not WordNet's layout
			}
			senses = append(senses, wnSense{pos: pos, text: strings.TrimSpace(m[3])})
			continue
		}
		if len(senses) == 0 {
			continue // text before the first sense
		}
		s := &senses[len(senses)-1]
		s.text = joinWrapped(s.text, strings.TrimSpace(l))
	}
	var items []string
	flush := func() {
		switch len(items) {
		case 0:
		case 1:
			e.Blocks = append(e.Blocks, Block{Kind: Paragraph, Text: items[0]})
		default:
			e.Blocks = append(e.Blocks, Block{Kind: List, Items: items})
		}
		items = nil
	}
	group := ""
	for _, s := range senses {
		text := wnSentence(e.Title, s.text)
		if text == "" {
			continue
		}
		if s.pos != group {
			flush()
			if group == "" {
				e.Category = s.pos
			} else {
				e.Blocks = append(e.Blocks, Block{Kind: Paragraph, Text: "*" + s.pos + "*"})
			}
			group = s.pos
		}
		items = append(items, text)
	}
	flush()
	if !hasText(e.Blocks) {
		return Entry{}, false
	}
	return e, true
}

// usableTitle reports whether a headword can be a page title: not empty, not
// dictd metadata (00-database-*), and free of control characters (a damaged
// file's, which the page renderer also uses as markers).
func usableTitle(t string) bool {
	if t == "" || strings.HasPrefix(t, "00-database") || strings.HasPrefix(t, "00database") {
		return false
	}
	return !strings.ContainsFunc(t, unicode.IsControl)
}

// joinWrapped joins a wrapped line to the text before it: with a space, or with
// none after a word broken at its hyphen ("self-" + "satisfaction").
func joinWrapped(text, next string) string {
	if text == "" {
		return next
	}
	if r, _ := utf8.DecodeLastRuneInString(strings.TrimSuffix(text, "-")); strings.HasSuffix(text, "-") && unicode.IsLetter(r) {
		return text + next
	}
	return text + " " + next
}

// wnSentence renders one sense as inline text: "(computer science) a program
// that …; "example" [syn: {a}, {b}]" becomes "In computer science, a program
// that …. For example: "example". Synonyms: {b}." (the title left out of its
// own synonyms).
func wnSentence(title, sense string) string {
	var syn, ant []string
	gloss := reWNList.ReplaceAllStringFunc(sense, func(m string) string {
		sm := reWNList.FindStringSubmatch(m)
		for _, r := range reWNRef.FindAllStringSubmatch(sm[2], -1) {
			name := assets.CleanLine(r[1])
			if name == "" || strings.EqualFold(name, title) {
				continue
			}
			if sm[1] == "syn" {
				syn = append(syn, name)
			} else {
				ant = append(ant, name)
			}
		}
		return ""
	})
	// An unclosed list (a definition cut short) ends the gloss where it starts.
	for _, open := range []string{"[syn:", "[ant:"} {
		if i := strings.Index(gloss, open); i >= 0 {
			gloss = gloss[:i]
		}
	}
	gloss = strings.NewReplacer("{", "", "}", "").Replace(assets.CleanLine(gloss))
	def, example := gloss, ""
	if i := strings.IndexByte(gloss, '"'); i >= 0 {
		def = strings.TrimRight(strings.TrimSpace(gloss[:i]), ";: ")
		if m := reWNExample.FindStringSubmatch(gloss[i:]); m != nil {
			example = strings.TrimSpace(m[1])
		}
	}
	if m := reWNDomain.FindStringSubmatch(def); m != nil {
		def = "In " + m[1] + ", " + def[len(m[0]):]
	}
	def = strings.TrimSpace(def)
	if !reHasWord.MatchString(def) || len(markup.Find(def+" "+example)) > 0 {
		return "" // no words, or text that would show as markup debris
	}
	var b strings.Builder
	b.WriteString(sentenceCase(def))
	if example != "" {
		b.WriteString(` For example: "` + example + `".`)
	}
	if len(syn) > maxSynonyms {
		syn = syn[:maxSynonyms]
	}
	writeRefs(&b, " Synonyms: ", syn)
	writeRefs(&b, " Opposite: ", ant)
	return b.String()
}

// sentenceCase capitalizes the first letter of s and ends it with a period
// unless it already ends a sentence.
func sentenceCase(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

// writeRefs writes label and the names as {cross references}, then a period.
func writeRefs(b *strings.Builder, label string, names []string) {
	if len(names) == 0 {
		return
	}
	b.WriteString(label)
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{" + n + "}")
	}
	b.WriteString(".")
}
