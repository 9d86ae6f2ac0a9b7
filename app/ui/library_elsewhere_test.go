package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/store"
)

// TestLibraryDownloadElsewhere: a model another Darkroom is downloading into the
// same models folder (a second window, `darkroom pull`: here a second manager,
// whose lock the first cannot take either) is shown as that, with its bar moving
// as the other writes — not as a paused download offering Resume, which would
// have written the same .part files, or Cancel, which would have removed them —
// and, once the other is done, as ready to use.
func TestLibraryDownloadElsewhere(t *testing.T) {
	defer func(p time.Duration) { elsewherePoll = p }(elsewherePoll)
	elsewherePoll = 50 * time.Millisecond
	h, _ := gemmaHub(t, 1<<20, 2)
	h.SetBytesPerSec(256 << 10)
	a, lib := libraryApp(t, h.URL, download.Options{Interval: 20 * time.Millisecond},
		hw.Info{RAMTotal: 64 << 30})
	l := a.Library

	other, err := models.New(models.Options{Dir: lib.m.StorePath(), Endpoint: h.URL, Download: download.Options{Interval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	other.Store().FreeSpace = func(string) (int64, error) { return 1 << 40, nil }
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	tr, err := other.Pull(ctx, catalog.DiffusionGemmaID, models.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Refresh()
	look := func() (state, progress string, done int64, labels, buttons []string) {
		c := libraryCardOf(l, catalog.DiffusionGemmaID)
		if c == nil {
			return
		}
		asUI(func() {
			state, progress, done = c.entry.State, c.progLbl.Text, c.entry.Progress.Done
			for _, o := range c.buttons.Objects {
				switch w := o.(type) {
				case *widget.Button:
					buttons = append(buttons, w.Text)
				case *widget.Label:
					labels = append(labels, w.Text)
				}
			}
		})
		return
	}
	waitFor(t, "the card to show the download elsewhere", func() bool { s, _, _, _, _ := look(); return s == "elsewhere" })
	_, progress, first, labels, buttons := look()
	if len(buttons) != 0 || len(labels) != 1 || !strings.Contains(labels[0], "Another Darkroom") || !strings.Contains(labels[0], "downloading it") {
		t.Errorf("elsewhere: buttons %q, note %q; want no buttons and a note naming the other Darkroom", buttons, labels)
	}
	if !strings.Contains(progress, "downloading it in another Darkroom") {
		t.Errorf("progress %q", progress)
	}
	waitFor(t, "the bar to move", func() bool { _, _, done, _, _ := look(); return done > first })

	h.SetBytesPerSec(0)
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the card to show the model ready", func() bool { s, _, _, _, _ := look(); return s == "ready" })
	if _, _, _, _, buttons := look(); !strings.Contains(strings.Join(buttons, ","), "Delete") {
		t.Errorf("ready: buttons %q; want the model's (Delete among them)", buttons)
	}
}

// TestLibraryAsksBeforeWhatWontFit: on a PC a profile will not fit (here 24 GB of
// RAM, and the 26B's bf16), Download asks first — the numbers, that it would not
// run here, and the profile that does fit — and Cancel starts nothing; "Download
// anyway" starts it. A profile that fits downloads at once, as before. Its fit
// line said "Won't fit" in red, and the button started a 52 GB download all the
// same.
func TestLibraryAsksBeforeWhatWontFit(t *testing.T) {
	h, _ := gemmaHub(t, 64<<10, 3)
	h.SetBytesPerSec(16 << 10) // slow: the download is still running when looked at
	a, _ := libraryApp(t, h.URL, download.Options{Interval: 20 * time.Millisecond}, hw.Info{RAMTotal: 24 << 30})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.DiffusionGemmaID) != nil })
	c := libraryCardOf(l, catalog.DiffusionGemmaID)
	selectProfile(c, "bf16")
	if pf := uiRead(func() ProfileFit { pf, _ := c.selectedProfile(); return pf }); pf.Verdict != "won't fit" {
		t.Fatalf("bf16 on 24 GB: %q; the test wants one that won't fit", pf.Verdict)
	}
	tapButton(t, c.buttons, "Download")
	if dialogButton(a.win, "Download anyway") == nil {
		t.Fatal("Download of a profile that won't fit did not ask")
	}
	text := shownText(uiRead(func() fyne.CanvasObject { return a.win.Canvas().Overlays().Top() }))
	for _, want := range []string{"Download DiffusionGemma", "(bf16) anyway?", "Needs about", "It would not run on this PC.", "The int4 profile fits."} {
		if !strings.Contains(text, want) {
			t.Errorf("the question does not say %q:\n%s", want, text)
		}
	}
	tap(dialogButton(a.win, "Cancel"))
	time.Sleep(100 * time.Millisecond)
	if n := len(h.Starts("model.safetensors")); n != 0 || uiRead(func() string { return c.entry.State }) != "available" {
		t.Fatalf("Cancel: %d requests, state %q", n, c.entry.State)
	}
	tapButton(t, c.buttons, "Download")
	if !uiRead(func() bool { return a.tapDialogButton("Download anyway") }) { // as the window check goes on past it
		t.Fatal("no Download anyway to tap")
	}
	waitFor(t, "the download to start", func() bool {
		c := libraryCardOf(l, catalog.DiffusionGemmaID)
		return c != nil && uiRead(func() string { return c.entry.State }) == "downloading"
	})

	// Downloaded, Use asks too: loading it would push the PC into swap.
	h.SetBytesPerSec(0)
	waitFor(t, "the model ready", func() bool {
		c := libraryCardOf(l, catalog.DiffusionGemmaID)
		return c != nil && uiRead(func() string { return c.entry.State }) == "ready"
	})
	c = libraryCardOf(l, catalog.DiffusionGemmaID)
	selectProfile(c, "bf16")
	tapButton(t, c.buttons, "Use")
	if dialogButton(a.win, "Use anyway") == nil {
		t.Fatal("Use of a profile that won't fit did not ask")
	}
	tap(dialogButton(a.win, "Cancel"))
	if active, _ := a.deps.Library.(*managerLibrary).m.Active(); active != "" {
		t.Errorf("Cancel made %q active", active)
	}
}

// TestLibraryModelTooBigForTheGPU: on a PC whose GPU holds 12 GB and whose RAM
// 64, the 26B at int4 (about 18 GB on a GPU) is split, 17 of its 30 layers on the
// GPU and the rest on the CPU (models.Placement.Split), judged on both and saying
// so because it is too big for the GPU: it said "Won't fit" on a PC that runs it,
// the engine would have loaded it on the GPU, and then all of it ran on the CPU;
// at bf16 (52 GB) fewer of its layers fit the GPU, and the rest the RAM.
func TestLibraryModelTooBigForTheGPU(t *testing.T) {
	a, _ := libraryApp(t, "http://127.0.0.1:1", download.Options{},
		hw.Info{GPUs: []hw.GPU{{Name: "RTX 4070", VRAMTotal: 12 << 30}}, RAMTotal: 64 << 30})
	l := a.Library
	waitFor(t, "the catalog", func() bool { return libraryCardOf(l, catalog.DiffusionGemmaID) != nil })
	c := libraryCardOf(l, catalog.DiffusionGemmaID)
	selectProfile(c, "int4")
	pf := uiRead(func() ProfileFit { pf, _ := c.selectedProfile(); return pf })
	text := uiRead(func() string { return c.fit.Text })
	if pf.Verdict != "fits" || pf.Where != "RTX 4070 VRAM" || !strings.Contains(text, "split between the GPU and the CPU") ||
		!strings.Contains(text, "too big for the RTX 4070's") || !strings.Contains(text, "17 of its 30 layers run on the GPU") {
		t.Errorf("int4 on a 12 GB GPU: %s in %s; the card says %q", pf.Verdict, pf.Where, text)
	}
	selectProfile(c, "bf16")
	if pf := uiRead(func() ProfileFit { pf, _ := c.selectedProfile(); return pf }); pf.Verdict != "fits" || !pf.GPU || pf.OnCPU != "" ||
		!strings.Contains(pf.Split, "layers run on the GPU") || strings.Contains(pf.Split, "17 of its") || pf.HostNeed < 30e9 {
		t.Errorf("bf16: %s in %s (%q, %d B in RAM); want it split, fewer layers on the GPU", pf.Verdict, pf.Where, pf.Split, pf.HostNeed)
	}
}

// TestLibraryProblemOfAModelHeldElsewhere: a download or delete refused because
// another Darkroom works on the model says so in the card's words, with what
// that one is doing and what to do, wrapped as the models package wraps it.
func TestLibraryProblemOfAModelHeldElsewhere(t *testing.T) {
	err := fmt.Errorf("download diffusiongemma-26b: %w", &store.HeldError{Name: "google/diffusiongemma-26B-A4B-it", Doing: "downloading it"})
	if got, want := libraryProblem("resume DiffusionGemma", err),
		"Another Darkroom — a second window, or a `darkroom` command — is downloading it: wait for it to finish there, or close it, then try again."; got != want {
		t.Errorf("libraryProblem = %q, want %q", got, want)
	}
}
