package corpus

import (
	"fmt"
	"strings"
)

// dictionarySources describe the dictionaries (Options.Sources) and the
// Desktop screens' package metadata for SOURCES.txt and the stats.
var dictionarySources = map[string]ExtraSource{
	"foldoc": {
		Name: "foldoc", Package: "dict-foldoc",
		What:    "The Free On-line Dictionary of Computing, https://foldoc.org/, Editor Denis Howe",
		Licence: "GNU Free Documentation License, version 1.1 or later, with no Invariant Sections, Front-Cover or Back-Cover Texts.",
	},
	"jargon": {
		Name: "jargon", Package: "dict-jargon",
		What:    "The Jargon File, version 4.4.7, Eric S. Raymond",
		Licence: "public domain.",
	},
	"debian": {
		Name: "debian", Package: "apt metadata",
		What: "Debian package metadata (names, short descriptions, sections, versions, sizes, debtags) from the local apt cache",
	},
}

// describeSource returns what is known of a source by name.
func describeSource(name string) ExtraSource {
	if s, ok := extraSource(name); ok {
		return s
	}
	if s, ok := dictionarySources[name]; ok {
		return s
	}
	return ExtraSource{Name: name}
}

// sourceStats counts the training examples by source: the dictionaries in
// their order, then the extra sources, then the Desktop screens.
func sourceStats(opts Options, st *Stats, train []Example, dropped map[string]int) []SourceStats {
	names := append(append(append([]string(nil), opts.Sources...), opts.Extra...), "debian")
	by := map[string]*SourceStats{}
	var out []*SourceStats
	for _, n := range names {
		d := describeSource(n)
		s := &SourceStats{Name: n, Package: d.Package, Licence: d.Licence, Examples: map[string]int{},
			HeldOutDropped: dropped[n], AnswerTokens: st.tokensBySource[n], Candidates: st.candidates[n]}
		for _, ds := range st.Dictionaries {
			if ds.Name == n {
				s.Candidates = ds.Entries
			}
		}
		by[n] = s
		out = append(out, s)
	}
	for _, ex := range train {
		s := by[ex.Source]
		if s == nil { // not expected: every example names its source
			s = &SourceStats{Name: ex.Source, Examples: map[string]int{}}
			by[ex.Source] = s
			out = append(out, s)
		}
		s.Examples[ex.Kind]++
		s.AnswerChars += int64(len(ex.Answer))
		if ex.Kind == KindPage {
			s.Entries++
		}
	}
	res := make([]SourceStats, len(out))
	for i, s := range out {
		res[i] = *s
	}
	return res
}

// sourcesText is SOURCES.txt: where the text comes from, under which licence,
// why a model trained on it may be shipped, and each source's share.
func sourcesText(sources []SourceStats) string {
	var b strings.Builder
	b.WriteString("Darkroom Mini corpus: sources and licences\n\n")
	b.WriteString("Encyclopedia pages and chat answers are derived from:\n")
	for _, s := range sources {
		if s.Name == "debian" {
			continue
		}
		d := describeSource(s.Name)
		fmt.Fprintf(&b, "- %s (Debian package %s). Licence: %s\n", d.What, d.Package, d.Licence)
		if d.Why != "" {
			fmt.Fprintf(&b, "  Shipping a model trained on it: %s.\n", d.Why)
		}
		if d.Notice != "" {
			fmt.Fprintf(&b, "  %s\n", d.Notice)
		}
	}
	b.WriteString(`
Entries were rewritten into small HTML pages: cross references became links, e-mail
addresses, external links, dates and citation-only paragraphs were dropped, and long
entries were cut at a paragraph or sentence boundary. WordNet senses and V.E.R.A.
expansions became sentences with their synonyms and related terms as links; the Python
documentation's glossary terms and tutorial and HOWTO sections became pages (code as
verbatim blocks, glossary links as links), its FAQ questions chats. Extra sources add
only titles the dictionaries do not have, and are capped by how much the dictionaries'
pages use them. No training example of any source is about a held-out title.

Desktop screens use Debian package metadata (names, short descriptions, sections,
versions, sizes, debtags) from the local apt cache.

Training examples by source (pages, chats, desktop screens; answer bytes; answer tokens):
`)
	for _, s := range sources {
		fmt.Fprintf(&b, "  %-8s %6d pages %6d chats %5d screens %10d bytes %9d tokens\n", s.Name,
			s.Examples[KindPage], s.Examples[KindChat], s.Examples[KindDesktop], s.AnswerChars, s.AnswerTokens)
	}
	return b.String()
}
