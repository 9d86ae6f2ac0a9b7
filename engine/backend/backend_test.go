package backend

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/backend/nvidia"
)

func TestAutoIsDefault(t *testing.T) {
	t.Setenv(EnvVar, "")
	if got := Resolve(""); got != Auto {
		t.Fatalf("Resolve(\"\") = %q, want %q", got, Auto)
	}
	noGPU := func() Probes {
		return Probes{GPUs: func(context.Context) ([]nvidia.GPU, string) { return nil, "NVML: no driver" }, XLABuilt: true}
	}
	s, err := newWith("", noGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Finalize()
	// No GPU is not a fallback (nothing asked for failed), but the reason is there.
	if s.Spec != Go || s.Fallback != "" || !strings.Contains(s.Reason, "No NVIDIA GPU found") {
		t.Errorf("default backend %q, fallback %q, reason %q", s.Spec, s.Fallback, s.Reason)
	}
}

func TestEnvVarHonored(t *testing.T) {
	t.Setenv(EnvVar, "nonsense")
	if _, err := New(""); !errors.Is(err, ErrUnknown) {
		t.Errorf("GOMLX_BACKEND=nonsense: err = %v, want ErrUnknown", err)
	}
	if s, err := New("go"); err != nil || s.Spec != Go { // an explicit spec wins over the env
		t.Errorf("explicit go with env set: %v, %v", s, err)
	}
}

func TestXLAFallsBackToGo(t *testing.T) {
	// No plugin anywhere: an empty search path and no auto-install.
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv(AutoInstallEnvVar, "")
	t.Setenv("HOME", t.TempDir())
	for _, spec := range []string{"xla", "xla:cpu", "xla:cuda", "xla:" + filepath.Join(t.TempDir(), "missing.so")} {
		s, err := New(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if s.Spec != Go {
			t.Errorf("%s: runs %q", spec, s.Spec)
		}
		f := s.Fallback
		t.Logf("%s: %s", spec, f)
		if !strings.HasPrefix(f, "XLA backend unavailable (") || !strings.HasSuffix(f, "); using the pure-Go backend") ||
			strings.Contains(f, "\n") {
			t.Errorf("%s: fallback line %q", spec, f)
		}
		if !xlaBuilt && !strings.Contains(f, "no XLA support") {
			t.Errorf("%s: %q does not say the build lacks XLA", spec, f)
		}
		if xlaBuilt && (spec == "xla" || spec == "xla:cpu") && !strings.Contains(f, "no PJRT plugin") {
			t.Errorf("%s: %q does not say no plugin was found", spec, f)
		}
		s.Finalize()
	}
}

func TestUnknown(t *testing.T) {
	_, err := New("tpu")
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "xla:cuda") || !strings.Contains(err.Error(), "want auto,") {
		t.Errorf("err = %v", err)
	}
}

func TestMeasureMatMul(t *testing.T) {
	s, err := New(Go)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Finalize()
	r, err := MeasureMatMul(t.Context(), s, 64, 32, 48, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.FLOPs != 2*64*32*48 || r.Runs != 3 || !(r.Seconds > 0) || !(r.FLOPS > 0) {
		t.Errorf("rate %+v", r)
	}
	if _, err := MeasureMatMul(t.Context(), s, 0, 1, 1, 1); err == nil {
		t.Error("empty shape accepted")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestGoConfig(t *testing.T) {
	for in, want := range map[string]string{
		"go":                "go:ops_sequential",
		"go:parallelism=1":  "go:parallelism=1,ops_sequential",
		"go:ops_parallel":   "go:ops_parallel",
		"go:ops_sequential": "go:ops_sequential",
	} {
		if got := goConfig(in); got != want {
			t.Errorf("goConfig(%q) = %q, want %q", in, got, want)
		}
	}
}
