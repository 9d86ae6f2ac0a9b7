// Command darkroom runs DiffusionGemma-style block-diffusion language models locally.
//
// With no arguments it opens the desktop app; with a subcommand it runs the CLI
// (`darkroom help` lists them). Both call the same engine and models packages.
// `go build -tags headless` leaves the desktop app (and Fyne) out, for servers
// without X11 or OpenGL libraries (app/desktop).
package main

import (
	"os"

	"github.com/darkroomlabs/darkroom/app/cli"
	"github.com/darkroomlabs/darkroom/app/desktop"
	_ "github.com/darkroomlabs/darkroom/app/posixlocale" // before Fyne reads the locale
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(desktop.Run())
	}
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
