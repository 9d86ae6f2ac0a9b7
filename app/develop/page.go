package develop

import (
	"fmt"
	"html"
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
// for. title is a page title (PageTitle). The caller sets the mode, seed,
// sampling and events.
func PageRequest(title string, leads *assets.Leads, own bool) engine.Request {
	req := engine.Request{
		Prompt:   assets.EncyclopediaPrompt(title),
		Opening:  assets.EncyclopediaOpening(title),
		LeadEnds: true,
	}
	if !own {
		req.Lead, _ = leads.Lead(title)
	}
	return req
}

// OwnTopics are topics the start pages offer as the model's own writing:
// computing titles Darkroom Mini holds no entry for (held out of its training,
// assets/training), so that a new user sees a page develop — a known title's
// page is its entry, shown at once. Where a model's folder holds one of them it
// is not offered (StartTopics).
var OwnTopics = []string{"information superhighway", "line feed", "noise shaping", "capability"}

// EntryTopics are the start pages' first suggestions: entries Darkroom Mini
// holds, and topics any model can write.
var EntryTopics = []string{"Unix", "hacker", "Lisp", "kernel", "compiler", "Emacs", "TCP/IP", "bit"}

// StartPage is the body of the encyclopedia's start page (HTML), the app's and
// the browser's alike: what a page is — the model's writing, or the entry
// where the model's folder holds one (leads) — how it is written (how, the
// screen's own sentence on choosing the mode), and topics to start with, each
// linked by href.
func StartPage(leads *assets.Leads, how string, href func(title string) string) string {
	var b strings.Builder
	link := func(t string) {
		fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, html.EscapeString(href(t)), html.EscapeString(t))
	}
	b.WriteString("<h1>Darkroom Encyclopedia</h1>")
	if leads.Len() == 0 {
		b.WriteString("<p>Every page here is written by the model on this computer as you open it: ")
		b.WriteString(how)
		b.WriteString(" Type a topic above, or start with one of these:</p><ul>")
		for _, t := range EntryTopics {
			link(t)
		}
		b.WriteString("</ul><p>Every link in a page writes the page for that topic.</p>")
		return b.String()
	}
	fmt.Fprintf(&b, "<p>This model's folder holds %s from the dictionaries it was trained on. "+
		"A topic it holds opens its entry, as written, at once. Any other topic the model writes on this computer "+
		"as you open it — its own writing, which reads like an entry and is often wrong: ", plural.Count(leads.Len(), "entry", "entries"))
	b.WriteString(how)
	b.WriteString("</p><p>Entries it holds:</p><ul>")
	for _, t := range EntryTopics {
		if leads.Has(t) {
			link(t)
		}
	}
	b.WriteString("</ul><p>Topics it has no entry for, written by the model alone:</p><ul>")
	for _, t := range OwnTopics {
		if !leads.Has(t) {
			link(t)
		}
	}
	b.WriteString("</ul><p>Every link in a page opens the page for that topic. On an entry's page, " +
		"“Let the model write it” shows what the model writes for it alone.</p>")
	return b.String()
}
