//go:build linux && cgo

package nvidia

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML reads the GPUs through NVML. go-nvml dlopens libnvidia-ml.so.1, so a
// machine without the NVIDIA driver gets an error here, not a crash.
func NVML() (gpus []GPU, err error) {
	defer func() {
		if r := recover(); r != nil {
			gpus, err = nil, fmt.Errorf("NVML failed: %v", r)
		}
	}()
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("the NVIDIA driver is not installed (libnvidia-ml.so.1 not found)")
		}
		return nil, fmt.Errorf("init: %s", nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	driver, _ := nvml.SystemGetDriverVersion()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("device count: %s", nvml.ErrorString(ret))
	}
	for i := 0; i < n; i++ {
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("device %d: %s", i, nvml.ErrorString(ret))
		}
		g := GPU{Index: i, Driver: driver, Source: "nvml"}
		g.Name, _ = d.GetName()
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.VRAMTotal, g.VRAMFree = int64(mem.Total), int64(mem.Free)
		}
		if maj, min, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS {
			g.ComputeCapability = fmt.Sprintf("%d.%d", maj, min)
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}
