//go:build nomini

package assets

import (
	"io/fs"
	"os"
)

// miniSource is where Mini reads the model: the folder $DARKROOM_MINI_DIR
// (miniDirSource).
func miniSource() (fs.FS, string, error) { return miniDirSource(os.Getenv(MiniDirEnv)) }
