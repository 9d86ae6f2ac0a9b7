package assets

import (
	"bytes"
	"compress/gzip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// TestPageLead: a page's lead is its heading, category and first sentence; a
// sentence does not end inside a tag, a link or an emphasis, nor before a
// lower-case word; a page without its heading, or whose first sentence never ends
// within leadMax bytes, leads with the heading alone.
func TestPageLead(t *testing.T) {
	long := "<h1>L</h1>\n<p>" + strings.Repeat("word ", leadMax/5+1) + "end.</p>"
	runOn := func(words int) string {
		return "<h1>U</h1>\n<p>Plural Unices. An " + strings.Repeat("word ", words) + "end.</p>"
	}
	for _, tc := range []struct{ page, title, want string }{
		{"<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An operating system for computers. It runs.</p>", "Unix",
			"<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An operating system for computers."},
		{"<h1>bit</h1>\n<p>(b) Binary digit.</p>\n<p>The unit of information. More.</p>", "bit", // too short alone: runs on
			"<h1>bit</h1>\n<p>(b) Binary digit.</p>\n<p>The unit of information."},
		{"<h1>vera</h1>\n<p><em>acronym</em></p>\n<p>Very Early Rabbit Access.</p>", "vera",
			"<h1>vera</h1>\n<p><em>acronym</em></p>\n<p>Very Early Rabbit Access."},
		{`<h1>X</h1>` + "\n" + `<p>See <a href="/wiki/a.b">a. B</a>, e.g. the U.S. census. <a href="/wiki/y">y</a> too.</p>`, "X",
			`<h1>X</h1>` + "\n" + `<p>See <a href="/wiki/a.b">a. B</a>, e.g. the U.S. census.`},
		{"<h1>cat</h1>\n<p><em>noun</em></p>\n<ul><li>Is it a pet? Yes. For example: \"x\".</li></ul>", "cat",
			"<h1>cat</h1>\n<p><em>noun</em></p>\n<ul><li>Is it a pet?"},
		{"<h1>R</h1>\n<p>[IBM] 1. R.M. Keller, U Utah. In 1990. More.</p>", "R",
			"<h1>R</h1>\n<p>[IBM] 1. R.M. Keller, U Utah."},
		{"<h1>T</h1>\n<p>Either x R y or y R x.</p>\n<p>More.</p>", "T", "<h1>T</h1>\n<p>Either x R y or y R x."},
		{"<h1>Unix</h1>\n<p>An OS. It runs.</p>", "Linux", "<h1>Linux</h1>\n"},
		{"<h1>Unix</h1>\n<p>No end at all</p>", "Unix", "<h1>Unix</h1>\n"},
		{long, "L", "<h1>L</h1>\n"},
		{runOn(90), "U", strings.TrimSuffix(runOn(90), "</p>")},                     // a second sentence past leadMax, within leadRunOnMax
		{runOn(130), "U", "<h1>U</h1>\n<p>Plural Unices."},                          // past leadRunOnMax: the first alone
		{"<h1>U</h1>\n<p>Plural Unices.</p>", "U", "<h1>U</h1>\n<p>Plural Unices."}, // no second
	} {
		if got := PageLead(tc.page, tc.title); got != tc.want {
			t.Errorf("PageLead(%q) = %q, want %q", tc.page, got, tc.want)
		}
	}
}

// TestPageEntry: a page is held whole where it fits, else cut at the last
// sentence's end that fits (never inside a link or an emphasis, never after an
// initial), else to its heading; a page without its heading holds the heading
// alone; a nil fits holds pages of up to leadBytesMax bytes past the heading.
func TestPageEntry(t *testing.T) {
	page := "<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An OS by R.M. Keller. It <a href=\"/wiki/x\">runs. Fast</a> now.</p>\n<ul><li>One. Two</li></ul>"
	within := func(n int) func(string) bool { return func(p string) bool { return len(p) <= n } }
	for _, tc := range []struct {
		fits func(string) bool
		want string
	}{
		{nil, page},
		{within(len(page)), page},
		{within(len(page) - 1), "<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An OS by R.M. Keller. It <a href=\"/wiki/x\">runs. Fast</a> now.</p>\n<ul><li>One."},
		{within(len(page) - 15), "<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An OS by R.M. Keller. It <a href=\"/wiki/x\">runs. Fast</a> now."},
		{within(60), "<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An OS by R.M. Keller."},
		{within(40), "<h1>Unix</h1>\n"},
	} {
		if got := PageEntry(page, "Unix", tc.fits); got != tc.want {
			t.Errorf("PageEntry(within %v) = %q, want %q", tc.fits != nil, got, tc.want)
		}
	}
	if got := PageEntry(page, "Linux", nil); got != "<h1>Linux</h1>\n" {
		t.Errorf("another title's page: %q", got)
	}
	long := "<h1>L</h1>\n<p>" + strings.Repeat("A word. ", leadBytesMax/8) + "</p>"
	if got := PageEntry(long, "L", nil); len(got)-len("<h1>L</h1>\n") > leadBytesMax || !strings.HasSuffix(got, "word.") {
		t.Errorf("a page over leadBytesMax: %d bytes held, ending %q", len(got), got[max(len(got)-10, 0):])
	}
}

// TestLeads: a folder's leads are written and read back whole; a title finds
// its lead exactly or by case where that is unambiguous; the opening is the
// heading and the lead (the heading alone for a title not held); a folder
// without the file holds none.
func TestLeads(t *testing.T) {
	var l Leads
	for _, p := range [][2]string{
		{"Unix", "<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An OS. It runs.</p>"},
		{"Unix", "<h1>Unix</h1>\n<p>A second page of the title.</p>"},
		{"LISP", "<h1>LISP</h1>\n<p>A language. Old.</p>"},
		{"Lisp", "<h1>Lisp</h1>\n<p>The same, spelled so. Yes.</p>"},
		{"C", "<h1>C</h1>\n<p>no sentence end</p>"},
	} {
		l.Add(p[0], p[1], nil)
	}
	var b bytes.Buffer
	if err := l.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLeads(fstest.MapFS{LeadsFile: {Data: b.Bytes()}})
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if got.Len() != 4 {
		t.Fatalf("read back %d entries, want 4", got.Len())
	}
	for title, want := range map[string][2]string{ // the page as held; its first sentence
		"Unix":  {"<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An OS. It runs.</p>", "<h1>Unix</h1>\n<p><em>os</em></p>\n<p>An OS. It runs."}, // "An OS." alone is too short
		"unix":  {"<h1>unix</h1>\n<p><em>os</em></p>\n<p>An OS. It runs.</p>", "<h1>unix</h1>\n<p><em>os</em></p>\n<p>An OS. It runs."},
		"Lisp":  {"<h1>Lisp</h1>\n<p>The same, spelled so. Yes.</p>", "<h1>Lisp</h1>\n<p>The same, spelled so."},
		"lisp":  {"<h1>lisp</h1>\n", "<h1>lisp</h1>\n"}, // LISP or Lisp: ambiguous
		"C":     {"<h1>C</h1>\n<p>no sentence end</p>", "<h1>C</h1>\n"},
		"Emacs": {"<h1>Emacs</h1>\n", "<h1>Emacs</h1>\n"},
	} {
		if lead, _ := got.Lead(title); EncyclopediaOpening(title)+lead != want[0] {
			t.Errorf("Lead(%q) = %q, want the page to open %q", title, lead, want[0])
		}
		if s, ok := got.Sentence(title); EncyclopediaOpening(title)+s != want[1] || ok != (s != "") {
			t.Errorf("Sentence(%q) = %q, %v, want the page to open %q", title, s, ok, want[1])
		}
	}
	none, err := ReadLeads(fstest.MapFS{"config.json": {Data: []byte("{}")}})
	if lead, ok := none.Lead("Unix"); err != nil || none != nil || ok || lead != "" || none.Has("Unix") {
		t.Errorf("a folder without %s: %v, %v", LeadsFile, none, err)
	}
	var wg sync.WaitGroup // lookups run at once (go test -race)
	if !got.Has("unix") || got.Has("Emacs") {
		t.Errorf(`Has("unix") %v, Has("Emacs") %v; want true (as Lead finds it), false`, got.Has("unix"), got.Has("Emacs"))
	}
	for range 4 {
		wg.Go(func() { got.Lead("lisp"); got.ChatStart("What is UNIX?") })
	}
	wg.Wait()
}

// TestReadLeadsRefusesDamage: a damaged, hostile or truncated leads file is an
// error naming the file, never a partial set of leads.
func TestReadLeadsRefusesDamage(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	good := gz(`{"title":"Unix","lead":"<p>An OS.` + strings.Repeat(" It runs.", leadBytesMax/9-1) + `"}` + "\n")
	for name, data := range map[string][]byte{
		"not gzip":         []byte(`{"title":"Unix","lead":"<p>An OS."}`),
		"truncated":        good[:len(good)-6],
		"bad json":         gz(`{"title":"Unix","lead":"<p>An OS."}` + "\n{oops\n"),
		"empty lead":       gz(`{"title":"Unix","lead":""}`),
		"heading in lead":  gz(`{"title":"Unix","lead":"<h1>X</h1>"}`),
		"lead too long":    gz(`{"title":"Unix","lead":"` + strings.Repeat("a", leadBytesMax+1) + `"}`),
		"title two lines":  gz(`{"title":"Un\nix","lead":"<p>An OS."}`),
		"larger than says": gz(strings.Repeat(" ", leadsMaxBytes+1)),
	} {
		if l, err := ReadLeads(fstest.MapFS{LeadsFile: {Data: data}}); err == nil || l != nil || !strings.Contains(err.Error(), LeadsFile) {
			t.Errorf("%s: %v leads, error %v", name, l.Len(), err)
		}
	}
	if l, err := ReadLeads(fstest.MapFS{LeadsFile: {Data: good}}); err != nil || l.Len() != 1 {
		t.Errorf("the good file: %d leads, %v", l.Len(), err)
	}
}

// TestChatTopic: every way the chat examples ask, and the common variants, give
// the topic whatever the case and the ending; other messages give none.
func TestChatTopic(t *testing.T) {
	for i := range ChatQuestions {
		if got, ok := ChatTopic(ChatQuestion(i, "TCP/IP")); !ok || got != "TCP/IP" {
			t.Errorf("ChatTopic(%q) = %q, %v", ChatQuestion(i, "TCP/IP"), got, ok)
		}
	}
	for msg, want := range map[string]string{
		"What is a compiler?":                   "a compiler",
		"  what   is  Unix ":                    "Unix",
		"WHAT'S LISP??":                         "LISP",
		"What is meant by kernel in computing?": "kernel",
		"what does RTFM stand for?":             "RTFM",
		"Who is Ken Thompson?":                  "Ken Thompson",
		"define hacker!":                        "hacker",
		"tell me about emacs":                   "emacs",
		"What are interrupts?":                  "interrupts",
	} {
		if got, ok := ChatTopic(msg); !ok || got != want {
			t.Errorf("ChatTopic(%q) = %q, %v; want %q", msg, got, ok, want)
		}
	}
	for _, msg := range []string{"", "?", "What is ?", "Hello there", "Write me a poem about Unix.", "What is", "Explain."} {
		if got, ok := ChatTopic(msg); ok {
			t.Errorf("ChatTopic(%q) = %q, want none", msg, got)
		}
	}
}

// TestChatStart: a question about a held title opens its answer with the
// bold title and the entry's lead in the chat examples' form
// (engine/train/corpus.ChatAnswer's), the heading's end in the lead; one
// about a topic not held, asked as the chat examples ask, with the topic as the
// heading's start, where it reads as a term; anything else with nothing.
func TestChatStart(t *testing.T) {
	var l Leads
	for _, p := range [][2]string{
		{"Unix", `<h1>Unix</h1>` + "\n" + `<p><em>operating system</em></p>` + "\n" +
			`<p>An interactive <a href="/wiki/time-sharing">time-sharing</a> system by <em>Ken</em> &amp; co. It runs.</p>`},
		{"bit", "<h1>bit</h1>\n<p><em>unit</em></p>\n<p>(b) binary digit.</p>\n<p>The unit of information; a 0 or 1.</p>"},
		{"poor", "<h1>poor</h1>\n<p><em>adjective</em></p>\n<ul><li>Deserving or inciting pity.</li></ul>"},
		{"compiler", "<h1>compiler</h1>\n<p>A program that converts a program to machine language.</p>"},
		{"LISP", "<h1>LISP</h1>\n<p>A language, LISt Processing.</p>"},
		{"Lisp", "<h1>Lisp</h1>\n<p>The same, spelled so here.</p>"},
		{"The Cathedral", "<h1>The Cathedral</h1>\n<p>An essay.</p>"},
		{"interrupt", "<h1>interrupt</h1>\n<p>A signal.</p>"},
		{"library", "<h1>library</h1>\n<p>A collection of routines.</p>"},
		{"process", "<h1>process</h1>\n<p>A running program.</p>"},
		// 20 sentences of 31 bytes: 9 fit ChatLeadMax after "**long one**: ".
		{"long one", "<h1>long one</h1>\n<p>" + strings.TrimSpace(strings.Repeat("Word word word word word word. ", 20)) + "</p>\n<p>More.</p>"},
		{"unending", "<h1>unending</h1>\n<ul><li>An item that never ends a sentence</li><li>Two.</li></ul>"},
		{"COOL", "<h1>COOL</h1>\n<p>A language.</p>"},
	} {
		l.Add(p[0], p[1], nil)
	}
	for msg, want := range map[string][2]string{
		"What is unix?":                {"**Unix", "** (operating system): An interactive time-sharing system by *Ken* & co. It runs."},
		"Explain bit.":                 {"**bit", "** (unit): (b) binary digit."}, // the first paragraph, as corpus.Opening takes it
		"What is a long one?":          {"**long one", "**: " + strings.Repeat("Word word word word word word. ", 8) + "Word word word word word word."},
		"What is unending?":            {"**unending", "**: An item that never ends a sentence"},
		"What is a poor?":              {"**poor", "** (adjective): Deserving or inciting pity."},
		"What is a compiler?":          {"**compiler", "**: A program that converts a program to machine language."},
		"What is the compiler?":        {"**compiler", "**: A program that converts a program to machine language."},
		"What is Lisp?":                {"**Lisp", "**: The same, spelled so here."},
		"Tell me about the Cathedral.": {"**The Cathedral", "**: An essay."},
		"What are interrupts?":         {"**interrupt", "**: A signal."},
		"what are libraries":           {"**library", "**: A collection of routines."},
		"What are the processes?":      {"**process", "**: A running program."},
		"What's a library?":            {"**library", "**: A collection of routines."},
		// Not held: the topic heads the answer, as asked, its article dropped.
		"What is lisp?":                           {"**lisp", ""}, // LISP or Lisp: neither is the one
		"What is a hacker?":                       {"**hacker", ""},
		"What is a server room?":                  {"**server room", ""},
		"What is an Unix thing?":                  {"**Unix thing", ""},
		"What is the weather today?":              {"**weather today", ""},
		"What is meant by power up in computing?": {"**power up", ""},
		// Not held, and not asked as the chat examples ask: nothing held, as
		// the Mini learned to turn away "What's the weather like today?".
		"Who is the president?":      {"", ""},
		"what's the weather today?":  {"", ""},
		"What's on TV tonight?":      {"", ""},
		"What is meant by power up?": {"", ""},
		"What are you?":              {"", ""},
		// A term asked alone: its entry, where held; else the Library answer,
		// no heading (a bare word is often no question at all).
		"unix?":            {"**Unix", "** (operating system): An interactive time-sharing system by *Ken* & co. It runs."},
		"Interrupts ??":    {"**interrupt", "**: A signal."},
		"the compiler?":    {"**compiler", "**: A program that converts a program to machine language."},
		"COOL?":            {"**COOL", "**: A language."},
		"cool?":            {"", ""}, // not about the acronym
		"hacker?":          {"", ""},
		"lisp?":            {"", ""},
		"unix":             {"", ""}, // no question mark: "hi", "thanks" and "yes" are entries too
		"How is it going?": {"", ""},
		"Can you help me?": {"", ""},
		"Is Unix free?":    {"", ""},
		"Why unix?":        {"", ""},
		// Not a term: nothing held.
		"Compile this for me.":   {"", ""},
		"Hello!":                 {"", ""},
		"What is your name?":     {"", ""},
		"Who are you?":           {"", ""},
		"What's up?":             {"", ""},
		"What is it?":            {"", ""},
		"What is my IP address?": {"", ""},
		"What is **bold**?":      {"", ""},
		"What is <b>?":           {"", ""},
		"What is the best way to learn programming quickly?": {"", ""}, // 7 words
	} {
		// Only a heading the leads do not hold is tentative: the model may
		// begin otherwise (engine.Request.OpeningTentative).
		// The Library answer is the reply wherever no entry is held.
		got := l.ChatStart(msg)
		o, ld := got.Opening, got.Lead
		if o != want[0] || ld != want[1] || got.OpeningTentative != (o != "" && ld == "") || (got.Reply == "") != (ld != "") {
			t.Errorf("ChatStart(%q) = %+v; want opening %q, lead %q", msg, got, want[0], want[1])
		}
		if got.Reply != "" && got.Reply != ChatElsewhere() {
			t.Errorf("ChatStart(%q).Reply = %q, want the Library answer", msg, got.Reply)
		}
	}
	var none *Leads
	if got := none.ChatStart("What is Unix?"); got != (ChatStart{}) {
		t.Errorf("no leads: ChatStart = %+v", got)
	}
}

// TestFind: a topic as a reader types it finds its entry — by case, without
// its article, by its singular — and the title found is the entry's; an
// acronym ending in a capital S is not a plural, a topic held as typed is
// never taken for another, and nothing is found in no leads.
func TestFind(t *testing.T) {
	var l Leads
	for _, title := range []string{"Unix", "compiler", "library", "process", "kernel", "MII", "The Cathedral", "news", "API", "email", "TCP/IP", "C", "C++", "on-line", "online"} {
		l.Add(title, "<h1>"+title+"</h1>\n<p>An entry. It is one.</p>", nil)
	}
	for topic, want := range map[string]string{
		"Unix": "Unix", "unix": "Unix", "compilers": "compiler", "Compilers": "compiler", "libraries": "library",
		"processes": "process", "the kernel": "kernel", "a compiler": "compiler", "The Cathedral": "The Cathedral",
		"news": "news", "APIs": "API", "  unix ": "Unix", "e-mail": "email", "TCP-IP": "TCP/IP", "c": "C", "c++": "C++",
		"MIIS": "", "class": "", "bus": "", "kernels of corn": "", "": "", "on line": "", // two titles squash to "online"
	} {
		got, ok := l.Find(topic)
		if got != want || ok != (want != "") {
			t.Errorf("Find(%q) = %q, %v; want %q", topic, got, ok, want)
		}
	}
	var none *Leads
	if got, ok := none.Find("Unix"); ok || got != "" {
		t.Errorf("no leads: Find = %q, %v", got, ok)
	}
}

// TestSimilar: a topic not held offers the entries it may have meant — a typo
// or two away, apart from case and separators, closest first; then those that
// begin with it — and none for a held topic, a short one or no leads.
func TestSimilar(t *testing.T) {
	var l Leads
	for _, title := range []string{"compiler", "compile", "compiler-compiler", "Unix", "linked list", "linked list traversal", "kernel", "email", "TCP/IP", "C", "C++"} {
		l.Add(title, "<h1>"+title+"</h1>\n<p>An entry. It is one.</p>", nil)
	}
	for topic, want := range map[string][]string{
		"compilr":     {"compile", "compiler"},
		"Kernal":      {"kernel"},
		"linked":      {"linked list", "linked list traversal"},
		"the compilr": {"compile", "compiler"},
		"Unixxx":      nil, // 6 letters: one edit
		"Unixx":       {"Unix"},
		"tcp ip x":    {"TCP/IP"},
		"Unx":         nil, // a short one must be spelt right
		"compiler":    nil, // held
		"e-mail":      nil, // found: Find squashes it to "email"
		"Cx":          nil, // too short
		"zzzzzz":      nil,
	} {
		if got := l.Similar(topic, 3); !slices.Equal(got, want) {
			t.Errorf("Similar(%q) = %q, want %q", topic, got, want)
		}
	}
	if got := l.Similar("compilr", 1); !slices.Equal(got, []string{"compile"}) {
		t.Errorf("Similar(compilr, 1) = %q", got)
	}
	var none *Leads
	if got := none.Similar("compilr", 3); got != nil {
		t.Errorf("no leads: %q", got)
	}
}

func TestEditsWithin(t *testing.T) {
	for _, c := range []struct {
		a, b string
		max  int
		want int
	}{{"kitten", "sitting", 3, 3}, {"kitten", "sitting", 2, -1}, {"abc", "abc", 0, 0}, {"abc", "abd", 1, 1}, {"", "ab", 2, 2}, {"naïve", "naive", 1, 1}, {"abcdef", "a", 2, -1}} {
		if got := editsWithin(c.a, c.b, c.max); got != c.want {
			t.Errorf("editsWithin(%q, %q, %d) = %d, want %d", c.a, c.b, c.max, got, c.want)
		}
	}
}

// TestChatStartPastAnAside: an entry whose first block is a parenthesis alone
// ("(Note: NOT "kernal").") or ends in a colon is answered with the block
// after it too: the aside alone was the whole answer to "What is the kernel?".
func TestChatStartPastAnAside(t *testing.T) {
	var l Leads
	l.Add("kernel", "<h1>kernel</h1>\n<p>(Note: NOT \"kernal\").</p>\n<ul><li><em>operating system</em> The essential part of <a href=\"/wiki/Unix\">Unix</a>. See also microkernel.</li><li>Two.</li></ul>", nil)
	l.Add("ACP", "<h1>ACP</h1>\n<p>(ACP)</p>", nil)                                             // nothing after it: the aside is all there is
	l.Add("Colossus", "<h1>Colossus</h1>\n<p>(A statue (huge) on Rhodes) A computer.</p>", nil) // not an aside alone
	l.Add("AC", "<h1>AC</h1>\n<p>An axiom of set theory:</p>\n<p>If X is a set, f exists. So it is.</p>", nil)
	for msg, want := range map[string]string{
		"Explain the kernel.": `**: (Note: NOT "kernal"). *operating system* The essential part of Unix. See also microkernel.`,
		"What is ACP?":        "**: (ACP)",
		"What is Colossus?":   "**: (A statue (huge) on Rhodes) A computer.",
		"What is AC?":         "**: An axiom of set theory: If X is a set, f exists. So it is.",
	} {
		if got := l.ChatStart(msg).Lead; got != want {
			t.Errorf("%s: lead %q, want %q", msg, got, want)
		}
	}
	for text, want := range map[string]bool{"(ACP)": true, "(ACP).": true, "An axiom of set theory:": true, "(a (b)) c": false, "(unclosed": false, "no": false, "(a) (b)": false} {
		if leadsOn(text) != want {
			t.Errorf("leadsOn(%q) = %v", text, !want)
		}
	}
}

// TestPrefixed: the titles held that begin with what is typed, apart from
// case, shortest first; none for nothing typed or no leads.
func TestPrefixed(t *testing.T) {
	var l Leads
	for _, title := range []string{"compiler-compiler", "compiler", "Compile", "computer", "Unix", "compiler compiler"} {
		l.Add(title, "<h1>"+title+"</h1>\n<p>An entry. It is one.</p>", nil)
	}
	for prefix, want := range map[string][]string{
		"compi":    {"Compile", "compiler", "compiler compiler"},
		"COMPILER": {"compiler", "compiler compiler", "compiler-compiler"},
		" u":       {"Unix"},
		"x":        nil,
		"":         nil,
	} {
		if got := l.Prefixed(prefix, 3); !slices.Equal(got, want) {
			t.Errorf("Prefixed(%q) = %q, want %q", prefix, got, want)
		}
	}
	var none *Leads
	if got := none.Prefixed("u", 3); got != nil {
		t.Errorf("no leads: %q", got)
	}
}

// TestChatSimilar: a question about a topic a typo away from an entry offers
// the entry; one about an entry held, or not asked about a topic, none.
func TestChatSimilar(t *testing.T) {
	var l Leads
	for _, title := range []string{"compiler", "recursion"} {
		l.Add(title, "<h1>"+title+"</h1>\n<p>An entry. It is one.</p>", nil)
	}
	for msg, want := range map[string][]string{
		"What is a compilr?":    {"compiler"},
		"Explain recursoin.":    {"recursion"},
		"What is a compiler?":   nil,
		"Write me a compilr.":   nil,
		"What are compilers?":   nil, // found: its singular
		"Tell me about zzzzzz.": nil,
		"compilr?":              {"compiler"}, // a term asked alone
		"compilr":               nil,
		"compiler?":             nil,
	} {
		if got := l.ChatSimilar(msg, 3); !slices.Equal(got, want) {
			t.Errorf("ChatSimilar(%q) = %q, want %q", msg, got, want)
		}
	}
}
