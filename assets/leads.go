package assets

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Leads: what a small model cannot remember, its folder can hold. Darkroom
// Mini has 16 M parameters and cannot recall seventeen thousand entries (left
// alone, its pages on titles it was trained on match their entry hardly better
// than chance: ROUGE-L 0.10–0.13, chance 0.07); its folder holds each
// entry it was trained on (LeadsFile) as its training page wrote it, past the
// heading — whole, or cut at a sentence's end where the whole does not fit a
// canvas (PageEntry) — and the Encyclopedia holds that text after the heading
// (Leads.Lead, sent as engine.Request.Lead after the heading's Opening), as it
// holds the heading: a page on a known title says what the entry says, and the
// model writes only what the entry leaves (its end, or what follows a cut).
// Chat holds the entry's opening sentences as the chat examples answered with
// them (Leads.ChatStart); the Race holds the first sentence alone
// (Leads.Sentence), so that both its models have a page to write. A title the
// folder does not hold — a held-out title, anything typed — gets the heading
// alone, and the model writes the whole page. Any model folder may carry the
// file; only the built-in Mini does (packaging/ship-mini.sh writes it from the
// training corpus with darkroom train leads).

// LeadsFile is the optional file of a model folder that holds its entries:
// gzip'd JSON lines {"title": …, "lead": …}, sorted by title, "lead" being the
// entry's page past its heading.
const LeadsFile = "leads.jsonl.gz"

// leadMax bounds a page's first sentence past the heading, in bytes (at most
// 160 tokens of the Mini's): the Race's page must leave its models room to
// write. A first sentence too short to stand alone may run on to a second that
// ends within leadRunOnMax (Unix's opens with a note on its plural; its second
// sentence says what it is, 560 bytes in). leadBytesMax bounds a held entry:
// the corpus's pages are at most 900 bytes.
const (
	leadMax      = 400
	leadRunOnMax = 600
	leadBytesMax = 4096
)

// ChatLeadMax bounds the answer a chat example gives about an entry, in bytes
// (heading, category and its opening sentences; corpus.ChatAnswer writes it,
// Leads.ChatStart holds it).
const ChatLeadMax = 320

// Limits ReadLeads puts on a leads file, so that a hostile one cannot exhaust
// memory: the decompressed size and the number of entries.
const (
	leadsMaxBytes   = 64 << 20
	leadsMaxEntries = 1 << 20
)

// PageLead is the start of a page up to the end of its first sentence: the
// heading, the category line if there is one, and the text of the first
// paragraph or list item up to a sentence's end (as pageSentences finds one).
// A first sentence of fewer than leadWords words outside parentheses — a note
// ("(Note: NOT "kernal")."), an expansion ("(b) binary digit.") — runs on to
// the second where there is one. A page that does not begin with the title's
// heading (EncyclopediaOpening), or whose first sentence ends more than leadMax
// bytes past it (or never), gives the heading alone; a second sentence must end
// within leadRunOnMax.
func PageLead(page, title string) string {
	opening := EncyclopediaOpening(title)
	if !strings.HasPrefix(page, opening) {
		return opening
	}
	lead, first := opening, -1 // first: the end of a first sentence too short to stand alone
	pageSentences(page, len(opening), func(end, words int) bool {
		switch {
		case end-1 > len(opening)+leadRunOnMax, first < 0 && end-1 > len(opening)+leadMax:
			return false
		case words >= leadWords:
			lead, first = page[:end], -1
			return false
		case first < 0:
			first = end
		}
		return true
	})
	if first >= 0 {
		return page[:first]
	}
	return lead
}

// PageEntry is as much of a page as its folder holds (Leads.Add): the whole
// page where fits says it fits (a nil fits: where it is at most leadBytesMax
// bytes), else the longest start of it that ends at a sentence's end
// (pageSentences) and fits, else the heading alone — as is a page that does
// not begin with the title's heading (EncyclopediaOpening). fits is asked
// about longer starts only while shorter ones fit.
func PageEntry(page, title string, fits func(page string) bool) string {
	opening := EncyclopediaOpening(title)
	if !strings.HasPrefix(page, opening) {
		return opening
	}
	ok := func(p string) bool { return len(p)-len(opening) <= leadBytesMax && (fits == nil || fits(p)) }
	if ok(page) {
		return page
	}
	entry := opening
	pageSentences(page, len(opening), func(end, _ int) bool {
		if !ok(page[:end]) {
			return false
		}
		entry = page[:end]
		return true
	})
	return entry
}

// pageSentences calls yield with the end of each sentence of page from index
// from on — the index past its '.', '?' or '!' in text (not in a tag, a link or
// an emphasis), followed by a closing tag, or by a space and a capital, a tag,
// a parenthesis or a quote where it does not follow a lone letter or digit
// ("R.M. Keller", "[IBM] 1. The") — and the words outside emphasis and
// parentheses before it, until yield returns false or the page ends.
func pageSentences(page string, from int, yield func(end, words int) bool) {
	var inTag bool
	var links, ems, parens, words int // open <a>, <em> and parentheses; words outside ems and parentheses
	for i := from; i < len(page); i++ {
		c := page[i]
		switch {
		case inTag:
			inTag = c != '>'
		case c == '<':
			inTag = true
			switch tag := page[i:]; {
			case strings.HasPrefix(tag, "<a "):
				links++
			case strings.HasPrefix(tag, "</a>"):
				links = max(links-1, 0)
			case strings.HasPrefix(tag, "<em>"):
				ems++
			case strings.HasPrefix(tag, "</em>"):
				ems = max(ems-1, 0)
			}
		case c == '(':
			parens++
		case c == ')':
			parens = max(parens-1, 0)
		case isAlnum(c) && (i == 0 || !isAlnum(page[i-1])) && ems == 0 && parens == 0:
			words++
		case links == 0 && ems == 0 && (c == '.' || c == '?' || c == '!') && sentenceEnds(page[:i], page[i+1:]):
			if !yield(i+1, words) {
				return
			}
		}
	}
}

// leadWords is the fewest words outside parentheses a lead's sentence stands alone with.
const leadWords = 4

// initial reports whether the text before a '.' ends in a lone letter or digit
// ("R.M. Keller", "E.W.", "[IBM] 1."): an initial or a list number, not a
// sentence's last word.
func initial(before string) bool {
	n := len(before)
	return n >= 1 && isAlnum(before[n-1]) && (n == 1 || !isAlnum(before[n-2]))
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// sentenceEnds reports whether a '.', '?' or '!' between before and rest ends
// its sentence: before a closing tag, always ("either x R y or y R x.</p>");
// before a space and a capital, a tag, a parenthesis or a quote, unless it
// follows an initial.
func sentenceEnds(before, rest string) bool {
	switch {
	case strings.HasPrefix(rest, "</"):
		return true
	case !strings.HasPrefix(rest, " ") || len(rest) < 2 || initial(before):
		return false
	}
	c := rest[1]
	return c >= 'A' && c <= 'Z' || c == '<' || c == '(' || c == '"'
}

// Leads are a model folder's entries by title: each title's lead, the text of
// its page after the heading (PageEntry). The zero value and nil hold none.
type Leads struct {
	byTitle  map[string]string // CleanLine(title) → lead
	folded   map[string]string // lower-case title → the title, for titles unique when folded
	squashed map[string]string // squash(title) → the title, for titles unique when squashed
	keys     []titleKey        // every title with its squash, in the order held (Similar)

	sortOnce sync.Once
	sorted   []string // lower-case titles, sorted, each with its title after a "\x00" (Prefixed)
}

// leadEntry is one line of LeadsFile.
type leadEntry struct {
	Title string `json:"title"`
	Lead  string `json:"lead"`
}

// Add holds page's entry for title (PageEntry: whole, or cut at a sentence's
// end where the whole does not fit; fits as PageEntry's) and reports whether
// it held any text past the heading; a title already held keeps its first
// entry.
func (l *Leads) Add(title, page string, fits func(page string) bool) bool {
	title = CleanLine(title)
	lead := strings.TrimPrefix(PageEntry(page, title, fits), EncyclopediaOpening(title))
	if lead == "" || title == "" {
		return false
	}
	l.put(title, lead)
	return true
}

// put holds lead for title unless title is held already, and keeps the
// case-folded index: a folded title two titles share maps to "" (ambiguous,
// not found). Lookups only read the maps, so they may run at once.
func (l *Leads) put(title, lead string) {
	if l.byTitle == nil {
		l.byTitle, l.folded, l.squashed = map[string]string{}, map[string]string{}, map[string]string{}
	}
	if _, ok := l.byTitle[title]; ok {
		return
	}
	l.byTitle[title] = lead
	unique(l.folded, strings.ToLower(title), title)
	k := squash(title)
	if k != "" {
		unique(l.squashed, k, title)
	}
	l.keys = append(l.keys, titleKey{title: title, squashed: k})
}

// titleKey is a title held and its squash.
type titleKey struct{ title, squashed string }

// unique maps k to title in index, or to "" (ambiguous, not found) where
// another title has k too.
func unique(index map[string]string, k, title string) {
	if _, dup := index[k]; dup {
		title = ""
	}
	index[k] = title
}

// squash is a title as a reader may spell it apart from its separators:
// lower case, without spaces, hyphens, slashes, dots, underscores and
// apostrophes ("e-mail" and "email", "TCP-IP" and "TCP/IP" are one). Other
// signs stay: "C++" is not "C".
func squash(title string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '/', '.', '_', '\'', '’':
			return -1
		}
		return unicode.ToLower(r)
	}, title)
}

// Len is the number of titles held.
func (l *Leads) Len() int {
	if l == nil {
		return 0
	}
	return len(l.byTitle)
}

// Lead is title's lead, the entry as the folder holds it: the exact title's,
// else that of the one title equal to it but for case ("unix" finds "Unix";
// "Lisp" finds "LISP" only if no other spelling exists). The Encyclopedia,
// `darkroom wiki`, the local server and `train eval` send it as
// engine.Request.Lead after the heading (EncyclopediaOpening), which holds it
// where it fits.
func (l *Leads) Lead(title string) (string, bool) {
	_, lead, ok := l.entry(title)
	return lead, ok
}

// Sentence is the first sentence of title's lead (PageLead), found as Lead
// finds the lead: what the Race holds after the heading, so that its two
// models still have most of a page to write. ok is false where the folder does
// not hold the title or its entry has no first sentence within leadMax bytes.
func (l *Leads) Sentence(title string) (string, bool) {
	held, lead, ok := l.entry(title)
	if !ok {
		return "", false
	}
	opening := EncyclopediaOpening(held)
	s := strings.TrimPrefix(PageLead(opening+lead, held), opening)
	return s, s != ""
}

// Has reports whether title has a lead (as Lead finds it): an entry the model
// was trained on. htmlsafe.Relink sends a garbled link there.
func (l *Leads) Has(title string) bool {
	_, _, ok := l.entry(title)
	return ok
}

// entry is Lead's lookup, with the title as the leads spell it.
func (l *Leads) entry(title string) (held, lead string, ok bool) {
	if l.Len() == 0 {
		return "", "", false
	}
	title = CleanLine(title)
	if lead, ok := l.byTitle[title]; ok {
		return title, lead, true
	}
	if held = l.folded[strings.ToLower(title)]; held == "" {
		return "", "", false // not held, or two titles equal but for case
	}
	return held, l.byTitle[held], true
}

// Find is the title of the entry a topic names, as a reader types it: the
// title itself (Lead's lookup: "unix" finds "Unix"), else without its article
// ("the kernel" finds "kernel"), else by its singular ("compilers" finds
// "compiler", "libraries" "library"), else apart from its separators where
// one title is so spelled ("e-mail" finds "email", "TCP-IP" "TCP/IP":
// squash). Chat finds the entry a question asks about so (ChatStart), and the
// encyclopedia a typed topic's page (develop.PageTitle): left to the model,
// "compilers" got a page of its own invention though the entry for
// "compiler" was held. ok is false where none is held.
func (l *Leads) Find(topic string) (title string, ok bool) {
	title, _, ok = l.find(topic)
	return title, ok
}

// find is Find, with the entry.
func (l *Leads) find(topic string) (title, entry string, ok bool) {
	if l.Len() == 0 {
		return "", "", false
	}
	if title, entry, ok = l.entry(topic); ok {
		return title, entry, true
	}
	bare := TopicBare(CleanLine(topic))
	if bare != topic {
		if title, entry, ok = l.entry(bare); ok {
			return title, entry, true
		}
	}
	for _, one := range singulars(bare) { // "What are interrupts?"
		if title, entry, ok = l.entry(one); ok {
			return title, entry, true
		}
	}
	if k := squash(bare); k != "" && l.squashed[k] != "" { // "e-mail": "email"
		title = l.squashed[k]
		return title, l.byTitle[title], true
	}
	return "", "", false
}

// ChatStart is how Darkroom Mini's answer to a chat message begins
// (Leads.ChatStart): the engine.Request fields of the same names, which
// Chat, the API, `darkroom generate` and `train eval` set from it.
type ChatStart struct {
	Opening, Lead    string
	OpeningTentative bool
	Reply            string
}

// ChatStart is how the answer to message begins. Where it asks about a topic
// the way the chat examples ask (ChatTopic), it is split as the Encyclopedia
// splits a page: Opening, the start of the bold heading the examples open
// with, and Lead, where the leads hold the topic ("a", "an" or "the" before it
// dropped when the topic with it is not held), the heading's end and the
// entry's opening as the examples write it (chatLead) — category, then the
// opening sentences as Markdown:
//
//	"**Unix"  +  "** (operating system): (Or "UNIX", …) An interactive time-sharing operating system …"
//
// so the answer to "What is Unix?" says what the entry says and the model
// writes what follows (its end, as a rule). A topic the leads do not hold heads the answer
// as asked, its article dropped — left to write its own heading, the Mini
// named another term in half its answers ("What is a server room?" →
// "**server close**") — where the message asks as the chat examples ask ("What
// is X?", "Explain X.": the other forms ChatTopic knows, "What's X?" among
// them, are also how its off-topic chats ask, which it learned to turn away)
// and the topic reads as a term: at most chatHeadingWords words and
// chatHeadingBytes bytes, no "**" or markup, no "you", "my" and the like
// ("What is your name?" is not about an entry), not "it", "up" or "new" alone.
// That heading is tentative (OpeningTentative): held only where the model
// begins its answer with a heading itself, so a question it turns away ("What
// is a good recipe for pancakes?") is not forced into a made-up definition.
// A plural topic finds its entry by the singular ("What are interrupts?" →
// "**interrupt"). The heading is left open for the model to close: the Mini's
// tokenizer writes "**:" as one token, so a held closing "**" would rule out an
// answer without a category (held so, it wrote "(noun)" and a dictionary
// sense for "bus error").
//
// A term asked alone ("unix?", "compilers?": chatTerm) is a question about
// it: where the leads hold it, the answer is its entry, as for "What is
// Unix?"; where they do not, the Library answer, which shows how to ask. A
// lower-case word does not name an acronym so asked ("cool?" is not about
// COOL, "help?" not about HELP).
//
// With no entry held, Reply is the Library answer (ChatElsewhere), which the
// model learned to write word for word: where it begins it, it is held whole
// (engine.Request.Reply; left to write it, the Mini garbled it in half the
// off-topic questions it turned away). All is empty for a model folder
// without leads: the leads are what says the model was trained on these
// answer forms.
func (l *Leads) ChatStart(message string) ChatStart {
	if l.Len() == 0 {
		return ChatStart{}
	}
	start := ChatStart{Reply: ChatElsewhere()} // no entry held: the Library answer, where begun
	topic, asked, alone, ok := chatSubject(message)
	if !ok {
		return start
	}
	bare := TopicBare(topic)
	title, entry, ok := l.find(topic)
	if ok && alone && acronymOf(topic, title) {
		ok = false // "cool?" is no question about COOL
	}
	if ok {
		category, text := chatLead(title, entry)
		if text != "" {
			lead := "**: " + text
			if category != "" {
				lead = "** (" + category + "): " + text
			}
			return ChatStart{Opening: "**" + title, Lead: lead}
		}
	}
	if !asked || !chatHeading(bare) {
		return start
	}
	start.Opening, start.OpeningTentative = "**"+bare, true
	return start
}

// chatSubject is what a chat message asks about: a question's topic
// (chatTopic; asked where it asks as the chat examples do), else a term asked
// alone (chatTerm; alone). ChatStart and ChatSimilar read a message so.
func chatSubject(message string) (topic string, asked, alone, ok bool) {
	if topic, asked, ok = chatTopic(message); ok {
		return topic, asked, false, true
	}
	topic, ok = chatTerm(message)
	return topic, false, ok, ok
}

// chatTerm is the term a message asks about alone, a question mark after it
// ("unix?", "Compilers?", "linked list??"): a topic that reads as a term
// (chatHeading), not a question's words ("How is it going?", "Can you help
// me?" — a message that begins with a question word or an auxiliary is a
// sentence, not a term). Without the question mark a bare word is as often
// a greeting or a reply ("hi", "thanks", "yes" and "no" are all entries of
// the Mini's), so it is not read as a term.
func chatTerm(message string) (topic string, ok bool) {
	q := CleanLine(message)
	if !strings.HasSuffix(q, "?") {
		return "", false
	}
	topic = strings.TrimSpace(strings.TrimRight(q, "?"))
	first, _, _ := strings.Cut(strings.ToLower(topic), " ")
	if _, sentence := questionWords[first]; sentence || !chatHeading(topic) {
		return "", false
	}
	return topic, true
}

// questionWords begin a question that is a sentence, not a term (chatTerm).
var questionWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields("what whats what's who whom whose which where when why how is are was were am " +
		"do does did can could will would shall should may might must have has had any anything anyone") {
		m[w] = struct{}{}
	}
	return m
}()

// acronymOf reports whether title is an acronym (upper case only) that topic
// names in other letters than capitals ("cool" → "COOL").
func acronymOf(topic, title string) bool {
	return title == strings.ToUpper(title) && title != strings.ToLower(title) && topic != strings.ToUpper(topic)
}

// singulars are the singular forms a plural topic may have, most likely
// first: "interrupts" → "interrupt"; "processes" → "process", "processe";
// "libraries" → "library". None for a word that does not end in "s", or ends
// in "ss" ("class"), or in a capital S after a capital: an acronym ("MIIS" is
// not more than one "MII"; "APIs" is).
func singulars(topic string) []string {
	lower := strings.ToLower(topic)
	if len(topic) < 3 || !strings.HasSuffix(lower, "s") || strings.HasSuffix(lower, "ss") {
		return nil
	}
	if n := len(topic); topic[n-1] == 'S' && topic[n-2] >= 'A' && topic[n-2] <= 'Z' {
		return nil
	}
	var out []string
	if strings.HasSuffix(lower, "ies") {
		out = append(out, topic[:len(topic)-3]+"y")
	}
	if strings.HasSuffix(lower, "es") {
		out = append(out, topic[:len(topic)-2])
	}
	return append(out, topic[:len(topic)-1])
}

// Bounds on a chat heading the leads do not hold: of the 17,244 titles the
// Mini was trained on, 99.1% have at most 5 words and 99.9% at most 60 bytes.
const (
	chatHeadingWords = 5
	chatHeadingBytes = 60
)

// chatHeading reports whether a topic not held reads as a term to head an
// answer with (ChatStart).
func chatHeading(topic string) bool {
	words := strings.Fields(topic)
	if len(words) == 0 || len(words) > chatHeadingWords || len(topic) > chatHeadingBytes ||
		strings.ContainsAny(topic, "*<>`_[]") {
		return false
	}
	switch strings.ToLower(topic) {
	case "it", "this", "that", "there", "up", "new", "wrong", "happening", "going on":
		return false // "What is it?", "What's up?", "What's new?"
	}
	for _, w := range words {
		switch strings.ToLower(strings.Trim(w, ".,;:!?'\"")) {
		case "i", "me", "my", "mine", "you", "your", "yours", "we", "us", "our":
			return false
		}
	}
	return true
}

// chatLead is an entry (a lead) as the chat examples answer with it
// (corpus.ChatAnswer): its category, and the opening sentences of its first
// paragraph or list item (with the next, where the first leads on to it) as
// Markdown (blockMarkdown) — those that fit in
// ChatLeadMax bytes after the heading ("**title** (category): "), and at
// least the first (the whole item where it has no sentence's end).
func chatLead(title, entry string) (category, text string) {
	category, entry = splitCategory(entry)
	block := firstBlock(entry)
	if leadsOn(blockMarkdown(block)) { // "(Note: NOT "kernal")." alone is no answer: the block after it too
		if i := strings.Index(entry, block); i >= 0 {
			if rest := entry[i+len(block):]; strings.Contains(rest, "<p>") || strings.Contains(rest, "<li>") {
				block += firstBlock(rest)
			}
		}
	}
	budget := ChatLeadMax - len("**"+title+"**: ")
	if category != "" {
		budget -= len(" (" + category + ")")
	}
	whole := blockMarkdown(block)
	if len(whole) <= budget {
		return category, whole
	}
	text = ""
	pageSentences(block, 0, func(end, _ int) bool {
		t := blockMarkdown(block[:end])
		if text != "" && len(t) > budget {
			return false
		}
		text = t // the first sentence, whatever its length
		return len(t) <= budget
	})
	if text == "" { // no sentence's end: the whole item
		text = whole
	}
	return category, text
}

// leadsOn reports whether a block's text does not stand alone as an answer
// but leads on to the next block: a parenthesis alone — "(Note: NOT
// "kernal").", "(also written ‘e-mail’ and ‘E-mail’)", "(ACP)", the first
// block of 51 of the Mini's 17,055 entries — or text that ends in a colon
// ("An axiom of set theory:", 201 of them). chatLead answers with the block
// after it too.
func leadsOn(text string) bool {
	if strings.HasSuffix(text, ":") {
		return true
	}
	if !strings.HasPrefix(text, "(") {
		return false
	}
	depth := 0
	for i, r := range text {
		switch r {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				rest := strings.TrimSpace(text[i+1:])
				return rest == "" || rest == "."
			}
		}
	}
	return false
}

// firstBlock is an entry's first paragraph or list item, from its opening tag
// through its closing one (to the entry's end where that is missing); the
// entry whole where it has neither.
func firstBlock(entry string) string {
	p, li := strings.Index(entry, "<p>"), strings.Index(entry, "<li>")
	start, end := p, "</p>"
	if p < 0 || li >= 0 && li < p {
		start, end = li, "</li>"
	}
	if start < 0 {
		return entry
	}
	block := entry[start:]
	if i := strings.Index(block, end); i >= 0 {
		block = block[:i+len(end)]
	}
	return block
}

// splitCategory parts a lead's category line ("<p><em>operating
// system</em></p>\n") from the rest: the category as text ("" where there is
// none) and the lead after it.
func splitCategory(lead string) (category, rest string) {
	if after, ok := strings.CutPrefix(lead, "<p><em>"); ok {
		if cat, after, ok := strings.Cut(after, "</em></p>\n"); ok && !strings.Contains(cat, "<") {
			return CleanLine(html.UnescapeString(cat)), after
		}
	}
	return "", lead
}

// blockMarkdown is lead text (HTML in the page format, no category line) as
// the chat examples write it: links as their words, emphasis as *…*,
// paragraphs and list items run together and entities unescaped.
func blockMarkdown(lead string) string {
	var b strings.Builder
	for lead != "" {
		open := strings.IndexByte(lead, '<')
		if open < 0 {
			b.WriteString(lead)
			break
		}
		b.WriteString(lead[:open])
		end := strings.IndexByte(lead[open:], '>')
		if end < 0 {
			break // a tag cut off: drop it
		}
		switch tag := lead[open : open+end+1]; {
		case tag == "<em>" || tag == "</em>":
			b.WriteByte('*')
		case strings.HasPrefix(tag, "<a ") || tag == "</a>":
		default: // a block's edge: paragraphs and list items run on
			b.WriteByte(' ')
		}
		lead = lead[open+end+1:]
	}
	return CleanLine(html.UnescapeString(b.String()))
}

// Write writes the leads as LeadsFile's format.
func (l *Leads) Write(w io.Writer) error {
	zw := gzip.NewWriter(w)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	titles := make([]string, 0, l.Len())
	if l != nil {
		for t := range l.byTitle {
			titles = append(titles, t)
		}
	}
	slices.Sort(titles)
	for _, t := range titles {
		if err := enc.Encode(leadEntry{Title: t, Lead: l.byTitle[t]}); err != nil {
			return fmt.Errorf("write leads: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write leads: %w", err)
	}
	return nil
}

// ReadLeads reads the model folder fsys's LeadsFile: nil and no error when the
// folder has none; an error naming the line when it is damaged, too large or
// holds a lead that is not one (empty, longer than a lead can be, or with a
// heading in it), so that no half-read file is used.
func ReadLeads(fsys fs.FS) (*Leads, error) {
	f, err := fsys.Open(LeadsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", LeadsFile, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", LeadsFile, err)
	}
	r := bufio.NewReader(io.LimitReader(zr, leadsMaxBytes+1))
	l := &Leads{}
	var read int
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		read += len(b)
		if read > leadsMaxBytes {
			return nil, fmt.Errorf("read %s: larger than %d MB decompressed", LeadsFile, leadsMaxBytes>>20)
		}
		if len(b) > 0 {
			var e leadEntry
			switch uerr := json.Unmarshal(b, &e); {
			case uerr != nil:
				return nil, fmt.Errorf("read %s line %d: %w", LeadsFile, line, uerr)
			case CleanLine(e.Title) != e.Title || e.Title == "":
				return nil, fmt.Errorf("read %s line %d: title %q is empty or not on one line", LeadsFile, line, e.Title)
			case e.Lead == "" || len(e.Lead) > leadBytesMax || strings.Contains(e.Lead, "<h1"):
				return nil, fmt.Errorf("read %s line %d (%q): not an entry (%d bytes)", LeadsFile, line, e.Title, len(e.Lead))
			case len(l.byTitle) >= leadsMaxEntries:
				return nil, fmt.Errorf("read %s: more than %d entries", LeadsFile, leadsMaxEntries)
			}
			l.put(e.Title, e.Lead)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s line %d: %w", LeadsFile, line, err)
		}
	}
	return l, nil
}
