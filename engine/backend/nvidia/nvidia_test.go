package nvidia

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestFindWith(t *testing.T) {
	noSMI := func(context.Context) ([]GPU, error) { return nil, errors.New("not installed") }
	gpus, problem := FindWith(context.Background(), func() ([]GPU, error) { return nil, errors.New("the NVIDIA driver is not installed") }, noSMI)
	if len(gpus) != 0 || problem != "NVML: the NVIDIA driver is not installed; nvidia-smi: not installed" {
		t.Errorf("no GPU: %v, %q", gpus, problem)
	}
	smi := func(context.Context) ([]GPU, error) {
		return ParseSMI("0, NVIDIA H200, 143771, 143000, 580.65.06, 9.0\n")
	}
	gpus, problem = FindWith(context.Background(), func() ([]GPU, error) { return nil, nil }, smi)
	if len(gpus) != 1 || problem != "" || gpus[0].Name != "NVIDIA H200" || gpus[0].DriverMajor() != 580 {
		t.Errorf("nvidia-smi: %+v, %q", gpus, problem)
	}
	if !strings.Contains(noGPUReason(nil, nil), "no devices") {
		t.Error("empty answers not reported")
	}
}

// TestFindPrefersNVML: NVML's answer is taken as is and nvidia-smi is not run;
// NVML failing (a driver without the library, an init error) falls to nvidia-smi.
func TestFindPrefersNVML(t *testing.T) {
	h200 := GPU{Name: "NVIDIA H200", VRAMTotal: 141 << 30, ComputeCapability: "9.0", Driver: "580.65.06", Source: "nvml"}
	smiRan := false
	smi := func(context.Context) ([]GPU, error) {
		smiRan = true
		return ParseSMI("0, NVIDIA GeForce RTX 4090, 24564, 24000, 550.54.15, 8.9\n")
	}
	gpus, problem := FindWith(context.Background(), func() ([]GPU, error) { return []GPU{h200}, nil }, smi)
	if len(gpus) != 1 || gpus[0] != h200 || problem != "" || smiRan {
		t.Errorf("NVML found the H200: got %+v, %q, nvidia-smi run %v", gpus, problem, smiRan)
	}
	gpus, problem = FindWith(context.Background(), func() ([]GPU, error) { return nil, errors.New("init: Driver Not Loaded") }, smi)
	if len(gpus) != 1 || gpus[0].Source != "nvidia-smi" || gpus[0].Name != "NVIDIA GeForce RTX 4090" || problem != "" {
		t.Errorf("NVML failed: got %+v, %q", gpus, problem)
	}
}
