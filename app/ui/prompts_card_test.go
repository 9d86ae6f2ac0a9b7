package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
)

// TestDemoPrompts: Settings' Demo prompts start from the built-in ones; a page
// prompt typed there is what the Encyclopedia asks (and browser mode: the
// server's model carries it), a Desktop prompt the Desktop's system turn; a page
// prompt without {{title}} is refused and not kept; "Use the built-in prompts"
// brings them back, kept as none of the user's (so a later Darkroom's built-in
// ones apply).
func TestDemoPrompts(t *testing.T) {
	m := &fakeModel{answers: func(req engine.Request) string {
		if len(req.Messages) > 0 {
			return `<section><h2>Window</h2><p>x</p></section>`
		}
		return wikiAnswers(req)
	}}
	a := newTestApp(t, m, "")
	s := a.Settings
	if s.pagePrompt.Text != assets.EncyclopediaTemplate() || s.deskPrompt.Text != assets.DesktopSystem() {
		t.Fatalf("the boxes start from %q / %q", s.pagePrompt.Text, s.deskPrompt.Text)
	}
	asUI(func() { s.pagePrompt.SetText("Write a Star Wars page") })
	if err := uiRead(s.pagePrompt.Validate); err == nil || a.deps.Settings.Get().PagePrompt != "" {
		t.Fatalf("a page prompt without {{title}}: validate %v, kept %q", err, a.deps.Settings.Get().PagePrompt)
	}
	asUI(func() {
		s.pagePrompt.SetText("Write a Star Wars fan wiki page for: {{title}}")
		s.deskPrompt.SetText("You are a make-believe Amiga.")
	})
	last := func() engine.Request { c := m.Calls(); return c[len(c)-1].req }

	asUI(func() { a.Encyclopedia.Navigate("Death Star") })
	a.Encyclopedia.run.Wait()
	if got := last().Prompt; got != "Write a Star Wars fan wiki page for: Death Star" {
		t.Errorf("the Encyclopedia asked %q", got)
	}
	if sm, err := a.serverOptions().Model(context.Background()); err != nil || sm.PagePrompt != "Write a Star Wars fan wiki page for: {{title}}" {
		t.Errorf("browser mode's pages: prompt %q, %v", sm.PagePrompt, err)
	}
	asUI(func() { a.Desktop.Click(assets.Click{ElementID: "power", Text: "Power on", App: "desktop"}) })
	a.Desktop.run.Wait()
	if msgs := last().Messages; len(msgs) == 0 || msgs[0].Content != "You are a make-believe Amiga." {
		t.Errorf("the Desktop's system turn: %+v", msgs)
	}

	tap(buttonOnScreen(t, s.content, "Use the built-in prompts"))
	if v := a.deps.Settings.Get(); v.PagePrompt != "" || v.DesktopPrompt != "" || s.pagePrompt.Text != assets.EncyclopediaTemplate() {
		t.Errorf("after Use the built-in prompts: kept %q / %q, box %q", v.PagePrompt, v.DesktopPrompt, s.pagePrompt.Text)
	}
	asUI(func() { a.Encyclopedia.Navigate("Unix") })
	a.Encyclopedia.run.Wait()
	if got := last().Prompt; !strings.HasPrefix(got, "Write the Darkroom encyclopedia page for: ") {
		t.Errorf("the Encyclopedia asked %q after the reset", got)
	}
}
