//go:build linux || windows

package model

// touchPages reads one byte of each page b spans, faulting in those not mapped yet:
// populateBytes's last step on Linux (where MADV_POPULATE_READ is unknown) and on
// Windows.
func touchPages(b []byte) {
	var sum byte
	for i := 0; i < len(b); i += pageSize {
		sum += b[i]
	}
	touched += sum + b[len(b)-1]
}

// touched keeps populateBytes's page reads from being optimized away.
var touched byte
