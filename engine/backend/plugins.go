package backend

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/adrg/xdg"
)

// RuntimeDirEnvVar overrides where Darkroom installs GPU support.
const RuntimeDirEnvVar = "DARKROOM_RUNTIME_DIR"

// RuntimeDir is the folder where Darkroom installs runtimes it downloads (GPU
// support): $DARKROOM_RUNTIME_DIR, else $XDG_DATA_HOME/darkroom/runtime, beside
// the models folder.
func RuntimeDir() string {
	if d := strings.TrimSpace(os.Getenv(RuntimeDirEnvVar)); d != "" {
		return d
	}
	return filepath.Join(xdg.DataHome, "darkroom", "runtime")
}

// CUDARuntime names the files of the GPU support Darkroom installs: the PJRT CUDA
// plugin inside the folder of the NVIDIA libraries it needs (the plugin finds them
// through its RPATH, $ORIGIN/../nvidia, as in go-xla's own layout), and a marker
// written only after a graph ran on the GPU with it. Without the marker the
// plugin is not offered to auto.
type CUDARuntime struct {
	Dir string // <runtime>/cuda
}

// Runtime is the CUDA runtime in RuntimeDir.
func Runtime() CUDARuntime { return CUDARuntime{Dir: filepath.Join(RuntimeDir(), "cuda")} }

// NVIDIA is the folder of the NVIDIA libraries (the wheels' nvidia/ trees).
func (r CUDARuntime) NVIDIA() string { return filepath.Join(r.Dir, "nvidia") }

// Plugin is the PJRT CUDA plugin's path.
func (r CUDARuntime) Plugin() string { return filepath.Join(r.NVIDIA(), "pjrt_c_api_cuda_plugin.so") }

// Marker is the file that says the runtime was verified on this machine's GPU.
func (r CUDARuntime) Marker() string { return filepath.Join(r.Dir, "installed.json") }

// Installed reports whether the runtime was installed and verified.
func (r CUDARuntime) Installed() bool {
	_, err1 := os.Stat(r.Marker())
	_, err2 := os.Stat(r.Plugin())
	return err1 == nil && err2 == nil
}

// Where a plugin was found (Plugin.From).
const (
	FromEnv     = "PJRT_PLUGIN_LIBRARY_PATH"
	FromRuntime = "Darkroom's GPU support"
	FromGoXLA   = "go-xla install"
	FromJAX     = "JAX installation"
)

// Plugin is a PJRT plugin file found on this machine.
type Plugin struct {
	Name string `json:"name"` // "cuda", "cpu", …
	Path string `json:"path"`
	From string `json:"from"` // FromEnv, FromRuntime, FromGoXLA or FromJAX
}

// IsCUDA reports whether p is a CUDA plugin.
func (p Plugin) IsCUDA() bool { return strings.HasPrefix(p.Name, "cuda") }

// Location is one folder FindPlugins looks in.
type Location struct {
	Dir  string
	From string
	// JAX: Dir is a Python site-packages folder holding jax_plugins/xla_cuda*/.
	JAX bool
	// Requires is a file that must exist for the folder's plugins to count (the
	// runtime's verified marker).
	Requires string
}

// Locations lists where PJRT plugins are looked for, in order:
// PJRT_PLUGIN_LIBRARY_PATH (the user's explicit choice), Darkroom's runtime folder,
// go-xla's standard install folders (~/.local/lib/go-xla[/nvidia],
// /usr/local/lib/go-xla[/nvidia], the older gomlx/pjrt ones, LD_LIBRARY_PATH), and
// JAX's plugins in the active virtual environment ($VIRTUAL_ENV, $CONDA_PREFIX),
// the user's site-packages and the system's. Folders that do not exist are left out.
func Locations() []Location {
	var locs []Location
	add := func(from string, jax bool, requires string, dirs ...string) {
		for _, d := range dirs {
			if d == "" || !filepath.IsAbs(d) {
				continue
			}
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				locs = append(locs, Location{Dir: d, From: from, JAX: jax, Requires: requires})
			}
		}
	}
	add(FromEnv, false, "", filepath.SplitList(os.Getenv("PJRT_PLUGIN_LIBRARY_PATH"))...)
	rt := Runtime()
	add(FromRuntime, false, rt.Marker(), rt.NVIDIA())
	home, _ := os.UserHomeDir()
	var goxla []string
	if home != "" {
		goxla = append(goxla, filepath.Join(home, ".local", "lib", "go-xla"), filepath.Join(home, ".local", "lib", "go-xla", "nvidia"),
			filepath.Join(home, ".local", "lib", "gomlx", "pjrt"))
	}
	goxla = append(goxla, "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt")
	goxla = append(goxla, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	add(FromGoXLA, false, "", goxla...)
	var sites []string
	for _, prefix := range []string{os.Getenv("VIRTUAL_ENV"), os.Getenv("CONDA_PREFIX")} {
		if prefix != "" {
			sites = append(sites, glob(filepath.Join(prefix, "lib", "python3*", "site-packages"))...)
		}
	}
	if home != "" {
		sites = append(sites, glob(filepath.Join(home, ".local", "lib", "python3*", "site-packages"))...)
	}
	for _, pat := range []string{"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages"} {
		sites = append(sites, glob(pat)...)
	}
	add(FromJAX, true, "", sites...)
	return locs
}

func glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

// pluginPatterns are go-xla's plugin file names; the name is what the wildcard matches.
var pluginPatterns = []string{"pjrt_c_api_*_plugin", "pjrt-plugin-*", "pjrt_plugin_*"}

// FindPlugins lists the PJRT plugins in locs, in the order of locs (a path found
// twice is listed once). It only looks at file names (the
// plugin is loaded when the backend starts, and a failure then is reported).
func FindPlugins(locs []Location) []Plugin {
	ext := ".so"
	if runtime.GOOS == "darwin" {
		ext = ".dylib"
	}
	var out []Plugin
	seen := map[string]bool{}
	for _, l := range locs {
		if l.Requires != "" {
			if _, err := os.Stat(l.Requires); err != nil {
				continue
			}
		}
		var found []Plugin
		if l.JAX {
			for _, p := range glob(filepath.Join(l.Dir, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so")) {
				found = append(found, Plugin{Name: "cuda", Path: p, From: l.From})
			}
		} else {
			for _, pat := range pluginPatterns {
				prefix, suffix, _ := strings.Cut(pat, "*")
				for _, p := range glob(filepath.Join(l.Dir, pat+ext)) {
					name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), prefix), suffix+ext)
					found = append(found, Plugin{Name: name, Path: p, From: l.From})
				}
			}
		}
		for _, p := range found {
			if fi, err := os.Stat(p.Path); err != nil || fi.IsDir() || seen[p.Path] {
				continue
			}
			seen[p.Path] = true
			out = append(out, p)
		}
	}
	return out
}
