package ui

import "fyne.io/fyne/v2"

// The main window's sizes. It opens at defaultWindowSize; smallestWindowSize is
// the smallest it supports: every screen's content fits in it, so the window
// never grows past it (a Fyne window grows to its content's minimum size and
// never shrinks back). TestScreensFitANarrowWindow and the window check's
// second pass (packaging/window-check.sh) hold the screens to it.
var (
	defaultWindowSize  = fyne.NewSize(1280, 800)
	smallestWindowSize = fyne.NewSize(800, 600)
)
