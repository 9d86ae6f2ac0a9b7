package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/models"
	"github.com/darkroomlabs/darkroom/models/hw"
)

// TestHWJSON: `darkroom hw --json` reports the GPUs (none on a machine without the
// NVIDIA driver, with the reason), RAM, the models folder's free disk and a fit table
// with every part.
func TestHWJSON(t *testing.T) {
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
