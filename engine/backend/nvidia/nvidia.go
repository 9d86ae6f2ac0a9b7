// Package nvidia finds NVIDIA GPUs: through NVML when the driver is installed
// (name, VRAM total/free, driver version, compute capability), and through
// `nvidia-smi` when NVML cannot be used. It is the one GPU probe both the
// backend's auto choice and the models' hardware report use. Find never fails:
// what it cannot find comes back as a reason.
package nvidia

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
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

// Find lists this machine's NVIDIA GPUs: NVML first, nvidia-smi when NVML finds
// none. With none, problem says what each probe answered.
func Find(ctx context.Context) (gpus []GPU, problem string) {
	return FindWith(ctx, NVML, SMI)
}

// FindWith is Find with given probes (tests inject them).
func FindWith(ctx context.Context, nvml func() ([]GPU, error), smi func(context.Context) ([]GPU, error)) ([]GPU, string) {
	gpus, nvmlErr := nvml()
	if nvmlErr == nil && len(gpus) > 0 {
		return gpus, ""
	}
	gpus, smiErr := smi(ctx)
	if len(gpus) > 0 {
		return gpus, ""
	}
	return nil, noGPUReason(nvmlErr, smiErr)
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

// SMI asks nvidia-smi.
func SMI(ctx context.Context) ([]GPU, error) {
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

// DriverMajor is the driver version's major number ("580.65.06" → 580), 0 if unknown.
func (g GPU) DriverMajor() int {
	major, _, _ := strings.Cut(g.Driver, ".")
	n, _ := strconv.Atoi(major)
	return n
}
