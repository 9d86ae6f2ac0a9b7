package store

import (
	"os"
	"path/filepath"
)

// existingParent returns path or its nearest existing ancestor.
func existingParent(path string) string {
	p := filepath.Clean(path)
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}
