package develop

import (
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// PageTitle is the title a typed topic's page is written under, the app's,
// the browser's and `darkroom wiki`'s alike: the title of the entry it names
// where the model's folder holds one (assets.Leads.Find: its case, article or
// plural aside — "compilers" opens "compiler", "the kernel" "kernel"), else
// the topic as typed. Left to the model, such a topic got a page of its own
// invention though its entry was held.
func PageTitle(topic string, leads *assets.Leads) string {
	if title, ok := leads.Find(topic); ok {
		return title
	}
	return topic
}

// PageRequest is the request for title's encyclopedia page — the Encyclopedia
// screen's, browser mode's and `darkroom wiki`'s alike: the encyclopedia
// prompt, the title held as the page's heading, and, where the model's folder
// holds an entry for title (leads; nil holds none) and own is false, that entry
// held after the heading, ending the page (engine.Request.LeadEnds: a known
// title's page is its entry, as written). own is "let the model write it": the
// heading only, the rest the model's own, as for a title it holds no entry
// for. title is a page title (PageTitle); template is the page prompt's
// (assets.PagePrompt: "" the built-in one, else the user's own from Settings).
// The caller sets the mode, seed, sampling and events.
func PageRequest(title, template string, leads *assets.Leads, own bool) engine.Request {
	req := engine.Request{
		Prompt:   assets.PagePrompt(template, title),
		Opening:  assets.EncyclopediaOpening(title),
		LeadEnds: true,
	}
	if !own {
		req.Lead, _ = leads.Lead(title)
	}
	return req
}

// The words and bounds the screens share around a page's entry — the app's
// Encyclopedia and browser mode alike, and `darkroom wiki`'s bound.
const (
	// LetModelWrite is offered over a page that is its title's entry: the
	// page written again by the model alone (PageRequest's own).
	LetModelWrite = "Let the model write it"
	// ShowEntry is offered over the model's own page of a title whose entry
	// the folder holds: the entry back.
	ShowEntry = "Show the entry"
	// SimilarNote heads the entries offered over the page of a title the
	// folder holds none for (assets.Leads.Similar).
	SimilarNote = "The model holds no entry for this title: the page is its own writing, often wrong. Entries with a similar title:"
	// SimilarMax is how many entries are offered for a title with none.
	SimilarMax = 3
	// SuggestMax is how many entries are offered as a topic is typed
	// (assets.Leads.Prefixed).
	SuggestMax = 6
)

// OwnTopics are topics the start pages offer as the model's own writing:
// computing titles Darkroom Mini holds no entry for (held out of its training,
// assets/training), so that a new user sees a page develop — a known title's
// page is its entry, shown at once. Where a model's folder holds one of them it
// is not offered (StartPage).
var OwnTopics = []string{"information superhighway", "line feed", "noise shaping", "capability"}

// EntryTopics are the start pages' first suggestions: entries Darkroom Mini
// holds, and topics any model can write.
var EntryTopics = []string{"Unix", "hacker", "Lisp", "kernel", "compiler", "Emacs", "TCP/IP", "bit"}

// StartPage is the body of the encyclopedia's start page (HTML), the app's and
// the browser's alike: what a page is — the model's writing, or the entry
// where the model's folder holds one (leads) — how it is written (how, the
// screen's own sentences on the modes), and topics to start with, each linked
// by href.
func StartPage(leads *assets.Leads, how string, href func(title string) string) string {
	var b strings.Builder
	list := func(topics []string, keep func(string) bool) {
		b.WriteString("<ul>")
		for _, t := range topics {
			if keep(t) {
				fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, html.EscapeString(href(t)), html.EscapeString(t))
			}
		}
		b.WriteString("</ul>")
	}
	b.WriteString("<h1>Darkroom Encyclopedia</h1>")
	if leads.Len() == 0 {
		b.WriteString("<p>Every page here is written by the model on this computer as you open it. ")
		b.WriteString(html.EscapeString(how))
		b.WriteString("</p><p>Type a topic above, or start with one of these:</p>")
		list(EntryTopics, func(string) bool { return true })
		b.WriteString("<p>Every link in a page writes the page for that topic.</p>")
		return b.String()
	}
	fmt.Fprintf(&b, "<p>This model holds %s from the dictionaries it learned from: a topic it holds opens its entry "+
		"at once, as written. Any other topic the model writes on this computer as you open it — its own writing, "+
		"which reads like an entry and is often wrong. ", thousands(leads.Len())+" "+plural.Word(leads.Len(), "entry", "entries"))
	b.WriteString(html.EscapeString(how))
	b.WriteString("</p><p>Entries it holds:</p>")
	list(EntryTopics, leads.Has)
	b.WriteString("<p>Topics it has no entry for, which the model writes alone:</p>")
	list(OwnTopics, func(t string) bool { return !leads.Has(t) })
	b.WriteString("<p>Every link in a page opens the page for that topic. Over an entry, " +
		"“Let the model write it” shows what the model writes for it alone.</p>")
	return b.String()
}

// thousands is n with its thousands grouped by commas: 17,227.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
