//go:build !headless

// Package desktop decides what `darkroom` with no arguments opens: the Fyne
// desktop app (app/ui), or — in a build with the "headless" tag, for GPU
// servers without X11 or OpenGL libraries — a one-line pointer to the CLI. A
// headless build links no Fyne code at all; every subcommand works the same.
package desktop

import "github.com/darkroomlabs/darkroom/app/ui"

// Available reports whether this build contains the desktop app.
const Available = true

// Run opens the desktop app and blocks until its window closes; it returns the
// exit code.
func Run() int { return ui.Run() }
