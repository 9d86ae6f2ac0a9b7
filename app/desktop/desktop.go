//go:build !headless

// Package desktop decides what `darkroom` with no arguments opens: the Fyne
// desktop app (app/ui), or a one-line pointer to the CLI — where there is no
// display to open the window on (a terminal over SSH), and in a build with the
// "headless" tag, for GPU servers without X11 or OpenGL libraries. A headless
// build links no Fyne code at all; every subcommand works the same.
package desktop

import (
	"fmt"
	"os"
	"runtime"

	"github.com/darkroomlabs/darkroom/app/ui"
	"github.com/darkroomlabs/darkroom/app/version"
)

// Available reports whether this build contains the desktop app.
const Available = true

// Run opens the desktop app and blocks until its window closes; it returns the
// exit code. Where there is no screen to open the window on (a terminal over
// SSH, a server) it says so in one line and returns 1. v is the binary's
// version, which Settings shows and its system report holds.
func Run(v version.Info) int {
	if why := noDisplay(runtime.GOOS, os.Getenv); why != "" {
		fmt.Fprintln(os.Stderr, "darkroom: "+why)
		return 1
	}
	return ui.Run(v)
}

// noDisplay says why the app cannot open a window here, "" when it may: on Linux
// and the BSDs the window library needs an X11 or Wayland display named in the
// environment (WSL2 gets one from WSLg), and without one it panics.
func noDisplay(goos string, getenv func(string) string) string {
	switch goos {
	case "windows", "darwin", "android", "ios", "js":
		return ""
	}
	if getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != "" {
		return ""
	}
	return "no screen to open the window on (DISPLAY and WAYLAND_DISPLAY are not set, as over SSH or on a server): " +
		"start Darkroom from your desktop, or use the command line (`darkroom help` lists the commands)"
}
