package backend

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
)

// touch creates the file path (and its folders).
func touch(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not really a plugin"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gpus(g ...nvidia.GPU) func(context.Context) ([]nvidia.GPU, string) {
	return func(context.Context) ([]nvidia.GPU, string) {
		if len(g) == 0 {
			return nil, "NVML: the NVIDIA driver is not installed; nvidia-smi: not installed"
		}
		return g, ""
	}
}

var rtx = nvidia.GPU{Name: "NVIDIA GeForce RTX 4090", VRAMTotal: 24 << 30, ComputeCapability: "8.9", Driver: "580.65.06"}

// TestChoose: every state of the NVIDIA probe and of the plugin folders gives one
// device and one plain sentence; only a GPU with a CUDA plugin runs on the GPU.
func TestChoose(t *testing.T) {
	dir := t.TempDir()
	cudaPath := touch(t, filepath.Join(dir, "jax", "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so"))
	cpuOnly := func() []Plugin { return []Plugin{{Name: "cpu", Path: "/x/pjrt_c_api_cpu_plugin.so", From: FromGoXLA}} }
	withCUDA := func() []Plugin {
		return append(cpuOnly(), Plugin{Name: "cuda", Path: cudaPath, From: FromJAX})
	}
	old := nvidia.GPU{Name: "Tesla K80", ComputeCapability: "3.7"}
	for _, tc := range []struct {
		name    string
		p       Probes
		device  string
		missed  bool
		mention string
	}{
		{"no GPU", Probes{GPUs: gpus(), Plugins: withCUDA, XLABuilt: true, OS: "linux"}, "cpu", false, "No NVIDIA GPU found"},
		{"GPU, no plugin", Probes{GPUs: gpus(rtx), Plugins: cpuOnly, XLABuilt: true, OS: "linux"}, "cpu", true, "run `darkroom gpu install`"},
		{"GPU, no plugins at all", Probes{GPUs: gpus(rtx), XLABuilt: true, OS: "linux"}, "cpu", true, "GPU support is not installed"},
		{"GPU and plugin", Probes{GPUs: gpus(rtx), Plugins: withCUDA, XLABuilt: true, OS: "linux"}, "gpu", false, FromJAX},
		{"old GPU", Probes{GPUs: gpus(old), Plugins: withCUDA, XLABuilt: true, OS: "linux"}, "cpu", true, "compute capability 3.7"},
		{"no XLA in this build", Probes{GPUs: gpus(rtx), Plugins: withCUDA, XLABuilt: false, OS: "linux"}, "cpu", true, "no GPU support"},
		{"Windows", Probes{GPUs: gpus(rtx), Plugins: withCUDA, XLABuilt: true, OS: "windows"}, "cpu", true, "WSL2"},
		{"macOS", Probes{GPUs: gpus(), XLABuilt: true, OS: "darwin"}, "cpu", false, "macOS"},
	} {
		c := Choose(context.Background(), tc.p)
		if c.Device != tc.device || c.Missed != tc.missed || !strings.Contains(c.Reason, tc.mention) {
			t.Errorf("%s: device %s, missed %v, reason %q (want %s, %v, mentioning %q)", tc.name, c.Device, c.Missed, c.Reason, tc.device, tc.missed, tc.mention)
		}
		if strings.Count(c.Reason, ". ") > 0 || !strings.HasSuffix(c.Reason, ".") || strings.Contains(c.Reason, "\n") {
			t.Errorf("%s: not one sentence: %q", tc.name, c.Reason)
		}
		switch {
		case c.Device == "gpu" && (c.Spec != XLA+":"+cudaPath || c.Plugin == nil || c.Plugin.Path != cudaPath):
			t.Errorf("%s: spec %q, plugin %+v", tc.name, c.Spec, c.Plugin)
		case c.Device == "cpu" && c.Spec != Go:
			t.Errorf("%s: CPU but spec %q", tc.name, c.Spec)
		}
	}
}

// TestFindPlugins: plugins are found in PJRT_PLUGIN_LIBRARY_PATH, Darkroom's runtime
// folder (only once verified), go-xla's folders and JAX site-packages, in that
// order, by their file names.
func TestFindPlugins(t *testing.T) {
	root := t.TempDir()
	home, venv, env, rtDir := filepath.Join(root, "home"), filepath.Join(root, "venv"), filepath.Join(root, "env"), filepath.Join(root, "runtime")
	t.Setenv("HOME", home)
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("CONDA_PREFIX", "")
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", env+string(os.PathListSeparator)+filepath.Join(root, "missing"))
	t.Setenv(RuntimeDirEnvVar, rtDir)

	envCPU := touch(t, filepath.Join(env, "pjrt_c_api_cpu_plugin.so"))
	rt := Runtime()
	if rt.Dir != filepath.Join(rtDir, "cuda") {
		t.Fatalf("runtime %q", rt.Dir)
	}
	rtCUDA := touch(t, rt.Plugin())
	goxlaCUDA := touch(t, filepath.Join(home, ".local", "lib", "go-xla", "nvidia", "pjrt_c_api_cuda_plugin.so"))
	goxlaOther := touch(t, filepath.Join(home, ".local", "lib", "go-xla", "pjrt-plugin-metal.so"))
	venvCUDA := touch(t, filepath.Join(venv, "lib", "python3.12", "site-packages", "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so"))
	userCUDA := touch(t, filepath.Join(home, ".local", "lib", "python3.11", "site-packages", "jax_plugins", "xla_cuda12", "xla_cuda_plugin.so"))
	touch(t, filepath.Join(env, "libsomething.so")) // not a plugin name

	paths := func() []string {
		var out []string
		for _, p := range FindPlugins(Locations()) {
			if strings.HasPrefix(p.Path, root) {
				out = append(out, p.Name+"="+p.Path+" ("+p.From+")")
			}
		}
		return out
	}
	// Not verified yet: the runtime's plugin is not offered.
	want := []string{"cpu=" + envCPU + " (" + FromEnv + ")", "metal=" + goxlaOther + " (" + FromGoXLA + ")",
		"cuda=" + goxlaCUDA + " (" + FromGoXLA + ")", "cuda=" + venvCUDA + " (" + FromJAX + ")", "cuda=" + userCUDA + " (" + FromJAX + ")"}
	if got := paths(); !slices.Equal(got, want) {
		t.Errorf("before the marker:\n got %q\nwant %q", got, want)
	}
	if rt.Installed() {
		t.Error("installed without a marker")
	}
	touch(t, rt.Marker())
	want = slices.Insert(want, 1, "cuda="+rtCUDA+" ("+FromRuntime+")")
	if got := paths(); !slices.Equal(got, want) {
		t.Errorf("verified:\n got %q\nwant %q", got, want)
	}
	// auto takes the first CUDA plugin: Darkroom's own.
	c := Choose(context.Background(), Probes{GPUs: gpus(rtx), Plugins: func() []Plugin { return FindPlugins(Locations()) }, XLABuilt: true, OS: "linux"})
	if c.Spec != XLA+":"+rtCUDA || !strings.Contains(c.Reason, FromRuntime) {
		t.Errorf("choice %+v", c)
	}
}

// TestAutoPluginFailsToStart: a GPU and a CUDA plugin that does not load (here
// not a shared library, or no XLA in this build): the CPU runs and the one
// sentence is a fallback, told on every run.
func TestAutoPluginFailsToStart(t *testing.T) {
	t.Setenv("XLA_FLAGS", "")
	t.Setenv(AutoInstallEnvVar, "")
	bad := touch(t, filepath.Join(t.TempDir(), "cuda", "nvidia", "pjrt_c_api_cuda_plugin.so"))
	s, err := newWith(Auto, func() Probes {
		return Probes{GPUs: gpus(rtx), Plugins: func() []Plugin { return []Plugin{{Name: "cuda", Path: bad, From: FromRuntime}} }, XLABuilt: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Finalize()
	t.Log(s.Fallback)
	if s.Spec != Go || s.Fallback == "" || s.Fallback != s.Reason || !strings.Contains(s.Fallback, "did not start") ||
		strings.Contains(s.Fallback, "\n") {
		t.Errorf("spec %q, fallback %q, reason %q", s.Spec, s.Fallback, s.Reason)
	}
}

// TestNamedPluginFromDarkroomsFolders: `xla:cuda` runs the CUDA plugin Darkroom
// found (here its verified runtime), not only what GoMLX's own folders hold.
func TestNamedPluginFromDarkroomsFolders(t *testing.T) {
	if !xlaBuilt {
		t.Skip("this build has no XLA")
	}
	t.Setenv("XLA_FLAGS", "")
	t.Setenv(AutoInstallEnvVar, "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	t.Setenv("VIRTUAL_ENV", "")
	t.Setenv(RuntimeDirEnvVar, t.TempDir())
	rt := Runtime()
	touch(t, rt.Plugin())
	touch(t, rt.Marker())
	s, err := New("xla:cuda")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Finalize()
	// Not a real plugin: it fails to load, and the reason names the runtime's file.
	if s.Spec != Go || !strings.Contains(s.Fallback, rt.Plugin()) {
		t.Errorf("spec %q, fallback %q", s.Spec, s.Fallback)
	}
}
