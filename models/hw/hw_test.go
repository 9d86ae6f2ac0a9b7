package hw

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/backend"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/sysmem"
)

func probes(gpus []GPU, nvmlErr error, backend string, xla bool) Probes {
	return Probes{
		NVML:      func() ([]GPU, error) { return gpus, nvmlErr },
		NvidiaSMI: func(context.Context) ([]GPU, error) { return nil, errors.New("not installed") },
		Memory: func() (sysmem.Memory, error) {
			return sysmem.Memory{Total: 32 << 30, Available: 20 << 30, Machine: 32 << 30}, nil
		},
		FreeSpace: func(string) (int64, error) { return 100 << 30, nil },
		Backend:   backend, XLABuilt: xla,
	}
}

func withCUDA(p Probes) Probes {
	p.Plugins = func() []backend.Plugin {
		return []backend.Plugin{{Name: "cuda", Path: "/opt/jax/jax_plugins/xla_cuda12/xla_cuda_plugin.so", From: backend.FromJAX}}
	}
	return p
}

func TestSummaries(t *testing.T) {
	rtx := []GPU{{Name: "NVIDIA GeForce RTX 4090", VRAMTotal: 24 << 30, ComputeCapability: "8.9", Source: "nvml"}}
	old := []GPU{{Name: "Tesla K80", VRAMTotal: 12 << 30, ComputeCapability: "3.7", Source: "nvml"}}
	for _, tc := range []struct {
		name    string
		p       Probes
		device  string
		mention string
	}{
		{"no driver", probes(nil, errors.New("the NVIDIA driver is not installed"), "go", true), "cpu", "no NVIDIA GPU was found"},
		{"gpu, go backend", probes(rtx, nil, "go", true), "cpu", "selected backend"},
		{"gpu, no xla build", probes(rtx, nil, "xla:cuda", false), "cpu", "no XLA/CUDA backend"},
		{"old gpu", probes(old, nil, "xla:cuda", true), "cpu", "compute capability 3.7"},
		{"gpu used", probes(rtx, nil, "xla:cuda", true), "gpu", "will run on the GPU"},
		{"auto, no GPU", probes(nil, errors.New("the NVIDIA driver is not installed"), "auto", true), "cpu", "No NVIDIA GPU found"},
		{"auto, GPU, no plugin", probes(rtx, nil, "", true), "cpu", "darkroom gpu install"},
		{"auto, GPU and plugin", withCUDA(probes(rtx, nil, "auto", true)), "gpu", "runs on the GPU (NVIDIA GeForce RTX 4090)"},
	} {
		info := DetectWith(context.Background(), "/models", tc.p)
		if info.Device != tc.device || !strings.Contains(info.Summary, tc.mention) {
			t.Errorf("%s: device %s, summary %q (want %s, mentioning %q)", tc.name, info.Device, info.Summary, tc.device, tc.mention)
		}
		if tc.device == "gpu" && tc.p.Plugins != nil && (info.Backend != "xla:/opt/jax/jax_plugins/xla_cuda12/xla_cuda_plugin.so" || len(info.Plugins) != 1) {
			t.Errorf("%s: backend %q, plugins %v", tc.name, info.Backend, info.Plugins)
		}
		if info.RAMTotal != 32<<30 || info.DiskFree != 100<<30 {
			t.Errorf("%s: RAM %d, disk %d", tc.name, info.RAMTotal, info.DiskFree)
		}
	}
}

func TestSMIFallback(t *testing.T) {
	p := probes(nil, errors.New("init failed"), "xla:cuda", true)
	p.NvidiaSMI = func(context.Context) ([]GPU, error) {
		return ParseSMI("0, NVIDIA GeForce RTX 4080, 16376, 15000, 560.35.03, 8.9\n")
	}
	info := DetectWith(context.Background(), "", p)
	if len(info.GPUs) != 1 || info.GPUs[0].VRAMTotal != 16376<<20 || info.GPUs[0].Source != "nvidia-smi" ||
		info.GPUs[0].Driver != "560.35.03" || info.GPUs[0].ComputeCapability != "8.9" || info.GPUProblem != "" {
		t.Errorf("fallback: %+v", info)
	}
	if _, err := ParseSMI("garbage"); err == nil {
		t.Errorf("garbage parsed")
	}
	g, err := ParseSMI("0, Tesla T4, 15360, 15000, 470.1\n1, Tesla T4, 15360, 100, 470.1\n")
	if err != nil || len(g) != 2 || g[1].VRAMFree != 100<<20 || g[0].ComputeCapability != "" {
		t.Errorf("old-driver format: %+v, %v", g, err)
	}
}

// TestDetectHere runs the real probes: on a machine without the NVIDIA driver NVML
// must fail gracefully (no crash), and RAM must be found.
func TestDetectHere(t *testing.T) {
	info := Detect(context.Background(), t.TempDir())
	if info.RAMTotal <= 0 || info.DiskFree <= 0 || info.Summary == "" {
		t.Errorf("detect: %+v", info)
	}
	if len(info.GPUs) == 0 && (info.GPUProblem == "" || info.Device != "cpu") {
		t.Errorf("no GPU but no reason: %+v", info)
	}
	t.Log(info.Summary)
}

// TestReport: the report `darkroom hw` prints and the app's system report
// holds names each GPU with its driver and compute capability, RAM and CPUs, the CPU
// path's kernels,
// the models folder, the backend chosen and the PJRT plugins found (or where
// none was looked for).
func TestReport(t *testing.T) {
	rtx := []GPU{{Name: "NVIDIA GeForce RTX 4090", VRAMTotal: 24 << 30, VRAMFree: 20 << 30, Driver: "570.86", ComputeCapability: "8.9", Source: "nvml"}}
	var b strings.Builder
	DetectWith(context.Background(), "/models", withCUDA(probes(rtx, nil, "auto", true))).Report(&b)
	got := b.String()
	for _, want := range []string{"runs on the GPU (NVIDIA GeForce RTX 4090)",
		"GPU 0: NVIDIA GeForce RTX 4090, 25.8 GB VRAM (21.5 GB free), driver 570.86, compute 8.9 [nvml]",
		"RAM: 34.4 GB (21.5 GB available)", "Models folder: /models (107.4 GB free)", "CPU products: float " + kernels.GEMMKernel(),
		"Backend: xla:/opt/jax/jax_plugins/xla_cuda12/xla_cuda_plugin.so (gpu)", "Darkroom's GPU support: ",
		"  cuda  /opt/jax/jax_plugins/xla_cuda12/xla_cuda_plugin.so (JAX installation)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	b.Reset()
	DetectWith(context.Background(), "", probes(nil, errors.New("the NVIDIA driver is not installed"), "go", true)).Report(&b)
	got = b.String()
	if strings.Contains(got, "GPU 0") || strings.Contains(got, "Models folder") || !strings.Contains(got, "PJRT plugins: none found") {
		t.Errorf("no GPU, no models folder, no plugin:\n%s", got)
	}
	if strings.Contains(got, "RAM limit") {
		t.Errorf("a RAM limit line without a limit:\n%s", got)
	}

	// Under a container's 10 GiB limit on a 32 GiB machine, the fit tables' RAM is
	// the limit, and the report says why.
	p := probes(nil, errors.New("the NVIDIA driver is not installed"), "go", true)
	p.Memory = func() (sysmem.Memory, error) {
		return sysmem.Memory{Total: 10 << 30, Available: 9 << 30, Machine: 32 << 30, Limit: "/docker/abc"}, nil
	}
	info := DetectWith(context.Background(), "", p)
	b.Reset()
	info.Report(&b)
	got = b.String()
	if info.RAMTotal != 10<<30 || info.RAMMachine != 32<<30 || !strings.Contains(got, "RAM: 10.7 GB (9.7 GB available)") ||
		!strings.Contains(got, "memory limit (control group /docker/abc), so it counts on 10.7 GB of the machine's 34.4 GB") {
		t.Errorf("under a limit: RAM %d of %d:\n%s", info.RAMTotal, info.RAMMachine, got)
	}
}
