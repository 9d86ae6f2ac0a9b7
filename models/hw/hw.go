// Package hw detects the hardware Darkroom can run on: NVIDIA GPUs (package
// engine/backend/nvidia: NVML when the driver is installed, `nvidia-smi`
// otherwise), the machine's RAM (engine/sysmem: lowered to a memory limit Darkroom
// runs under, a container's) and CPUs, the free disk space of the models
// folder, and the PJRT plugins found. Detect never fails: what it cannot find is
// reported as a reason, and Summary says in one plain sentence where Darkroom will
// run and why — for the default backend, auto, the very sentence the backend's
// own choice gives (backend.Choose).
package hw

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/sysmem"
	"github.com/darkroomlabs/darkroom/models/store"
)

// GPU is one NVIDIA GPU.
type GPU = nvidia.GPU

// ParseSMI parses nvidia-smi's CSV output (see nvidia.ParseSMI).
func ParseSMI(out string) ([]GPU, error) { return nvidia.ParseSMI(out) }

// Info is what Detect found.
type Info struct {
	GPUs []GPU `json:"gpus"`
	// GPUProblem says why no GPU was found (what NVML and nvidia-smi answered), "" if one was.
	GPUProblem string `json:"gpu_problem,omitempty"`
	// RAMTotal is the memory Darkroom may use: the machine's RAM, or the memory limit
	// it runs under where that is lower (a container's, a service's: RAMLimit names
	// it, and RAMMachine is the machine's RAM then). The fit estimates judge by it.
	RAMTotal     int64  `json:"ram_total_bytes"`
	RAMAvailable int64  `json:"ram_available_bytes"`
	RAMMachine   int64  `json:"ram_machine_bytes,omitempty"`
	RAMLimit     string `json:"ram_limit,omitempty"`
	CPUs         int    `json:"cpus"`
	OS           string `json:"os"`
	Arch         string `json:"arch"`
	StoreDir     string `json:"models_dir,omitempty"`
	DiskFree     int64  `json:"models_disk_free_bytes"`
	// Backend is the engine backend that will be used ("go", "xla:cuda", …) and
	// Device where the model runs: "gpu" or "cpu".
	Backend string `json:"backend"`
	Device  string `json:"device"`
	Summary string `json:"summary"`
	// Plugins are the PJRT plugins found (backend.Locations).
	Plugins []backend.Plugin `json:"pjrt_plugins"`
	// Auto is the auto backend's choice when the backend is auto.
	Auto *backend.Choice `json:"auto,omitempty"`
}

// Probes are the detection functions; tests replace them.
type Probes struct {
	NVML      func() ([]GPU, error)
	NvidiaSMI func(ctx context.Context) ([]GPU, error)
	Memory    func() (sysmem.Memory, error)
	FreeSpace func(path string) (int64, error)
	// Backend is the backend spec that will run ("" = backend.Resolve("")).
	Backend string
	// XLABuilt reports whether this binary can start XLA at all.
	XLABuilt bool
	// Plugins lists the PJRT plugins found (nil: none).
	Plugins func() []backend.Plugin
}

// DefaultProbes are the real ones.
func DefaultProbes() Probes {
	xla := false
	for _, b := range backend.Available() {
		if b == backend.XLA {
			xla = true
		}
	}
	return Probes{NVML: nvidia.NVML, NvidiaSMI: nvidia.SMI, Memory: sysmem.Read, FreeSpace: store.FreeSpace,
		Backend: backend.Resolve(""), XLABuilt: xla, Plugins: backend.DefaultProbes().Plugins}
}

// Detect looks at this machine; storeDir is the models folder ("" to skip disk).
func Detect(ctx context.Context, storeDir string) Info {
	return DetectWith(ctx, storeDir, DefaultProbes())
}

// DetectWith is Detect with given probes.
func DetectWith(ctx context.Context, storeDir string, p Probes) Info {
	info := Info{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, StoreDir: storeDir, Backend: p.Backend}
	info.GPUs, info.GPUProblem = nvidia.FindWith(ctx, p.NVML, p.NvidiaSMI)
	if m, err := p.Memory(); err == nil {
		info.RAMTotal, info.RAMAvailable = m.Total, m.Available
		if m.Limited() {
			info.RAMMachine, info.RAMLimit = m.Machine, m.Limit
		}
	}
	if storeDir != "" && p.FreeSpace != nil {
		if f, err := p.FreeSpace(storeDir); err == nil {
			info.DiskFree = f
		}
	}
	info.Device, info.Summary = summarize(&info, p)
	return info
}

// Report writes what Detect found, a line each: where Darkroom runs and why
// (Summary), each GPU, RAM and CPUs, the models folder, the backend, Darkroom's
// GPU support and the PJRT plugins found. `darkroom hw` prints it above its fit
// table, and the app's system report (Settings, "Copy system report") holds it.
func (i Info) Report(w io.Writer) {
	fmt.Fprintln(w, i.Summary)
	for _, g := range i.GPUs {
		fmt.Fprintf(w, "GPU %d: %s, %s VRAM (%s free), driver %s, compute %s [%s]\n", g.Index, g.Name,
			store.FormatBytes(g.VRAMTotal), store.FormatBytes(g.VRAMFree), g.Driver, g.ComputeCapability, g.Source)
	}
	fmt.Fprintf(w, "RAM: %s (%s available), %d CPU cores, %s/%s\n", store.FormatBytes(i.RAMTotal),
		store.FormatBytes(i.RAMAvailable), i.CPUs, i.OS, i.Arch)
	if i.RAMLimit != "" {
		fmt.Fprintf(w, "RAM limit: Darkroom runs under a memory limit (control group %s), so it counts on %s of the "+
			"machine's %s\n", i.RAMLimit, store.FormatBytes(i.RAMTotal), store.FormatBytes(i.RAMMachine))
	}
	fmt.Fprintf(w, "CPU products: %s\n", cpuProducts())
	if i.StoreDir != "" {
		fmt.Fprintf(w, "Models folder: %s (%s free)\n", i.StoreDir, store.FormatBytes(i.DiskFree))
	}
	fmt.Fprintf(w, "Backend: %s (%s)\n", i.Backend, i.Device)
	rt := backend.Runtime()
	state := "not installed (`darkroom gpu install`)"
	if rt.Installed() {
		state = "installed"
	}
	fmt.Fprintf(w, "Darkroom's GPU support: %s, %s\n", state, rt.Dir)
	if len(i.Plugins) == 0 {
		fmt.Fprintln(w, "PJRT plugins: none found (looked in PJRT_PLUGIN_LIBRARY_PATH, Darkroom's runtime folder, go-xla's folders and JAX installations)")
		return
	}
	fmt.Fprintln(w, "PJRT plugins:")
	for _, p := range i.Plugins {
		fmt.Fprintf(w, "  %-5s %s (%s)\n", p.Name, p.Path, p.From)
	}
}

// cpuProducts names the CPU path's micro-kernels (engine/kernels): the float one,
// and the integer one with the stored formats it multiplies (Darkroom's, and a GGUF
// file's block types).
func cpuProducts() string {
	s := "float " + kernels.GEMMKernel()
	if f := kernels.IntFormats(); len(f) > 0 {
		s += fmt.Sprintf(", integer %s for %s weights and GGUF %s blocks", kernels.IntKernel(), strings.Join(f, ", "),
			strings.Join(kernels.IntGGUF(), ", "))
		if r := kernels.IntRowFormats(); len(r) > 0 {
			s += " (in the printer too: " + strings.Join(r, ", ") + ")"
		}
		return s
	}
	return s + ", no integer products (this CPU lacks AVX2, or DARKROOM_INT_PRODUCTS=0)"
}

// summarize decides where Darkroom runs and says it in one sentence: for auto,
// the backend's own choice over the GPUs found here.
func summarize(info *Info, p Probes) (device, sentence string) {
	if p.Plugins != nil {
		info.Plugins = p.Plugins()
	}
	if backend.Resolve(p.Backend) == backend.Auto {
		c := backend.Choose(context.Background(), backend.Probes{
			GPUs:     func(context.Context) ([]GPU, string) { return info.GPUs, info.GPUProblem },
			Plugins:  func() []backend.Plugin { return info.Plugins },
			XLABuilt: p.XLABuilt,
		})
		info.Auto, info.Backend = &c, c.Spec
		return c.Device, c.Reason
	}
	onXLACUDA := strings.HasPrefix(p.Backend, "xla") && strings.Contains(p.Backend, "cuda")
	if len(info.GPUs) == 0 {
		return "cpu", fmt.Sprintf("Darkroom will run on the CPU (%d cores, %s RAM) because no NVIDIA GPU was found (%s).",
			info.CPUs, store.FormatBytes(info.RAMTotal), info.GPUProblem)
	}
	g := info.GPUs[0]
	desc := fmt.Sprintf("%s (%s VRAM)", g.Name, store.FormatBytes(g.VRAMTotal))
	if cc, err := strconv.ParseFloat(g.ComputeCapability, 64); err == nil && cc > 0 && cc < 5.2 {
		return "cpu", fmt.Sprintf("Darkroom will run on the CPU: the %s has compute capability %s, older than the 5.2 that XLA's CUDA backend needs.",
			desc, g.ComputeCapability)
	}
	switch {
	case !p.XLABuilt:
		return "cpu", fmt.Sprintf("Darkroom will run on the CPU although an NVIDIA %s is present: this build of Darkroom has no XLA/CUDA backend (built without cgo or with the noxla tag).", desc)
	case !onXLACUDA:
		return "cpu", fmt.Sprintf("Darkroom will run on the CPU although an NVIDIA %s is present: the selected backend is %q; choose auto in Settings (or unset GOMLX_BACKEND) to use the GPU.", desc, p.Backend)
	}
	return "gpu", fmt.Sprintf("Darkroom will run on the GPU: %s with the %s backend (if the CUDA PJRT plugin fails to start it falls back to the CPU and says why).", desc, p.Backend)
}
