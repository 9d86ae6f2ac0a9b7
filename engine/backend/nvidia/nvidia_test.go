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
