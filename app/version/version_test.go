package version

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	v, err := Parse([]byte("Website = \"x\"\n\n[Details]\nName = \"Darkroom\"\nVersion = \"1.2.3\"\nBuild = 7\n\n[Release]\nVersion = \"9\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "Darkroom" || v.Version != "1.2.3" || v.Build != 7 {
		t.Errorf("Parse = %+v", v)
	}
	s := Info{Name: "Darkroom", Version: "1.2.3", Build: 7, Commit: "0123456789abcdef", Modified: true, Go: "go1.26.8", Platform: "linux/amd64"}.String()
	if s != "Darkroom 1.2.3 (build 7, commit 0123456789ab+changes, go1.26.8, linux/amd64)" {
		t.Errorf("String = %q", s)
	}
	for _, bad := range []string{"[Details]\nName = \"Darkroom\"\n", "[Details\nVersion = 1"} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "FyneApp.toml") {
			t.Errorf("Parse(%q) = %v, want an error naming FyneApp.toml", bad, err)
		}
	}
}
