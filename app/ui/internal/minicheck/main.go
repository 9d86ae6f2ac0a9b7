// Command minicheck exits 0 when this checkout embeds a usable Darkroom Mini
// (assets.Mini), 1 otherwise; packaging/window-check.sh uses it to pick a model.
package main

import (
	"fmt"
	"os"

	"github.com/darkroomlabs/darkroom/assets"
)

func main() {
	if _, err := assets.Mini(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
