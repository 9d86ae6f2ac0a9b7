package corpus

import (
	"regexp"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/markup"
)

// V.E.R.A.'s dictd layout (dict-vera): the acronym on its own line, then one
// indented expansion, optionally a [note], a (related, terms) list and a
// "spelling" variant, wrapped at any column:
//
//	3GIP
//	       3rd Generation . Internet Protocol (org., IP, GPRS, WLAN,
//	mobile-systems), "3G.IP"
//
// An acronym with several expansions has one definition for each.
var (
	reVERASpelling = regexp.MustCompile(`,?\s*"[^"]*"\s*$`)
	reVERARefs     = regexp.MustCompile(`\s*\(([^()]*)\)\s*$`)
	reVERANote     = regexp.MustCompile(`\s*\[([^\[\]]*)\]`)
)

// veraNotes are the [notes] that say what kind of thing an acronym names (the
// others are details of the expansion and are dropped).
var veraNotes = map[string]bool{"protocol": true, "technology": true, "system": true, "standard": true, "format": true,
	"software": true, "hardware": true, "project": true, "company": true, "organization": true, "encoding": true, "language": true}

// veraCategories are the words V.E.R.A.'s related-term lists use for what an
// expansion is, not what it relates to.
var veraCategories = map[string]string{"org.": "organization", "manufacturer": "manufacturer"}

// ParseVERA turns one dict-vera definition into an Entry: the expansion as a
// sentence, its related terms as cross references ("See also {IP}, {GPRS}."),
// and as category "acronym" or what its note or term list says the acronym
// names ("protocol", "organization"). ok is false for the metadata and for a
// definition with no expansion.
func ParseVERA(raw string) (Entry, bool) {
	lines := strings.Split(raw, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return Entry{}, false
	}
	e := Entry{Source: "vera", Title: assets.CleanLine(lines[0]), Category: "acronym"}
	if !usableTitle(e.Title) {
		return Entry{}, false
	}
	body := ""
	for _, l := range lines[1:] {
		body = joinWrapped(body, strings.TrimSpace(l))
	}
	body = reVERASpelling.ReplaceAllString(assets.CleanLine(body), "")
	var refs []string
	if m := reVERARefs.FindStringSubmatchIndex(body); m != nil {
		for _, r := range strings.Split(body[m[2]:m[3]], ",") {
			r = assets.CleanLine(r)
			switch {
			case r == "" || r == "..." || strings.EqualFold(r, e.Title):
			case veraCategories[r] != "":
				e.Category = veraCategories[r]
			default:
				refs = append(refs, r)
			}
		}
		body = body[:m[0]]
	}
	body = reVERANote.ReplaceAllStringFunc(body, func(m string) string {
		note := strings.TrimSpace(reVERANote.FindStringSubmatch(m)[1])
		if veraNotes[note] && e.Category == "acronym" {
			e.Category = note
		}
		return ""
	})
	body = strings.NewReplacer("{", "(", "}", ")", "*", "").Replace(assets.CleanLine(body))
	if !reHasWord.MatchString(body) || len(markup.Find(body+" "+strings.Join(refs, " "))) > 0 {
		return Entry{}, false // no words, or text that would show as markup debris
	}
	var b strings.Builder
	b.WriteString(sentenceCase(body))
	writeRefs(&b, " See also ", refs)
	e.Blocks = []Block{{Kind: Paragraph, Text: b.String()}}
	return e, true
}

// mergeSameTitle merges entries of one title into the first (its expansions or
// senses as a list), keeping the order of first appearance.
func mergeSameTitle(entries []Entry) []Entry {
	at := map[string]int{}
	var out []Entry
	for _, e := range entries {
		i, ok := at[e.Title]
		if !ok {
			at[e.Title] = len(out)
			out = append(out, e)
			continue
		}
		m := &out[i]
		if m.Category != e.Category {
			m.Category = "acronym"
		}
		items := blockItems(m.Blocks)
		m.Blocks = []Block{{Kind: List, Items: append(items, blockItems(e.Blocks)...)}}
	}
	return out
}

// blockItems returns the paragraphs and list items of blocks, in order.
func blockItems(blocks []Block) []string {
	var out []string
	for _, b := range blocks {
		switch b.Kind {
		case Paragraph:
			out = append(out, b.Text)
		case List:
			out = append(out, b.Items...)
		}
	}
	return out
}
