// Package plural writes counts in words for Darkroom's messages, in the right
// number: "1 canvas", "3 canvases", "0 forward passes". The CLI, the desktop
// app and the browser pages count with it, so a count of one reads the same
// everywhere.
package plural

import "strconv"

// Count is n and the noun for it: one for exactly 1, many otherwise
// (Count(1, "canvas", "canvases") is "1 canvas", Count(0, …) "0 canvases").
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Word(n, one, many)
}

// Word is the word for n things without the number: one for exactly 1, many
// otherwise (Word(2, "is", "are") is "are").
func Word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
