package ui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/gpuruntime"
	"github.com/darkroomlabs/darkroom/models/gpuruntime/gpuruntimetest"
)

// fakeGPU is a GPUSupport whose one install reports one progress event, then
// waits for release and fails verification as a machine without a working GPU does.
type fakeGPU struct {
	offer   GPUOffer
	release chan struct{}
	done    chan error

	mu     sync.Mutex
	paused bool
}

func (f *fakeGPU) Offer(context.Context) GPUOffer { return f.offer }
func (f *fakeGPU) Install(_ context.Context, progress func(GPUProgress)) GPUInstall {
	f.done = make(chan error, 1)
	go func() {
		progress(GPUProgress{Stage: gpuruntime.StageDownloading, Done: 1200e6, Total: 3400e6, Rate: 45e6, ETA: 49 * time.Second})
		<-f.release
		progress(GPUProgress{Stage: gpuruntime.StageVerifying})
		f.done <- &gpuruntime.NotVerifiedError{Reason: errors.New("the CUDA plugin did not start: no CUDA-capable device is detected")}
	}()
	return f
}
func (f *fakeGPU) Pause()      { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fakeGPU) Resume()     { f.mu.Lock(); f.paused = false; f.mu.Unlock() }
func (f *fakeGPU) Cancel()     {}
func (f *fakeGPU) Wait() error { return <-f.done }

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
	// The end, seen from another screen, is also a desktop notification, in
	// the card's words.
	want := &fyne.Notification{Title: "GPU support not installed"}
	test.AssertNotificationSent(t, want, func() {
		close(f.release)
		waitFor(t, "the verification's outcome", func() bool {
			l, _ := cardTexts(card)
			for _, s := range l {
				if strings.Contains(s, "downloaded but not verified, so it is not used and Darkroom keeps running on the CPU: the CUDA plugin did not start") {
					want.Content = s
					return true
				}
			}
			return false
		})
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

// gpuRuntimeOn is the app's GPUSupport over a fake package index: an RTX 4090
// with a CUDA 12 driver, the runtime folder in a temporary folder, fast retries,
// and a verification that waits for verified (true: it ran on the GPU) or the
// install's context. find waits for found before it answers when found is not nil.
func gpuRuntimeOn(t *testing.T, index *gpuruntimetest.Index, found chan struct{}, verified chan bool) *gpuRuntime {
	t.Setenv(backend.RuntimeDirEnvVar, t.TempDir())
	rtx := nvidia.GPU{Name: "NVIDIA GeForce RTX 4090", Driver: "550.54.15", ComputeCapability: "8.9"}
	return &gpuRuntime{
		find: func(ctx context.Context) ([]nvidia.GPU, string) {
			if found != nil {
				select {
				case <-found:
				case <-ctx.Done():
				}
			}
			return []nvidia.GPU{rtx}, ""
		},
		installer: func() *gpuruntime.Installer {
			return &gpuruntime.Installer{Index: gpuruntime.Index{URL: index.API()},
				Download: download.Options{BackoffBase: 5 * time.Millisecond, Interval: 10 * time.Millisecond},
				Verify: func(ctx context.Context, _ string) error {
					select {
					case ok := <-verified:
						if !ok {
							return errors.New("the CUDA plugin did not start: no CUDA-capable device is detected")
						}
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				},
				OS: "linux", Arch: "amd64"}
		},
	}
}

// installing is an install started by r.Install, recording its stages and its
// last progress; its error comes on done.
type installing struct {
	GPUInstall
	mu     sync.Mutex
	stages []string
	last   GPUProgress
	done   chan error
}

func startInstall(r *gpuRuntime) *installing {
	in := &installing{done: make(chan error, 1)}
	in.GPUInstall = r.Install(context.Background(), func(p GPUProgress) {
		in.mu.Lock()
		defer in.mu.Unlock()
		if len(in.stages) == 0 || in.stages[len(in.stages)-1] != p.Stage {
			in.stages = append(in.stages, p.Stage)
		}
		in.last = p
	})
	go func() { in.done <- in.Wait() }()
	return in
}

func (in *installing) progress() GPUProgress { in.mu.Lock(); defer in.mu.Unlock(); return in.last }
func (in *installing) stage() string         { return in.progress().Stage }

// TestGPURuntimeOfferAndInstall: the app's GPU support over a fake package index
// offers the download's size; a pause asked before the download starts (while
// the GPU is still being looked for) holds it once it starts, with no byte
// fetched and the progress saying paused; resume fetches everything once, and
// the install is marked only after the test graph ran.
func TestGPURuntimeOfferAndInstall(t *testing.T) {
	index := gpuruntimetest.New(t)
	verified := make(chan bool, 1)
	r := gpuRuntimeOn(t, index, nil, verified)
	o := r.Offer(context.Background())
	if o.GPU != "NVIDIA GeForce RTX 4090" || o.Installed || o.Unsupported != "" || o.Problem != "" || o.Size != index.WheelBytes() {
		t.Fatalf("offer %+v (want the RTX 4090, %d bytes to download)", o, index.WheelBytes())
	}
	found := make(chan struct{})
	r = gpuRuntimeOn(t, index, found, verified) // no offer: Install looks for the GPU and asks the index itself
	in := startInstall(r)
	in.Pause()
	close(found)
	// A job paused before it started sends its pause, and nothing else, before it
	// waits: its first progress is that, and nothing was asked of the index.
	waitFor(t, "the paused download", func() bool { p := in.progress(); return p.Stage == gpuruntime.StageDownloading && p.Paused })
	for _, w := range gpuruntimetest.Wheels {
		if starts := index.Starts(w); len(starts) != 0 {
			t.Errorf("%s was asked for (from %v) while paused", w, starts)
		}
	}
	in.Resume()
	waitFor(t, "the verification", func() bool { return in.stage() == gpuruntime.StageVerifying })
	if backend.Runtime().Installed() {
		t.Error("marked installed before the test graph ran")
	}
	verified <- true
	if err := <-in.done; err != nil {
		t.Fatal(err)
	}
	if !backend.Runtime().Installed() {
		t.Error("not installed after the resume")
	}
	for _, w := range gpuruntimetest.Wheels { // each fetched once, from its start
		if starts := index.Starts(w); len(starts) != 1 || starts[0] != 0 {
			t.Errorf("%s was asked for from %v (want once, whole)", w, starts)
		}
	}
	if o := r.Offer(context.Background()); !o.Installed || o.Size != 0 {
		t.Errorf("offer once installed: %+v", o)
	}
}

// TestGPURuntimeCancel: Cancel ends an install with download.ErrCanceled — the
// card's "Canceled; nothing was installed." — whether it comes as the install
// starts (the card shows Cancel as it starts it), while the GPU is looked for
// and the index asked, during the download (its partial files removed), or while
// the test graph runs; nothing is marked installed.
func TestGPURuntimeCancel(t *testing.T) {
	index := gpuruntimetest.New(t)
	verified := make(chan bool)
	canceled := func(t *testing.T, in *installing) {
		t.Helper()
		in.Cancel()
		if err := <-in.done; !errors.Is(err, download.ErrCanceled) {
			t.Errorf("canceled install: %v (the card shows %q)", err, gpuErrorText(err))
		}
		if backend.Runtime().Installed() {
			t.Error("installed after a cancel")
		}
	}
	t.Run("as it starts", func(t *testing.T) {
		// The GPU is not found until found is closed: an install that missed the
		// Cancel waits for ever.
		found := make(chan struct{})
		r := gpuRuntimeOn(t, index, found, verified)
		in := startInstall(r)
		in.Cancel()
		select {
		case err := <-in.done:
			if !errors.Is(err, download.ErrCanceled) {
				t.Errorf("install canceled as it started: %v (the card shows %q)", err, gpuErrorText(err))
			}
		case <-time.After(30 * time.Second):
			close(found)
			<-in.done
			t.Fatal("a Cancel that came as the install started was lost: the install went on looking for the GPU")
		}
		// The cancel was that install's: the next one runs.
		close(found)
		in = startInstall(r)
		waitFor(t, "the next install's verification", func() bool { return in.stage() == gpuruntime.StageVerifying })
		canceled(t, in)
	})
	t.Run("resolving", func(t *testing.T) {
		r := gpuRuntimeOn(t, index, make(chan struct{}), verified)
		looking, find := make(chan struct{}), r.find
		r.find = func(ctx context.Context) ([]nvidia.GPU, string) { close(looking); return find(ctx) }
		in := startInstall(r)
		<-looking // Install is waiting for the GPU
		canceled(t, in)
	})
	t.Run("downloading", func(t *testing.T) {
		index.SetBytesPerSec(256 << 10)
		defer index.SetBytesPerSec(0)
		r := gpuRuntimeOn(t, index, nil, verified)
		in := startInstall(r)
		waitFor(t, "a partial file", func() bool { return (&gpuruntime.Installer{}).Status().Partial > 0 })
		canceled(t, in)
		if st := (&gpuruntime.Installer{}).Status(); st.Partial != 0 {
			t.Errorf("partial files kept after a cancel: %+v", st)
		}
	})
	t.Run("verifying", func(t *testing.T) {
		r := gpuRuntimeOn(t, index, nil, verified)
		in := startInstall(r)
		waitFor(t, "the verification", func() bool { return in.stage() == gpuruntime.StageVerifying })
		canceled(t, in)
	})
}

// TestGPUCardTapsAfterTheEnd: a Pause and a Cancel tapped in the moment between
// an install's end and its buttons hiding act on that install, which has ended,
// and not on the next: it runs, unpaused, to its verification. (They once set
// the runtime's flags, and the next install began canceled.)
func TestGPUCardTapsAfterTheEnd(t *testing.T) {
	ta := newTestApp(t, &fakeModel{answers: func(engine.Request) string { return "" }}, "")
	index := gpuruntimetest.New(t)
	verified := make(chan bool, 1)
	ta.App.deps.System.GPU = gpuRuntimeOn(t, index, nil, verified)
	var card fyne.CanvasObject
	asUI(func() { card = gpuCard(ta.App, true) })
	label := gpuButtonText(index.WheelBytes())
	waitFor(t, "the install button", func() bool { _, b := cardTexts(card); return slices.Contains(b, label) })
	status := func() string { l, _ := cardTexts(card); return strings.Join(l, "\n") }

	verified <- false
	tap(findCardButton(t, card, label))
	waitFor(t, "the first install's end", func() bool { return strings.Contains(status(), "downloaded but not verified") })
	// The buttons are hidden now; a tap queued before they hid reaches them all the same.
	tap(findCardButton(t, card, "Pause"))
	tap(findCardButton(t, card, "Cancel"))

	tap(findCardButton(t, card, label))
	waitFor(t, "the next install's verification", func() bool {
		st := status()
		if strings.Contains(st, "Canceled") || strings.Contains(st, "paused") {
			t.Fatalf("the taps after the first install's end reached the next: %q", st)
		}
		return strings.Contains(st, gpuProgressText(GPUProgress{Stage: gpuruntime.StageVerifying}))
	})
	if _, b := cardTexts(card); !slices.Contains(b, "Pause") {
		t.Errorf("the next install's buttons %q (want Pause, not Resume)", b)
	}
	verified <- true
	waitFor(t, "the next install's success", func() bool { return strings.Contains(status(), "installed and verified") })
}

// TestGPUCardUnsupported: where GPU support cannot be installed (Windows, with an
// NVIDIA GPU) the card gives the explanation — WSL2 for CUDA, the CPU natively —
// and no install button, in Settings and on the first-run screen alike (there it
// stays hidden: nothing to install).
func TestGPUCardUnsupported(t *testing.T) {
	ta := newTestApp(t, &fakeModel{answers: func(engine.Request) string { return "" }}, "")
	why := (&gpuruntime.Installer{OS: "windows", Arch: "amd64"}).Supported().Error()
	ta.App.deps.System.GPU = &fakeGPU{offer: GPUOffer{GPU: "NVIDIA GeForce RTX 4090", Unsupported: why,
		Reason: "GPU found (NVIDIA GeForce RTX 4090), but Darkroom uses it only inside WSL2 on Windows (install Darkroom in WSL2 and run `darkroom gpu install` there); the CPU runs natively."}}
	var first, inSettings fyne.CanvasObject
	asUI(func() { first, inSettings = gpuCard(ta.App, false), gpuCard(ta.App, true) })
	waitFor(t, "the explanation in Settings", func() bool {
		l, _ := cardTexts(inSettings)
		return len(l) > 0 && l[0] == why
	})
	if !strings.Contains(why, "WSL2") || !strings.Contains(why, "runs on the CPU") {
		t.Errorf("explanation %q", why)
	}
	if _, b := cardTexts(inSettings); len(b) != 0 {
		t.Errorf("Settings offers %q where GPU support cannot be installed", b)
	}
	if l, b := cardTexts(first); len(l)+len(b) != 0 {
		t.Errorf("first run shows %q %q", l, b)
	}
}
