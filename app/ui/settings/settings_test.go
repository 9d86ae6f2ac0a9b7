package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestRoundTripAndClamp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "darkroom", "settings.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Get(); got.Backend != "auto" || got.Theme != "system" {
		t.Fatalf("defaults %+v", got)
	}
	if err := s.Update(func(v *Values) {
		v.Backend = "xla"
		v.Theme = "dark"
		v.Sampling.MaxSteps = 1000 // above the bound
		v.Sampling.TMin = 0.3
		v.Sampling.Guidance = -5 // below the bound: off
		v.Sampling.GuidanceRounds = 12
		v.Sampling.GuidanceInWord = 50   // above the bound
		v.Sampling.RepetitionPenalty = 7 // above the bound
		v.ServerEnabled = true
	}); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got := s2.Get()
	if got.Backend != "xla" || got.Theme != "dark" || !got.ServerEnabled || got.Sampling.TMin != 0.3 || got.Sampling.MaxSteps != 256 ||
		got.Sampling.Guidance != -1 || got.Sampling.GuidanceRounds != 12 || got.Sampling.GuidanceInWord != 20 ||
		got.Sampling.RepetitionPenalty != 2 {
		t.Errorf("reloaded %+v", got)
	}
}

func TestDamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(path, []byte(`{"backend":"quantum","theme":"dark","sampling":{"t_min":-4},"page_mode":"telepathy"}`), 0o600)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Get(); v.Backend != "auto" || v.Theme != "dark" || v.Sampling.TMin != 0 || v.PageMode != "" {
		t.Errorf("odd values kept: %+v", v)
	}
	os.WriteFile(path, []byte(`{"backend":`), 0o600)
	if s, err := Open(path); err == nil || s.Get().Backend != "auto" {
		t.Errorf("damaged file: err %v", err)
	}
}

func TestServerPort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Get().ServerPort; p != 0 {
		t.Fatalf("default port %d, want 0 (random)", p)
	}
	for _, c := range []struct{ set, want int }{{8765, 8765}, {80, 0}, {70000, 0}, {0, 0}} {
		if err := s.Update(func(v *Values) { v.ServerPort = c.set }); err != nil {
			t.Fatal(err)
		}
		s2, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := s2.Get().ServerPort; got != c.want {
			t.Errorf("port %d reloads as %d, want %d", c.set, got, c.want)
		}
	}
}

// TestTextScale: the text size steps through TextScales and stops at either
// end; a size not among them (a settings file written by hand) reads as the
// nearest, 0 as 100%.
func TestTextScale(t *testing.T) {
	for _, c := range []struct {
		from int
		up   bool
		want int
	}{{0, true, 110}, {100, true, 110}, {110, false, 100}, {150, true, 150}, {80, false, 80}, {0, false, 90}, {105, true, 110}, {105, false, 100}} {
		if got := StepTextScale(c.from, c.up); got != c.want {
			t.Errorf("StepTextScale(%d, up %v) = %d, want %d", c.from, c.up, got, c.want)
		}
	}
	dir := t.TempDir()
	for in, want := range map[int]float32{0: 1, 125: 1.25, 300: 1.5, 10: 0.8, 117: 1.1} {
		p := filepath.Join(dir, "settings.json")
		if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"text_scale": %d}`, in)), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Get().Scale(); got != want {
			t.Errorf("text_scale %d reads as %.2f, want %.2f", in, got, want)
		}
	}
}

// TestGPULayers: GPU layers round-trip; a negative count or one past MaxGPULayers
// (a hand-edited file) is auto (0).
func TestGPULayers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ set, want int }{{16, 16}, {-3, 0}, {MaxGPULayers + 1, 0}, {0, 0}} {
		if err := s.Update(func(v *Values) { v.GPULayers = c.set }); err != nil {
			t.Fatal(err)
		}
		s2, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := s2.Get().GPULayers; got != c.want {
			t.Errorf("GPU layers %d: reloaded %d, want %d", c.set, got, c.want)
		}
	}
}
