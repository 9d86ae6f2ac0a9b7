package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/ui/settings"
	"github.com/darkroomlabs/darkroom/assets"
)

// newFirstRun is the welcome screen of the first start: what this PC has, where
// models will be stored, and that Darkroom Mini is ready to use.
func newFirstRun(a *App) fyne.CanvasObject {
	icon := canvas.NewImageFromResource(fyne.NewStaticResource("darkroom.png", assets.IconPNG()))
	icon.FillMode = canvas.ImageFillContain
	icon.SetMinSize(scaled(96, 96))
	title := widget.NewRichTextFromMarkdown("# Welcome to Darkroom\n\nLanguage models that develop whole pages at once, like a photograph, on your own PC. Nothing leaves this computer.")
	title.Wrapping = fyne.TextWrapWord

	hw := []string{"Hardware detection is not available in this build."}
	if a.deps.System.Hardware != nil {
		hw = a.deps.System.Hardware()
	}
	hwText := widget.NewLabel(joinLines(hw))
	hwText.Wrapping = fyne.TextWrapWord

	storeText := "The models library is not available in this build."
	if lib := a.deps.Library; lib != nil {
		if dir, free, err := lib.Store(); err == nil {
			storeText = "Downloaded models go to " + dir + " (" + formatBytes(free) + " free). You can change this in the Library."
		} else {
			storeText = "Downloaded models go to " + dir + "."
		}
	}
	store := widget.NewLabel(storeText)
	store.Wrapping = fyne.TextWrapWord

	mini := widget.NewLabel("")
	mini.Wrapping = fyne.TextWrapWord
	miniErr := error(nil)
	if a.deps.System.MiniReady != nil {
		miniErr = a.deps.System.MiniReady()
	}
	if miniErr == nil {
		mini.SetText("✔ Darkroom Mini is built in and ready: a small computing encyclopedia" + miniSources() + " that runs on any PC, no download needed. " +
			"It is not a general assistant — for that, get DiffusionGemma from the Library.")
		mini.Importance = widget.SuccessImportance
	} else {
		mini.SetText("Darkroom Mini is not available in this build: " + miniErr.Error())
		mini.Importance = widget.WarningImportance
	}

	start := widget.NewButtonWithIcon("Open the Encyclopedia", theme.SearchIcon(), func() {
		_ = a.deps.Settings.Update(func(v *settings.Values) { v.FirstRunDone = true })
		a.Show("Encyclopedia")
	})
	start.Importance = widget.HighImportance
	// Chat, for whoever came to talk to a model privately rather than to read
	// the encyclopedia.
	chat := widget.NewButtonWithIcon("Start a chat", theme.MailComposeIcon(), func() {
		_ = a.deps.Settings.Update(func(v *settings.Values) { v.FirstRunDone = true })
		a.Show("Chat")
	})
	lib := widget.NewButtonWithIcon("Browse the Library", theme.StorageIcon(), func() {
		_ = a.deps.Settings.Update(func(v *settings.Values) { v.FirstRunDone = true })
		a.Show("Library")
	})
	body := container.NewVBox(
		container.NewHBox(icon),
		title,
		widget.NewCard("This PC", "", hwText),
		widget.NewCard("Storage", "", store),
		widget.NewCard("Built-in model", "", mini),
		gpuCard(a, false),
		container.NewHBox(start, chat, lib),
	)
	return container.NewVScroll(container.NewCenter(container.New(&maxWidth{w: 720}, container.NewPadded(body))))
}

func joinLines(lines []string) string {
	s := ""
	for i, l := range lines {
		if i > 0 {
			s += "\n"
		}
		s += l
	}
	return s
}

// maxWidth lays its objects out at most w wide (centered content pages).
type maxWidth struct{ w float32 }

func (m *maxWidth) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	for _, o := range objs {
		s = s.Max(o.MinSize())
	}
	s.Width = max(s.Width, m.w)
	return s
}

func (m *maxWidth) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Resize(size)
		o.Move(fyne.NewPos(0, 0))
	}
}
