package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/models/download"
	"github.com/darkroomlabs/darkroom/models/gpuruntime"
	"github.com/darkroomlabs/darkroom/models/store"
)

// GPUSupport installs Darkroom's GPU support (the PJRT CUDA plugin and the
// NVIDIA libraries, models/gpuruntime); tests fake it. Offer blocks (NVML, the
// package index): call it off the UI goroutine.
type GPUSupport interface {
	Offer(ctx context.Context) GPUOffer
	// Install starts downloading, extracting and verifying, and returns at once;
	// progress is called from the install's goroutines.
	Install(ctx context.Context, progress func(GPUProgress)) GPUInstall
}

// GPUInstall is one install of GPU support. The card's buttons act on the install
// they were shown for: a Cancel tapped as it ends cannot reach the next one.
type GPUInstall interface {
	Pause()
	Resume()
	Cancel()
	// Wait blocks until the install ends and returns its error
	// (download.ErrCanceled after a Cancel, whatever stage it hit).
	Wait() error
}

// GPUOffer is what the GPU support card shows.
type GPUOffer struct {
	GPU         string // the NVIDIA GPU found ("" none)
	Reason      string // where Darkroom runs now and why, in one sentence
	Installed   bool   // Darkroom's GPU support is installed and verified
	Unsupported string // why it cannot be installed on this system ("" it can)
	Size        int64  // bytes to download (0: unknown, see Problem)
	Problem     string // why the size is unknown (the package index unreachable, …)
}

// GPUProgress is one progress report of an install.
type GPUProgress struct {
	Stage       string // gpuruntime.StageDownloading, …
	Done, Total int64
	Rate        float64       // bytes/s
	ETA         time.Duration // -1 when unknown
	Paused      bool
}

// gpuButtonText is the install button's label: "Install GPU support — 3.4 GB".
func gpuButtonText(size int64) string {
	if size <= 0 {
		return "Install GPU support"
	}
	return "Install GPU support — " + formatBytes(size)
}

// gpuProgressText says where a download stands: "1.2 GB of 3.4 GB · 45.0 MB/s · 52s left".
func gpuProgressText(p GPUProgress) string {
	switch p.Stage {
	case gpuruntime.StageResolving:
		return "Asking the package index what to download…"
	case gpuruntime.StageExtracting:
		return "Unpacking the NVIDIA libraries…"
	case gpuruntime.StageVerifying:
		return "Running a test on the GPU…"
	}
	s := formatBytes(p.Done) + " of " + formatBytes(p.Total)
	if p.Paused {
		return s + " · paused"
	}
	if p.Rate > 0 {
		s += " · " + formatBytes(int64(p.Rate)) + "/s"
	}
	if p.ETA > 0 {
		s += " · " + p.ETA.Round(time.Second).String() + " left"
	}
	return s
}

// gpuCard is the "GPU support" card. On the first-run screen (inSettings false)
// it appears only where an NVIDIA GPU is found and GPU support is not installed:
// a reader without one has nothing to do about it. In Settings it always says
// where Darkroom runs and why, with the button where it applies.
func gpuCard(a *App, inSettings bool) fyne.CanvasObject {
	screen := "" // where the card is, for notify: the first-run screen, or Settings
	if inSettings {
		screen = "Settings"
	}
	g := a.deps.System.GPU
	if g == nil {
		return container.NewVBox()
	}
	reason := widget.NewLabel("Looking for an NVIDIA GPU…")
	reason.Wrapping = fyne.TextWrapWord
	status := widget.NewLabel("")
	status.Wrapping = fyne.TextWrapWord
	status.Hide()
	bar := widget.NewProgressBar()
	bar.Hide()
	install := widget.NewButtonWithIcon(gpuButtonText(0), theme.DownloadIcon(), nil)
	install.Importance = widget.HighImportance
	install.Hide()
	pause := widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), nil)
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), nil)
	controls := container.NewHBox(pause, cancel)
	controls.Hide()
	card := widget.NewCard("GPU support", "", container.NewVBox(reason, install, bar, status, controls))
	if !inSettings {
		card.Hide()
	}

	install.OnTapped = func() {
		install.Disable()
		bar.SetValue(0)
		bar.Show()
		status.SetText("Starting…")
		status.Show()
		job := g.Install(context.Background(), func(p GPUProgress) {
			onUI(func() {
				if p.Total > 0 {
					bar.SetValue(float64(p.Done) / float64(p.Total))
				}
				status.SetText(gpuProgressText(p))
			})
		})
		a.gpuWork = func() string { return lowerFirst(status.Text) }
		// The buttons are bound to this install, so a tap that lands after it
		// ended, before they hide, acts on it and not on the next.
		paused := false
		pause.SetText("Pause")
		pause.SetIcon(theme.MediaPauseIcon())
		pause.OnTapped = func() {
			paused = !paused
			if paused {
				job.Pause()
				pause.SetText("Resume")
				pause.SetIcon(theme.MediaPlayIcon())
			} else {
				job.Resume()
				pause.SetText("Pause")
				pause.SetIcon(theme.MediaPauseIcon())
			}
		}
		cancel.OnTapped = job.Cancel
		controls.Show()
		go func() {
			err := job.Wait()
			onUI(func() {
				a.gpuWork = nil
				controls.Hide()
				switch {
				case err == nil:
					bar.Hide()
					install.Hide()
					status.SetText("GPU support is installed and verified: Darkroom now runs on the GPU.")
					status.Importance = widget.SuccessImportance
					a.modelChanged() // the next generation loads the model on the GPU
					a.notify(screen, "GPU support installed", "Darkroom now runs on the GPU.")
				case errors.Is(err, download.ErrCanceled):
					bar.Hide()
					install.Enable()
					status.SetText("Canceled; nothing was installed.")
				default:
					install.Enable()
					status.SetText(gpuErrorText(err))
					status.Importance = widget.WarningImportance
					a.notify(screen, "GPU support not installed", gpuErrorText(err))
				}
				status.Refresh()
			})
		}()
	}

	go func() {
		o := g.Offer(context.Background())
		onUI(func() {
			reason.SetText(o.Reason)
			canInstall := o.GPU != "" && !o.Installed && o.Unsupported == ""
			switch {
			case o.Installed:
				reason.SetText(o.Reason + " Darkroom's GPU support is installed.")
			case o.GPU != "" && o.Unsupported != "":
				reason.SetText(o.Unsupported)
			case canInstall:
				install.SetText(gpuButtonText(o.Size))
				install.Show()
				if o.Problem != "" {
					status.SetText("The download's size is unknown for now: " + o.Problem)
					status.Show()
				}
			}
			if !inSettings && canInstall {
				card.Show()
			}
		})
	}()
	return card
}

// gpuErrorText turns an install error into a sentence for the window.
func gpuErrorText(err error) string {
	var nv *gpuruntime.NotVerifiedError
	if errors.As(err, &nv) {
		return "GPU support was downloaded but not verified, so it is not used and Darkroom keeps running on the CPU: " + nv.Reason.Error()
	}
	return plainError("install GPU support", err)
}

// gpuRuntime is the real GPUSupport: models/gpuruntime's installer, each
// install's download job behind the card's pause and cancel buttons.
type gpuRuntime struct {
	// find lists the NVIDIA GPUs, installer makes an install's Installer (tests
	// replace both).
	find      func(context.Context) ([]nvidia.GPU, string)
	installer func() *gpuruntime.Installer

	mu   sync.Mutex
	plan *gpuruntime.Plan // Offer's, for the installs after it
}

func newGPURuntime() *gpuRuntime { return &gpuRuntime{find: nvidia.Find, installer: newGPUInstaller} }

// newGPUInstaller installs from $DARKROOM_GPU_INDEX (else PyPI) into the runtime
// folder, verifying in a child process (`darkroom gpu verify`).
func newGPUInstaller() *gpuruntime.Installer {
	index := os.Getenv(gpuruntime.IndexEnvVar)
	if index == "" {
		index = gpuruntime.DefaultIndex
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return &gpuruntime.Installer{Index: gpuruntime.Index{URL: index}, Download: download.Options{FreeSpace: store.FreeSpace},
		Verify: gpuruntime.VerifyCommand(exe, "gpu", "verify")}
}

func (r *gpuRuntime) Offer(ctx context.Context) GPUOffer {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	gpus, problem := r.find(ctx)
	probes := backend.DefaultProbes()
	probes.GPUs = func(context.Context) ([]nvidia.GPU, string) { return gpus, problem }
	o := GPUOffer{Reason: backend.Choose(ctx, probes).Reason, Installed: backend.Runtime().Installed()}
	if len(gpus) == 0 {
		return o
	}
	o.GPU = gpus[0].Name
	in := r.installer()
	if err := in.Supported(); err != nil {
		o.Unsupported = err.Error()
		return o
	}
	if o.Installed {
		return o
	}
	cuda, err := gpuruntime.CUDAFor(gpus[0])
	if err != nil {
		o.Unsupported = err.Error()
		return o
	}
	plan, err := in.Plan(ctx, cuda)
	if err != nil {
		o.Problem = err.Error()
		return o
	}
	r.mu.Lock()
	r.plan = plan
	r.mu.Unlock()
	o.Size = plan.Size()
	return o
}

// Install starts an install on its own goroutine and returns it at once.
func (r *gpuRuntime) Install(ctx context.Context, progress func(GPUProgress)) GPUInstall {
	ctx, stop := context.WithCancel(ctx)
	g := &gpuInstall{stop: stop, done: make(chan struct{})}
	in := r.installer()
	in.OnStage = func(s string) { progress(GPUProgress{Stage: s}) }
	in.OnJob = func(j *download.Job) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.job = j
		if g.canceled { // canceled before the job existed: it removes its partial files too
			j.Cancel()
		} else if g.paused {
			j.Pause()
		}
	}
	in.Download.OnEvent = func(ev download.Event) {
		progress(GPUProgress{Stage: gpuruntime.StageDownloading, Done: ev.Done, Total: ev.Total, Rate: ev.Rate, ETA: ev.ETA,
			Paused: ev.State == download.StatePaused})
	}
	r.mu.Lock()
	plan := r.plan
	r.mu.Unlock()
	go func() {
		defer close(g.done)
		defer stop()
		err := ctx.Err() // canceled as it was started: nothing begun, nothing touched
		if err == nil {
			err = r.install(ctx, in, plan)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if err != nil && g.canceled {
			err = download.ErrCanceled
		}
		g.err = err
	}()
	return g
}

// gpuInstall is one install: its buttons' state and its download job.
type gpuInstall struct {
	mu   sync.Mutex
	job  *download.Job // once the download has started
	stop context.CancelFunc
	// paused: a Pause that came before the download job existed (the GPU and the
	// index still being asked) has the job start paused. canceled: a Cancel came,
	// so the install's error is download.ErrCanceled, whatever stage it hit.
	paused, canceled bool
	done             chan struct{}
	err              error
}

// install finds the GPU and plans the download when Offer did not, then installs.
func (r *gpuRuntime) install(ctx context.Context, in *gpuruntime.Installer, plan *gpuruntime.Plan) error {
	if plan == nil {
		gpus, problem := r.find(ctx)
		if len(gpus) == 0 {
			return fmt.Errorf("no NVIDIA GPU found (%s)", problem)
		}
		cuda, err := gpuruntime.CUDAFor(gpus[0])
		if err != nil {
			return err
		}
		if plan, err = in.Plan(ctx, cuda); err != nil {
			return err
		}
	}
	return in.Install(ctx, plan)
}

// Pause pauses the download, or has it start paused when it has not started yet.
func (g *gpuInstall) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = true
	if g.job != nil {
		g.job.Pause()
	}
}

// Resume continues a paused download.
func (g *gpuInstall) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = false
	if g.job != nil {
		g.job.Resume()
	}
}

// Cancel stops the install at whatever stage it is: the download job (which
// removes its partial files) while it runs, else the install's context — the GPU
// and the index being asked, the unpacking, the test graph's child process. After
// the install has ended it does nothing.
func (g *gpuInstall) Cancel() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.done:
		return
	default:
	}
	g.canceled = true
	if g.job != nil {
		select {
		case <-g.job.Done():
		default:
			g.job.Cancel()
			return
		}
	}
	g.stop()
}

// Wait blocks until the install ends and returns its error.
func (g *gpuInstall) Wait() error {
	<-g.done
	return g.err
}
