package speed

import (
	"os"
	"strconv"
	"strings"
)

// runnable is how many threads on the whole machine are running or waiting for a
// CPU now, the caller's included (/proc/loadavg's fourth field, "running/total").
// ok is false where that is not known.
func runnable() (n int, ok bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, false
	}
	run, _, _ := strings.Cut(f[3], "/")
	n, err = strconv.Atoi(run)
	return n, err == nil
}
