//go:build !(linux || darwin || freebsd || windows)

package model

// willNeedBytes gives no advice where Darkroom does not call madvise.
func willNeedBytes([]byte) {}
