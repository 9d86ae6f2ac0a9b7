package ui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models/gpuruntime"
)

// fakeGPU is a GPUSupport whose install reports one progress event, then waits
// for release and fails verification as a machine without a working GPU does.
type fakeGPU struct {
	offer   GPUOffer
	release chan struct{}

	mu     sync.Mutex
	paused bool
}

func (f *fakeGPU) Offer(context.Context) GPUOffer { return f.offer }
func (f *fakeGPU) Install(_ context.Context, progress func(GPUProgress)) error {
	progress(GPUProgress{Stage: gpuruntime.StageDownloading, Done: 1200e6, Total: 3400e6, Rate: 45e6, ETA: 49 * time.Second})
	<-f.release
	progress(GPUProgress{Stage: gpuruntime.StageVerifying})
	return &gpuruntime.NotVerifiedError{Reason: errors.New("the CUDA plugin did not start: no CUDA-capable device is detected")}
}
func (f *fakeGPU) Pause()  { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fakeGPU) Resume() { f.mu.Lock(); f.paused = false; f.mu.Unlock() }
func (f *fakeGPU) Cancel() {}

// cardTexts lists the visible labels and buttons of a GPU card.
func cardTexts(card fyne.CanvasObject) (labels, buttons []string) {
	asUI(func() {
		c, ok := card.(*widget.Card)
		if !ok || !c.Visible() {
			return
		}
		for _, o := range c.Content.(*fyne.Container).Objects {
			switch x := o.(type) {
			case *widget.Label:
				if x.Visible() && x.Text != "" {
					labels = append(labels, x.Text)
				}
			case *widget.Button:
				if x.Visible() {
					buttons = append(buttons, x.Text)
				}
			case *fyne.Container:
				if x.Visible() {
					for _, b := range x.Objects {
						if b, ok := b.(*widget.Button); ok {
							buttons = append(buttons, b.Text)
						}
					}
				}
			}
		}
	})
	return labels, buttons
}

func findCardButton(t *testing.T, card fyne.CanvasObject, text string) *widget.Button {
	t.Helper()
	var found *widget.Button
	asUI(func() {
		for _, o := range card.(*widget.Card).Content.(*fyne.Container).Objects {
			objs := []fyne.CanvasObject{o}
			if c, ok := o.(*fyne.Container); ok {
				objs = c.Objects
			}
			for _, x := range objs {
				if b, ok := x.(*widget.Button); ok && b.Text == text {
					found = b
				}
			}
		}
	})
	if found == nil {
		t.Fatalf("no %q button", text)
	}
	return found
}

// TestGPUCardInstall: with an NVIDIA GPU and no GPU support, the card offers
// "Install GPU support — 3.4 GB", shows the download's progress with rate and
// time left, pauses, and ends with the plain sentence of a failed verification.
func TestGPUCardInstall(t *testing.T) {
	ta := newTestApp(t, &fakeModel{answers: func(engine.Request) string { return "" }}, "")
	f := &fakeGPU{release: make(chan struct{}), offer: GPUOffer{GPU: "NVIDIA GeForce RTX 4090", Size: 3400e6,
		Reason: "GPU found (NVIDIA GeForce RTX 4090) but GPU support is not installed — run `darkroom gpu install`; until then Darkroom runs on the CPU."}}
	ta.App.deps.System.GPU = f
	var card fyne.CanvasObject
	asUI(func() { card = gpuCard(ta.App, false) })
	waitFor(t, "the install button", func() bool {
		_, b := cardTexts(card)
		return len(b) > 0 && b[0] == "Install GPU support — 3.4 GB"
	})
	tap(findCardButton(t, card, "Install GPU support — 3.4 GB"))
	waitFor(t, "progress", func() bool {
		l, _ := cardTexts(card)
		return strings.Contains(strings.Join(l, "\n"), "1.2 GB of 3.4 GB · 45.0 MB/s · 49s left")
	})
	tap(findCardButton(t, card, "Pause"))
	f.mu.Lock()
	paused := f.paused
	f.mu.Unlock()
	if !paused {
		t.Error("Pause did not pause the install")
	}
	findCardButton(t, card, "Resume")
	close(f.release)
	waitFor(t, "the verification's outcome", func() bool {
		l, _ := cardTexts(card)
		return strings.Contains(strings.Join(l, "\n"), "downloaded but not verified, so it is not used and Darkroom keeps running on the CPU: the CUDA plugin did not start")
	})
}

// TestGPUCardFirstRunOnlyWithAGPU: without an NVIDIA GPU the first-run screen
// shows no GPU card; Settings shows where Darkroom runs and why, no button.
func TestGPUCardFirstRunOnlyWithAGPU(t *testing.T) {
	ta := newTestApp(t, &fakeModel{answers: func(engine.Request) string { return "" }}, "")
	ta.App.deps.System.GPU = &fakeGPU{offer: GPUOffer{Reason: "No NVIDIA GPU found, so Darkroom runs on the CPU."}}
	var first, inSettings fyne.CanvasObject
	asUI(func() { first, inSettings = gpuCard(ta.App, false), gpuCard(ta.App, true) })
	waitFor(t, "the reason in Settings", func() bool {
		l, _ := cardTexts(inSettings)
		return len(l) > 0 && l[0] == "No NVIDIA GPU found, so Darkroom runs on the CPU."
	})
	if l, b := cardTexts(first); len(l)+len(b) != 0 {
		t.Errorf("first run shows %q %q without a GPU", l, b)
	}
	if _, b := cardTexts(inSettings); len(b) != 0 {
		t.Errorf("Settings offers %q without a GPU", b)
	}
}
