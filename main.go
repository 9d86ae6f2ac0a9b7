// Command darkroom runs DiffusionGemma-style block-diffusion language models locally.
//
// With no arguments it opens the desktop app; with a subcommand it runs the CLI
// (`darkroom help` lists them). Both call the same engine and models packages.
// `go build -tags headless` leaves the desktop app (and Fyne) out, for servers
// without X11 or OpenGL libraries (app/desktop).
package main

import (
	_ "embed"
	"fmt"
	"os"

	"github.com/darkroomlabs/darkroom/app/cli"
	"github.com/darkroomlabs/darkroom/app/desktop"
	_ "github.com/darkroomlabs/darkroom/app/posixlocale" // before Fyne reads the locale
	"github.com/darkroomlabs/darkroom/app/version"
)

// fyneApp is FyneApp.toml, the one place the app's name, version and build are
// written (the packagers read it too); `darkroom version` reports it.
//
//go:embed FyneApp.toml
var fyneApp []byte

func main() {
	v, err := version.Parse(fyneApp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "darkroom:", err) // a broken FyneApp.toml is a build defect; the app and commands still run
	}
	if len(os.Args) < 2 {
		os.Exit(desktop.Run(v))
	}
	os.Exit(offLockedThread(func() int { return cli.Run(os.Args[1:], os.Stdout, os.Stderr, cli.WithVersion(v)) }))
}

// offLockedThread runs command on a goroutine of its own and returns what it returns.
// Fyne's GLFW driver locks the main goroutine to the process's first thread in its
// init (a window's calls must come from there), and a command needs no window: on the
// main goroutine every hand-off between it and the kernels' worker pool (thousands a
// denoising step) waited for that one thread to be woken, or for its processor to be
// handed over, where any thread would do — a 30-layer 26B's diffusion step ran 15%
// slower that way than in the headless build, which has no Fyne to lock it.
func offLockedThread(command func() int) int {
	code := make(chan int)
	go func() { code <- command() }()
	return <-code
}
