//go:build !unix && !windows

package cli

import "time"

// processorTime is not read here (no getrusage): bench reports no processor use.
func processorTime() (time.Duration, bool) { return 0, false }
