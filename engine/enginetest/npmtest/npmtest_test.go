package npmtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInstalled: a package counts as installed only at the wanted version and with
// every needed file, so a partial or older install is installed again.
func TestInstalled(t *testing.T) {
	pkgDir := t.TempDir()
	if installed(pkgDir, "1.2.3", nil) {
		t.Error("an empty folder counts as installed")
	}
	if err := os.WriteFile(filepath.Join(pkgDir, "package.json"), []byte(`{"name":"p","version":"1.2.3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !installed(pkgDir, "1.2.3", nil) {
		t.Error("version 1.2.3 does not count as installed")
	}
	if installed(pkgDir, "1.2.4", nil) {
		t.Error("version 1.2.3 counts as 1.2.4")
	}
	need := filepath.Join("models", "tokenizer.json")
	if installed(pkgDir, "1.2.3", []string{need}) {
		t.Error("a missing needed file counts as installed")
	}
	if err := os.MkdirAll(filepath.Join(pkgDir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkgDir, need), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !installed(pkgDir, "1.2.3", []string{need}) {
		t.Error("the needed file is there but the package does not count as installed")
	}
}

// TestDir: $DARKROOM_TEST_CACHE moves the prefix.
func TestDir(t *testing.T) {
	t.Setenv("DARKROOM_TEST_CACHE", "/somewhere")
	if got, want := Dir(), filepath.Join("/somewhere", "npm"); got != want {
		t.Errorf("Dir() = %q, want %q", got, want)
	}
}
