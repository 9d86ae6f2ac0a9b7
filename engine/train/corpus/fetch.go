package corpus

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// DebianPackages are the Debian packages that hold the dictionaries.
var DebianPackages = []string{"dict-foldoc", "dict-jargon"}

// FetchDictionaries downloads the dictionary packages with `apt-get download`
// into dir and unpacks them with `dpkg-deb -x`, returning the directory that
// holds the .index and .dict.dz files. Nothing is installed system-wide.
func FetchDictionaries(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("fetch dictionaries: %w", err)
	}
	if err := run(ctx, dir, "apt-get", append([]string{"download"}, DebianPackages...)...); err != nil {
		return "", fmt.Errorf("fetch dictionaries (is apt configured and the network reachable?): %w", err)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	if len(debs) == 0 {
		return "", fmt.Errorf("fetch dictionaries: apt-get download left no .deb in %s", dir)
	}
	root := filepath.Join(dir, "root")
	for _, deb := range debs {
		if err := run(ctx, dir, "dpkg-deb", "-x", deb, root); err != nil {
			return "", fmt.Errorf("unpack %s: %w", filepath.Base(deb), err)
		}
	}
	return filepath.Join(root, "usr", "share", "dictd"), nil
}

func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := bytes.TrimSpace(stderr.Bytes())
		if len(msg) > 300 {
			msg = msg[len(msg)-300:]
		}
		return fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return nil
}
