//go:build !linux

package speed

// runnable is unknown off Linux: no timed run is held to it.
func runnable() (int, bool) { return 0, false }
