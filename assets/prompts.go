package assets

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

// The prompt templates live in embedded text files so they can be read (and
// reviewed) as the model sees them. A template's trailing newline is not part of
// the prompt; {{name}} marks a value the builder fills in.
//
//go:embed prompts/*.txt
var promptFS embed.FS

var (
	encyclopediaTemplate = mustTemplate("prompts/encyclopedia.txt")
	chatSystem           = mustTemplate("prompts/chat_system.txt")
	chatElsewhere        = mustTemplate("prompts/chat_elsewhere.txt")
	desktopSystem        = mustTemplate("prompts/desktop_system.txt")
	desktopClickTemplate = mustTemplate("prompts/desktop_click.txt")
)

// mustTemplate reads an embedded template; a missing file is a build defect
// (the embed pattern guarantees presence), caught by any test run.
func mustTemplate(name string) string {
	b, err := promptFS.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("assets: embedded template %s: %v", name, err))
	}
	return strings.TrimRight(string(b), "\n")
}

// CleanLine collapses every run of white space (newlines included) in s to one
// space and trims the ends. The prompt builders pass every value through it, so
// a value cannot add lines to a prompt and the corpus and the app agree on the
// spelling of a title however it was typed.
func CleanLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// EncyclopediaOpening is the start of every encyclopedia page, decided before
// the model writes: the title as the page's heading line,
//
//	<h1>TITLE</h1>
//
// with its newline, spelled and escaped exactly as the corpus writes it. The
// Encyclopedia screen, `darkroom wiki` and the local server send it as
// engine.Request.Opening (followed by engine.Request.Lead, the entry as the
// model's folder holds it, where it holds one), so diffusion holds it at the head of the
// canvas and every page carries the title that was asked for; the model writes
// the rest.
func EncyclopediaOpening(title string) string {
	return "<h1>" + EscapeText(CleanLine(title)) + "</h1>\n"
}

// EscapeText escapes the three characters the page and screen formats escape in
// text (& < >); quotes stay as they are (the only attribute, href, is a slug).
func EscapeText(s string) string { return textEscaper.Replace(s) }

var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// EncyclopediaPrompt is the user turn the Encyclopedia screen and `darkroom wiki`
// send for a topic (no system turn), and the prompt of every "page" training
// example:
//
//	Write the Darkroom encyclopedia page for: TITLE
//
// The answer is a page in the package's page format (see the package doc).
func EncyclopediaPrompt(title string) string {
	return fill(encyclopediaTemplate, "title", CleanLine(title))
}

// A user's own prompts. A demo built on a general model (DiffusionGemma) may ask
// for other pages than the Darkroom encyclopedia's ("Write a Star Wars fan wiki
// page for: {{title}}") and draw another make-believe computer; the app's
// Settings keep such prompts, and the Encyclopedia, browser mode, `darkroom wiki`
// and the Desktop send them in the built-in ones' place. Darkroom Mini was
// trained on the built-in prompts alone: it writes worse pages for any other.

// EncyclopediaTemplate is the built-in page prompt's template, {{title}} where
// the title goes (the text a user's own starts from).
func EncyclopediaTemplate() string { return encyclopediaTemplate }

// PagePrompt is EncyclopediaPrompt on a user's own template ("" is the
// built-in one), which CheckPageTemplate has accepted.
func PagePrompt(template, title string) string {
	if strings.TrimSpace(template) == "" {
		return EncyclopediaPrompt(title)
	}
	return fill(strings.TrimSpace(template), "title", CleanLine(title))
}

// CheckPageTemplate says why a page prompt template cannot be used: it must
// name the title once with {{title}}, and no other {{…}}.
func CheckPageTemplate(template string) error {
	if strings.TrimSpace(template) == "" {
		return nil // the built-in one
	}
	switch n := strings.Count(template, "{{title}}"); {
	case n == 0:
		return fmt.Errorf("the prompt must say where the page's title goes, with {{title}}")
	case n > 1:
		return fmt.Errorf("{{title}} may appear once in the prompt, not %d times", n)
	}
	if rest := strings.Replace(template, "{{title}}", "", 1); strings.Contains(rest, "{{") {
		return fmt.Errorf("{{title}} is the only placeholder a page prompt takes")
	}
	return nil
}

// DesktopSystemOr is the Desktop's system turn: a user's own (own, where it is
// not blank) or the built-in DesktopSystem.
func DesktopSystemOr(own string) string {
	if s := strings.TrimSpace(own); s != "" {
		return s
	}
	return DesktopSystem()
}

// ChatSystem is the system turn of Darkroom Mini's chat: it says honestly what
// the model is (a small computing encyclopedia, not a general assistant). The
// chat training examples carry it, and the Chat screen sends it as the default
// system prompt when Darkroom Mini is the active model.
func ChatSystem() string { return chatSystem }

// ChatElsewhere is Darkroom Mini's answer to a message it is not for — a
// greeting, a task, a question on anything but a term (ChatSystem: "for
// anything else, say that a larger model from the Library will do better").
// The corpus's off-topic chat examples answer with it, so the model says it
// itself; train eval counts the answers that begin with its first sentence.
func ChatElsewhere() string { return chatElsewhere }

// ChatQuestions are the user turns of the chat training examples for a topic X,
// "%s" standing for the title. The first is asked for every entry; the corpus
// picks one more per entry deterministically.
var ChatQuestions = []string{
	"What is %s?",
	"What does %s mean?",
	"Explain %s.",
	"Tell me about %s.",
	"Define %s.",
	"What is meant by %s in computing?",
}

// ChatTopic is the topic of a chat message that asks about one the way the
// chat examples ask (ChatQuestions, ChatArticleQuestion) or as people often do
// ("what's X", "who is X", "what are X", "what does X stand for"), case, spacing
// and the ending's punctuation aside: "what is a compiler?" → "a compiler"
// (the article is the caller's to drop: TopicBare). ok is false for any other message.
func ChatTopic(message string) (topic string, ok bool) {
	topic, _, ok = chatTopic(message)
	return topic, ok
}

// TopicBare is a ChatTopic topic without its leading article ("a ", "an " or
// "the ", in any case): "a compiler" → "compiler". A topic with none is
// returned as it is.
func TopicBare(topic string) string {
	for _, article := range []string{"a ", "an ", "the "} {
		if len(topic) > len(article) && strings.EqualFold(topic[:len(article)], article) {
			return strings.TrimSpace(topic[len(article):])
		}
	}
	return topic
}

// chatTopic is ChatTopic, with asked true where the message asks as the chat
// examples do (ChatQuestions, ChatArticleQuestion) — the questions the model
// answered with a definition in training, and none of its off-topic chats
// ("What's the weather like today?" is one, answered with ChatElsewhere).
func chatTopic(message string) (topic string, asked, ok bool) {
	q := strings.TrimRight(CleanLine(message), "?.! ")
	for _, f := range chatTopicForms {
		if len(q) <= len(f.before)+len(f.after) ||
			!strings.EqualFold(q[:len(f.before)], f.before) || !strings.EqualFold(q[len(q)-len(f.after):], f.after) {
			continue
		}
		if t := strings.TrimSpace(q[len(f.before) : len(q)-len(f.after)]); t != "" {
			return t, f.asked, true
		}
	}
	return "", false, false
}

// chatTopicForms are the questions ChatTopic knows, the text before and after
// the topic (without the ending's punctuation), longest first so that "What is
// meant by X in computing" is not read as "What is X".
var chatTopicForms = func() []chatForm {
	forms := []chatForm{
		{"what's ", "", false}, {"who is ", "", false}, {"who was ", "", false}, {"what was ", "", false},
		{"what are ", "", false}, {"what does ", " stand for", false}, {"what is the meaning of ", "", false},
		{"meaning of ", "", false}, {"what is meant by ", "", false},
	}
	for _, q := range ChatQuestions {
		before, after, _ := strings.Cut(q, "%s")
		forms = append(forms, chatForm{before, strings.TrimRight(after, "?.! "), true})
	}
	slices.SortStableFunc(forms, func(a, b chatForm) int {
		return (len(b.before) + len(b.after)) - (len(a.before) + len(a.after))
	})
	return forms
}()

// chatForm is a question ChatTopic knows: the text before and after the topic,
// and whether the chat examples ask so (chatTopic).
type chatForm struct {
	before, after string
	asked         bool
}

// ChatQuestion returns phrasing i (mod len(ChatQuestions)) of the question about title.
func ChatQuestion(i int, title string) string {
	n := len(ChatQuestions)
	return fmt.Sprintf(ChatQuestions[((i%n)+n)%n], CleanLine(title))
}

// ChatArticleQuestion is the question about a common noun as people type it,
// with its article: "What is a compiler?", "What is an interrupt?". ok is false
// for a title that does not start with a lower-case letter ("Unix", "C++",
// "100%"), which is asked without one. The corpus asks it for every entry it
// holds (a third chat): asked only "What is compiler?", the Mini copied "a
// compiler" from the question into its answer's heading as "al compil".
// The article is "an" before a, e, i and o; "a" otherwise ("a user", "a URL").
func ChatArticleQuestion(title string) (q string, ok bool) {
	t := CleanLine(title)
	if t == "" || t[0] < 'a' || t[0] > 'z' {
		return "", false
	}
	article := "a"
	if strings.IndexByte("aeio", t[0]) >= 0 {
		article = "an"
	}
	return "What is " + article + " " + t + "?", true
}

// DesktopOpening is the start of every Desktop screen, decided before the model
// draws: the menu bar line (see the package doc) with its newline. The corpus
// writes it at the head of every screen and the Desktop demo sends it as
// engine.Request.Opening, so every screen keeps a working Applications menu.
func DesktopOpening() string { return desktopMenuBar + "\n" }

const desktopMenuBar = `<nav><a href="/ui/menu-apps">Applications</a> <a href="/ui/menu-help">Help</a></nav>`

// DesktopSystem is the Desktop demo's fixed "UI constitution": the system turn of
// every click request. It also tells the model the screen format (see the package doc).
func DesktopSystem() string { return desktopSystem }

// Click is one click on a Desktop screen: what the app sends to get the next
// screen.
type Click struct {
	ElementID string // the ID from the clicked element's href="/ui/ID", e.g. "app-gimp"
	Text      string // the element's visible text, e.g. "gimp"
	App       string // the <h1> title of the screen clicked on; "desktop" before the first screen
}

// DesktopPrompt is the user turn for a click (after DesktopSystem as the system
// turn); the previous screen is not in the prompt, the app passes its tokens as
// the warm-start canvas. The first screen (home) is the answer to the power-on
// click Click{ElementID: "power", Text: "Power on", App: "desktop"}; the model is
// trained on that click, on Click{}, and on every link of every screen of the
// training desktop with App set to that screen's <h1>. Empty fields are written as "desktop" (App) and "-"
// (ElementID, Text) so the prompt shape never changes:
//
//	Click on the screen.
//	element: app-gimp
//	text: gimp
//	app: desktop
//	Draw the next screen.
func DesktopPrompt(c Click) string {
	el, text, app := CleanLine(c.ElementID), CleanLine(c.Text), CleanLine(c.App)
	if el == "" {
		el = "-"
	}
	if text == "" {
		text = "-"
	}
	if app == "" {
		app = "desktop"
	}
	return fill(desktopClickTemplate, "element", el, "text", text, "app", app)
}

// fill replaces {{key}} with value for each key, value pair.
func fill(tmpl string, kv ...string) string {
	pairs := make([]string, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, "{{"+kv[i]+"}}", kv[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}
