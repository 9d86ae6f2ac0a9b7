package cli

import (
	"context"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"

	"github.com/darkroomlabs/darkroom/models/speed"
)

// TestBenchPageFaultsCount: the process's count rises when it touches memory it
// has not touched before, each new page a minor fault.
func TestBenchPageFaultsCount(t *testing.T) {
	f0, ok := readPageFaults()
	if !ok {
		t.Fatal("no page faults read from /proc/self/stat")
	}
	const pages = 64
	b, err := syscall.Mmap(-1, 0, pages<<12, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(b)
	for i := 0; i < len(b); i += 1 << 12 {
		b[i] = 1
	}
	f1, _ := readPageFaults()
	if d := f1.sub(f0); d.minor < pages {
		t.Errorf("touching %d new pages counted %d minor faults", pages, d.minor)
	}
}

// TestBenchPeakMemoryIsTheModels: the peak RSS bench reports is the model's, over
// its load and timed runs; the calibration that follows them holds buffers of its
// own (a first calibration ~500 MB) and does not count. Before, a first bench on
// a machine reported the calibration's peak as the model's.
func TestBenchPeakMemoryIsTheModels(t *testing.T) {
	dir := tinyModelDir(t)
	rates := benchRates(t)
	const held = 256 << 20
	var rssInCalibration uint64
	ratesHere = func(ctx context.Context, device string) (*speed.Rates, error) {
		b := make([]byte, held)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		rssInCalibration = procStatusBytes("VmRSS")
		runtime.KeepAlive(b)
		return rates, nil
	}
	defer func() { ratesHere = speed.Here }()
	debug.FreeOSMemory() // what earlier tests left resident cannot serve the calibration's buffer
	_, rep := benchJSON(t, "--model", dir, "--mode", "ar", "--runs", "1", "--max-new-tokens", "4", "--json")
	if rssInCalibration == 0 || rep.PeakRSSBytes == 0 {
		t.Fatalf("RSS in the calibration %d, peak reported %d", rssInCalibration, rep.PeakRSSBytes)
	}
	if rep.PeakRSSBytes+held/2 > rssInCalibration {
		t.Errorf("peak RSS %.0f MiB counts the calibration's %d MiB (resident while it ran: %.0f MiB)",
			float64(rep.PeakRSSBytes)/(1<<20), held>>20, float64(rssInCalibration)/(1<<20))
	}
}
