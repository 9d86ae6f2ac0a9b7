package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/assets"
)

// ExtraSource is freely licensed English that the corpus adds to the
// dictionaries' pages and chats (Options.Extra). Its entries become the same
// example kinds as FOLDOC's, for training only: the held-out split is made on
// the dictionaries' titles alone, and no extra entry takes a title, alias or
// headword the dictionaries have.
type ExtraSource struct {
	Name    string // as in Options.Extra
	Package string // the Debian package it is read from
	What    string // what it is, for SOURCES.txt
	Licence string
	// Why a model trained on it may be shipped with Darkroom.
	Why string
	// Notice is text its licence asks to appear on every copy ("" if none
	// beyond Licence); SOURCES.txt carries it.
	Notice string
	// Max is the default cap on its entries (Options.ExtraMax overrides it);
	// 0 keeps all. Capped sources keep the entries the dictionaries' training
	// pages use most: first those they link to, then by how often the title
	// occurs as a word in them.
	Max int
	// PageChars, if set and below Options.MaxPageChars, caps its pages: text
	// that tokenizes densely (code, lists of linked synonyms) would otherwise
	// spill past one canvas far more often than FOLDOC's pages do.
	PageChars int
	// dict is the dictd name of a dictionary source ("" for the Python docs).
	dict  string
	parse func(raw string) (Entry, bool)
}

// ExtraSources are the sources Options.Extra may name. A source earlier in
// Options.Extra wins a title both have; the CLI's default lists them in this
// order.
var ExtraSources = []ExtraSource{
	{
		Name: "python", Package: "python3.11-doc", PageChars: 640,
		What: "The Python 3.11 documentation (glossary, tutorial, HOWTOs, FAQ), Python Software Foundation",
		Licence: "PSF License Agreement for Python 3.11 (the software and its documentation); code examples " +
			"also under the Zero-Clause BSD licence. Copyright (c) 2001-2023 Python Software Foundation; All Rights Reserved.",
		Why: "a permissive licence that allows derivative works and their distribution for any purpose, " +
			"asking only that the copyright notice be kept (it is, here and in assets/training/SOURCES.md); " +
			"Debian ships it in main as free documentation",
	},
	{
		Name: "wordnet", Package: "dict-wn", Max: 4000, PageChars: 760, dict: "wn", parse: ParseWordNet,
		What:    "WordNet 3.0, Princeton University: general English definitions",
		Licence: "WordNet 3.0 licence. WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.",
		Why: "a permissive BSD-like licence: use, copy, modify and distribute for any purpose without fee, " +
			"provided the copyright notice and disclaimer appear on all copies (they do, here and in " +
			"assets/training/SOURCES.md); Princeton's name may not be used in advertising",
		Notice: `THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR ` +
			`WARRANTIES, EXPRESS OR IMPLIED. BY WAY OF EXAMPLE, BUT NOT LIMITATION, PRINCETON UNIVERSITY MAKES NO ` +
			`REPRESENTATIONS OR WARRANTIES OF MERCHANT- ABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR THAT THE USE ` +
			`OF THE LICENSED SOFTWARE, DATABASE OR DOCUMENTATION WILL NOT INFRINGE ANY THIRD PARTY PATENTS, ` +
			`COPYRIGHTS, TRADEMARKS OR OTHER RIGHTS.`,
	},
	{
		Name: "vera", Package: "dict-vera", Max: 1500, dict: "vera", parse: ParseVERA,
		What:    "V.E.R.A. -- Virtual Entity of Relevant Acronyms (August 2020), Oliver Heidelbach: computing acronyms",
		Licence: "GNU Free Documentation License, version 1.1 or later, no Invariant Sections, Front-Cover or Back-Cover Texts.",
		Why: "the same licence as FOLDOC: derived works may be distributed under the GFDL; the corpus records " +
			"the source and its licence, and the model's weights are distributed with this notice",
	},
}

// extraSource returns the source named name.
func extraSource(name string) (ExtraSource, bool) {
	for _, s := range ExtraSources {
		if s.Name == name {
			return s, true
		}
	}
	return ExtraSource{}, false
}

// ExtraNames lists the names of ExtraSources.
func ExtraNames() []string {
	var n []string
	for _, s := range ExtraSources {
		n = append(n, s.Name)
	}
	return n
}

// SourceStats is what one source contributed to the training examples
// (stats.json "sources"): dictionaries, extra sources and "debian" (the
// Desktop screens).
type SourceStats struct {
	Name    string `json:"name"`
	Package string `json:"package,omitempty"`
	Licence string `json:"licence,omitempty"`
	// Candidates: usable entries read (extra sources: before the cap and before
	// dropping titles the dictionaries have).
	Candidates int `json:"candidates,omitempty"`
	Entries    int `json:"entries,omitempty"` // entries that became examples
	// HeldOutDropped counts training examples left out because their title or
	// prompt is a held-out title's (case-insensitive).
	HeldOutDropped int            `json:"heldout_dropped,omitempty"`
	Examples       map[string]int `json:"examples"` // training examples by kind
	AnswerChars    int64          `json:"answer_chars"`
	AnswerTokens   int64          `json:"answer_tokens,omitempty"` // with the corpus tokenizer, each answer's closing token included
}

// heldOutGuard knows the held-out titles and every prompt the app sends for
// one, lower-cased, so that no training example of any source is about a
// held-out title whatever its spelling.
type heldOutGuard map[string]bool

func newHeldOutGuard(held map[string]bool) heldOutGuard {
	g := heldOutGuard{}
	for t := range held {
		g[strings.ToLower(assets.CleanLine(t))] = true
		g[strings.ToLower(assets.EncyclopediaPrompt(t))] = true
		for i := range assets.ChatQuestions {
			g[strings.ToLower(assets.ChatQuestion(i, t))] = true
		}
		if q, ok := assets.ChatArticleQuestion(strings.ToLower(t)); ok {
			g[strings.ToLower(q)] = true
		}
	}
	return g
}

// touches reports whether ex's title, or its prompt, is a held-out title or a
// prompt for one.
func (g heldOutGuard) touches(ex Example) bool {
	return g[strings.ToLower(assets.CleanLine(ex.Title))] || g[strings.ToLower(assets.CleanLine(ex.Prompt))]
}

// usage is how the dictionaries' training pages use a title: link targets (by
// slug) and word counts.
type usage struct {
	linked map[string]bool
	words  map[string]int
}

var reWikiHref = regexp.MustCompile(`href="/wiki/([^"]*)"`)

func pageUsage(pages []Example) usage {
	u := usage{linked: map[string]bool{}, words: map[string]int{}}
	for _, ex := range pages {
		if ex.Kind != KindPage {
			continue
		}
		for _, m := range reWikiHref.FindAllStringSubmatch(ex.Answer, -1) {
			u.linked[m[1]] = true
		}
		for _, w := range Words(ex.Answer) {
			u.words[w]++
		}
	}
	return u
}

// rank orders entries by use (linked first, then by word count, then by
// title) and keeps the used ones, at most limit (0: all, used or not).
func (u usage) rank(entries []Entry, limit int) []Entry {
	if limit <= 0 {
		return entries
	}
	type scored struct {
		e      Entry
		linked bool
		n      int
	}
	var s []scored
	for _, e := range entries {
		sc := scored{e: e, linked: u.linked[assets.Slug(e.Title)]}
		if w := Words(e.Title); len(w) == 1 && utf8.RuneCountInString(w[0]) >= 3 {
			sc.n = u.words[w[0]]
		}
		if sc.linked || sc.n > 0 {
			s = append(s, sc)
		}
	}
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].linked != s[j].linked {
			return s[i].linked
		}
		if s[i].n != s[j].n {
			return s[i].n > s[j].n
		}
		return s[i].e.Title < s[j].e.Title
	})
	if len(s) > limit {
		s = s[:limit]
	}
	out := make([]Entry, len(s))
	for i, x := range s {
		out[i] = x.e
	}
	return out
}

// extraEntries reads one extra source: a dictionary from dictDir, the Python
// docs from docDir. For the Python docs it also returns the FAQ's questions.
func extraEntries(src ExtraSource, dictDir, docDir string) ([]Entry, []QA, error) {
	if src.dict == "" {
		if docDir == "" {
			return nil, nil, fmt.Errorf("%s: no documentation directory", src.Name)
		}
		return ParsePythonDocs(os.DirFS(docDir))
	}
	idx, data, err := openDictionary(dictDir, src.dict)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	defer idx.Close()
	defs, _, err := ReadDictionary(src.dict, idx, data, src.parse)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	entries := make([]Entry, len(defs))
	for i, d := range defs {
		entries[i] = d.Entry
	}
	return mergeSameTitle(entries), nil, nil
}

// minAnswerWords is the least a FAQ answer must say to be a chat example
// ("Yes." and "See the next question." are not answers on their own).
const minAnswerWords = 12

// qaExamples returns the chat examples of FAQ questions: the question as the
// user turn, its answer's opening sentences (plain text, at most maxChars).
func qaExamples(qas []QA, maxChars int) []Example {
	var out []Example
	for _, q := range qas {
		ans, ok := Opening(q.Entry, maxChars)
		if !ok || len(Words(ans)) < minAnswerWords {
			continue
		}
		out = append(out, Example{Kind: KindChat, Source: q.Entry.Source, Title: q.Question, System: assets.ChatSystem(), Prompt: q.Question, Answer: ans})
	}
	return out
}

// fileExists reports whether path is an existing file.
func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// pythonDocDir is where python3.11-doc installs its HTML.
var pythonDocDir = filepath.Join("usr", "share", "doc", "python3.11", "html")

// entryExamples are an entry's training examples: its page (at most
// maxPage bytes), and when it has an opening to answer with, two chats (the
// first phrasing of the question and one chosen by the title's hash) and, for a
// common noun, a third asked with its article (assets.ChatArticleQuestion) —
// not for a WordNet verb, adjective or adverb ("What is a poor?").
func entryExamples(cat *Catalog, e Entry, maxPage int, opts Options) []Example {
	out := []Example{{Kind: KindPage, Source: e.Source, Title: e.Title, Prompt: assets.EncyclopediaPrompt(e.Title), Answer: cat.Page(e, maxPage)}}
	if ans, ok := ChatAnswer(e, opts.MaxChatChars); ok {
		q := 1 + int(titleHash("chat:"+e.Title)%uint64(len(assets.ChatQuestions)-1))
		asks := []string{assets.ChatQuestion(0, e.Title), assets.ChatQuestion(q, e.Title)}
		if aq, ok := assets.ChatArticleQuestion(e.Title); ok && (e.Source != "wordnet" || e.Category == "noun") {
			asks = append(asks, aq)
		}
		for _, ask := range asks {
			out = append(out, Example{Kind: KindChat, Source: e.Source, Title: e.Title, System: assets.ChatSystem(), Prompt: ask, Answer: ans})
		}
	}
	return out
}

// addExtras reads the extra sources of opts into the catalog (after its
// dictionaries, each source capped by use in pages) and returns their training
// examples, rendered once all of them are in the catalog. st.candidates
// records what each source offered.
func addExtras(cat *Catalog, opts Options, dictDir, docDir string, u usage, st *Stats, logf func(string, ...any)) ([]Example, error) {
	st.candidates = map[string]int{}
	var added []Entry
	var out []Example
	for _, name := range opts.Extra {
		src, _ := extraSource(name)
		entries, qas, err := extraEntries(src, dictDir, docDir)
		if err != nil {
			return nil, err
		}
		st.candidates[name] = len(entries) + len(qas)
		var fresh []Entry
		for _, e := range entries {
			if !cat.known(e.Title) {
				fresh = append(fresh, e)
			}
		}
		limit := src.Max
		if m, ok := opts.ExtraMax[name]; ok {
			limit = max(m, 0)
		}
		n := 0
		for _, e := range u.rank(fresh, limit) {
			if !cat.known(e.Title) && cat.Add(e) {
				added = append(added, e)
				n++
			}
		}
		qaEx := qaExamples(qas, opts.MaxChatChars)
		out = append(out, qaEx...)
		logf("%s: %d usable entries, %d not in the dictionaries, %d kept; %d FAQ answers", name, len(entries), len(fresh), n, len(qaEx))
	}
	for _, e := range added {
		maxPage := opts.MaxPageChars
		if src, _ := extraSource(e.Source); src.PageChars > 0 {
			maxPage = min(maxPage, src.PageChars)
		}
		out = append(out, entryExamples(cat, e, maxPage, opts)...)
	}
	return out, nil
}
