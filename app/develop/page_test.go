package develop

import (
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
)

// TestPageRequest: a known title's page holds its entry after the heading and
// ends there; asked as the model's own, or for a title with no entry, the
// heading only — the same prompt and heading either way; a user's own page
// prompt takes the built-in one's place.
func TestPageRequest(t *testing.T) {
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system. It runs.</p>", nil)
	for _, c := range []struct {
		title string
		own   bool
		lead  string
	}{
		{"Unix", false, "<p>An operating system. It runs.</p>"},
		{"unix", false, "<p>An operating system. It runs.</p>"}, // found as Leads.Lead finds it
		{"Unix", true, ""},
		{"Bell Labs", false, ""},
	} {
		req := PageRequest(c.title, "", &leads, c.own)
		if req.Prompt != assets.EncyclopediaPrompt(c.title) || req.Opening != assets.EncyclopediaOpening(c.title) || req.Lead != c.lead || !req.LeadEnds {
			t.Errorf("%q own=%v: prompt %q, opening %q, lead %q, ends %v; want lead %q ending the page", c.title, c.own, req.Prompt, req.Opening, req.Lead, req.LeadEnds, c.lead)
		}
	}
	if req := PageRequest("Unix", "", nil, false); req.Lead != "" {
		t.Errorf("a model with no entries: lead %q", req.Lead)
	}
	// The user's own page prompt (Settings) in the built-in one's place.
	if req := PageRequest("Death Star", "Write a Star Wars fan wiki page for: {{title}}", nil, false); req.Prompt != "Write a Star Wars fan wiki page for: Death Star" ||
		req.Opening != assets.EncyclopediaOpening("Death Star") {
		t.Errorf("own prompt: %q, opening %q", req.Prompt, req.Opening)
	}
}

// TestStartPage: for a model with no entries every page is its writing; for
// one with entries the start page says which pages are entries, offers the
// suggested topics it holds as entries and the others as its own writing, and
// names no topic the wrong way round.
func TestStartPage(t *testing.T) {
	href := func(t string) string { return "/w/" + t }
	plain := StartPage(nil, "HOW", href)
	if !strings.Contains(plain, "Every page here is written by the model") || !strings.Contains(plain, "HOW") || strings.Contains(plain, "entr") {
		t.Errorf("no entries: %s", plain)
	}
	for _, topic := range EntryTopics {
		if !strings.Contains(plain, `<a href="/w/`+topic+`">`) {
			t.Errorf("no entries: %q not offered", topic)
		}
	}
	var leads assets.Leads
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system. It runs.</p>", nil)
	leads.Add(OwnTopics[0], "<h1>"+OwnTopics[0]+"</h1>\n<p>A road. It is fast.</p>", nil)
	page := StartPage(&leads, "HOW", href)
	entries, own, ok := strings.Cut(page, "Topics it has no entry for")
	if !ok || !strings.Contains(page, "holds 2 entries ") || !strings.Contains(page, "HOW") {
		t.Fatalf("with entries: %s", page)
	}
	if !strings.Contains(entries, `>Unix</a>`) || strings.Contains(entries, ">Lisp</a>") || strings.Contains(own, ">"+OwnTopics[0]+"</a>") || !strings.Contains(own, ">"+OwnTopics[1]+"</a>") {
		t.Errorf("with entries, topics offered the wrong way round:\n%s", page)
	}
}

// TestStartTopicsOfTheBuiltinMini: the start pages offer the built-in Darkroom
// Mini's entries as entries and its own writing as its own: each of
// EntryTopics is an entry its folder holds, none of OwnTopics is — so the
// first page a new user opens from either list is what the page says it is.
func TestStartTopicsOfTheBuiltinMini(t *testing.T) {
	fsys, err := assets.Mini()
	if err != nil {
		t.Fatal(err)
	}
	leads, err := assets.ReadLeads(fsys)
	if err != nil || leads.Len() == 0 {
		t.Fatalf("the built-in Mini's entries: %d, %v", leads.Len(), err)
	}
	for _, topic := range EntryTopics {
		if !leads.Has(topic) {
			t.Errorf("%q is offered as an entry; the built-in Mini holds none for it", topic)
		}
	}
	for _, topic := range OwnTopics {
		if leads.Has(topic) {
			t.Errorf("%q is offered as the model's own writing; the built-in Mini holds its entry", topic)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 17227: "17,227", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
