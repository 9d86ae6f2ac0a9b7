package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/catalog"
	"github.com/darkroomlabs/darkroom/models/hw"
	"github.com/darkroomlabs/darkroom/models/speed"
)

// TestHWJSON: `darkroom hw --json` reports the GPUs (none on a machine without the
// NVIDIA driver, with the reason), RAM, the models folder's free disk and a fit table
// with every part.
func TestHWJSON(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the calibration's cache
	code, out, errOut := runLibCLI("hw", "--json", "--models-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("hw --json: %d %s", code, errOut)
	}
	var r struct {
		Hardware hw.Info         `json:"hardware"`
		Fit      []models.FitRow `json:"fit"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Hardware.RAMTotal <= 0 || r.Hardware.DiskFree <= 0 {
		t.Errorf("RAM %d, disk %d", r.Hardware.RAMTotal, r.Hardware.DiskFree)
	}
	if len(r.Hardware.GPUs) == 0 && (r.Hardware.Device != "cpu" || !strings.Contains(r.Hardware.Summary, "CPU")) {
		t.Errorf("no GPU but %q", r.Hardware.Summary)
	}
	var n26 int
	for _, row := range r.Fit {
		if row.Model == "diffusiongemma-26b" {
			n26++
		}
		if len(row.Estimate.Parts) != 5 || len(row.Verdicts) != len(r.Hardware.GPUs)+1 {
			t.Errorf("%s/%s: %d parts, %d verdicts", row.Model, row.Profile, len(row.Estimate.Parts), len(row.Verdicts))
		}
	}
	if n26 != 3 {
		t.Errorf("26B rows: %d, want bf16, int8, int4", n26)
	}
	if code, out, _ := runLibCLI("hw", "--models-dir", t.TempDir()); code != 0 || !strings.Contains(out, "int4") {
		t.Errorf("hw table: %s", out)
	}
}

// TestHWSpeed: `darkroom hw` shows each model's tokens/s here in both modes, from
// this machine's cached calibration (the rates written below, not measured again),
// and which mode chat and the API default to: the printer for the 26B on a CPU
// that does 150 GFLOP/s and reads 20 GB/s, the polaroid for the Mini.
func TestHWSpeed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	rates := speed.Uniform(150e9, 40e9, 20e9)
	rates.Spread = map[string]speed.Spread{"mem_read": {Lo: 18.5e9, Hi: 26e9, N: 9}}
	if err := speed.Prime(rates); err != nil {
		t.Fatal(err)
	}
	// The built-in Mini's chats run in the mode its card names, for its reason.
	mini, _ := catalog.Find(catalog.MiniID)
	miniChoice := speed.Choose(mini, nil)
	code, out, errOut := runLibCLI("hw", "--models-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("hw: %d %s", code, errOut)
	}
	for _, want := range []string{"PRINTER", "POLAROID", "tok/s", "GEMM up to 150 GFLOP/s", "memory reads 20.0 GB/s (18.5–26.0 over 9 probes)",
		"diffusiongemma-26b (bf16): printer about", "chat and the API use the printer (AR)",
		"darkroom-mini (bf16): printer about", miniChoice.Reason,
		"diffusiongemma-26b-q4km (Q4_K_M): printer about"} { // its own quantization, not the int4 its estimate stands on
		if !strings.Contains(out, want) {
			t.Errorf("hw output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runLibCLI("hw", "--json", "--models-dir", t.TempDir())
	var rep struct {
		Fit   []models.FitRow `json:"fit"`
		Speed []struct {
			Model, Profile string
			Estimate       speed.Estimate
			Default        speed.Choice `json:"default_mode"`
		} `json:"speed"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatal(code, err)
	}
	if len(rep.Speed) != len(rep.Fit) || len(rep.Speed) == 0 {
		t.Fatalf("%d speed rows for %d fit rows", len(rep.Speed), len(rep.Fit))
	}
	for _, s := range rep.Speed {
		want := engine.Diffusion
		if strings.HasPrefix(s.Model, "diffusiongemma-26b") {
			want = engine.AR
		} else if s.Model == catalog.MiniID {
			want = miniChoice.Mode
		}
		if s.Default.Mode != want || !(s.Estimate.AR.TokensPerS > 0) || !(s.Estimate.Diffusion.TokensPerS > 0) {
			t.Errorf("%s/%s: default %s, %.3g / %.3g tokens/s", s.Model, s.Profile, s.Default.Mode,
				s.Estimate.AR.TokensPerS, s.Estimate.Diffusion.TokensPerS)
		}
	}
}

// TestHWSaysItIsMeasuring: a first run on a machine measures its speed, seconds
// on a small PC, and hw said nothing until its report (10 s of silence at load 5
// on 2 cores); now it says what it is doing once that takes a moment, and says
// nothing when the measurement is cached.
func TestHWSaysItIsMeasuring(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	rates := speed.Uniform(150e9, 40e9, 20e9)
	if err := speed.Prime(rates); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runLibCLI("hw", "--models-dir", t.TempDir())
	if code != 0 || strings.Contains(errOut, measuringNote) {
		t.Errorf("cached rates: code %d, stderr %q; want no note", code, errOut)
	}
	oldAfter := noteAfter
	noteAfter = 10 * time.Millisecond
	ratesHere = func(ctx context.Context, device string) (*speed.Rates, error) {
		time.Sleep(200 * time.Millisecond) // a measurement
		return rates, nil
	}
	defer func() { ratesHere, noteAfter = speed.Here, oldAfter }()
	code, out, errOut := runLibCLI("hw", "--models-dir", t.TempDir())
	if code != 0 || !strings.Contains(errOut, measuringNote) || !strings.Contains(out, "tok/s") {
		t.Errorf("measuring: code %d, stderr %q; want %q, then the report", code, errOut, measuringNote)
	}
}

// TestHWRecalibrate: --recalibrate measures again (speed.HereAgain), saying so, and the
// report stands on the new rates, not on those kept from the first run.
func TestHWRecalibrate(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if err := speed.Prime(speed.Uniform(15e9, 4e9, 2e9)); err != nil { // taken while the PC was busy
		t.Fatal(err)
	}
	oldAfter := noteAfter
	noteAfter = 10 * time.Millisecond
	again := 0
	ratesAgain = func(ctx context.Context, device string) (*speed.Rates, error) {
		again++
		time.Sleep(100 * time.Millisecond) // a measurement
		return speed.Uniform(150e9, 40e9, 20e9), nil
	}
	defer func() { ratesAgain, noteAfter = speed.HereAgain, oldAfter }()
	code, out, errOut := runLibCLI("hw", "--models-dir", t.TempDir())
	if code != 0 || again != 0 || !strings.Contains(out, "GEMM up to 15 GFLOP/s") {
		t.Fatalf("without --recalibrate: code %d, measured again %d times, stderr %q; want the kept rates", code, again, errOut)
	}
	code, out, errOut = runLibCLI("hw", "--recalibrate", "--models-dir", t.TempDir())
	if code != 0 || again != 1 || !strings.Contains(errOut, measuringAgainNote) || !strings.Contains(out, "GEMM up to 150 GFLOP/s") {
		t.Errorf("--recalibrate: code %d, measured again %d times, stderr %q, stdout %q; want the new rates", code, again, errOut, out)
	}
}
