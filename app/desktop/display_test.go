//go:build !headless

package desktop

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/app/version"
)

// TestMain lets TestNoScreenIsOneLine run this test binary as `darkroom` with no
// arguments.
func TestMain(m *testing.M) {
	if os.Getenv("DESKTOP_RUN_CHILD") != "" {
		os.Exit(Run(version.Info{}))
	}
	os.Exit(m.Run())
}

func TestNoDisplay(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		goos    string
		getenv  func(string) string
		refused bool
	}{
		{"linux", env(), true},
		{"freebsd", env(), true},
		{"linux", env("DISPLAY", ":0"), false},
		{"linux", env("WAYLAND_DISPLAY", "wayland-0"), false},
		{"windows", env(), false},
		{"darwin", env(), false},
	} {
		if why := noDisplay(c.goos, c.getenv); (why != "") != c.refused {
			t.Errorf("%s, DISPLAY %q, WAYLAND_DISPLAY %q: %q", c.goos, c.getenv("DISPLAY"), c.getenv("WAYLAND_DISPLAY"), why)
		}
	}
}

// TestNoScreenIsOneLine: `darkroom` with no arguments where no window can be
// opened — no display named (a terminal over SSH), or one that is not there —
// exits 1 with one line saying what to do; it panicked with the window library's
// stack trace ("NotInitialized: The GLFW library is not initialized").
func TestNoScreenIsOneLine(t *testing.T) {
	for _, display := range []string{"", ":4321"} {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{"DESKTOP_RUN_CHILD=1", "HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "XDG_DATA_HOME=" + dir,
			"XDG_CACHE_HOME=" + dir, "PATH=" + os.Getenv("PATH")}
		if display != "" {
			cmd.Env = append(cmd.Env, "DISPLAY="+display)
		}
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, "darkroom: ") {
				lines = append(lines, l)
			}
		}
		if !ok || ee.ExitCode() != 1 || strings.Contains(string(out), "panic") || len(lines) != 1 ||
			!strings.Contains(lines[0], "`darkroom help`") {
			t.Errorf("DISPLAY %q: %v, output:\n%s\nwant exit 1 and one darkroom: line pointing to `darkroom help`", display, err, out)
		}
	}
}
