//go:build !linux && !windows

package model

// populateBytes is not called where memoryAvailable cannot tell whether a model fits:
// the weights' pages are read as they are first used.
func populateBytes([]byte) error { return nil }

// memoryAvailable is 0 off Linux: unknown, so nothing is populated.
func memoryAvailable() int64 { return 0 }
