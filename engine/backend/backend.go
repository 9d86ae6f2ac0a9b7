// Package backend chooses and starts the GoMLX backend the engine computes on:
// "auto" (the default), "go" (pure Go, simplego: runs everywhere) or "xla" (PJRT
// plugins: "xla:cpu", "xla:cuda", or "xla:/abs/path/plugin.so").
//
// auto runs XLA CUDA where an NVIDIA GPU (package nvidia: NVML, then nvidia-smi)
// and a PJRT CUDA plugin (Locations: Darkroom's runtime folder, go-xla's install
// folders, JAX installations, PJRT_PLUGIN_LIBRARY_PATH) are both found, else the
// CPU, and Choose says why in one plain sentence.
//
// XLA is best effort. When it cannot start — this binary was built without cgo
// or with the noxla tag, no PJRT plugin is installed, the plugin fails to load —
// New falls back to "go" and says why in one plain line for the user. GoMLX's
// automatic plugin download is turned off (offline it hangs or fails, and it
// fetches unverified binaries; `darkroom gpu install` fetches verified ones); set
// DARKROOM_XLA_AUTO_INSTALL=1 to allow it.
package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// Go is the pure-Go backend's name.
const Go = simplego.BackendName

// XLA is the XLA/PJRT backend's name.
const XLA = "xla"

// EnvVar is GoMLX's environment variable naming the backend (e.g. GOMLX_BACKEND=xla:cuda);
// it applies when no spec is given.
const EnvVar = backends.ConfigEnvVar

// AutoInstallEnvVar, set to 1, lets GoMLX download PJRT plugins on first use.
const AutoInstallEnvVar = "DARKROOM_XLA_AUTO_INSTALL"

// PreallocateEnvVar, set to 0, stops XLA's CUDA client from reserving most of the
// GPU's memory when it starts (it then grows as the model needs), so the device
// memory Darkroom uses can be measured (packaging/gpu-check.sh).
const PreallocateEnvVar = "DARKROOM_XLA_PREALLOCATE"

// Started is a running backend.
type Started struct {
	backends.Backend
	// Spec is what runs: "go", "xla:cpu", "xla:cuda", "xla:/path/plugin.so".
	Spec string
	// Fallback is set when XLA was asked for (or auto found a GPU it could not
	// use) and "go" runs instead: one plain line saying why, for the user ("XLA
	// backend unavailable (no PJRT plugin found); using the pure-Go backend").
	Fallback string
	// Reason, for auto, says in one sentence where it runs and why (Choice.Reason).
	Reason string
}

// ErrUnknown is returned for a spec naming neither "go" nor "xla".
var ErrUnknown = errors.New("unknown backend")

// Resolve returns the spec New will start for spec: spec itself, else
// $GOMLX_BACKEND, else "auto" (see Choose).
func Resolve(spec string) string {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		spec = strings.TrimSpace(os.Getenv(EnvVar))
	}
	if spec == "" {
		spec = Auto
	}
	return spec
}

// New starts the backend named by spec (see Resolve). An XLA spec that cannot
// start falls back to Go with Started.Fallback set; an unknown name or a Go
// backend that fails to start is an error.
func New(spec string) (*Started, error) {
	return newWith(spec, DefaultProbes)
}

// newWith is New with auto's probes given (tests fake the GPU and the plugins).
func newWith(spec string, probes func() Probes) (*Started, error) {
	spec = Resolve(spec)
	name, cfg, _ := strings.Cut(spec, ":")
	if name == Auto && cfg == "" {
		return startAuto(Choose(context.Background(), probes()))
	}
	switch name {
	case Go:
		b, err := start(goConfig(spec))
		if err != nil {
			return nil, fmt.Errorf("backend %q: %w", spec, err)
		}
		return &Started{Backend: b, Spec: spec}, nil
	case XLA, Auto, "stablehlo", "hlo", "shlo":
		b, xspec, err := startXLA(cfg)
		if err == nil {
			return &Started{Backend: b, Spec: xspec}, nil
		}
		g, gerr := start(goConfig(Go))
		if gerr != nil {
			return nil, fmt.Errorf("backend %q: %v; pure-Go fallback: %w", spec, err, gerr)
		}
		s := &Started{Backend: g, Spec: Go}
		s.Fallback = fmt.Sprintf("XLA backend unavailable (%s); using the pure-Go backend", reason(err))
		return s, nil
	default:
		return nil, fmt.Errorf("%w %q (want auto, go, xla, xla:cpu, xla:cuda or xla:/path/to/plugin.so)", ErrUnknown, spec)
	}
}

// startAuto starts what Choose chose; a CUDA plugin that does not start falls
// back to Go with one sentence saying so.
func startAuto(c Choice) (*Started, error) {
	if c.Device == "gpu" {
		_, cfg, _ := strings.Cut(c.Spec, ":")
		b, xspec, err := startXLA(cfg)
		if err == nil {
			return &Started{Backend: b, Spec: xspec, Reason: c.Reason}, nil
		}
		c.Reason = fmt.Sprintf("GPU found (%s) but its CUDA plugin %s did not start (%s), so Darkroom runs on the CPU.",
			c.GPU, c.Plugin.Path, reason(err))
		c.Missed = true
	}
	g, err := start(goConfig(Go))
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", Go, err)
	}
	s := &Started{Backend: g, Spec: Go, Reason: c.Reason}
	if c.Missed {
		s.Fallback = c.Reason
	}
	return s, nil
}

// goConfig adds "ops_sequential" to a pure-Go spec that does not choose an ops
// execution mode. simplego v0.26.0 deadlocks in its parallel ops mode (the
// default when one graph runs alone): graph nodes occupy the worker pool's
// slots and then wait inside DotGeneral (execDotGeneralSmall → WaitToStart) for
// a free slot, which, once every slot is held by such a node, never comes. In
// sequential mode nodes run on the calling goroutine and only DotGeneral's own
// splits take workers, so matmuls still use every core.
func goConfig(spec string) string {
	if strings.Contains(spec, "ops_sequential") || strings.Contains(spec, "ops_parallel") {
		return spec
	}
	name, opts, _ := strings.Cut(spec, ":")
	if opts == "" {
		return name + ":ops_sequential"
	}
	return name + ":" + opts + ",ops_sequential"
}

// start calls GoMLX's constructor, which panics on some errors.
func start(spec string) (b backends.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%v", r)
		}
	}()
	b, err = backends.NewWithConfig(spec)
	if err != nil {
		return nil, err // a typed nil inside b is not a backend
	}
	return b, nil
}

// errNotBuilt reports a binary without the XLA backend.
var errNotBuilt = errors.New("this build has no XLA support")

// errNoPlugin reports that no PJRT plugin could be found.
var errNoPlugin = errors.New("no PJRT plugin found")

// reason shortens an XLA start error to a parenthetical for the fallback line.
func reason(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, errNotBuilt), errors.Is(err, errNoPlugin):
		return msg
	case strings.Contains(msg, "no plugins found"):
		return errNoPlugin.Error()
	case strings.Contains(msg, "not found: available plugins"):
		// GoMLX: Plugin "cuda" for backend "xla" not found: available plugins found ["cpu"]
		return "the requested PJRT plugin is not installed; " + lastPart(msg)
	}
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return strings.ReplaceAll(msg, "\n", " ")
}

func lastPart(msg string) string {
	if i := strings.LastIndex(msg, "available plugins found"); i >= 0 {
		return msg[i:]
	}
	return msg
}

// Available lists the backends compiled into this binary that New accepts.
func Available() []string {
	out := []string{Go}
	if xlaBuilt {
		out = append(out, XLA)
	}
	return out
}
