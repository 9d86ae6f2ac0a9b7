//go:build headless

package desktop

import (
	"fmt"
	"os"

	"github.com/darkroomlabs/darkroom/app/version"
)

// Available reports whether this build contains the desktop app.
const Available = false

// Run says that this build has no desktop app and exits 1.
func Run(version.Info) int {
	fmt.Fprintln(os.Stderr, "darkroom: this build has no desktop app (built with -tags headless); run a command instead, `darkroom help` lists them")
	return 1
}
