package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesRun: the requests Settings copies for a demo builder work as
// copied — the curl command in a shell, the JavaScript in node — against a
// running server with its key, and get the answer.
func TestExamplesRun(t *testing.T) {
	g := &fakeGen{final: "Unix is an operating system."}
	s := start(t, Options{Engine: g})
	curl, js := Examples(s.APIBase(), s.Token())
	if !strings.Contains(curl, s.Token()) || !strings.Contains(js, s.APIBase()+"/chat/completions") {
		t.Fatalf("examples without the key or the address:\n%s\n%s", curl, js)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl here")
	}
	out, err := exec.Command("sh", "-c", curl).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Unix is an operating system.") {
		t.Errorf("the curl example: %v\n%s", err, out)
	}
	if got := g.lastRequest(t); len(got.Messages) == 0 || got.Messages[len(got.Messages)-1].Content != exampleQuestion {
		t.Errorf("the curl example asked %+v", got.Messages)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node here")
	}
	script := filepath.Join(t.TempDir(), "example.mjs") // top-level await: a module
	if err := os.WriteFile(script, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command("node", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "Unix is an operating system." {
		t.Errorf("the JavaScript example: %v\n%s", err, out)
	}
}
