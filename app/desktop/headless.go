//go:build headless

package desktop

import (
	"fmt"
	"os"
)

// Available reports whether this build contains the desktop app.
const Available = false

// Run says that this build has no desktop app and exits 1.
func Run() int {
	fmt.Fprintln(os.Stderr, "darkroom: this build has no desktop app (built with -tags headless); run a command instead, `darkroom help` lists them")
	return 1
}
