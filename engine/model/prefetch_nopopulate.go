//go:build !linux && !windows

package model

// populateBytes is not called where memoryAvailable cannot tell whether a model fits
// (sysmem reads the memory on Linux and Windows only): the weights' pages are read as
// they are first used.
func populateBytes([]byte) error { return nil }
