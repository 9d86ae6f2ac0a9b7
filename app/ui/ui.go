// Package ui is Darkroom's desktop app on Fyne: the screens (Library, Encyclopedia,
// Desktop, Chat, Race, Settings), their widgets, and the bridge that turns engine
// events into fyne.Do updates. It is the only package that imports Fyne.
package ui

import (
	"fmt"
	"os"
)

// Run opens the main window and blocks until it closes; it returns the exit code.
func Run() int {
	fmt.Fprintln(os.Stderr, "darkroom: the desktop app is being built; use `darkroom help` for the CLI")
	return 1
}
