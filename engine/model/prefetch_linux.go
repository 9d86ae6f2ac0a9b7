//go:build linux

package model

import (
	"errors"

	"golang.org/x/sys/unix"
)

// populateBytes maps the pages that hold b into the process — read from the disk
// first where they are not in the page cache — so that nothing faults on them later:
// madvise(MADV_POPULATE_READ), Linux 5.14 and later. An older kernel, which does not
// know the advice, gets it done by hand: read-ahead advice, then one read per page.
func populateBytes(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	a := pageAligned(b)
	touched += b[0] // b's part of its first page, which a leaves out
	if len(a) == 0 {
		return nil
	}
	err := unix.Madvise(a, unix.MADV_POPULATE_READ)
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	willNeedBytes(b)
	touchPages(b)
	return nil
}
