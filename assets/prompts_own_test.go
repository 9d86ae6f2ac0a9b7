package assets

import (
	"strings"
	"testing"
)

// TestOwnPrompts: a user's page template takes the title, cleaned as the
// built-in one takes it; a blank one is the built-in prompt; a template without
// {{title}}, with it twice, or with another placeholder is refused, saying why;
// a blank Desktop prompt is the built-in constitution.
func TestOwnPrompts(t *testing.T) {
	if got, want := PagePrompt("", "Unix"), EncyclopediaPrompt("Unix"); got != want {
		t.Errorf("blank template: %q, want the built-in %q", got, want)
	}
	if got := PagePrompt("  Write a Star Wars fan wiki page in HTML for: {{title}}\n", " Death \n Star "); got != "Write a Star Wars fan wiki page in HTML for: Death Star" {
		t.Errorf("own template: %q", got)
	}
	if err := CheckPageTemplate(EncyclopediaTemplate()); err != nil {
		t.Errorf("the built-in template: %v", err)
	}
	for template, want := range map[string]string{
		"Write a page":                    "{{title}}",
		"{{title}} and {{title}}":         "once",
		"Write {{title}} in {{language}}": "only placeholder",
	} {
		if err := CheckPageTemplate(template); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckPageTemplate(%q) = %v, want an error saying %q", template, err, want)
		}
	}
	if DesktopSystemOr(" \n") != DesktopSystem() || DesktopSystemOr(" Draw a Mac. ") != "Draw a Mac." {
		t.Error("DesktopSystemOr")
	}
}
