//go:build cgo && !noxla && ((linux && amd64) || darwin)

package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/xla"
)

// xlaBuilt reports whether this binary includes the XLA backend.
const xlaBuilt = true

// startXLA starts XLA with the PJRT plugin named by cfg ("", "cpu", "cuda",
// "/abs/path.so", optionally followed by ",option…") and returns the spec it runs as.
func startXLA(cfg string) (backends.Backend, string, error) {
	xla.EnableAutoInstall(os.Getenv(AutoInstallEnvVar) == "1")
	plugin, opts, _ := strings.Cut(cfg, ",")
	if plugin != "" && !filepath.IsAbs(plugin) {
		// A named plugin Darkroom knows the path of (its own GPU support, a JAX
		// installation's) runs from there; GoMLX looks only in its own folders.
		for _, p := range FindPlugins(Locations()) {
			if p.Name == plugin {
				plugin = p.Path
				break
			}
		}
	}
	path := plugin
	if !filepath.IsAbs(plugin) {
		names := xla.GetAvailablePlugins() // cuda first, then cpu, then others
		if len(names) == 0 {
			return nil, "", errNoPlugin
		}
		if plugin == "" {
			plugin = names[0]
		}
		found := pjrt.AvailablePlugins()
		if _, ok := found[plugin]; !ok {
			sort.Strings(names)
			return nil, "", fmt.Errorf("no PJRT plugin %q found; installed: %s", plugin, strings.Join(names, ", "))
		}
		path = found[plugin]
	} else if _, err := os.Stat(plugin); err != nil {
		if os.IsNotExist(err) {
			return nil, "", fmt.Errorf("no PJRT plugin at %s", plugin)
		}
		return nil, "", fmt.Errorf("PJRT plugin %s: %w", plugin, err)
	}
	setCUDADataDir(plugin, path)
	spec := XLA + ":" + plugin
	if opts != "" {
		spec += "," + opts
	}
	var b backends.Backend
	var err error
	if isCUDA(plugin+path) && os.Getenv(PreallocateEnvVar) == "0" {
		b, err = startWithOptions(strings.TrimPrefix(spec, XLA+":"), pjrt.NamedValuesMap{"preallocate": false})
	} else {
		b, err = start(spec)
	}
	if err != nil {
		return nil, "", err
	}
	return b, spec, nil
}

// startWithOptions is start with PJRT client options.
func startWithOptions(cfg string, opts pjrt.NamedValuesMap) (b backends.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%v", r)
		}
	}()
	xb, err := xla.NewWithOptions(cfg, opts)
	if err != nil {
		return nil, err
	}
	return xb, nil
}

func isCUDA(s string) bool {
	up := strings.ToUpper(s)
	return strings.Contains(up, "CUDA") || strings.Contains(up, "NVIDIA")
}

// setCUDADataDir points XLA at the nvidia libraries installed next to a CUDA
// plugin: ../nvidia in go-xla's and Darkroom's layout (the plugin sits inside
// nvidia/), ../../nvidia in a JAX site-packages (jax_plugins/xla_cuda13/). go-xla
// v0.1.4 would otherwise set XLA_FLAGS to a path hard-coded from its author's
// machine; a flag already present is left alone.
func setCUDADataDir(name, path string) {
	if !isCUDA(name + path) {
		return
	}
	flags := os.Getenv("XLA_FLAGS")
	if strings.Contains(flags, "--xla_gpu_cuda_data_dir") {
		return
	}
	up2 := filepath.Dir(filepath.Dir(path))
	for _, dir := range []string{filepath.Join(up2, "nvidia"), filepath.Join(filepath.Dir(up2), "nvidia")} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			_ = os.Setenv("XLA_FLAGS", strings.TrimSpace(flags+" --xla_gpu_cuda_data_dir="+dir))
			return
		}
	}
}
