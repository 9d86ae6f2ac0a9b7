package server

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// Browser mode. GET /wiki/Slug answers at once with the page shell (or the
// finished page from the cache); the shell's develop.js opens the event stream
// GET /events/wiki/Slug, which starts the generation (cancelling the one
// running) and sends the sanitized draft as "draft" events, at most one per
// FrameInterval, then "done" with the finished page or "failed" with the reason.
// Links in pages are plain /wiki/ links: following one loads its page the same way.
// A browser without JavaScript (or EventSource) gets a link to GET /wiki/Slug?whole=1,
// which answers with the finished page once it is written.
// A slug whose title is not readable text (see assets.ReadableTitle) has no page, and
// neither address starts a generation for it.

//go:embed static
var staticFS embed.FS

// wikiPath is the page path of title.
func wikiPath(title string) string { return assets.WikiHref(title) }

// pageTitle reads the title from a request path's escaped slug after prefix.
// Check it with assets.ReadableTitle before it goes anywhere.
func pageTitle(r *http.Request, prefix string) (title, slug string) {
	slug = strings.TrimPrefix(r.URL.EscapedPath(), prefix)
	return assets.CleanLine(assets.TitleFromSlug(slug)), slug
}

// shownPath is the request's path as a page may show it: decoded when it is
// printable text, else as sent (percent-escaped).
func shownPath(r *http.Request) string {
	p := r.URL.Path
	if !utf8.ValidString(p) || strings.ContainsFunc(p, func(c rune) bool { return c == utf8.RuneError || !unicode.IsGraphic(c) }) {
		return r.URL.EscapedPath()
	}
	return p
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Darkroom</title>
<link rel="stylesheet" href="/static/style.css">
<script src="/static/develop.js" defer></script>
</head>
<body>
<header>
<a class="brand" href="/">Darkroom</a>
<form action="/wiki" method="get"><input name="q" value="{{.Query}}" placeholder="Topic" aria-label="Topic" autocomplete="off" list="topics"><datalist id="topics"></datalist>{{if .StayWhole}}<input type="hidden" name="whole" value="1">{{end}} <button>Go</button></form>
{{if .Regen}}<a class="regen" href="{{.Regen}}">Regenerate</a>{{end}}
{{if .Other}}<a class="regen" href="{{.Other}}">{{.OtherLabel}}</a>{{end}}
</header>
{{if .Similar}}<p class="similar">{{.SimilarNote}} {{range $i, $t := .Similar}}{{if $i}}, {{end}}<a href="{{$t.Href}}">{{$t.Title}}</a>{{end}}</p>
{{end}}<main id="page"{{if .Events}} data-events="{{.Events}}" data-whole="{{.Whole}}" aria-busy="true"{{end}}>{{.Content}}</main>
<footer id="status">{{.Status}}</footer>
</body>
</html>
`))

type pageView struct {
	Title, Query  string
	Regen, Events string
	// Other, on a page whose title's entry the model's folder holds, is the
	// page written the other way (OtherLabel): the model's own, or the entry.
	Other, OtherLabel string
	// Similar, on a page whose title the model's folder holds no entry for,
	// are the entries it may have meant (assets.Leads.Similar), after SimilarNote.
	Similar     []titleLink
	SimilarNote string
	Whole       string        // the finished page's address, for a browser that cannot follow Events
	StayWhole   bool          // a whole page: its links and search lead to whole pages too
	Content     template.HTML // sanitized
	Status      string
}

func (s *Server) writePage(w http.ResponseWriter, v pageView) {
	s.writePageStatus(w, http.StatusOK, v)
}

// writePageStatus writes the page v with an HTTP status.
func (s *Server) writePageStatus(w http.ResponseWriter, status int, v pageView) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pageTmpl.Execute(w, v); err != nil {
		s.logf("server: write page: %v", err)
	}
}

// handleNoPage answers a browser at an address with no page: a page that says
// so, with the search box and the way to the start page.
func (s *Server) handleNoPage(w http.ResponseWriter, r *http.Request) { s.noPage(w, r, nil) }

// noPage is handleNoPage's answer; why, if not nil, says why the address has
// no page ("its title holds …").
func (s *Server) noPage(w http.ResponseWriter, r *http.Request, why error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.NotFound(w, r) // not a browser's visit
		return
	}
	reason := ""
	if why != nil {
		reason = ": " + why.Error()
	}
	// The path in <code>: Sanitize takes a bare /wiki/… in text for a link's debris.
	body := fmt.Sprintf("<h1>No page here</h1><p>Darkroom has no page at <code>%s</code>%s. Type a topic above, or go to <a href=\"/\">the start page</a>.</p>",
		html.EscapeString(clip(shownPath(r), 200)), html.EscapeString(reason))
	s.writePageStatus(w, http.StatusNotFound, pageView{Title: "No page here", Content: template.HTML(htmlsafe.Sanitize(body))})
}

// startHow is the browser's start page's sentence on how a page is written.
const startHow = "The model develops a page from noise (the polaroid) or types it out word by word (the printer), " +
	"in the mode the app's Encyclopedia picks."

// handleHome answers GET / with the start page (develop.StartPage), the pages
// written so far and the model's name: at once where the model is known
// without loading it (Options.Known), else once it is loaded.
func (s *Server) handleHome(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	var id string
	var leads *assets.Leads
	ok, merr := false, error(nil)
	if s.opts.Known != nil {
		id, leads, ok = s.opts.Known()
	}
	if !ok {
		var m Model
		m, merr = s.model(r.Context())
		id, leads = m.ID, m.Leads
	}
	b.WriteString(develop.StartPage(leads, startHow, wikiPath))
	if titles := s.pages.titles(); len(titles) > 0 && s.cachedBy(id) {
		b.WriteString("<h2>Pages written so far</h2><ul>")
		for _, t := range titles {
			fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, html.EscapeString(wikiPath(t)), html.EscapeString(t))
		}
		b.WriteString("</ul>")
	}
	status := "Model: "
	if merr == nil {
		status += id
	} else {
		status += "none (" + clip(merr.Error(), 200) + ")"
	}
	s.writePage(w, pageView{Title: "Encyclopedia", Content: template.HTML(htmlsafe.Sanitize(b.String())), Status: status})
}

// cachedBy reports whether the pages in the cache were written by the model
// named id (the cache is cleared when the next page asks for another model).
func (s *Server) cachedBy(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastID == id
}

// handleSuggest answers GET /suggest?q=TOPIC with the titles of the entries
// the model's folder holds that begin with it (assets.Leads.Prefixed;
// develop.SuggestMax of them, as the app's address offers), as a JSON list:
// develop.js offers them under the search box as a topic is typed. An empty,
// over-long or unreadable topic, a model with no entries, or one whose
// entries are not known while it loads (Options.Known), gets [].
func (s *Server) handleSuggest(w http.ResponseWriter, r *http.Request) {
	titles := []string{}
	q := assets.CleanLine(r.URL.Query().Get("q"))
	if q != "" && utf8.RuneCountInString(q) <= maxTitleRunes && assets.ReadableTitle(q) == nil {
		if leads, ok := s.shellLeads(r.Context()); ok { // none while a model not Known loads
			titles = append(titles, leads.Prefixed(q, develop.SuggestMax)...)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(titles); err != nil {
		s.logf("server: suggest: %v", err)
	}
}

// handleSearch turns the search form (GET /wiki?q=topic) into the topic's page.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	title := assets.CleanLine(r.URL.Query().Get("q"))
	if title == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if titleTooLong(w, title) {
		return
	}
	http.Redirect(w, r, pageURL(title, pageQuery{whole: r.URL.Query().Has("whole")}), http.StatusSeeOther)
}

// maxTitleRunes bounds a topic: its heading is held at the head of the page's
// first canvas, so a title must stay well inside one canvas.
const maxTitleRunes = 200

// titleTooLong answers 400 for a topic longer than maxTitleRunes.
func titleTooLong(w http.ResponseWriter, title string) bool {
	if n := utf8.RuneCountInString(title); n > maxTitleRunes {
		http.Error(w, fmt.Sprintf("This topic is %d characters long; a page's title can have at most %d. Shorten the topic and try again.",
			n, maxTitleRunes), http.StatusBadRequest)
		return true
	}
	return false
}

// clip shortens s to about n bytes for a log line or a status.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	title, slug := pageTitle(r, assets.WikiPrefix)
	if slug == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if err := assets.ReadableTitle(title); err != nil {
		s.noPage(w, r, err)
		return
	}
	if titleTooLong(w, title) {
		return
	}
	q := readPageQuery(r)
	if canon := assets.Slug(title); canon != slug { // one URL per topic, so the cache has one entry
		http.Redirect(w, r, pageURL(title, q), http.StatusMovedPermanently)
		return
	}
	regen, whole := q, q // the page written anew; the finished page in one answer
	regen.regen, whole.whole = true, true
	v := pageView{Title: title, Query: title, Regen: pageURL(title, regen), StayWhole: q.whole}
	if leads, ok := s.shellLeads(r.Context()); ok {
		if t := develop.PageTitle(title, leads); t != title { // "compilers": the entry for "compiler", at its address
			http.Redirect(w, r, pageURL(t, q), http.StatusFound)
			return
		}
		if leads.Has(title) { // its entry, or the model's own page
			other := pageQuery{whole: q.whole, own: !q.own}
			v.Other, v.OtherLabel = pageURL(title, other), ownLabel[q.own]
		}
		for _, t := range leads.Similar(title, develop.SimilarMax) { // a title with no entry: those it may have meant
			v.Similar = append(v.Similar, titleLink{Title: t, Href: pageURL(t, pageQuery{whole: q.whole})})
		}
		if len(v.Similar) > 0 {
			v.SimilarNote = develop.SimilarNote
		}
	}
	if p, ok := s.pages.get(q.key(title)); ok && !q.regen {
		v.Content, v.Status = template.HTML(wholeLinks(p.html, q.whole)), p.status+" · from the cache"
		s.writePage(w, v)
		return
	}
	if q.whole {
		// A browser without JavaScript: the page once it is finished.
		p, failed := s.developPage(r.Context(), title, q, nil, nil)
		if failed != "" {
			v.Content, v.Status = template.HTML(htmlsafe.Sanitize("<p>"+html.EscapeString(failed)+"</p>")), failed
			s.writePageStatus(w, http.StatusServiceUnavailable, v)
			return
		}
		v.Content, v.Status = template.HTML(wholeLinks(p.html, true)), p.status
		s.writePage(w, v)
		return
	}
	v.Events = "/events" + pageURL(title, q)
	v.Whole = pageURL(title, whole)
	// Without JavaScript the page cannot develop here: a link to the whole page.
	v.Content = template.HTML(`<p class="waiting">Developing…</p><noscript><p>JavaScript is off in this browser, so the page cannot develop here. <a href="` +
		html.EscapeString(v.Whole) + `">Show the page when it is finished</a> (it takes as long as the model needs to write it).</p></noscript>`)
	v.Status = "Starting…"
	s.writePage(w, v)
}

// pageLink matches a sanitized page's links to other pages (htmlsafe.Sanitize
// writes every attribute in double quotes and keeps only site paths).
var pageLink = regexp.MustCompile(`href="(` + regexp.QuoteMeta(assets.WikiPrefix) + `[^"?#]*)"`)

// wholeLinks, when whole, points the links of a sanitized page h at the
// linked pages' whole addresses, so that a browser without JavaScript goes on
// from page to page without passing through the shell it cannot use.
func wholeLinks(h string, whole bool) string {
	if !whole {
		return h
	}
	return pageLink.ReplaceAllString(h, `href="${1}?whole=1"`)
}

// pageQuery is how a page is asked for beyond its title: its address's query.
type pageQuery struct {
	regen bool // written anew, not the cache's
	whole bool // the finished page in one answer (for browsers without JavaScript)
	own   bool // the model's own page for a title whose entry its folder holds (develop.PageRequest)
}

// readPageQuery is r's pageQuery.
func readPageQuery(r *http.Request) pageQuery {
	v := r.URL.Query()
	return pageQuery{regen: v.Has("regen"), whole: v.Has("whole"), own: v.Has("own")}
}

// key is the page cache's key of title's page asked so: the model's own page
// for a title with an entry is kept apart from the entry's.
func (q pageQuery) key(title string) string {
	if q.own {
		return title + ownKey
	}
	return title
}

// ownKey ends the cache key of a page the model wrote alone for a title with
// an entry; no title holds it (assets.ReadableTitle refuses control characters).
const ownKey = "\x00own"

// titleLink is a link to title's page.
type titleLink struct{ Title, Href string }

// ownLabel is the link to the other way of writing a page with an entry,
// by whether the page shown is the model's own: the app's button's words.
var ownLabel = map[bool]string{false: develop.LetModelWrite, true: develop.ShowEntry}

// pageURL is title's page address asked as q: with regen, written anew; with
// whole, the finished page in one answer; with own, the model's own page.
func pageURL(title string, q pageQuery) string {
	var query []string
	if q.regen {
		query = append(query, "regen=1")
	}
	if q.whole {
		query = append(query, "whole=1")
	}
	if q.own {
		query = append(query, "own=1")
	}
	if len(query) == 0 {
		return wikiPath(title)
	}
	return wikiPath(title) + "?" + strings.Join(query, "&")
}

// pageEvent is the JSON data of a draft, done or failed event.
type pageEvent struct {
	HTML   string `json:"html,omitempty"`
	Status string `json:"status"`
	Canvas int    `json:"canvas"`
	Step   int    `json:"step"`
}

func (s *Server) handlePageEvents(w http.ResponseWriter, r *http.Request) {
	title, _ := pageTitle(r, "/events"+assets.WikiPrefix)
	if err := assets.ReadableTitle(title); err != nil {
		http.Error(w, fmt.Sprintf("No page at %s: %v. Type another topic.", clip(shownPath(r), 200), err), http.StatusNotFound)
		return
	}
	if titleTooLong(w, title) {
		return
	}
	sse, ok := s.newSSE(w)
	if !ok {
		http.Error(w, "streaming is not supported by this connection", http.StatusInternalServerError)
		return
	}
	defer sse.end()
	p, failed := s.developPage(r.Context(), title, readPageQuery(r),
		func() error { return sse.comment("waiting for the model") },
		func(ev pageEvent) error { return sse.event("draft", ev) })
	if failed != "" {
		sse.event("failed", pageEvent{Status: failed})
		return
	}
	sse.event("done", pageEvent{HTML: p.html, Status: p.status})
}

// developPage writes title's page asked as q — the cache's unless q.regen, else a new
// generation, queued behind the running one and superseding the page being
// written — and returns it, or in failed the reason, as the status line says
// it. waiting is called while the page waits for the model; draft, when not
// nil, gets the sanitized drafts, at most one per FrameInterval; an error from
// either (the browser went away) stops the generation.
func (s *Server) developPage(parent context.Context, title string, q pageQuery, waiting func() error, draft func(pageEvent) error) (p finishedPage, failed string) {
	m, merr := s.model(parent) // first: a model switch forgets the pages cached
	title = develop.PageTitle(title, m.Leads)
	if p, ok := s.pages.get(q.key(title)); ok && !q.regen {
		p.status += " · from the cache"
		return p, ""
	}
	if merr != nil {
		s.logf("server: page %q: no model: %v", clip(title, 80), merr)
		return p, "No model is available: " + clip(merr.Error(), 300)
	}
	ctx, end := s.beginPage(parent)
	defer end()

	dev := develop.New(m.Vocab, nil)
	box := newMailbox[pageEvent]()
	req := develop.PageRequest(title, m.PagePrompt, m.Leads, q.own) // the entry, held after the heading where it fits, unless own
	req.Mode, req.Seed, req.Sampling = m.PageMode, s.opts.Seed, m.Sampling
	req.OnEvent = func(ev engine.Event) {
		if ev.Kind == engine.EventDone || draft == nil {
			return // the result below is the final word
		}
		html := dev.Text(ev)
		box.put(pageEvent{HTML: html, Status: dev.Status(ev), Canvas: ev.Canvas, Step: ev.Step})
	}
	if c, ok := m.Engine.(checker); ok {
		if _, err := c.Check(req); err != nil {
			s.logf("server: page %q refused: %v", clip(title, 80), clip(err.Error(), 300))
			return p, "This topic cannot be written as one page: " + clip(err.Error(), 300) + ". Try a shorter topic."
		}
	}
	release, err := s.queue.wait(ctx, s.opts.KeepAlive, waiting)
	if err != nil {
		return p, "Stopped: " + err.Error() + "."
	}
	defer release()
	type outcome struct {
		res *engine.Result
		err error
	}
	finished := make(chan outcome, 1)
	go func() {
		res, err := s.generate(ctx, &m, req)
		finished <- outcome{res, err}
	}()

	var last time.Time
	var out outcome
loop:
	for {
		select {
		case out = <-finished:
			break loop
		case <-box.kick:
		}
		if wait := s.opts.FrameInterval - time.Since(last); wait > 0 {
			select {
			case out = <-finished:
				break loop
			case <-time.After(wait):
			}
		}
		if ev, ok := box.take(); ok {
			ev.HTML = renderHTML(ev.HTML)
			if err := draft(ev); err != nil {
				// The browser went away; the request context cancels the generation.
				<-finished
				return p, "Stopped: the browser went away."
			}
			last = time.Now()
		}
	}

	switch {
	case out.err != nil:
		s.logf("server: page %q: %v", clip(title, 80), clip(out.err.Error(), 300))
		return p, "Could not write the page: " + clip(out.err.Error(), 300)
	case out.res.StopReason == engine.StopCancelled:
		if cause := context.Cause(ctx); errors.Is(cause, errSuperseded) || errors.Is(cause, errShutdown) {
			return p, "Stopped: " + cause.Error() + "."
		}
		return p, "Stopped."
	}
	p = finishedPage{html: renderHTML(htmlsafe.Relink(out.res.Text, m.Leads.Has)), status: develop.DoneStatus(out.res, m.Leads.Len() > 0)}
	s.pages.put(q.key(title), p)
	return p, ""
}

func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(staticFS, path.Join("static", name))
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "private, max-age=3600")
	_, _ = w.Write(b)
}

// renderHTML turns model text (possibly holding noise runes) into the HTML the
// browser gets: parsed (which balances the tags of a half-written draft), runs
// of noise runes in text turned into <span class="noise"> with visible glyphs
// and dropped from attribute values, then reduced by htmlsafe.Sanitize, the
// last step, so everything served is the sanitizer's output.
func renderHTML(untrusted string) string {
	if len(untrusted) > htmlsafe.MaxInputBytes { // Sanitize cuts too; keep the parse small
		cut := htmlsafe.MaxInputBytes
		for cut > 0 && !utf8.RuneStart(untrusted[cut]) {
			cut--
		}
		untrusted = untrusted[:cut]
	}
	ctx := &html.Node{Type: html.ElementNode, Data: "main", DataAtom: atom.Main}
	nodes, err := html.ParseFragment(strings.NewReader(untrusted), ctx)
	if err != nil {
		return htmlsafe.Sanitize(untrusted)
	}
	for _, n := range nodes { // give top-level text a parent to hold its noise spans
		ctx.AppendChild(n)
	}
	markNoise(ctx)
	var b strings.Builder
	for n := ctx.FirstChild; n != nil; n = n.NextSibling {
		if err := html.Render(&b, n); err != nil {
			return htmlsafe.Sanitize(untrusted)
		}
	}
	return htmlsafe.Sanitize(b.String())
}

// markNoise rewrites the noise runes under n, iteratively (hostile depth).
// Raw-text elements (script, style…) are left alone: the sanitizer drops them.
func markNoise(root *html.Node) {
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Textarea, atom.Title, atom.Xmp, atom.Iframe, atom.Noembed,
				atom.Noframes, atom.Noscript, atom.Plaintext:
				continue
			}
			for i, a := range n.Attr {
				n.Attr[i].Val = strings.Map(func(r rune) rune {
					if htmlsafe.IsNoise(r) {
						return -1
					}
					return r
				}, a.Val)
			}
		}
		if n.Type == html.TextNode && strings.ContainsFunc(n.Data, htmlsafe.IsNoise) {
			splitNoiseText(n)
			continue
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, c)
		}
	}
}

// splitNoiseText replaces text node n (which has a parent) by its runs: plain
// text, and noise as <span class="noise">glyphs</span>.
func splitNoiseText(n *html.Node) {
	parent := n.Parent
	text := n.Data
	add := func(run string, noisy bool) {
		t := &html.Node{Type: html.TextNode, Data: run}
		if noisy {
			t.Data = htmlsafe.ShowNoise(run)
			span := &html.Node{Type: html.ElementNode, Data: "span", DataAtom: atom.Span,
				Attr: []html.Attribute{{Key: "class", Val: "noise"}}}
			span.AppendChild(t)
			t = span
		}
		parent.InsertBefore(t, n)
	}
	start, noisy := 0, false
	for i, r := range text {
		isN := htmlsafe.IsNoise(r)
		if i > start && isN != noisy {
			add(text[start:i], noisy)
			start = i
		}
		noisy = isN
	}
	if start < len(text) {
		add(text[start:], noisy)
	}
	parent.RemoveChild(n)
}

// finishedPage is a cached page.
type finishedPage struct {
	html   string // rendered, sanitized
	status string
}

// pageCache keeps the last finished pages, oldest dropped first.
type pageCache struct {
	mu    sync.Mutex
	max   int
	order []string
	pages map[string]finishedPage
}

func newPageCache(max int) *pageCache {
	return &pageCache{max: max, pages: map[string]finishedPage{}}
}

func (c *pageCache) get(title string) (finishedPage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages[title]
	return p, ok
}

func (c *pageCache) put(title string, p finishedPage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pages[title]; !ok {
		c.order = append(c.order, title)
	}
	c.pages[title] = p
	for len(c.order) > c.max {
		delete(c.pages, c.order[0])
		c.order = c.order[1:]
	}
}

// titles are the titles of the pages kept, oldest first, each once: the
// model's own page of a title with an entry is listed by its entry's.
func (c *pageCache) titles() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ts []string
	for _, k := range c.order {
		if !strings.HasSuffix(k, ownKey) {
			ts = append(ts, k)
		}
	}
	return ts
}

func (c *pageCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order, c.pages = nil, map[string]finishedPage{}
}

// mailbox holds the latest value put, for a consumer that may skip values:
// put never blocks, kick signals that a value is waiting.
type mailbox[T any] struct {
	mu   sync.Mutex
	v    T
	has  bool
	kick chan struct{}
}

func newMailbox[T any]() *mailbox[T] { return &mailbox[T]{kick: make(chan struct{}, 1)} }

func (m *mailbox[T]) put(v T) {
	m.mu.Lock()
	m.v, m.has = v, true
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *mailbox[T]) take() (T, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.v, m.has
	var zero T
	m.v, m.has = zero, false
	return v, ok
}

// sse writes Server-Sent Events. Each write must go through within the write
// timeout: a client that stops reading ends its stream (and its generation)
// instead of holding the engine.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *Server) newSSE(w http.ResponseWriter) (*sse, bool) {
	if _, ok := w.(http.Flusher); !ok {
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, rc: http.NewResponseController(w), timeout: s.timeouts.write}
	return e, e.write("") == nil
}

// end lifts the write deadline, which would otherwise outlive the stream on a
// kept-alive connection.
func (s *sse) end() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// write sends text (possibly none) and flushes it, within the write timeout.
func (s *sse) write(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if text != "" {
		if _, err := io.WriteString(s.w, text); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

// comment sends an SSE comment, which clients ignore: it keeps a waiting
// stream's connection alive.
func (s *sse) comment(text string) error { return s.write(": " + text + "\n\n") }

// event sends one event with v as JSON data (name "" sends an unnamed event).
func (s *sse) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(name, string(data))
}

func (s *sse) raw(name, data string) error {
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: " + data + "\n\n")
	return s.write(b.String())
}
