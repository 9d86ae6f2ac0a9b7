package ui

import (
	"errors"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/hub"
	"github.com/darkroomlabs/darkroom/models/store"
)

// A model from Hugging Face that the catalog does not list — a fine-tune of
// DiffusionGemma, a new export — by its name or its page's address: the
// Library had only its catalog's cards, and `darkroom pull owner/name` for the
// rest. The download is the catalog's (models.Manager.Pull: config.json first,
// a repo the engine cannot load refused before any weights); its card appears
// with the other downloaded models.

// hubRepoCard is the Library's "Another model from Hugging Face" box.
func (l *LibraryScreen) hubRepoCard() fyne.CanvasObject {
	l.repo = newKeyEntry(l.app)
	l.repo.SetPlaceHolder("owner/name, the model's huggingface.co address, or owner/name:Q4_K_M for a GGUF")
	l.repoMsg = widget.NewLabel("")
	l.repoMsg.Wrapping = fyne.TextWrapWord
	l.repoMsg.Hide()
	l.repoQuants = container.NewGridWrap(fyne.NewSize(330, 36))
	l.repoQuants.Hide()
	l.repoGet = widget.NewButtonWithIcon("Download", theme.DownloadIcon(), l.downloadRepo)
	l.repo.OnSubmitted = func(string) { l.downloadRepo() }
	if l.app.deps.Library == nil {
		l.repoGet.Disable()
	}
	return noteCard("Another model from Hugging Face", "A DiffusionGemma model the list above does not have: a "+
		"fine-tune, another export, or another quantization of a GGUF (its name after the repo's: "+
		"unsloth/diffusiongemma-26B-A4B-it-GGUF:Q3_K_M). Darkroom checks its config before downloading the weights.",
		container.NewVBox(container.NewBorder(nil, nil, nil, l.repoGet, l.repo), l.repoMsg, l.repoQuants))
}

// downloadRepo starts downloading the repo typed in the box (Download, Enter).
// The Hub is asked off the UI goroutine; what it answers — the download has
// begun, or why not — stays under the box until the next try.
func (l *LibraryScreen) downloadRepo() {
	lib := l.app.deps.Library
	if lib == nil || l.repoGet.Disabled() {
		return
	}
	repo, err := hub.ParseRepo(l.repo.Text)
	if err != nil {
		l.repoSays(err.Error(), true)
		return
	}
	l.repoGet.Disable()
	l.repoSays("Asking Hugging Face for "+repo+"…", false)
	go func() {
		err := lib.Start(repo, "")
		onUI(func() {
			l.repoGet.Enable()
			var choice *models.QuantChoice
			if errors.As(err, &choice) && len(choice.Quants) > 0 {
				l.offerQuants(choice)
				return
			}
			if err != nil {
				l.repoSays(repoProblem(repo, err), true)
				return
			}
			l.repo.SetText("")
			l.repoSays("Started downloading "+repo+": its card is above, with the other models.", false)
			l.Refresh()
		})
	}()
}

// offerQuants says that the GGUF repo typed holds a file per quantization and
// offers each as a button, which downloads that one (named after the repo, as it
// could have been typed).
func (l *LibraryScreen) offerQuants(c *models.QuantChoice) {
	msg := c.Repo + " holds a GGUF file per quantization: choose one (the smaller the file, the less memory it needs, " +
		"and the more it loses of the model's quality)."
	if c.Asked != "" {
		msg = c.Repo + " has no " + c.Asked + " GGUF: choose one of its quantizations."
	}
	l.repoSays(msg, false)
	var buttons []fyne.CanvasObject
	for _, q := range c.Quants {
		name := c.Repo + ":" + q.Name
		label := q.Name + " · " + store.FormatBytes(q.Size)
		if q.Fit != nil {
			label += " · " + q.Fit.Where()
		}
		buttons = append(buttons, widget.NewButtonWithIcon(label, theme.DownloadIcon(), func() {
			l.repo.SetText(name)
			l.downloadRepo()
		}))
	}
	l.repoQuants.Objects = buttons
	l.repoQuants.Show()
	l.repoQuants.Refresh()
}

// repoSays shows msg under the box, in red where it is a problem.
func (l *LibraryScreen) repoSays(msg string, problem bool) {
	l.repoQuants.Hide()
	l.repoMsg.Importance = widget.MediumImportance
	if problem {
		l.repoMsg.Importance = widget.DangerImportance
	}
	l.repoMsg.SetText(msg)
	l.repoMsg.Show()
}

// repoProblem says why a repo typed in the box could not be downloaded: a
// name the Hub does not know is most likely mistyped.
func repoProblem(repo string, err error) string {
	if errors.Is(err, hub.ErrNotFound) {
		return "Hugging Face (or the mirror set below) has no model called " + repo + ": check its name, " +
			"as its page shows it (owner/name)."
	}
	return libraryProblem("download "+repo, err)
}
