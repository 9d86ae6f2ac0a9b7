package ui

import (
	"context"
	"math/rand"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/hubtest"
	"github.com/darkroomlabs/darkroom/models/hw"
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
	cfg, err := config.Tiny().MarshalConfig()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	blob := make([]byte, 1<<20)
	rng.Read(blob)
	files := []*hubtest.File{
		{Name: "config.json", Data: cfg},
		{Name: "tokenizer.json", Data: []byte(`{"model":{"type":"BPE"}}`)},
		{Name: "model.safetensors", Data: blob, LFS: true},
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	e, _ := catalog.Find(catalog.DiffusionGemmaID)
	h.Add(e.Repo, &hubtest.Repo{Files: files})
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
