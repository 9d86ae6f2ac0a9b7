// Package hw detects the hardware Darkroom can run on: NVIDIA GPUs through NVML
// when the driver is installed (name, VRAM total/free, driver version, compute
// capability), `nvidia-smi` when NVML cannot be used, the machine's RAM and CPUs,
// and the free disk space of the models folder. Detect never fails: what it cannot
// find is reported as a reason, and Summary says in one plain sentence where
// Darkroom will run and why.
package hw

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/models/store"
)

// GPU is one NVIDIA GPU.
type GPU struct {
	Index             int    `json:"index"`
	Name              string `json:"name"`
	VRAMTotal         int64  `json:"vram_total_bytes"`
	VRAMFree          int64  `json:"vram_free_bytes"`
	Driver            string `json:"driver,omitempty"`
	ComputeCapability string `json:"compute_capability,omitempty"` // "8.9"
	Source            string `json:"source"`                       // "nvml" or "nvidia-smi"
}

// Info is what Detect found.
type Info struct {
	GPUs []GPU `json:"gpus"`
	// GPUProblem says why no GPU was found (what NVML and nvidia-smi answered), "" if one was.
	GPUProblem   string `json:"gpu_problem,omitempty"`
	RAMTotal     int64  `json:"ram_total_bytes"`
	RAMAvailable int64  `json:"ram_available_bytes"`
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
}

// Probes are the detection functions; tests replace them.
type Probes struct {
	NVML      func() ([]GPU, error)
	NvidiaSMI func(ctx context.Context) ([]GPU, error)
	Memory    func() (total, available int64, err error)
	FreeSpace func(path string) (int64, error)
	// Backend is the backend spec that will run ("" = backend.Resolve("")).
	Backend string
	// XLABuilt reports whether this binary can start XLA at all.
	XLABuilt bool
}

// DefaultProbes are the real ones.
func DefaultProbes() Probes {
	xla := false
	for _, b := range backend.Available() {
		if b == backend.XLA {
			xla = true
		}
	}
	return Probes{NVML: nvmlGPUs, NvidiaSMI: smiGPUs, Memory: memory, FreeSpace: store.FreeSpace,
		Backend: backend.Resolve(""), XLABuilt: xla}
}

// Detect looks at this machine; storeDir is the models folder ("" to skip disk).
func Detect(ctx context.Context, storeDir string) Info {
	return DetectWith(ctx, storeDir, DefaultProbes())
}

// DetectWith is Detect with given probes.
func DetectWith(ctx context.Context, storeDir string, p Probes) Info {
	info := Info{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, StoreDir: storeDir, Backend: p.Backend}
	gpus, nvmlErr := p.NVML()
	if nvmlErr != nil || len(gpus) == 0 {
		var smiErr error
		gpus, smiErr = p.NvidiaSMI(ctx)
		if len(gpus) == 0 {
			info.GPUProblem = noGPUReason(nvmlErr, smiErr)
		}
	}
	info.GPUs = gpus
	if t, a, err := p.Memory(); err == nil {
		info.RAMTotal, info.RAMAvailable = t, a
	}
	if storeDir != "" && p.FreeSpace != nil {
		if f, err := p.FreeSpace(storeDir); err == nil {
			info.DiskFree = f
		}
	}
	info.Device, info.Summary = summarize(&info, p)
	return info
}

func noGPUReason(nvmlErr, smiErr error) string {
	var parts []string
	if nvmlErr != nil {
		parts = append(parts, "NVML: "+nvmlErr.Error())
	} else {
		parts = append(parts, "NVML: no devices")
	}
	if smiErr != nil {
		parts = append(parts, "nvidia-smi: "+smiErr.Error())
	} else {
		parts = append(parts, "nvidia-smi: no devices")
	}
	return strings.Join(parts, "; ")
}

// summarize decides where Darkroom runs and says it in one sentence.
func summarize(info *Info, p Probes) (device, sentence string) {
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
		return "cpu", fmt.Sprintf("Darkroom will run on the CPU although an NVIDIA %s is present: the selected backend is %q; choose xla:cuda in Settings (or set GOMLX_BACKEND=xla:cuda) to use the GPU.", desc, p.Backend)
	}
	return "gpu", fmt.Sprintf("Darkroom will run on the GPU: %s with the %s backend (if the CUDA PJRT plugin fails to start it falls back to the CPU and says why).", desc, p.Backend)
}

// smiGPUs asks nvidia-smi.
func smiGPUs(ctx context.Context) ([]GPU, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, fmt.Errorf("not installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fields := "index,name,memory.total,memory.free,driver_version,compute_cap"
	out, err := exec.CommandContext(ctx, path, "--query-gpu="+fields, "--format=csv,noheader,nounits").Output()
	if err != nil {
		// Older drivers lack compute_cap.
		fields = "index,name,memory.total,memory.free,driver_version"
		out, err = exec.CommandContext(ctx, path, "--query-gpu="+fields, "--format=csv,noheader,nounits").Output()
		if err != nil {
			return nil, fmt.Errorf("failed: %v", err)
		}
	}
	return ParseSMI(string(out))
}

// ParseSMI parses `nvidia-smi --query-gpu=index,name,memory.total,memory.free,
// driver_version[,compute_cap] --format=csv,noheader,nounits` (memory in MiB).
func ParseSMI(out string) ([]GPU, error) {
	var gpus []GPU
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if len(f) < 5 {
			return nil, fmt.Errorf("unexpected nvidia-smi line %q", line)
		}
		idx, err1 := strconv.Atoi(f[0])
		tot, err2 := strconv.ParseInt(f[2], 10, 64)
		free, err3 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("unexpected nvidia-smi line %q", line)
		}
		g := GPU{Index: idx, Name: f[1], VRAMTotal: tot << 20, VRAMFree: free << 20, Driver: f[4], Source: "nvidia-smi"}
		if len(f) > 5 && f[5] != "[N/A]" {
			g.ComputeCapability = f[5]
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}
