package chats

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSurvivesRestartAndCorruptFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := New("first", "Be brief.")
	a.Messages = []Message{{Role: "user", Content: "What is Unix?"}, {Role: "model", Content: "An operating system."}}
	b := New("second", "")
	b.Thinking = true
	b.Updated = a.Updated.Add(time.Second)
	for _, th := range []*Thread{a, b} {
		if err := s.Save(th); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt thread next to the good ones.
	if err := os.WriteFile(filepath.Join(dir, "broken-1.json"), []byte(`{"id":"broken-1","messages":[{"ro`), 0o600); err != nil {
		t.Fatal(err)
	}

	s2, _ := Open(dir) // "restart"
	list, errs := s2.List()
	if len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
		t.Fatalf("list %+v", list)
	}
	if got := list[1]; got.System != "Be brief." || len(got.Messages) != 2 || got.Messages[1].Content != "An operating system." {
		t.Errorf("thread a came back as %+v", got)
	}
	if !list[0].Thinking {
		t.Error("thinking flag lost")
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "broken-1.json") {
		t.Errorf("errors %v", errs)
	}
	if err := s2.Delete(a.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := s2.List(); len(list) != 1 {
		t.Errorf("after delete: %d threads", len(list))
	}
	if _, err := s2.Load("../etc/passwd"); err == nil {
		t.Error("path traversal id accepted")
	}
}

// TestKilledWriterLeavesNoTruncatedFile re-executes the test binary as a process
// that saves one large thread over and over, kills it with SIGKILL mid-stream, and
// checks that the thread file is always whole.
func TestKilledWriterLeavesNoTruncatedFile(t *testing.T) {
	if dir := os.Getenv("DARKROOM_CHATS_WRITER"); dir != "" {
		s, _ := Open(dir)
		th := New("big", "")
		th.ID = "victim"
		for i := 0; ; i++ {
			th.Messages = append(th.Messages, Message{Role: "user", Content: strings.Repeat("x", 20000)})
			if err := s.Save(th); err != nil {
				os.Exit(3)
			}
			if i == 0 {
				os.WriteFile(filepath.Join(dir, "started"), nil, 0o600)
			}
		}
	}
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterLeavesNoTruncatedFile$")
		cmd.Env = append(os.Environ(), "DARKROOM_CHATS_WRITER="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(50+round*70) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		os.Remove(filepath.Join(dir, "started"))

		s, _ := Open(dir)
		list, errs := s.List()
		if len(errs) != 0 {
			t.Fatalf("round %d: corrupt thread after kill: %v", round, errs)
		}
		if len(list) != 1 || len(list[0].Messages) == 0 {
			t.Fatalf("round %d: threads %d", round, len(list))
		}
	}
}

// TestMarkdown: an exported thread reads as the conversation: its title, its
// system prompt, each message under who wrote it, a thought quoted before its
// answer; a file name from the title with what file systems refuse replaced.
func TestMarkdown(t *testing.T) {
	th := New("What is Unix?", "You are\nDarkroom Mini.")
	th.Model = "Darkroom Mini"
	th.Messages = []Message{
		{Role: "user", Content: "What is Unix?"},
		{Role: "model", Content: "**Unix** (operating system): An OS.\n\n- multi-user", Thought: "Recall.\nAnswer."},
	}
	want := "# What is Unix?\n\n*System prompt:* You are Darkroom Mini.\n\n## You\n\nWhat is Unix?\n\n" +
		"## Darkroom Mini\n\n> *Thinking:* Recall.\n> Answer.\n\n**Unix** (operating system): An OS.\n\n- multi-user\n"
	if got := th.Markdown(); got != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", got, want)
	}
	for title, want := range map[string]string{
		"What is Unix?":         "What is Unix_.md",
		"a/b\\c:d*e":            "a_b_c_d_e.md",
		"..hidden":              "hidden.md",
		"   ":                   "chat.md",
		strings.Repeat("é", 60): strings.Repeat("é", 40) + ".md",
	} {
		if got := (&Thread{Title: title}).FileName(".md"); got != want {
			t.Errorf("FileName(%q) = %q, want %q", title, got, want)
		}
	}
}
