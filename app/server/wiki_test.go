package server

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// hostile is model output that tries everything a page must not do.
const hostile = `<h1 onclick="evil()">Unix</h1>
<script>alert(1)</script><script src="http://evil.example/x.js"></script>
<p onmouseover="evil()">An <a href="javascript:alert(1)">OS</a> from <a href="/wiki/Bell_Labs">Bell Labs</a>,
see <a href="http://evil.example/">here</a> and <a href="//evil.example/x">there</a>.</p>
<img src="http://evil.example/a.png" onerror="evil()"><iframe src="http://evil.example"></iframe>
<style>body{background:url(http://evil.example)}</style><p style="color:red">styled</p>
<form action="http://evil.example"><input name="q"></form><meta http-equiv="refresh" content="0;url=http://evil.example">
<svg><script>alert(2)</script></svg><link rel="stylesheet" href="http://evil.example/x.css"><base href="http://evil.example/">`

// forbidden are substrings no served page may contain.
var forbidden = []string{"<script>", "alert", "evil", "onclick", "onmouseover", "onerror", "javascript:", "<img",
	"<iframe", "<style", "style=", "<form", "<input", "<meta", "<svg", "<link rel=\"stylesheet\" href=\"http", "<base", "http://e", "//evil"}

func checkSafe(t *testing.T, what, html string) {
	t.Helper()
	low := strings.ToLower(html)
	for _, f := range forbidden {
		if strings.Contains(low, f) {
			t.Errorf("%s contains %q: %.300s", what, f, html)
		}
	}
}

func TestPageSanitized(t *testing.T) {
	gate := make(chan struct{})
	g := &fakeGen{drafts: []string{hostile[:200], hostile}, commits: []string{hostile}, final: hostile, gate: gate}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond})
	c := browser(t, s)

	// The shell: our own script only, the stream URL, no model HTML yet.
	resp, shell := do(t, c, "GET", site(s)+"/wiki/Unix", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(shell, `data-events="/events/wiki/Unix"`) ||
		strings.Count(shell, "<script") != 1 || !strings.Contains(shell, `<script src="/static/develop.js" defer>`) {
		t.Fatalf("shell %d: %s", resp.StatusCode, shell)
	}
	_, events := openEvents(t, c, s, "/events/wiki/Unix")
	// Each step's draft is sent before the next step (the first two by hand).
	var all []sseEvent
	for range 2 {
		gate <- struct{}{}
		all = append(all, next(t, events))
	}
	go func() {
		gate <- struct{}{} // the commit
		gate <- struct{}{} // the end
	}()
	for ev := range events {
		all = append(all, ev)
	}
	var drafts int
	var done pageEvent
	for _, ev := range all {
		p := decodePageEvent(t, ev)
		checkSafe(t, "event "+ev.name, p.HTML)
		switch ev.name {
		case "draft":
			drafts++
		case "done":
			done = p
		default:
			t.Errorf("unexpected event %q: %s", ev.name, ev.data)
		}
	}
	if drafts < 2 || !strings.Contains(done.HTML, `<a href="/wiki/Bell_Labs">Bell Labs</a>`) || !strings.Contains(done.HTML, "styled") {
		t.Fatalf("%d drafts, final %q", drafts, done.HTML)
	}
	if req := g.lastRequest(t); req.Prompt != assets.EncyclopediaPrompt("Unix") || req.Opening != assets.EncyclopediaOpening("Unix") ||
		req.Seed != 1 || req.Mode != engine.Diffusion {
		t.Errorf("request %+v", req)
	}

	// The finished page comes from the cache, sanitized, with no stream to open.
	n := len(g.requests)
	resp, page := do(t, c, "GET", site(s)+"/wiki/Unix", "", nil)
	if resp.StatusCode != 200 || strings.Contains(page, "data-events") || !strings.Contains(page, "Bell Labs") {
		t.Fatalf("cached page %d: %s", resp.StatusCode, page)
	}
	main := page[strings.Index(page, `<main id="page">`):strings.Index(page, "</main>")]
	checkSafe(t, "cached page", main)
	if strings.Count(page, "<script") != 1 {
		t.Errorf("page has %d scripts", strings.Count(page, "<script"))
	}
	if len(g.requests) != n {
		t.Error("a cached page was generated again")
	}
	// Regenerate bypasses the cache.
	if _, page := do(t, c, "GET", site(s)+"/wiki/Unix?regen=1", "", nil); !strings.Contains(page, `data-events="/events/wiki/Unix?regen=1"`) {
		t.Errorf("regen page: %s", page)
	}
	// The home page lists the page written.
	if _, home := do(t, c, "GET", site(s)+"/", "", nil); !strings.Contains(home, `<a href="/wiki/Unix">Unix</a>`) {
		t.Errorf("home: %s", home)
	}
}

func TestPageURLs(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "<p>x</p>"}})
	c := browser(t, s)
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct{ path, location string }{
		{"/wiki?q=bubble+sort", "/wiki/bubble_sort"},
		{"/wiki?q=++", "/"},
		{"/wiki/operating%20system", "/wiki/operating_system"},
		{"/wiki/", "/"},
	} {
		resp, _ := do(t, &noFollow, "GET", site(s)+tc.path, "", nil)
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || loc != tc.location {
			t.Errorf("%s: %d → %q, want %q", tc.path, resp.StatusCode, loc, tc.location)
		}
	}
	// Canonical slugs are served as they are, C++ included.
	resp, body := do(t, &noFollow, "GET", site(s)+"/wiki/"+assets.Slug("C++"), "", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `data-events="/events/wiki/C%2B%2B"`) {
		t.Errorf("C++ page: %d %.300s", resp.StatusCode, body)
	}
	if s.PageURL("C++") != s.URL("/wiki/C%2B%2B") {
		t.Errorf("PageURL %q", s.PageURL("C++"))
	}
	if resp, _ := do(t, c, "GET", site(s)+"/static/nope.js", "", nil); resp.StatusCode != 404 {
		t.Errorf("missing static file: %d", resp.StatusCode)
	}
}

func TestPageDevelops(t *testing.T) {
	drafts := []string{"<h1>Un", "<h1>Unix</h1><p>An", "<h1>Unix</h1><p>An operating", "<h1>Unix</h1><p>An operating system"}
	gate := make(chan struct{})
	g := &fakeGen{drafts: drafts, final: "<h1>Unix</h1><p>An operating system.</p>", gate: gate}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond})
	c := browser(t, s)
	_, events := openEvents(t, c, s, "/events/wiki/Unix")
	// Release one step at a time and see each draft arrive before the next step.
	var got []pageEvent
	for range drafts {
		gate <- struct{}{}
		ev := next(t, events)
		if ev.name != "draft" {
			t.Fatalf("event %q before the generation finished", ev.name)
		}
		got = append(got, decodePageEvent(t, ev))
	}
	gate <- struct{}{} // let it finish
	ev := next(t, events)
	if ev.name != "done" {
		t.Fatalf("last event %q", ev.name)
	}
	final := decodePageEvent(t, ev)
	if len(got) != 4 || !strings.Contains(got[0].HTML, "<h1>Un</h1>") || !strings.Contains(got[3].HTML, "An operating system") ||
		got[3].Step != 4 || !strings.Contains(got[3].Status, "step 4") {
		t.Errorf("drafts %+v", got)
	}
	if final.HTML != "<h1>Unix</h1><p>An operating system.</p>" || !strings.HasPrefix(final.Status, "Done") {
		t.Errorf("final %+v", final)
	}
	if _, ok := <-events; ok {
		t.Error("stream continues after done")
	}
}

func TestPageThrottled(t *testing.T) {
	// 200 steps emitted back to back with a long frame interval: the stream
	// carries far fewer drafts than steps, and always the final page.
	drafts := make([]string, 200)
	for i := range drafts {
		drafts[i] = "<p>" + strings.Repeat("x", i) + "</p>"
	}
	g := &fakeGen{drafts: drafts, final: "<p>end</p>"}
	s := start(t, Options{Engine: g, FrameInterval: time.Hour})
	c := browser(t, s)
	_, events := openEvents(t, c, s, "/events/wiki/Unix")
	var names []string
	for ev := range events {
		names = append(names, ev.name)
	}
	if len(names) < 1 || len(names) > 2 || names[len(names)-1] != "done" {
		t.Errorf("events %v: want at most one draft, then done", names)
	}
}

func TestSecondPageCancelsFirst(t *testing.T) {
	gate := make(chan struct{}, 1)
	started := make(chan string, 4)
	g := &fakeGen{drafts: []string{"<p>one</p>", "<p>two</p>", "<p>three</p>"}, final: "<p>three</p>", gate: gate, started: started}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond})
	c := browser(t, s)
	_, first := openEvents(t, c, s, "/events/wiki/Unix")
	<-started
	gate <- struct{}{}
	if ev := next(t, first); ev.name != "draft" {
		t.Fatalf("first page: %+v", ev)
	}
	// The first generation now waits at its second step; a second page cancels it.
	_, second := openEvents(t, c, s, "/events/wiki/Linux")
	ev := next(t, first)
	if ev.name != "failed" || !strings.Contains(decodePageEvent(t, ev).Status, "another page was requested") {
		t.Fatalf("first page after the second request: %+v", ev)
	}
	if _, ok := <-first; ok {
		t.Error("the first stream goes on")
	}
	if p := <-started; p != assets.EncyclopediaPrompt("Linux") {
		t.Fatalf("second generation prompt %q", p)
	}
	for range 4 { // three steps and the end
		gate <- struct{}{}
	}
	var last sseEvent
	for ev := range second {
		last = ev
	}
	if last.name != "done" || !strings.Contains(last.data, "three") {
		t.Errorf("second page ended with %+v", last)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancels != 1 {
		t.Errorf("%d cancelled generations, want 1", g.cancels)
	}
	// The cancelled page was not cached; the finished one was.
	if _, ok := s.pages.get("Unix"); ok {
		t.Error("cancelled page cached")
	}
	if _, ok := s.pages.get("Linux"); !ok {
		t.Error("finished page not cached")
	}
}

func TestGenerationErrorIsReported(t *testing.T) {
	s := start(t, Options{Engine: errGen{}})
	c := browser(t, s)
	_, events := openEvents(t, c, s, "/events/wiki/Unix")
	ev := next(t, events)
	if ev.name != "failed" || !strings.Contains(decodePageEvent(t, ev).Status, "device lost") {
		t.Errorf("event %+v", ev)
	}
}

// vocab maps ids to token texts for the noise draft.
type vocab map[int]string

func (v vocab) TokenText(id int) string { return v[id] }
func (v vocab) IsEnd(id int) bool       { return id == 1 }

func TestDeveloperNoise(t *testing.T) {
	v := vocab{1: "<eos>", 10: "<h1>", 11: "Unix", 12: "</h1>", 13: "<p>", 14: "kernel", 15: "</p>", 20: "zzzz", 21: "<a href=\"/wiki/X\">"}
	d := develop.New(v, nil)
	// Step 1: positions 0 and 2 accepted; 1 and 3 are noise.
	text := d.Text(engine.Event{Kind: engine.EventStep, Draft: []int{10, 20, 12, 20}, Accepted: []bool{true, false, true, false},
		Argmax: []int{10, 11, 12, 13}})
	if !strings.HasPrefix(text, "<h1>") || !strings.Contains(text, "</h1>") || !strings.ContainsFunc(text, htmlsafe.IsNoise) {
		t.Fatalf("step 1 text %q", text)
	}
	html := renderHTML(text)
	if !strings.Contains(html, `<h1>`) || !strings.Contains(html, `<span class="noise">`) || strings.ContainsFunc(html, htmlsafe.IsNoise) {
		t.Errorf("step 1 html %q", html)
	}
	// Step 2: the accepted positions stay text; an accepted end token ends the page.
	text = d.Text(engine.Event{Kind: engine.EventStep, Draft: []int{10, 11, 12, 1}, Accepted: []bool{false, true, false, true},
		Argmax: []int{10, 11, 12, 1}})
	if text != "<h1>Unix</h1>" {
		t.Errorf("step 2 text %q", text)
	}
	// A commit replaces the draft with the committed text.
	if text = d.Text(engine.Event{Kind: engine.EventCommit, Text: "<h1>Unix</h1>"}); text != "<h1>Unix</h1>" {
		t.Errorf("commit text %q", text)
	}
	// Noise inside an attribute is dropped, never turned into markup there.
	noisy := `<p><a href="/wiki/X` + htmlsafe.NoiseText(3, 1) + `">link</a> ` + htmlsafe.NoiseText(2, 2) + `&lt;</p>`
	html = renderHTML(noisy)
	if !strings.Contains(html, `<a href="/wiki/X">link</a>`) || strings.Count(html, `<span class="noise">`) != 1 || !strings.Contains(html, "&lt;") {
		t.Errorf("noisy attribute html %q", html)
	}
	// Noise at the top level (no element around it) is marked too.
	if html = renderHTML("a" + htmlsafe.NoiseText(2, 3) + "b"); !strings.HasPrefix(html, `a<span class="noise">`) || !strings.HasSuffix(html, "</span>b") {
		t.Errorf("top-level noise html %q", html)
	}
	// A draft with unclosed tags comes back balanced.
	if html = renderHTML("<pre>unclosed <b>bold"); html != "<pre>unclosed <b>bold</b></pre>" {
		t.Errorf("unbalanced draft html %q", html)
	}
}

func TestPageCacheBounded(t *testing.T) {
	c := newPageCache(2)
	c.put("a", finishedPage{html: "1"})
	c.put("b", finishedPage{html: "2"})
	c.put("a", finishedPage{html: "3"})
	c.put("c", finishedPage{html: "4"})
	if _, ok := c.get("a"); ok {
		t.Error("oldest page kept")
	}
	if p, ok := c.get("c"); !ok || p.html != "4" {
		t.Error("newest page dropped")
	}
	if got := c.titles(); len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Errorf("titles %v", got)
	}
	c.clear()
	if len(c.titles()) != 0 {
		t.Error("clear kept pages")
	}
}

// TestHomeSuggestsTopics: the browser's start page offers the topics the app's
// start page does, as links, under a tab titled 'Encyclopedia · Darkroom'; it
// offered none (a first visitor had only the search box) and its tab read
// 'Darkroom · Darkroom'.
func TestHomeSuggestsTopics(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}})
	c := browser(t, s)
	_, body := do(t, c, "GET", s.URL("/"), "", nil)
	if !strings.Contains(body, "<title>Encyclopedia · Darkroom</title>") {
		t.Errorf("home's title: %s", body)
	}
	for _, topic := range develop.EntryTopics {
		if link := `<a href="` + html.EscapeString(wikiPath(topic)) + `">` + html.EscapeString(topic) + `</a>`; !strings.Contains(body, link) {
			t.Errorf("home lacks %s", link)
		}
	}
}

// TestUnknownPageHasAWayBack: a browser sent to an address the server has no
// page for (a mistyped /wki/Unix) gets a page saying so, with the search box and
// a link to the start page; it got '404 page not found' as plain text, with no
// way back but the browser's.
func TestUnknownPageHasAWayBack(t *testing.T) {
	s := start(t, Options{Engine: &fakeGen{final: "x"}})
	c := browser(t, s)
	resp, body := do(t, c, "GET", s.URL("/wki/Unix"), "", nil)
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `<a href="/">the start page</a>`) || !strings.Contains(body, `<form action="/wiki"`) {
		t.Errorf("GET /wki/Unix: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestUnreadableTitleHasNoPage: an address whose title is not readable text — a
// control character, bytes that are not UTF-8, nothing but blanks — gets the
// page for an address with no page (the search box and a link home), and no
// generation starts, neither from the page nor from its event stream; the
// model was asked to write a page titled "\x00" or "��". Titles in any
// script, with punctuation, are pages as before.
func TestUnreadableTitleHasNoPage(t *testing.T) {
	g := &fakeGen{final: "<p>x</p>"}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond})
	c := browser(t, s)
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	generations := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.requests)
	}
	for _, slug := range []string{"%00", "%01", "%1B", "%7F", "%FF%FE", "Unix%00", "%1B%5B31mUnix", "%C2%9B",
		"%EF%BF%BD", "___", "%20_%09", "%E2%80%8B", "%EF%BB%BF_%E2%80%8E"} {
		resp, body := do(t, &noFollow, "GET", site(s)+"/wiki/"+slug, "", nil)
		if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, "No page here") || !strings.Contains(body, "<code>/wiki/"+slug+"</code>: its title") ||
			!strings.Contains(body, `<a href="/">the start page</a>`) ||
			!strings.Contains(body, `<form action="/wiki"`) || strings.Contains(body, "data-events") ||
			strings.ContainsAny(body, "\x00\x01\x1b\x7f\uFFFD") || !utf8.ValidString(body) {
			t.Errorf("GET /wiki/%s: %d %s %q", slug, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		// A HEAD is a browser's visit too; a POST is not, and gets a plain 404.
		if resp, _ := do(t, &noFollow, "HEAD", site(s)+"/wiki/"+slug, "", nil); resp.StatusCode != 404 {
			t.Errorf("HEAD /wiki/%s: %d", slug, resp.StatusCode)
		}
		if resp, _ := do(t, &noFollow, "POST", site(s)+"/wiki/"+slug, "", nil); resp.StatusCode != 404 ||
			strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("POST /wiki/%s: %d %s", slug, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp, body = do(t, &noFollow, "GET", site(s)+"/events/wiki/"+slug, "", nil)
		if resp.StatusCode != 404 || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("GET /events/wiki/%s: %d %s %q", slug, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		// The same title typed in the search box starts no generation either.
		q := url.QueryEscape(assets.TitleFromSlug(slug))
		resp, body = do(t, c, "GET", site(s)+"/wiki?q="+q, "", nil)
		if resp.StatusCode/100 == 2 && strings.Contains(body, "data-events") {
			t.Errorf("GET /wiki?q=%s: %d %q", q, resp.StatusCode, body)
		}
		if n := generations(); n != 0 {
			t.Fatalf("after /wiki/%s: %d generations, want none", slug, n)
		}
	}
	// Readable titles in any script, with punctuation, are pages.
	for _, title := range []string{"Café", "C++", "Löb's theorem", "Unix", "TCP/IP", "日本語", "Ωmega (letter)"} {
		path := wikiPath(title)
		resp, body := do(t, &noFollow, "GET", site(s)+path, "", nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `data-events="/events`+html.EscapeString(path)+`"`) {
			t.Errorf("GET %s: %d %.400s", path, resp.StatusCode, body)
			continue
		}
		_, events := openEvents(t, c, s, "/events"+path)
		var last sseEvent
		for ev := range events {
			last = ev
		}
		if last.name != "done" {
			t.Errorf("%s ended with %+v", path, last)
		}
		if req := g.lastRequest(t); req.Prompt != assets.EncyclopediaPrompt(title) || req.Opening != assets.EncyclopediaOpening(title) {
			t.Errorf("%s: prompt %q, opening %q", path, req.Prompt, req.Opening)
		}
	}
}

// TestPageWithoutJavaScript: a browser without JavaScript stayed on
// "Developing…" for ever; the shell now links, inside <noscript>, to the page's
// whole=1 address, which answers with the finished page once it is written
// (sanitized, cached like any page), or with the reason it could not be. Its
// links and its search box lead to whole pages too (they led back to the
// shell, one more click each).
func TestPageWithoutJavaScript(t *testing.T) {
	g := &fakeGen{drafts: []string{hostile[:200]}, final: hostile}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond})
	c := browser(t, s)
	_, shell := do(t, c, "GET", site(s)+"/wiki/Unix", "", nil)
	if !strings.Contains(shell, `<noscript>`) || !strings.Contains(shell, `<a href="/wiki/Unix?whole=1">`) ||
		!strings.Contains(shell, `data-whole="/wiki/Unix?whole=1"`) {
		t.Fatalf("shell without a way for a browser without JavaScript: %s", shell)
	}
	resp, page := do(t, c, "GET", site(s)+"/wiki/Unix?whole=1", "", nil)
	main := page[strings.Index(page, `<main id="page"`):strings.Index(page, "</main>")]
	if resp.StatusCode != 200 || strings.Contains(page, "data-events") || !strings.Contains(main, `<a href="/wiki/Bell_Labs?whole=1">Bell Labs</a>`) ||
		!strings.Contains(page, "Done") {
		t.Fatalf("whole page %d: %s", resp.StatusCode, page)
	}
	checkSafe(t, "whole page", main)
	if !strings.Contains(page, `<input type="hidden" name="whole" value="1">`) {
		t.Errorf("the whole page's search box leads to the shell: %s", page)
	}
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if resp, _ := do(t, &noFollow, "GET", site(s)+"/wiki?q=Bell+Labs&whole=1", "", nil); resp.Header.Get("Location") != "/wiki/Bell_Labs?whole=1" {
		t.Errorf("a search from a whole page goes to %q", resp.Header.Get("Location"))
	}
	if _, page := do(t, c, "GET", site(s)+"/wiki/Unix?whole=1", "", nil); !strings.Contains(page, "from the cache") ||
		!strings.Contains(page, `<a href="/wiki/Bell_Labs?whole=1">Bell Labs</a>`) {
		t.Errorf("the cached whole page's links lead to the shell: %s", page)
	}
	if !strings.Contains(page, `href="/wiki/Unix?regen=1&amp;whole=1"`) {
		t.Errorf("the whole page's Regenerate does not stay without JavaScript: %s", page)
	}
	n := len(g.requests)
	if _, page := do(t, c, "GET", site(s)+"/wiki/Unix", "", nil); strings.Contains(page, "data-events") || !strings.Contains(page, "from the cache") ||
		!strings.Contains(page, `<a href="/wiki/Bell_Labs">Bell Labs</a>`) {
		t.Errorf("the page written for whole=1 is not cached as any page: %s", page)
	}
	if _, page := do(t, c, "GET", site(s)+"/wiki/Unix?regen=1&whole=1", "", nil); len(g.requests) != n+1 || !strings.Contains(page, "Bell Labs") {
		t.Errorf("regen=1&whole=1: %d generations (want %d): %s", len(g.requests), n+1, page)
	}
	// A non-canonical address keeps both.
	if resp, _ := do(t, &noFollow, "GET", site(s)+"/wiki/Unix_?regen=1&whole=1", "", nil); resp.Header.Get("Location") != "/wiki/Unix?regen=1&whole=1" {
		t.Errorf("redirect to %q", resp.Header.Get("Location"))
	}

	// A failure says why, with an error status.
	f := start(t, Options{Engine: errGen{}})
	resp, page = do(t, browser(t, f), "GET", site(f)+"/wiki/Unix?whole=1", "", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, "device lost") {
		t.Errorf("failed whole page %d: %s", resp.StatusCode, page)
	}
}

// TestPageOpensWithTheEntrysLead: a model whose folder holds a title's entry
// (Options.Leads) has its page written after it; another title gets
// the heading alone.
func TestPageOpensWithTheEntrysLead(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system from Bell Labs. It runs.</p>", nil)
	g := &fakeGen{final: "<h1>Unix</h1>\n<p>An operating system.</p>"}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond, Leads: &leads})
	c := browser(t, s)
	for title, want := range map[string]string{"Unix": "<p>An operating system from Bell Labs. It runs.</p>", "Emacs": ""} {
		resp, page := do(t, c, "GET", site(s)+"/wiki/"+title+"?whole=1", "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", title, resp.StatusCode)
		}
		if said := strings.Contains(page, develop.LeadNote); said != (title == "Unix") {
			t.Errorf("%s: the status says the text is the entry's: %v", title, said)
		}
		if said := strings.Contains(page, html.EscapeString(develop.OwnNote)); said != (title == "Emacs") {
			t.Errorf("%s: the status says the model wrote it alone: %v", title, said)
		}
		if req := g.lastRequest(t); req.Opening != assets.EncyclopediaOpening(title) || req.Lead != want || !req.LeadEnds {
			t.Errorf("%s: opening %q, lead %q; want the heading, then %q", title, req.Opening, req.Lead, want)
		}
	}
}

// TestLetTheModelWriteItInTheBrowser: a page that is its title's entry links
// to the model's own page for it ("Let the model write it", ?own=1), which is
// written without the entry and links back to it; each is cached apart, the
// start page lists the title once, and a title with no entry has no such link.
func TestLetTheModelWriteItInTheBrowser(t *testing.T) {
	g := &fakeGen{final: "<h1>Unix</h1>\n<p>An operating system.</p>"}
	s, c := entriesServer(t, g, "Unix")
	for i, step := range []struct {
		path, link, label, note string
		lead, cached            bool
	}{
		{"/wiki/Unix?whole=1", "/wiki/Unix?whole=1&amp;own=1", ownLabel[false], develop.LeadNote, true, false},
		{"/wiki/Unix?whole=1&own=1", "/wiki/Unix?whole=1", ownLabel[true], html.EscapeString(develop.OwnNote), false, false},
		{"/wiki/Unix?whole=1", "/wiki/Unix?whole=1&amp;own=1", ownLabel[false], develop.LeadNote, true, true},
		{"/wiki/Unix?whole=1&own=1", "/wiki/Unix?whole=1", ownLabel[true], html.EscapeString(develop.OwnNote), false, true},
	} {
		_, page := do(t, c, "GET", site(s)+step.path, "", nil)
		if link := `<a class="regen" href="` + step.link + `">` + step.label + `</a>`; !strings.Contains(page, link) {
			t.Errorf("%d. %s lacks %s:\n%s", i+1, step.path, link, page)
		}
		if !strings.Contains(page, step.note) || strings.Contains(page, "from the cache") != step.cached {
			t.Errorf("%d. %s: want the status to say %q, from the cache %v:\n%s", i+1, step.path, step.note, step.cached, page)
		}
		if req := g.lastRequest(t); !step.cached && (req.Lead != "") != step.lead {
			t.Errorf("%d. %s: lead %q sent; want one: %v", i+1, step.path, req.Lead, step.lead)
		}
	}
	g.mu.Lock()
	n := len(g.requests)
	g.mu.Unlock()
	if n != 2 {
		t.Errorf("%d pages written, want 2 (the entry's and the model's own, each once)", n)
	}
	_, home := do(t, c, "GET", site(s)+"/", "", nil)
	if n := strings.Count(home, `<a href="/wiki/Unix">Unix</a>`); n != 2 { // the suggestion, and once among the pages written
		t.Errorf("the start page links Unix %d times, want 2:\n%s", n, home)
	}
	_, shell := do(t, c, "GET", site(s)+"/wiki/Unix?own=1&regen=1", "", nil)
	if !strings.Contains(shell, `data-events="/events/wiki/Unix?regen=1&amp;own=1"`) {
		t.Errorf("the model's own page, with JavaScript, does not follow its own events:\n%s", shell)
	}
	_, emacs := do(t, c, "GET", site(s)+"/wiki/Emacs?whole=1", "", nil)
	if strings.Contains(emacs, ownLabel[false]) || strings.Contains(emacs, "own=1") {
		t.Errorf("Emacs, which has no entry, offers the model's own page:\n%s", emacs)
	}
}

// TestTypedTopicOpensItsEntryInTheBrowser: a topic that names a held entry
// but for its plural or article is sent to the entry's address (a redirect
// that is not permanent: it is the model's folder that holds the entry).
func TestTypedTopicOpensItsEntryInTheBrowser(t *testing.T) {
	s, c := entriesServer(t, &fakeGen{final: "<h1>x</h1>"}, "compiler")
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, path := range []string{"/wiki/compilers?whole=1", "/wiki/the_compiler?whole=1"} {
		resp, _ := do(t, c, "GET", site(s)+path, "", nil)
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/wiki/compiler?whole=1" {
			t.Errorf("%s: %d to %q; want 302 to /wiki/compiler?whole=1", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// TestMisspeltTopicOffersEntriesInTheBrowser: a page whose title the model
// holds no entry for, a typo away from one, links to that entry above it.
func TestMisspeltTopicOffersEntriesInTheBrowser(t *testing.T) {
	s, c := entriesServer(t, &fakeGen{final: "<h1>compilr</h1>\n<p>Made up.</p>"}, "compiler")
	for path, want := range map[string]string{
		"/wiki/compilr?whole=1": `<p class="similar">` + html.EscapeString(develop.SimilarNote) + ` <a href="/wiki/compiler?whole=1">compiler</a></p>`,
		"/wiki/compilr":         `<p class="similar">` + html.EscapeString(develop.SimilarNote) + ` <a href="/wiki/compiler">compiler</a></p>`,
	} {
		if _, page := do(t, c, "GET", site(s)+path, "", nil); !strings.Contains(page, want) {
			t.Errorf("%s lacks %s:\n%s", path, want, page)
		}
	}
	if _, page := do(t, c, "GET", site(s)+"/wiki/compiler?whole=1", "", nil); strings.Contains(page, `class="similar"`) {
		t.Errorf("compiler's own entry offers similar ones:\n%s", page)
	}
}

// TestSuggest: GET /suggest?q= lists the entries whose titles begin with a
// topic being typed, for the search box's datalist on every page; nothing for
// an empty, over-long or unreadable topic, or a model with no entries.
func TestSuggest(t *testing.T) {
	s, c := entriesServer(t, &fakeGen{final: "x"}, "compiler", "Compile", "Unix")
	for q, want := range map[string]string{
		"comp": `["Compile","compiler"]`, "COMPILER": `["compiler"]`, "": `[]`, "x": `[]`,
		strings.Repeat("c", maxTitleRunes+1): `[]`, "comp%1B": `[]`,
	} {
		resp, body := do(t, c, "GET", site(s)+"/suggest?q="+q, "", nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || strings.TrimSpace(body) != want {
			t.Errorf("suggest %q: %d %q %s; want %s", q, resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
		}
	}
	if _, page := do(t, c, "GET", site(s)+"/", "", nil); !strings.Contains(page, `list="topics"><datalist id="topics"></datalist>`) {
		t.Errorf("the search box has no list of topics:\n%s", page)
	}
	plain := start(t, Options{Engine: &fakeGen{final: "x"}})
	if _, body := do(t, browser(t, plain), "GET", site(plain)+"/suggest?q=comp", "", nil); strings.TrimSpace(body) != "[]" {
		t.Errorf("a model with no entries suggests %s", body)
	}
}

// TestPageShellDoesNotWaitForTheModel: a page's shell answers at once while
// the app's model is still loading (Options.Known says it is not known), as
// before the shell needed the model's entries — only its event stream waits;
// once the model is loaded, its entries send a typed topic to the entry.
func TestPageShellDoesNotWaitForTheModel(t *testing.T) {
	var leads assets.Leads
	leads.Add("compiler", "<h1>compiler</h1>\n<p>A program. It runs.</p>", nil)
	loaded := make(chan struct{})
	var isLoaded atomic.Bool
	g := &fakeGen{final: "x"}
	s := start(t, Options{FrameInterval: time.Millisecond,
		Model: func(ctx context.Context) (Model, error) {
			select {
			case <-loaded:
				return Model{Engine: g, Leads: &leads}, nil
			case <-ctx.Done():
				return Model{}, ctx.Err()
			}
		},
		Known: func() (string, *assets.Leads, bool) { return "m", &leads, isLoaded.Load() }})
	c := newBrowser() // not browser(t, s): the start page waits for a model not known
	c.Timeout = 5 * time.Second
	resp, page := do(t, c, "GET", s.URL("/wiki/compilers"), "", nil) // the token's address sets its cookie
	if resp.StatusCode != 200 || !strings.Contains(page, `data-events="/events/wiki/compilers"`) {
		t.Fatalf("while the model loads: %d\n%s", resp.StatusCode, page)
	}
	if _, body := do(t, c, "GET", site(s)+"/suggest?q=comp", "", nil); strings.TrimSpace(body) != "[]" {
		t.Errorf("suggestions while a model not known loads: %s; want none, at once", body)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	close(loaded)
	isLoaded.Store(true)
	if resp, _ := do(t, c, "GET", site(s)+"/wiki/compilers", "", nil); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/wiki/compiler" {
		t.Errorf("once loaded: %d to %q; want 302 to /wiki/compiler", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestStartPageDoesNotWaitForAKnownModel: the start page, the search box's
// suggestions and a page's shell answer at once while a model whose entries
// are known without its weights (the app's built-in Mini: Options.Known) is
// loading; the start page names it and offers its entries. Before, the start
// page waited for the load.
func TestStartPageDoesNotWaitForAKnownModel(t *testing.T) {
	var leads assets.Leads
	leads.Add("compiler", "<h1>compiler</h1>\n<p>A program. It runs.</p>", nil)
	s := start(t, Options{FrameInterval: time.Millisecond,
		Model: func(ctx context.Context) (Model, error) { // loads until the test ends
			<-ctx.Done()
			return Model{}, ctx.Err()
		},
		Known: func() (string, *assets.Leads, bool) { return "darkroom-mini", &leads, true }})
	c := newBrowser()
	c.Timeout = 5 * time.Second
	resp, page := do(t, c, "GET", s.URL("/"), "", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "Model: darkroom-mini") || !strings.Contains(page, `href="/wiki/compiler"`) {
		t.Fatalf("start page while the model loads: %d\n%s", resp.StatusCode, page)
	}
	if _, body := do(t, c, "GET", site(s)+"/suggest?q=comp", "", nil); strings.TrimSpace(body) != `["compiler"]` {
		t.Errorf("suggestions while the model loads: %s; want [\"compiler\"]", body)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if resp, _ := do(t, c, "GET", site(s)+"/wiki/compilers", "", nil); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/wiki/compiler" {
		t.Errorf("a typed plural while the model loads: %d to %q; want 302 to /wiki/compiler", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestStartPageListsOnlyTheKnownModelsPages: the start page lists the pages
// written so far only while they are the model's it names (Options.Known):
// after the app switches models, the old model's pages — cleared from the
// cache when the next page asks for the new one — are not offered.
func TestStartPageListsOnlyTheKnownModelsPages(t *testing.T) {
	var id atomic.Value
	id.Store("one")
	g := &fakeGen{final: "<h1>Paging</h1><p>Pages.</p>"}
	s := start(t, Options{FrameInterval: time.Millisecond,
		Model: func(context.Context) (Model, error) { return Model{ID: id.Load().(string), Engine: g}, nil },
		Known: func() (string, *assets.Leads, bool) { return id.Load().(string), nil, true }})
	c := browser(t, s)
	do(t, c, "GET", site(s)+"/wiki/Paging?whole=1", "", nil)
	if _, page := do(t, c, "GET", site(s)+"/", "", nil); !strings.Contains(page, `href="/wiki/Paging"`) {
		t.Errorf("the start page does not list the page written:\n%s", page)
	}
	id.Store("two")
	if _, page := do(t, c, "GET", site(s)+"/", "", nil); strings.Contains(page, "Paging") || !strings.Contains(page, "Model: two") {
		t.Errorf("after the switch, the start page lists the other model's page or names another:\n%s", page)
	}
}

// TestPageLinksOpenWhatTheySay: a finished page's link whose topic the model does
// not know but whose text names an entry it does opens that entry
// (htmlsafe.Relink with the model's leads).
func TestPageLinksOpenWhatTheySay(t *testing.T) {
	var leads assets.Leads
	leads.Add("virtual memory", "<h1>virtual memory</h1>\n<p>A memory system. It pages.</p>", nil)
	g := &fakeGen{final: `<h1>Paging</h1><p>Uses <a href="/wiki/virtual_program">virtual memory</a> and <a href="/wiki/swap">swapping</a>.</p>`}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond, Leads: &leads})
	_, page := do(t, browser(t, s), "GET", site(s)+"/wiki/Paging?whole=1", "", nil)
	if !strings.Contains(page, `href="/wiki/virtual_memory`) || strings.Contains(page, "virtual_program") || !strings.Contains(page, `href="/wiki/swap`) {
		t.Errorf("links: want virtual memory's relinked and swap's kept; page:\n%s", page)
	}
}

// entriesServer is a server on g whose model's folder holds an entry for each
// of titles, and a browser for it.
func entriesServer(t *testing.T, g *fakeGen, titles ...string) (*Server, *http.Client) {
	t.Helper()
	var leads assets.Leads
	for _, title := range titles {
		leads.Add(title, "<h1>"+title+"</h1>\n<p>An entry about "+title+". It is one.</p>", nil)
	}
	s := start(t, Options{Engine: g, FrameInterval: time.Millisecond, Leads: &leads})
	return s, browser(t, s)
}

// TestPageOnTheUsersPrompt: a model whose page prompt is the user's own (the
// desktop app's Settings) has its browser pages asked with it; changing it
// forgets the pages cached, which the old prompt wrote.
func TestPageOnTheUsersPrompt(t *testing.T) {
	g := &fakeGen{final: "<p>A moon-sized station.</p>"}
	var mu sync.Mutex
	prompt := "Write a Star Wars fan wiki page for: {{title}}"
	s := start(t, Options{Model: func(context.Context) (Model, error) {
		mu.Lock()
		defer mu.Unlock()
		return Model{ID: "m", Engine: g, PagePrompt: prompt}, nil
	}})
	c := browser(t, s)
	do(t, c, "GET", site(s)+"/wiki/Death_Star?whole=1", "", nil)
	if got := g.lastRequest(t).Prompt; got != "Write a Star Wars fan wiki page for: Death Star" {
		t.Fatalf("the page was asked %q", got)
	}
	if _, page := do(t, c, "GET", site(s)+"/wiki/Death_Star?whole=1", "", nil); !strings.Contains(page, "from the cache") {
		t.Errorf("the same prompt again: not from the cache")
	}
	mu.Lock()
	prompt = "Write a Star Trek page for: {{title}}"
	mu.Unlock()
	n := len(g.requests)
	if _, page := do(t, c, "GET", site(s)+"/wiki/Death_Star?whole=1", "", nil); strings.Contains(page, "from the cache") || len(g.requests) != n+1 ||
		g.lastRequest(t).Prompt != "Write a Star Trek page for: Death Star" {
		t.Errorf("after the prompt changed: cached %v, %d generations, prompt %q", strings.Contains(page, "from the cache"), len(g.requests)-n, g.lastRequest(t).Prompt)
	}
}
