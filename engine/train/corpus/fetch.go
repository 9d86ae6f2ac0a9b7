package corpus

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// DebianPackages are the Debian packages that hold the dictionaries.
var DebianPackages = []string{"dict-foldoc", "dict-jargon"}

// systemDictDir is where the dict-* packages install their dictionaries.
const systemDictDir = "/usr/share/dictd"

// FetchPackages downloads Debian packages with `apt-get download` into dir and
// unpacks them with `dpkg-deb -x` under dir/root, which it returns (the
// packages' files lie there as they would under /). Nothing is installed
// system-wide.
func FetchPackages(ctx context.Context, dir string, packages []string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("fetch packages: %w", err)
	}
	if err := run(ctx, dir, "apt-get", append([]string{"download"}, packages...)...); err != nil {
		return "", fmt.Errorf("fetch %v (is apt configured and the network reachable?): %w", packages, err)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	if len(debs) == 0 {
		return "", fmt.Errorf("fetch packages: apt-get download left no .deb in %s", dir)
	}
	root := filepath.Join(dir, "root")
	for _, deb := range debs {
		if err := run(ctx, dir, "dpkg-deb", "-x", deb, root); err != nil {
			return "", fmt.Errorf("unpack %s: %w", filepath.Base(deb), err)
		}
	}
	return root, nil
}

// locateSources finds the dictionaries (the dictionaries of opts.Sources and
// those of its extra sources) and the Python docs when opts.Extra names them:
// in the directories opts gives, else where the packages install them, else
// fetched into a temporary directory that cleanup removes.
func locateSources(ctx context.Context, opts Options, logf func(string, ...any)) (dictDir, docDir string, cleanup func(), err error) {
	cleanup = func() {}
	dicts := slices.Clone(opts.Sources)
	var dictPkgs, docPkgs []string
	dictPkgs = append(dictPkgs, DebianPackages...)
	wantDocs := false
	for _, name := range opts.Extra {
		src, _ := extraSource(name)
		if src.dict != "" {
			dicts = append(dicts, src.dict)
			dictPkgs = append(dictPkgs, src.Package)
		} else {
			wantDocs = true
			docPkgs = append(docPkgs, src.Package)
		}
	}
	dictDir, docDir = opts.DictDir, opts.DocDir
	var fetch []string
	if dictDir == "" {
		if !opts.Fetch && hasDictionaries(systemDictDir, dicts) {
			dictDir = systemDictDir
		} else {
			fetch = append(fetch, dictPkgs...)
		}
	}
	if wantDocs && docDir == "" {
		if sys := string(filepath.Separator) + pythonDocDir; !opts.Fetch && fileExists(filepath.Join(sys, "glossary.html")) {
			docDir = sys
		} else {
			fetch = append(fetch, docPkgs...)
		}
	}
	if len(fetch) == 0 {
		return dictDir, docDir, cleanup, nil
	}
	tmp, err := os.MkdirTemp("", "darkroom-dict-")
	if err != nil {
		return "", "", cleanup, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	logf("fetching %v with apt-get download", fetch)
	root, err := FetchPackages(ctx, tmp, fetch)
	if err != nil {
		cleanup()
		return "", "", func() {}, err
	}
	if dictDir == "" {
		dictDir = filepath.Join(root, "usr", "share", "dictd")
	}
	if wantDocs && docDir == "" {
		docDir = filepath.Join(root, pythonDocDir)
	}
	return dictDir, docDir, cleanup, nil
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
