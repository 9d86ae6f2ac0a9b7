//go:build !nomini

package assets

import (
	"embed"
	"io/fs"
)

//go:embed mini
var miniFS embed.FS

// miniSource is where Mini reads the model: the files embedded from assets/mini.
func miniSource() (fs.FS, string, error) { return miniFS, "mini", nil }
