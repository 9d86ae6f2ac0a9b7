// Command tinymodel writes a tiny random-weight model (see package tiny) into a
// folder, for packaging/window-check.sh when no trained Darkroom Mini is embedded.
//
//	go run ./app/ui/internal/tinymodel DIR
package main

import (
	"fmt"
	"os"

	"github.com/darkroomlabs/darkroom/app/ui/internal/tiny"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tinymodel DIR")
		os.Exit(2)
	}
	if err := tiny.Write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "tinymodel:", err)
		os.Exit(1)
	}
}
