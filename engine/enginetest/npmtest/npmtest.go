// Package npmtest installs an npm package for a test that checks Darkroom against a
// JavaScript implementation or drives it through a JavaScript client: once, with
// npm, into a prefix outside the repository that every package's tests share
// ($DARKROOM_TEST_CACHE/npm, else the user cache dir), reused across runs.
package npmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir is the npm prefix the packages are installed into; their node_modules
// folder is inside it.
func Dir() string {
	if d := os.Getenv("DARKROOM_TEST_CACHE"); d != "" {
		return filepath.Join(d, "npm")
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "darkroom-test", "npm")
}

// Install makes sure pkg@version is installed under Dir, with the files need names
// (relative to the package's folder), and returns the node_modules folder. Without
// npm or node on PATH it skips t with a message that starts with skip (the test's
// name for itself) and, for npm, says the test needs it to do what.
func Install(t testing.TB, skip, what, pkg, version string, need ...string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip(skip + ": npm not found on PATH; install Node.js + npm to " + what)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip(skip + ": npm found but node not found on PATH")
	}
	dir := Dir()
	modules := filepath.Join(dir, "node_modules")
	pkgDir := filepath.Join(modules, pkg)
	if installed(pkgDir, version, need) {
		return modules
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("npm cache dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"darkroom-test-npm","private":true}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("installing %s@%s into %s", pkg, version, dir)
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", dir, pkg+"@"+version)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if v := installedVersion(pkgDir); v != version {
		t.Fatalf("after npm install, %s has version %q, want %s", pkgDir, v, version)
	}
	return modules
}

// installed reports whether pkgDir holds version and every file of need.
func installed(pkgDir, version string, need []string) bool {
	if installedVersion(pkgDir) != version {
		return false
	}
	for _, f := range need {
		if _, err := os.Stat(filepath.Join(pkgDir, f)); err != nil {
			return false
		}
	}
	return true
}

// installedVersion is the version in pkgDir's package.json, or "" without one.
func installedVersion(pkgDir string) string {
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return ""
	}
	var p struct{ Version string }
	_ = json.Unmarshal(data, &p)
	return p.Version
}
