// Command darkroom runs DiffusionGemma-style block-diffusion language models locally.
//
// With no arguments it opens the desktop app; with a subcommand it runs the CLI
// (`darkroom help` lists them). Both call the same engine and models packages.
package main

import (
	"os"

	"github.com/darkroomlabs/darkroom/app/cli"
	_ "github.com/darkroomlabs/darkroom/app/posixlocale" // before Fyne reads the locale
	"github.com/darkroomlabs/darkroom/app/ui"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(ui.Run())
	}
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
