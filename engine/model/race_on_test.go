//go:build race

package model

// raceEnabled: built with -race, which drops sync.Pool items at random and
// allocates for its own bookkeeping, so allocation counts mean nothing.
const raceEnabled = true
