package corpus

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
)

func TestBase64Numbers(t *testing.T) {
	for _, c := range []struct {
		s string
		v int64
	}{{"A", 0}, {"B", 1}, {"/", 63}, {"BA", 64}, {"Gb9L", 6*64*64*64 + 27*64*64 + 61*64 + 11}} {
		if v, err := decodeB64(c.s); err != nil || v != c.v {
			t.Errorf("decodeB64(%q) = %d, %v; want %d", c.s, v, err, c.v)
		}
		if c.v > 0 && encodeB64(c.v) != c.s {
			t.Errorf("encodeB64(%d) = %q, want %q", c.v, encodeB64(c.v), c.s)
		}
	}
	for _, bad := range []string{"", "A-B", "AAAAAAAAAAA"} {
		if _, err := decodeB64(bad); err == nil {
			t.Errorf("decodeB64(%q) accepted", bad)
		}
	}
	if _, err := ParseIndex(strings.NewReader("unix\tE+Bo\n")); err == nil {
		t.Error("ParseIndex accepted a line with two fields")
	}
	if _, err := Definition([]byte("abc"), IndexEntry{Headword: "x", Offset: 2, Length: 5}); err == nil {
		t.Error("Definition accepted an entry past the end of the data")
	}
}

func TestReadDict(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("hello dict"))
	zw.Close()
	b, err := ReadDict(&gz)
	if err != nil || string(b) != "hello dict" {
		t.Fatalf("ReadDict = %q, %v", b, err)
	}
	if _, err := ReadDict(strings.NewReader("not gzip")); err == nil {
		t.Fatal("ReadDict accepted non-gzip data")
	}
}

func fixtureCatalog(t *testing.T) *Catalog {
	t.Helper()
	dir := t.TempDir()
	writeFixtureDicts(t, dir)
	c := NewCatalog()
	for _, name := range []string{"foldoc", "jargon"} {
		if _, err := c.AddDictionaryFiles(dir, name); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func entry(t *testing.T, c *Catalog, title string) Entry {
	t.Helper()
	i, ok := c.exact[title]
	if !ok {
		t.Fatalf("no entry %q", title)
	}
	return c.Entries[i]
}

func TestCatalogFromFixture(t *testing.T) {
	c := fixtureCatalog(t)
	var titles []string
	for _, e := range c.Entries {
		titles = append(titles, e.Source+":"+e.Title)
	}
	want := []string{"foldoc:Unix", "foldoc:operating system", "foldoc:Ken Thompson", "foldoc:ABC", "jargon:hacker"}
	if !reflect.DeepEqual(titles, want) {
		t.Fatalf("entries = %q, want %q (metadata skipped, FOLDOC's Unix wins)", titles, want)
	}
	for target, want := range map[string]string{"unix": "Unix", "UNICES": "Unix", "OS": "operating system",
		"operating systems": "operating system", "ken thompson": "Ken Thompson", "nowhere": "nowhere"} {
		if got := c.Resolve(target); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", target, got, want)
		}
	}
}

func TestPages(t *testing.T) {
	c := fixtureCatalog(t)
	cases := []struct{ title, want string }{
		{"Unix", `<h1>Unix</h1>
<p><em>operating system</em></p>
<p>An interactive <a href="/wiki/time-sharing">time-sharing</a> <a href="/wiki/operating_system">operating system</a> invented in 1969 by <a href="/wiki/Ken_Thompson">Ken Thompson</a> at <a href="/wiki/Bell_Labs">Bell Labs</a>. It was <em>very</em> popular. It is <a href="/wiki/standard">standardised</a> as <a href="/wiki/POSIX">POSIX</a>.</p>
<p>Its authors were hackers.</p>`},
		{"Ken Thompson", `<h1>Ken Thompson</h1>
<p><em>person</em></p>
<p>The co-author of <a href="/wiki/Unix">Unix</a> &amp; <a href="/wiki/C">C</a>.</p>`},
		{"ABC", `<h1>ABC</h1>
<p><em>language</em></p>
<p>An <a href="/wiki/imperative_language">imperative language</a> from CWI.</p>
<p>An example function:</p>
<pre>HOW TO RETURN words document:
   PUT {} IN collection</pre>
<p>ABC has:</p>
<ul><li>five data types;</li><li><a href="/wiki/strong_typing">strong typing</a>.</li></ul>`},
		{"hacker", `<h1>hacker</h1>
<ul><li>A person who enjoys exploring the details of <a href="/wiki/programmable_systems">programmable systems</a>.</li><li>One who programs enthusiastically. See <a href="/wiki/Unix">unix</a>.</li></ul>`},
	}
	for _, tc := range cases {
		got := c.Page(entry(t, c, tc.title), 900)
		if got != tc.want {
			t.Errorf("page %q:\n got: %s\nwant: %s", tc.title, got, tc.want)
		}
		// The app holds this heading before the model writes: it must be the page's own start.
		if !strings.HasPrefix(got, assets.EncyclopediaOpening(tc.title)) {
			t.Errorf("page %q does not start with EncyclopediaOpening %q", tc.title, assets.EncyclopediaOpening(tc.title))
		}
	}
}

func TestPageCap(t *testing.T) {
	c := fixtureCatalog(t)
	unix := entry(t, c, "Unix")
	// Room for the header and the first two sentences only.
	full := c.Page(unix, 900)
	head := "<h1>Unix</h1>\n<p><em>operating system</em></p>\n"
	twoSentences := head + `<p>An interactive <a href="/wiki/time-sharing">time-sharing</a> <a href="/wiki/operating_system">operating system</a> invented in 1969 by <a href="/wiki/Ken_Thompson">Ken Thompson</a> at <a href="/wiki/Bell_Labs">Bell Labs</a>. It was <em>very</em> popular.</p>`
	if got := c.Page(unix, len(twoSentences)+5); got != twoSentences {
		t.Errorf("capped page:\n got: %s\nwant: %s", got, twoSentences)
	}
	// A cap below the first sentence still keeps the first sentence.
	if got := c.Page(unix, 10); !strings.HasPrefix(got, head+"<p>An interactive") || !strings.HasSuffix(got, "Bell Labs</a>.</p>") {
		t.Errorf("tiny cap page = %s", got)
	}
	if len(full) > 900 {
		t.Errorf("page longer than the cap: %d", len(full))
	}
}

func TestChatAnswers(t *testing.T) {
	c := fixtureCatalog(t)
	cases := []struct {
		title string
		max   int
		want  string
	}{
		{"Unix", 320, "**Unix** (operating system): An interactive time-sharing operating system invented in 1969 by Ken Thompson at Bell Labs. It was *very* popular. It is standardised as POSIX."},
		{"Unix", 120, "**Unix** (operating system): An interactive time-sharing operating system invented in 1969 by Ken Thompson at Bell Labs."},
		{"hacker", 320, "**hacker**: A person who enjoys exploring the details of programmable systems."},
	}
	for _, tc := range cases {
		got, ok := ChatAnswer(entry(t, c, tc.title), tc.max)
		if !ok || got != tc.want {
			t.Errorf("ChatAnswer(%q, %d) = %q, %v; want %q", tc.title, tc.max, got, ok, tc.want)
		}
	}
}

func TestSentences(t *testing.T) {
	cases := map[string][]string{
		"One. Two three. Four":                 {"One.", "Two three.", "Four"},
		"See {e.g. this. That} now. Next one.": {"See {e.g. this. That} now.", "Next one."},
		"Made by e.g. IBM. Then by J. Smith.":  {"Made by e.g. IBM.", "Then by J. Smith."},
		"It said \"stop.\" Then it stopped.":   {"It said \"stop.\"", "Then it stopped."},
		"version 1.2 is out. 3 more.":          {"version 1.2 is out.", "3 more."},
		"lower. case continues":                {"lower. case continues"},
	}
	for in, want := range cases {
		got := Sentences(in)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Sentences(%q) = %q, want %q", in, got, want)
		}
		if strings.Join(got, " ") != in {
			t.Errorf("Sentences(%q) does not join back", in)
		}
	}
}

func TestHeldOutSplit(t *testing.T) {
	var titles []string
	for i := 0; i < 5000; i++ {
		titles = append(titles, "title "+string(rune('a'+i%26))+strings.Repeat("x", i%7)+string(rune('0'+i%10))+"-"+strconv.Itoa(i))
	}
	a := HeldOut(titles, 0.03, 200)
	rev := append([]string(nil), titles...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	b := HeldOut(rev, 0.03, 200)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("held-out split depends on title order")
	}
	if len(a) < 100 || len(a) > 220 {
		t.Errorf("3%% of 5000 held out %d titles", len(a))
	}
	if m := HeldOut(titles, 0.01, 200); len(m) != 200 {
		t.Errorf("with minimum 200: %d held out", len(m))
	}
	for t2 := range HeldOut(titles, 0.01, 0) {
		if !a[t2] {
			t.Errorf("%q held out at 1%% but not at 3%%", t2)
		}
	}
}

func TestWords(t *testing.T) {
	got := Words(`<h1>Unix</h1><p>An <a href="/wiki/time-sharing">time-sharing</a> OS &amp; don't-stop 1969 — ü.</p>`)
	want := []string{"unix", "an", "time-sharing", "os", "don't-stop", "1969", "ü"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
}

func TestDesktop(t *testing.T) {
	apps, err := ParsePackages(strings.NewReader(fixturePackages))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range apps {
		names = append(names, a.Name+"/"+a.Category())
	}
	if want := []string{"gimp/graphics", "vim/office", "g++/development"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("apps = %q, want %q", names, want)
	}
	d := &Desktop{Apps: apps}
	gimp := d.AppScreen(apps[0])
	want := `<nav><a href="/ui/menu-apps">Applications</a> <a href="/ui/menu-help">Help</a></nav>
<h1>gimp</h1>
<section><h2>GNU Image Manipulation Program</h2><p>gimp 2.10.34, from the Debian graphics section.</p><ul><li>Interface: graphical, x11</li><li>Written in: C</li><li>Installed size: 19.4 MB</li></ul><p><a href="/ui/gimp-help">Help</a> <a href="/ui/gimp-about">About</a> <a href="/ui/gimp-close">Close</a></p></section>`
	if gimp != want {
		t.Errorf("gimp window:\n got: %s\nwant: %s", gimp, want)
	}
	// Every clickable element on every screen leads to a screen, every element
	// id is one the app can parse, and every click's App is the <h1> of a screen
	// (or "desktop" before the first one).
	clicks := d.Clicks()
	starts := 0
	for _, c := range clicks {
		if c.Click.ElementID == "power" && c.Screen == d.HomeScreen() {
			starts++
		}
	}
	if starts != StartCopies {
		t.Errorf("%d power-on clicks leading home, want %d", starts, StartCopies)
	}
	h1s := map[string]bool{"desktop": true, "": true}
	for _, c := range clicks {
		h1s[reH1.FindStringSubmatch(c.Screen)[1]] = true
	}
	href := regexp.MustCompile(`href="([^"]*)"`)
	edges := map[string]bool{}
	for _, c := range clicks {
		edges[c.Click.App+"|"+c.Click.ElementID] = true
		if !h1s[c.Click.App] {
			t.Errorf("click %+v: App is no screen's title", c.Click)
		}
		if !strings.HasPrefix(c.Screen, assets.DesktopOpening()) { // the app holds it before the model draws
			t.Errorf("screen for %q does not start with DesktopOpening: %q", c.Click.ElementID, c.Screen)
		}
		if strings.Contains(c.Screen, "<script") || strings.Contains(c.Screen, "style") {
			t.Errorf("screen for %q has script or style", c.Click.ElementID)
		}
		for _, m := range href.FindAllStringSubmatch(c.Screen, -1) {
			id, ok := assets.UIElementFromHref(m[1])
			if !ok {
				t.Errorf("screen for %q links %q, not a /ui/ element", c.Click.ElementID, m[1])
				continue
			}
			if _, _, ok := d.ScreenFor(id); !ok {
				t.Errorf("screen for %q links %q, which leads nowhere", c.Click.ElementID, id)
			}
		}
	}
	for _, want := range []string{"desktop|power", "Desktop|app-gimp", "Development|app-gplusplus", "gimp|gimp-about",
		"About gimp|gimp-back", "Applications|menu-graphics", "Desktop|menu-apps"} {
		if !edges[want] {
			t.Errorf("no training click %q", want)
		}
	}
	for _, c := range clicks {
		if c.Click.ElementID == "gimp-about" && c.App != "gimp" || c.Click.ElementID == "menu-apps" && c.App != "" {
			t.Errorf("click %+v is about app %q", c.Click, c.App)
		}
	}
}

func TestBuild(t *testing.T) {
	dictDir, out := t.TempDir(), t.TempDir()
	writeFixtureDicts(t, dictDir)
	pkgs := filepath.Join(t.TempDir(), "packages")
	if err := os.WriteFile(pkgs, []byte(fixturePackages), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Options{OutDir: out, DictDir: dictDir, PackagesFile: pkgs, HeldOutFraction: 0.2, MinHeldOut: 1, VocabSize: 600}
	st, err := BuildStats(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	train, err := ReadExamples(filepath.Join(out, "train.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := ReadExamples(filepath.Join(out, "heldout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 5 || len(held) == 0 || st.HeldOutTitles == 0 {
		t.Fatalf("stats: %d entries, %d held-out examples, %d held-out titles", st.Entries, len(held), st.HeldOutTitles)
	}
	trainTitles := map[string]bool{}
	for _, ex := range train {
		checkExample(t, ex)
		if ex.Kind != KindDesktop {
			trainTitles[ex.Title] = true
		}
	}
	for _, ex := range held {
		checkExample(t, ex)
		if ex.Kind != KindDesktop && trainTitles[ex.Title] {
			t.Errorf("held-out title %q is in training", ex.Title)
		}
	}
	if n := st.Examples[KindPage]; n.Train+n.HeldOut != 5 {
		t.Errorf("pages: %+v, want 5 in all", n)
	}
	// Two chats per entry, and a third for a common noun, asked with its article.
	wantChats, asked, all := 0, map[string]bool{}, append(append([]Example(nil), train...), held...)
	for _, ex := range all {
		switch ex.Kind {
		case KindPage:
			wantChats += 2
			if _, ok := assets.ChatArticleQuestion(ex.Title); ok {
				wantChats++
			}
		case KindChat:
			asked[ex.Prompt] = true
		}
	}
	if n := st.Examples[KindChat]; n.Train+n.HeldOut != wantChats || wantChats == 10 {
		t.Errorf("chats: %+v, want %d (2 per entry, 3 for a common noun, and the fixture has one)", n, wantChats)
	}
	for _, ex := range all {
		if q, ok := assets.ChatArticleQuestion(ex.Title); ex.Kind == KindPage && ok && !asked[q] {
			t.Errorf("%q is not asked %q", ex.Title, q)
		}
	}
	titles, _ := os.ReadFile(filepath.Join(out, "titles.txt"))
	heldTitles, _ := os.ReadFile(filepath.Join(out, "heldout_titles.txt"))
	if n := strings.Count(string(titles), "\n") + strings.Count(string(heldTitles), "\n"); n != 5 {
		t.Errorf("titles.txt + heldout_titles.txt list %d titles, want 5", n)
	}
	words, _ := os.ReadFile(filepath.Join(out, "words.txt"))
	if !strings.Contains(string(words), "\nthe\n") {
		t.Errorf("words.txt lacks \"the\": %q", words)
	}
	for _, f := range []string{"stats.json", "SOURCES.txt", "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if st.AnswerTokens[KindPage].N == 0 || st.VocabSize == 0 {
		t.Errorf("no token statistics: %+v", st.AnswerTokens)
	}

	// A second build writes the same files.
	out2 := t.TempDir()
	opts.OutDir = out2
	if err := Build(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train.jsonl", "heldout.jsonl", "words.txt", "tokenizer/tokenizer.json"} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(out2, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds", f)
		}
	}
}

func checkExample(t *testing.T, ex Example) {
	t.Helper()
	switch ex.Kind {
	case KindPage:
		if ex.Prompt != assets.EncyclopediaPrompt(ex.Title) || ex.System != "" || !strings.HasPrefix(ex.Answer, "<h1>"+assets.EscapeText(ex.Title)+"</h1>") {
			t.Errorf("page example %+v", ex)
		}
	case KindChat:
		if ex.System != assets.ChatSystem() || !strings.Contains(ex.Prompt, ex.Title) || !strings.HasPrefix(ex.Answer, "**"+ex.Title+"**") {
			t.Errorf("chat example %+v", ex)
		}
	case KindDesktop:
		if ex.System != assets.DesktopSystem() || !strings.HasPrefix(ex.Prompt, "Click on the screen.\n") || !strings.HasPrefix(ex.Answer, "<nav>") {
			t.Errorf("desktop example %+v", ex)
		}
	default:
		t.Errorf("unknown kind %q", ex.Kind)
	}
}

func TestBuildErrors(t *testing.T) {
	if err := Build(context.Background(), Options{}); err == nil {
		t.Error("Build without OutDir succeeded")
	}
	err := Build(context.Background(), Options{OutDir: t.TempDir(), DictDir: t.TempDir(), VocabSize: -1})
	if err == nil || !strings.Contains(err.Error(), "foldoc") {
		t.Errorf("Build with an empty dictionary directory: %v", err)
	}
}
