package posixlocale

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestFix(t *testing.T) {
	cases := []struct {
		lcAll, lcMessages, lang string
		changed                 bool
		wantVar, want           string
	}{
		{"", "", "C.UTF-8", true, "LANG", "en_US.UTF-8"},
		{"", "", "POSIX", true, "LANG", "en_US.UTF-8"},
		{"C", "", "de_DE.UTF-8", true, "LC_ALL", "en_US.UTF-8"},
		{"", "", "fr_FR.UTF-8", false, "LANG", "fr_FR.UTF-8"},
		{"", "ja_JP.UTF-8", "C", false, "LANG", "C"}, // messages locale is Japanese: leave LANG alone
		{"", "", "", false, "LANG", ""},
	}
	for _, c := range cases {
		t.Setenv("LC_ALL", c.lcAll)
		t.Setenv("LC_MESSAGES", c.lcMessages)
		t.Setenv("LANG", c.lang)
		if got := Fix(); got != c.changed {
			t.Errorf("%+v: Fix() = %v, want %v", c, got, c.changed)
		}
		if got := os.Getenv(c.wantVar); got != c.want {
			t.Errorf("%+v: %s = %q, want %q", c, c.wantVar, got, c.want)
		}
	}
}

// TestNoFyneLocaleNoise builds the real binary and checks that a CLI error under
// the C locale is exactly one line on stderr (Fyne would otherwise log its locale
// parse failure while initializing).
func TestNoFyneLocaleNoise(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the darkroom binary")
	}
	bin := t.TempDir() + "/darkroom"
	build := exec.Command("go", "build", "-o", bin, "github.com/darkroomlabs/darkroom")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "no-such-command")
	cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=", "LC_MESSAGES=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("unknown command exited 0")
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "darkroom: ") {
		t.Fatalf("stderr under LANG=C is not one error line:\n%s", stderr.String())
	}
}
