//go:build !windows

package cli

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// resetPeakRSS starts the process's peak resident set over from what is resident
// now (Linux ≥ 4.0: "5" written to /proc/self/clear_refs resets VmHWM). Elsewhere,
// or where the write is refused, the peak stays the whole process's.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is the process's peak resident set size (Linux /proc/self/status
// VmHWM, since resetPeakRSS), 0 where unavailable.
func peakRSS() uint64 { return procStatusBytes("VmHWM") }

// procStatusBytes is a size field of /proc/self/status ("VmHWM", "VmRSS", …) in
// bytes, 0 where unavailable.
func procStatusBytes(field string) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			fields := strings.Fields(rest) // "123456 kB"
			if len(fields) == 2 && fields[1] == "kB" {
				if kb, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
