package desktop

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHeadlessBuildLinksNoFyne: the darkroom command built with -tags headless
// depends on the CLI and on no Fyne package (so it runs where X11 and OpenGL
// libraries are missing); the default build depends on both.
func TestHeadlessBuildLinksNoFyne(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to list the build's packages: %v", err)
	}
	deps := func(tags ...string) string {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command(goTool, append(args, "github.com/darkroomlabs/darkroom")...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", tags, err, out)
		}
		return string(out)
	}
	headless := deps("-tags", "headless")
	if strings.Contains(headless, "fyne.io/") || strings.Contains(headless, "darkroom/app/ui\n") {
		t.Errorf("the headless build links the desktop app:\n%s", grep(headless, "fyne.io/", "app/ui"))
	}
	if !strings.Contains(headless, "github.com/darkroomlabs/darkroom/app/cli\n") {
		t.Error("the headless build lacks the CLI")
	}
	if full := deps(); !strings.Contains(full, "fyne.io/fyne/v2\n") || !strings.Contains(full, "darkroom/app/ui\n") {
		t.Error("the default build lacks the desktop app")
	}
}

func grep(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
