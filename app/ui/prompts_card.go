package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
)

// promptsCard is Settings' "Demo prompts": what the Encyclopedia (and browser
// mode's pages) and the Desktop ask the model, editable — a demo on a general
// model writes other pages than the Darkroom encyclopedia's, and draws another
// make-believe computer. Each box starts from the prompt in use (the built-in
// one until changed); one equal to the built-in one is kept as "" (so a later
// Darkroom's built-in prompt applies). A page prompt the box refuses (no
// {{title}}) is not kept; the box says why.
func (s *SettingsScreen) promptsCard() fyne.CanvasObject {
	v := s.app.deps.Settings.Get()
	page := widget.NewMultiLineEntry()
	page.Wrapping = fyne.TextWrapWord
	page.SetMinRowsVisible(2)
	page.SetText(orDefault(v.PagePrompt, assets.EncyclopediaTemplate()))
	page.Validator = assets.CheckPageTemplate
	page.OnChanged = func(text string) {
		if assets.CheckPageTemplate(text) != nil {
			return // the box says why
		}
		s.save(func(v *settings.Values) { v.PagePrompt = ownPrompt(text, assets.EncyclopediaTemplate()) })
	}
	desk := widget.NewMultiLineEntry()
	desk.Wrapping = fyne.TextWrapWord
	desk.SetMinRowsVisible(4)
	desk.SetText(orDefault(v.DesktopPrompt, assets.DesktopSystem()))
	desk.OnChanged = func(text string) {
		s.save(func(v *settings.Values) { v.DesktopPrompt = ownPrompt(text, assets.DesktopSystem()) })
	}
	s.pagePrompt, s.deskPrompt = page, desk
	reset := widget.NewButtonWithIcon("Use the built-in prompts", theme.HistoryIcon(), func() {
		page.SetText(assets.EncyclopediaTemplate())
		desk.SetText(assets.DesktopSystem())
	})
	form := widget.NewForm(
		widget.NewFormItem("Encyclopedia page ({{title}}: the page's title)", page),
		widget.NewFormItem("Desktop (its system prompt)", desk))
	return noteCard("Demo prompts", "What the Encyclopedia, its pages in the browser, and the Desktop ask the model. "+
		"Darkroom Mini was trained on the built-in prompts and writes worse pages for others; a general model such as "+
		"DiffusionGemma writes what yours ask for.", container.NewVBox(form, container.NewHBox(reset)))
}

// orDefault is own, or def where own is blank.
func orDefault(own, def string) string {
	if strings.TrimSpace(own) == "" {
		return def
	}
	return own
}

// ownPrompt is what Settings keep of a prompt typed over the built-in def: ""
// where it is def (or blank), else the text.
func ownPrompt(text, def string) string {
	if t := strings.TrimSpace(text); t != "" && t != strings.TrimSpace(def) {
		return text
	}
	return ""
}
