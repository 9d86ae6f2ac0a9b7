package corpus

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/darkroomlabs/darkroom/assets"
)

// writeDict writes DIR/NAME.index and DIR/NAME.dict.dz for definitions in the
// dictd layout, each indexed by its first line lower-cased.
func writeDict(t *testing.T, dir, name string, defs []string) {
	t.Helper()
	var data bytes.Buffer
	var index []string
	for _, d := range defs {
		off := int64(data.Len())
		data.WriteString(d + "\n")
		head := strings.ToLower(strings.SplitN(d, "\n", 2)[0])
		index = append(index, head+"\t"+encodeB64(off)+"\t"+encodeB64(int64(len(d)+1)))
	}
	sort.Strings(index)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data.Bytes())
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, name+".dict.dz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".index"), []byte(strings.Join(index, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixtureWordNet is dict-wn's layout: parts of speech, numbered senses wrapped
// over lines (a synonym broken at its hyphen), a domain, examples, synonym and
// antonym lists, and the metadata.
var fixtureWordNet = []string{
	"00-database-short\n     WordNet (r) 3.0 (2006)\n",
	"computer\n    n 1: a machine for performing calculations automatically [syn:\n" +
		"         {computer}, {computing machine}, {data\n         processor}]\n" +
		"    2: an expert at calculation [syn: {calculator}, {reckoner}]\n",
	"compile\n    v 1: put together out of existing material; \"compile a list\"\n" +
		"         [syn: {compile}, {compose}]\n" +
		"    2: (computer science) use a compiler program to translate a\n         program [syn: {compile}]\n" +
		"    n 1: a self-\n         contained thing [ant: {decompile}]\n",
	"Apollo\n    n 1: (Greek mythology) god of light; son of Zeus [syn: {Phoebus},\n         {Phoebus Apollo}]\n",
}

func TestParseWordNet(t *testing.T) {
	c := NewCatalog()
	var pages []string
	for _, raw := range fixtureWordNet {
		e, ok := ParseWordNet(raw)
		if strings.HasPrefix(raw, "00-database") {
			if ok {
				t.Errorf("metadata parsed as entry %q", e.Title)
			}
			continue
		}
		if !ok {
			t.Fatalf("ParseWordNet refused %q", raw)
		}
		pages = append(pages, c.Page(e, 900))
	}
	want := []string{
		`<h1>computer</h1>
<p><em>noun</em></p>
<ul><li>A machine for performing calculations automatically. Synonyms: <a href="/wiki/computing_machine">computing machine</a>, <a href="/wiki/data_processor">data processor</a>.</li><li>An expert at calculation. Synonyms: <a href="/wiki/calculator">calculator</a>, <a href="/wiki/reckoner">reckoner</a>.</li></ul>`,
		`<h1>compile</h1>
<p><em>verb</em></p>
<ul><li>Put together out of existing material. For example: "compile a list". Synonyms: <a href="/wiki/compose">compose</a>.</li><li>In computer science, use a compiler program to translate a program.</li></ul>
<p><em>noun</em></p>
<p>A self-contained thing. Opposite: <a href="/wiki/decompile">decompile</a>.</p>`,
		`<h1>Apollo</h1>
<p><em>noun</em></p>
<p>In Greek mythology, god of light; son of Zeus. Synonyms: <a href="/wiki/Phoebus">Phoebus</a>, <a href="/wiki/Phoebus_Apollo">Phoebus Apollo</a>.</p>`,
	}
	if !reflect.DeepEqual(pages, want) {
		for i := range want {
			if i >= len(pages) || pages[i] != want[i] {
				t.Errorf("page %d:\n got: %s\nwant: %s", i, at(pages, i), want[i])
			}
		}
	}
	e, _ := ParseWordNet(fixtureWordNet[1])
	if got, _ := ChatAnswer(e, 320); got != "**computer** (noun): A machine for performing calculations automatically. Synonyms: computing machine, data processor." {
		t.Errorf("chat answer %q", got)
	}
	for _, bad := range []string{"", "\n\n", "word\n", "word\n    2: a sense before any part of speech\n", "word\n    n 1: [syn: {x}]\n"} {
		if e, ok := ParseWordNet(bad); ok {
			t.Errorf("ParseWordNet(%q) = %+v, want refused", bad, e)
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}

// fixtureVERA is dict-vera's layout: an expansion with related terms wrapped
// at column 0 and a spelling variant, a note, "org.", and an acronym with two
// definitions.
var fixtureVERA = []string{
	"00databaseshort\n     V.E.R.A. -- Virtual Entity of Relevant Acronyms (fixture)\n",
	"3GIP\n       3rd Generation Internet Protocol (org., IP, GPRS,\nmobile-systems), \"3G.IP\"\n       \n",
	"ZIP\n       Zigzag Inline Package (VRAM)\n       \n",
	"ZIP\n       Zone Information Protocol [protocol] (AppleTalk, ZIP)\n       \n",
	"ASCII\n       American Standard Code for {Information} Interchange\n       \n",
}

func TestParseVERA(t *testing.T) {
	var entries []Entry
	for _, raw := range fixtureVERA {
		if e, ok := ParseVERA(raw); ok {
			entries = append(entries, e)
		}
	}
	entries = mergeSameTitle(entries)
	c := NewCatalog()
	var got []string
	for _, e := range entries {
		got = append(got, c.Page(e, 900))
	}
	want := []string{
		`<h1>3GIP</h1>
<p><em>organization</em></p>
<p>3rd Generation Internet Protocol. See also <a href="/wiki/IP">IP</a>, <a href="/wiki/GPRS">GPRS</a>, <a href="/wiki/mobile-systems">mobile-systems</a>.</p>`,
		`<h1>ZIP</h1>
<p><em>acronym</em></p>
<ul><li>Zigzag Inline Package. See also <a href="/wiki/VRAM">VRAM</a>.</li><li>Zone Information Protocol. See also <a href="/wiki/AppleTalk">AppleTalk</a>.</li></ul>`,
		`<h1>ASCII</h1>
<p><em>acronym</em></p>
<p>American Standard Code for (Information) Interchange.</p>`,
	}
	if !reflect.DeepEqual(got, want) {
		for i := range want {
			if at(got, i) != want[i] {
				t.Errorf("page %d:\n got: %s\nwant: %s", i, at(got, i), want[i])
			}
		}
	}
}

const pyHead = `<html><head><script>var x = "<h1>not a title</h1>";</script><style>p {color: red}</style></head><body>
<div class="sphinxsidebar"><h3>Table of Contents</h3><p>Sidebar text that is not content at all.</p></div>
<div class="body" role="main">`

// fixturePyDocs is the Python documentation's layout, with what must go: the
// sidebar, scripts (also inside a paragraph), permalinks, section numbers,
// admonition titles, a paragraph whose link text is an address, a paragraph
// with literal braces, generic and index pages, a one-word FAQ answer, and
// unclosed tags; and a term and a FAQ answer whose first paragraph cannot be
// kept, so that what is left of them would start mid-thought.
var fixturePyDocs = fstest.MapFS{
	"glossary.html": {Data: []byte(pyHead + `<section id="glossary"><h1>Glossary<a class="headerlink" href="#glossary">¶</a></h1>
<dl class="glossary">
<dt id="term-0"><code class="docutils literal notranslate"><span class="pre">&gt;&gt;&gt;</span></code><a class="headerlink" href="#term-0">¶</a></dt><dd><p>The default Python prompt of the interactive shell.</p></dd>
<dt id="term-iterable">iterable<a class="headerlink" href="#term-iterable">¶</a></dt><dd><p>An object capable of returning its members one at a time. See also <a class="reference internal" href="#term-iterator"><span class="xref std std-term">iterator</span></a> and <a class="reference internal" href="library/functions.html#iter"><code class="xref py py-func docutils literal notranslate"><span class="pre">iter()</span></code></a>.<script>alert("x")</script></p>
<p>Read <a class="reference external" href="https://example.org/x">https://example.org/x</a> for more.</p>
<p>A dict literal looks like {'a': 1}.</p>
<div class="highlight-python3 notranslate"><div class="highlight"><pre><span></span><span class="k">for</span> x <span class="ow">in</span> {1, 2}: <span class="o">...</span>
</pre></div></div>
</dd>
<dt id="term-braces">dict display</dt><dd><p>Written like {'a': 1}, which the entry format cannot hold.</p><p>A second paragraph that would start mid-thought.</p></dd>
<dt id="term-iterator">iterator<a class="headerlink" href="#term-iterator">¶</a></dt><dd><p>An object representing a stream of data; <em>repeated</em> calls return items.</p></dd>
</dl></section></div></body></html>`)},
	"tutorial/index.html": {Data: []byte(pyHead + `<section id="t"><h1>The Python Tutorial</h1><p>Index page text, not an entry.</p></section></div>`)},
	"tutorial/controlflow.html": {Data: []byte(pyHead + `<section id="more"><h1><span class="section-number">4. </span>More Control Flow Tools<a class="headerlink" href="#more">¶</a></h1>
<p>Python uses the usual control flow statements.</p>
<section id="if"><h2><span class="section-number">4.1. </span><code class="xref std std-keyword docutils literal notranslate"><span class="pre">if</span></code> Statements<a class="headerlink" href="#if">¶</a></h2>
<p>Perhaps the best known statement type is the <code>if</code> statement. Its file is the <code>.profile</code> file.</p>
<div class="admonition note"><p class="admonition-title">Note</p><p>An <strong>if</strong> can have an <em>else</em>.</p></div>
<p>Its header is <code>WWW-Authenticate: SCHEME realm="REALM"</code>, code that would read as markup.</p>
<ul class="simple"><li><p>one branch</p></li><li><p>two branches</p></li></ul>
<section id="intro"><h3>Introduction</h3><p>A generic heading is not a page of its own.</p></section>
</section></section>
<section id="broken"><h2>Broken Markup<p>Unclosed <em>tags <b>everywhere</section>`)},
	"howto/index.html":   {Data: []byte(pyHead + `<section id="h"><h1>Python HOWTOs</h1><p>Index.</p></section></div>`)},
	"howto/sorting.html": {Data: []byte(pyHead + `<section id="s"><h1>Sorting HOW TO</h1><p>Python lists have a built-in sort method.</p></section></div>`)},
	"faq/general.html": {Data: []byte(pyHead + `<section id="g"><h1>General Python FAQ</h1>
<section id="what"><h3><a class="toc-backref" href="#id4">What is Python?</a><a class="headerlink" href="#what">¶</a></h3>
<p>Python is an interpreted, interactive, object-oriented programming language that combines remarkable power with very clear syntax.</p></section>
<section id="stable"><h3>Is it stable?</h3><p>Yes.</p></section>
<section id="url"><h3>Where is the PSF?</h3><p>See <a class="reference external" href="https://www.python.org/psf/">https://www.python.org/psf/</a>.</p>
<p>Donations to the PSF are tax-exempt in the US, which is not where the question asked it is, as you can see.</p></section>
<section id="nq"><h3>History of the language</h3><p>Not a question, so not a chat of its own although it is long enough to be one.</p></section>
</section></div>`)},
}

func TestParsePythonDocs(t *testing.T) {
	entries, qas, err := ParsePythonDocs(fixturePyDocs)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCatalog()
	for _, e := range entries {
		c.Add(e)
	}
	var got []string
	for _, e := range entries {
		got = append(got, c.Page(e, 900))
	}
	want := []string{ // ">>>" has no word to be a title
		`<h1>iterable</h1>
<p><em>Python</em></p>
<p>An object capable of returning its members one at a time. See also <a href="/wiki/iterator">iterator</a> and iter().</p>
<pre>for x in {1, 2}: ...</pre>`,
		`<h1>iterator</h1>
<p><em>Python</em></p>
<p>An object representing a stream of data; <em>repeated</em> calls return items.</p>`,
		`<h1>More Control Flow Tools</h1>
<p><em>Python tutorial</em></p>
<p>Python uses the usual control flow statements.</p>`,
		`<h1>if Statements</h1>
<p><em>Python tutorial</em></p>
<p>Perhaps the best known statement type is the if statement. Its file is the .profile file.</p>
<p>An <em>if</em> can have an <em>else</em>.</p>
<ul><li>one branch</li><li>two branches</li></ul>`,
		`<h1>Sorting HOW TO</h1>
<p><em>Python HOWTO</em></p>
<p>Python lists have a built-in sort method.</p>`,
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			if at(got, i) != at(want, i) {
				t.Errorf("page %d:\n got: %s\nwant: %s", i, at(got, i), at(want, i))
			}
		}
	}
	for _, p := range got {
		for _, bad := range []string{"script", "alert", "¶", "Sidebar", "not a title", "4.1", "Note", "https", "{'a'", "REALM"} {
			if strings.Contains(p, bad) {
				t.Errorf("page has %q: %s", bad, p)
			}
		}
	}
	ex := qaExamples(qas, 320)
	if len(ex) != 1 || ex[0].Prompt != "What is Python?" || ex[0].Title != ex[0].Prompt || ex[0].Kind != KindChat ||
		ex[0].Answer != "Python is an interpreted, interactive, object-oriented programming language that combines remarkable power with very clear syntax." {
		t.Errorf("FAQ chats = %+v, want the one answered question", ex)
	}
	if _, _, err := ParsePythonDocs(fstest.MapFS{}); err == nil {
		t.Error("ParsePythonDocs of an empty tree succeeded")
	}
}

// Damaged dictionaries fail with an error naming the file; none panics.
func TestDamagedDictionaries(t *testing.T) {
	good := t.TempDir()
	writeDict(t, good, "wn", fixtureWordNet)
	dz, _ := os.ReadFile(filepath.Join(good, "wn.dict.dz"))
	index, _ := os.ReadFile(filepath.Join(good, "wn.index"))
	cases := map[string]struct{ index, dict []byte }{
		"truncated dictzip":       {index, dz[:len(dz)/2]},
		"dictzip with no data":    {index, dz[:10]},
		"not gzip":                {index, []byte("plain text")},
		"offset past the end":     {[]byte("computer\tBAAA\tBA\n"), dz},
		"length past the end":     {[]byte("computer\tA\tBAAA\n"), dz},
		"bad base64 offset":       {[]byte("computer\tA-\tBA\n"), dz},
		"index line of one field": {[]byte("computer\n"), dz},
	}
	for name, tc := range cases {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "wn.index"), tc.index, 0o644)
		os.WriteFile(filepath.Join(dir, "wn.dict.dz"), tc.dict, 0o644)
		src, _ := extraSource("wordnet")
		if _, _, err := extraEntries(src, dir, ""); err == nil || !strings.Contains(err.Error(), "wn") {
			t.Errorf("%s: %v, want an error naming wn", name, err)
		}
	}
	src, _ := extraSource("wordnet")
	if entries, _, err := extraEntries(src, good, ""); err != nil || len(entries) != 3 {
		t.Errorf("the undamaged fixture: %d entries, %v", len(entries), err)
	}
}

// A case variant of a title: the pair (lower, upper) where exactly one, the
// first, is held out at fraction — found by the split's own hash.
func heldOutPair(t *testing.T, fraction float64) (held, variant string) {
	t.Helper()
	for i := range 10000 {
		a, b := "Term"+strconv.Itoa(i), "TERM"+strconv.Itoa(i)
		if h := HeldOut([]string{a, b}, fraction, 0); h[a] && !h[b] {
			return a, b
		}
	}
	t.Fatal("no case pair splits")
	return "", ""
}

// extraFixture writes the fixture dictionaries plus dictionaries that offer
// the held-out titles under other spellings, and returns build options.
func extraFixture(t *testing.T) (Options, string, string) {
	t.Helper()
	dictDir := t.TempDir()
	held, variant := heldOutPair(t, 0.3)
	foldoc := append(append([]string(nil), fixtureDicts["foldoc"]...),
		held+"\n\n   <jargon> A held-out entry.\n",
		variant+"\n\n   <jargon> Its case variant, a different entry.\n")
	for _, n := range []string{"one", "two", "three", "four"} { // some land in training, and link or use
		foldoc = append(foldoc, "linker "+n+"\n\n   <jargon> Links {computer} and uses ASCII.\n")
	}
	writeDict(t, dictDir, "foldoc", foldoc)
	writeDict(t, dictDir, "jargon", fixtureDicts["jargon"])
	wn := append(append([]string(nil), fixtureWordNet...),
		strings.ToLower(held)+"\n    n 1: the held-out title in lower case\n",
		"HACKER\n    n 1: the upper-case spelling of a dictionary title\n",
		"unused\n    adj 1: a word no page uses\n")
	writeDict(t, dictDir, "wn", wn)
	writeDict(t, dictDir, "vera", append(append([]string(nil), fixtureVERA...), strings.ToUpper(held)+"\n       Held Out Acronym\n"))
	pkgs := filepath.Join(t.TempDir(), "packages")
	if err := os.WriteFile(pkgs, []byte(fixturePackages), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := fstest.MapFS{}
	for k, v := range fixturePyDocs {
		docs[k] = v
	}
	// A glossary term and a FAQ question that are the held-out title.
	docs["glossary.html"] = &fstest.MapFile{Data: bytes.Replace(fixturePyDocs["glossary.html"].Data,
		[]byte("</dl>"), []byte(`<dt id="term-h">`+strings.ToLower(held)+`</dt><dd><p>A held-out glossary term.</p></dd></dl>`), 1)}
	docs["faq/held.html"] = &fstest.MapFile{Data: []byte(pyHead + `<section id="q"><h3>What is ` + held +
		`?</h3><p>An answer long enough to be a chat, asked with nothing but the held-out title as its question?</p></section></div>`)}
	long := strings.Repeat("<p>A long paragraph of the HOWTO that says one thing after another, sentence by sentence.</p>", 12)
	docs["howto/long.html"] = &fstest.MapFile{Data: []byte(pyHead + `<section id="l"><h1>A Long HOWTO</h1>` + long + `</section></div>`)}
	docDir := t.TempDir()
	for name, f := range docs {
		p := filepath.Join(docDir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Options{DictDir: dictDir, DocDir: docDir, PackagesFile: pkgs, HeldOutFraction: 0.3, MinHeldOut: 1,
		Extra: []string{"python", "wordnet", "vera"}, VocabSize: -1}, held, variant
}

func readStats(t *testing.T, dir string) Stats {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// No training example of any source has a held-out title, in any spelling, as
// its title or prompt; heldout_titles.txt is the dictionaries' split alone.
func TestExtraSourcesKeepHeldOut(t *testing.T) {
	opts, held, variant := extraFixture(t)
	opts.OutDir = t.TempDir()
	st, err := BuildStats(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	heldList, _ := os.ReadFile(filepath.Join(opts.OutDir, "heldout_titles.txt"))
	heldSet := map[string]bool{}
	for _, h := range strings.Split(strings.TrimSpace(string(heldList)), "\n") {
		heldSet[h] = true
	}
	if !heldSet[held] || heldSet[variant] {
		t.Fatalf("held-out titles %q: want %q held and %q not", heldList, held, variant)
	}
	// The split is the dictionaries' alone: the same titles as a build without extras.
	plain := opts
	plain.Extra, plain.ExtraMax, plain.OutDir = nil, nil, t.TempDir()
	if err := Build(context.Background(), plain); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(plain.OutDir, "heldout_titles.txt")); !bytes.Equal(b, heldList) {
		t.Errorf("extra sources changed the held-out titles:\n%s\nwithout them:\n%s", heldList, b)
	}
	guard := newHeldOutGuard(heldSet)
	train, err := ReadExamples(filepath.Join(opts.OutDir, "train.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bySource := map[string]int{}
	for _, ex := range train {
		bySource[ex.Source]++
		for h := range heldSet {
			if strings.EqualFold(ex.Title, h) || strings.EqualFold(ex.Prompt, h) || strings.EqualFold(ex.Prompt, assets.EncyclopediaPrompt(h)) {
				t.Errorf("training example of %s about held-out %q: %+v", ex.Source, h, ex)
			}
		}
		if guard.touches(ex) {
			t.Errorf("guard finds training example %+v", ex)
		}
	}
	for _, src := range []string{"foldoc", "python", "wordnet", "vera", "debian"} { // the Jargon File's one entry is held out
		if bySource[src] == 0 {
			t.Errorf("no training example from %s: %v", src, bySource)
		}
	}
	dropped := map[string]int{}
	for _, s := range st.Sources {
		dropped[s.Name] = s.HeldOutDropped
	}
	if dropped["foldoc"] != 3 || dropped["python"] != 1 {
		t.Errorf("dropped %v, want the case variant %q of held-out %q (a page, two chats) and the FAQ asking for it", dropped, variant, held)
	}
	// The same held-out examples as without the extras.
	a, _ := os.ReadFile(filepath.Join(opts.OutDir, "heldout.jsonl"))
	b, _ := os.ReadFile(filepath.Join(plain.OutDir, "heldout.jsonl"))
	if !bytes.Equal(a, b) {
		t.Error("extra sources changed heldout.jsonl")
	}
}

func TestHeldOutGuard(t *testing.T) {
	g := newHeldOutGuard(map[string]bool{"Ada": true})
	for _, ex := range []Example{
		{Title: "ADA"}, {Title: " ada "}, {Title: "x", Prompt: assets.EncyclopediaPrompt("ADA")},
		{Title: "x", Prompt: assets.ChatQuestion(3, "ada")}, {Title: "x", Prompt: "aDa"}, {Title: "x", Prompt: "What is an ADA?"},
	} {
		if !g.touches(ex) {
			t.Errorf("guard misses %+v", ex)
		}
	}
	for _, ex := range []Example{{Title: "Adam"}, {Title: "x", Prompt: "Is Ada a language?"}} {
		if g.touches(ex) {
			t.Errorf("guard flags %+v", ex)
		}
	}
}

// Extra sources leave the dictionaries' examples as they were, add only titles
// the dictionaries lack, keep the caps (linked titles first, unused ones never),
// and build the same bytes twice.
func TestExtraSourcesMix(t *testing.T) {
	opts, _, _ := extraFixture(t)
	opts.OutDir = t.TempDir()
	opts.ExtraMax = map[string]int{"wordnet": 1}
	st, err := BuildStats(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	plain := opts
	plain.Extra, plain.ExtraMax, plain.OutDir = nil, nil, t.TempDir()
	if err := Build(context.Background(), plain); err != nil {
		t.Fatal(err)
	}
	withExtra, _ := ReadExamples(filepath.Join(opts.OutDir, "train.jsonl"))
	without, _ := ReadExamples(filepath.Join(plain.OutDir, "train.jsonl"))
	var dictEx []Example
	titles := map[string][]string{}
	for _, ex := range withExtra {
		switch ex.Source {
		case "foldoc", "jargon", "debian":
			dictEx = append(dictEx, ex)
		}
		if ex.Kind == KindPage {
			titles[ex.Source] = append(titles[ex.Source], ex.Title)
		}
	}
	if !reflect.DeepEqual(dictEx, without) {
		t.Errorf("extra sources changed the dictionaries' examples: %d vs %d", len(dictEx), len(without))
	}
	// "computer" is linked from FOLDOC's pages; "compile" and "Apollo" are not
	// used, "unused" is not, and HACKER is the Jargon File's "hacker".
	if got := titles["wordnet"]; !reflect.DeepEqual(got, []string{"computer"}) {
		t.Errorf("wordnet pages %q, want the linked title only", got)
	}
	for _, s := range st.Sources {
		if s.Name == "wordnet" && (s.Candidates != 6 || s.Entries != 1 || s.Examples[KindChat] != 3) { // "computer": also "What is a computer?"
			t.Errorf("wordnet stats %+v", s)
		}
	}
	// Python pages keep to the source's own, smaller cap.
	for _, ex := range withExtra {
		if ex.Kind == KindPage && ex.Title == "A Long HOWTO" && (len(ex.Answer) > 640 || len(ex.Answer) < 500) {
			t.Errorf("long Python page is %d bytes, want within the source's 640 (and near it)", len(ex.Answer))
		}
	}
	// VERA: only ASCII is used by the fixture's pages.
	if got := titles["vera"]; !reflect.DeepEqual(got, []string{"ASCII"}) {
		t.Errorf("vera pages %q, want the used acronym only", got)
	}
	sources, _ := os.ReadFile(filepath.Join(opts.OutDir, "SOURCES.txt"))
	for _, want := range []string{"WordNet 3.0 Copyright 2006 by Princeton University", "PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS", "PSF License", "V.E.R.A.", "public domain", "wordnet 1 pages 3 chats 0 screens"} {
		if !strings.Contains(strings.Join(strings.Fields(string(sources)), " "), want) {
			t.Errorf("SOURCES.txt lacks %q:\n%s", want, sources)
		}
	}
	// The same options build the same files.
	again := opts
	again.OutDir = t.TempDir()
	if err := Build(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train.jsonl", "heldout.jsonl", "titles.txt", "words.txt", "SOURCES.txt"} {
		a, _ := os.ReadFile(filepath.Join(opts.OutDir, f))
		b, _ := os.ReadFile(filepath.Join(again.OutDir, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds", f)
		}
	}
	if err := Build(context.Background(), Options{OutDir: t.TempDir(), DictDir: opts.DictDir, Extra: []string{"gcide"}}); err == nil || !strings.Contains(err.Error(), "gcide") {
		t.Errorf("unknown extra source: %v", err)
	}
	if err := Build(context.Background(), Options{OutDir: t.TempDir(), DictDir: opts.DictDir, Extra: []string{"vera"}, ExtraMax: map[string]int{"wordnt": 1}}); err == nil || !strings.Contains(err.Error(), "wordnt") {
		t.Errorf("a cap for a source not built: %v", err)
	}
}

// TestArticleQuestionsAskNouns: a common noun is asked a third time with its
// article; a WordNet adjective is not ("What is a poor?" was in the corpus).
func TestArticleQuestionsAskNouns(t *testing.T) {
	cat := NewCatalog()
	for _, e := range []Entry{
		{Source: "wordnet", Title: "poor", Category: "adjective", Blocks: []Block{{Kind: Paragraph, Text: "Deserving or inciting pity."}}},
		{Source: "wordnet", Title: "manner", Category: "noun", Blocks: []Block{{Kind: Paragraph, Text: "How something is done."}}},
		{Source: "foldoc", Title: "compiler", Blocks: []Block{{Kind: Paragraph, Text: "A program that translates programs."}}},
	} {
		cat.Add(e)
		var asked []string
		for _, ex := range entryExamples(cat, e, 800, Options{}) {
			if ex.Kind == KindChat {
				asked = append(asked, ex.Prompt)
			}
		}
		aq, _ := assets.ChatArticleQuestion(e.Title)
		if got, want := slices.Contains(asked, aq), e.Category != "adjective"; got != want || len(asked) < 2 {
			t.Errorf("%s (%s) asked %q: with its article %v, want %v", e.Title, e.Category, asked, got, want)
		}
	}
}
