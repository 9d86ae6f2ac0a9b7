package backend

import (
	"context"
	"fmt"
	"runtime"
	"strconv"

	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
)

// Auto is the default backend: XLA CUDA where an NVIDIA GPU and a PJRT CUDA
// plugin are found, else the CPU (see Choose).
const Auto = "auto"

// FlagUsage is the help text of every command's --backend flag.
const FlagUsage = "compute backend: auto (the NVIDIA GPU when GPU support is installed, else the CPU), go, xla:cpu, xla:cuda or xla:/path/plugin.so (default $GOMLX_BACKEND, else auto)"

// minComputeCapability is the oldest GPU XLA's CUDA backend runs on.
const minComputeCapability = 5.2

// Probes are what Choose looks at; tests replace them.
type Probes struct {
	// GPUs lists the NVIDIA GPUs; with none, problem says why.
	GPUs func(ctx context.Context) (gpus []nvidia.GPU, problem string)
	// Plugins lists the PJRT plugins found, best first.
	Plugins func() []Plugin
	// XLABuilt reports whether this binary can start XLA at all.
	XLABuilt bool
	// OS is runtime.GOOS ("" = this one).
	OS string
}

// DefaultProbes are the real ones: NVML then nvidia-smi, and Locations.
func DefaultProbes() Probes {
	return Probes{GPUs: nvidia.Find, Plugins: func() []Plugin { return FindPlugins(Locations()) }, XLABuilt: xlaBuilt}
}

// Choice is what auto runs on and why.
type Choice struct {
	// Spec is the backend to start: "go", or "xla:" + the CUDA plugin's path.
	Spec string `json:"spec"`
	// Device is "gpu" or "cpu".
	Device string `json:"device"`
	// GPU is the NVIDIA GPU found ("" if none) and Plugin the CUDA plugin chosen.
	GPU    string  `json:"gpu,omitempty"`
	Plugin *Plugin `json:"plugin,omitempty"`
	// Plugins are all the PJRT plugins found.
	Plugins []Plugin `json:"plugins"`
	// Reason says in one plain sentence where Darkroom runs and why.
	Reason string `json:"reason"`
	// Missed is set when a GPU is present but the CPU runs: Reason is worth
	// telling on every run, since the user can do something about it.
	Missed bool `json:"gpu_unused,omitempty"`
}

// Choose decides what auto runs on.
func Choose(ctx context.Context, p Probes) Choice {
	c := Choice{Spec: Go, Device: "cpu"}
	if p.Plugins != nil {
		c.Plugins = p.Plugins()
	}
	goos := p.OS
	if goos == "" {
		goos = runtime.GOOS
	}
	gpus, _ := p.GPUs(ctx)
	if len(gpus) == 0 {
		c.Reason = "No NVIDIA GPU found, so Darkroom runs on the CPU."
		if goos == "darwin" {
			c.Reason = "Darkroom runs on the CPU: macOS has no NVIDIA GPU support (XLA's CUDA backend needs Linux)."
		}
		return c
	}
	g := gpus[0]
	c.GPU, c.Missed = g.Name, true
	if cc, err := strconv.ParseFloat(g.ComputeCapability, 64); err == nil && cc > 0 && cc < minComputeCapability {
		c.Reason = fmt.Sprintf("The %s has compute capability %s, older than the %.1f that XLA's CUDA backend needs, so Darkroom runs on the CPU.",
			g.Name, g.ComputeCapability, minComputeCapability)
		return c
	}
	if goos == "windows" {
		c.Reason = fmt.Sprintf("GPU found (%s), but Darkroom uses it only inside WSL2 on Windows (install Darkroom in WSL2 and run `darkroom gpu install` there); the CPU runs natively.", g.Name)
		return c
	}
	if !p.XLABuilt {
		c.Reason = fmt.Sprintf("GPU found (%s), but this build of Darkroom has no GPU support (it was built without cgo or with the noxla tag), so it runs on the CPU.", g.Name)
		return c
	}
	for i := range c.Plugins {
		if c.Plugins[i].IsCUDA() {
			pl := c.Plugins[i]
			c.Plugin, c.Spec, c.Device, c.Missed = &pl, XLA+":"+pl.Path, "gpu", false
			c.Reason = fmt.Sprintf("Darkroom runs on the GPU (%s) with the CUDA plugin from the %s (%s).", g.Name, pl.From, pl.Path)
			return c
		}
	}
	c.Reason = fmt.Sprintf("GPU found (%s) but GPU support is not installed — run `darkroom gpu install`; until then Darkroom runs on the CPU.", g.Name)
	return c
}
