//go:build !(linux || darwin || freebsd)

package speed

// preemptions is not counted here: every timed run counts as undisturbed.
func preemptions() (int64, bool) { return 0, false }
