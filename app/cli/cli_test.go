package cli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine"
)

// TestErrorLinesNameTheCommand runs failing commands of every kind (a flag
// error, a check in the command, an error from the models library, a
// subcommand's) and wants each error as one "darkroom COMMAND: reason" line.
func TestErrorLinesNameTheCommand(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string // the line's start
	}{
		{[]string{"generate", "--frobnicate"}, "darkroom generate: flag provided but not defined"},
		{[]string{"hw", "--context", "-1"}, "darkroom hw: --context"},
		{[]string{"models", "extra"}, "darkroom models: takes no arguments"},
		{[]string{"rm", "no-such-model", "--models-dir", dir}, "darkroom rm: "},
		{[]string{"wiki"}, "darkroom wiki: want one TITLE"},
		{[]string{"tokenize", "--frobnicate"}, "darkroom tokenize: flag provided but not defined"},
		{[]string{"quantize"}, "darkroom quantize: give --model"},
		{[]string{"train", "run"}, "darkroom train run: --run DIR is required"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 1 || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and one line starting %q", c.args, code, stderr, c.want)
		}
		name := c.args[0]
		if strings.Contains(stderr, name+": "+name) {
			t.Errorf("%q: %q names the command twice", c.args, stderr)
		}
	}
}

// TestHelpNamesEachFlagsValue: in every command's --help, a flag's value is one
// word (string, int, DIR…). The flag package takes a usage's first `quoted`
// phrase as the value's name, which had made "-tokenizer darkroom models" and
// "-profile darkroom quantize" out of usages that quoted a command.
func TestHelpNamesEachFlagsValue(t *testing.T) {
	cmds := [][]string{{"train", "corpus"}, {"train", "run"}, {"train", "export"}, {"train", "eval"}, {"train", "init"}, {"train", "grow"}}
	for name := range commands {
		cmds = append(cmds, []string{name})
	}
	for _, c := range cmds {
		code, out, _ := runCLI(append(c, "--help")...)
		if code != 0 {
			continue // gpu and train print their own usage without flags
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "  -") {
				continue
			}
			if f := strings.Fields(line); len(f) > 2 {
				t.Errorf("darkroom %s --help: %q names the value of %s with %d words", strings.Join(c, " "), line, f[0], len(f)-1)
			}
		}
	}
}

// TestFlagErrorPointsToHelp: a mistyped flag says where the flags are listed.
func TestFlagErrorPointsToHelp(t *testing.T) {
	for _, args := range [][]string{{"generate", "--frobnicate"}, {"train", "run", "--frobnicate"}} {
		name := strings.Join(args[:len(args)-1], " ")
		_, _, stderr := runCLI(args...)
		if want := "(see `darkroom " + name + " --help`)"; !strings.Contains(stderr, want) {
			t.Errorf("%q: stderr %q lacks %q", args, stderr, want)
		}
	}
}

func TestErrorLine(t *testing.T) {
	for _, c := range []struct{ name, err, want string }{
		{"generate", "no PROMPT given", "darkroom generate: no PROMPT given"},
		{"wiki", "wiki: the title is empty", "darkroom wiki: the title is empty"},
		{"train", "train run: --run DIR is required", "darkroom train run: --run DIR is required"},
		{"pull", "pull acme/tiny: interrupted", "darkroom pull acme/tiny: interrupted"},
		// A reason that merely starts with the command's word is not a prefix.
		{"models", "models folder /x: permission denied", "darkroom models: models folder /x: permission denied"},
		{"rm", "two\nlines", "darkroom rm: two lines"},
	} {
		if got := errorLine(c.name, errors.New(c.err)); got != c.want {
			t.Errorf("errorLine(%q, %q) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
}

// TestModelsHeadingsHaveItems lists an empty library and wants every heading
// (a line ending in ":") followed by at least one indented item.
func TestModelsHeadingsHaveItems(t *testing.T) {
	code, out, stderr := runCLI("models", "--models-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("models: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if strings.HasSuffix(l, ":") && (i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "  ")) {
			t.Errorf("heading %q has nothing under it:\n%s", l, out)
		}
	}
}

// TestModelPathsThatDoNotExist: a path that is not there is named as a missing
// folder, never as something to pull.
func TestModelPathsThatDoNotExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	for _, args := range [][]string{
		{"wiki", "--model", "/nonexistent", "Unix"},
		{"wiki", "--model", missing, "Unix"},
		{"generate", "--model", "./nonexistent", "hi"},
		{"tokenize", "--tokenizer", "/nonexistent", "hi"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 1 || !strings.Contains(stderr, "does not exist") || strings.Contains(stderr, "pull") {
			t.Errorf("%q: exit %d, %q; want a line saying the folder does not exist, without a pull", args, code, stderr)
		}
	}
	// An owner/name that is not downloaded still suggests the pull.
	code, _, stderr := runCLI("wiki", "--models-dir", t.TempDir(), "--model", "acme/tiny", "Unix")
	if code != 1 || !strings.Contains(stderr, "darkroom pull acme/tiny") {
		t.Errorf("wiki --model acme/tiny: exit %d, %q; want the pull suggested", code, stderr)
	}
}

func TestCanvasSummary(t *testing.T) {
	one := &engine.Result{Canvases: []engine.CanvasStats{{Steps: 3}}}
	if got := canvasSummary(one, engine.Diffusion); got != "1 canvas (steps 3)" {
		t.Errorf("canvasSummary of one canvas = %q", got)
	}
	two := &engine.Result{Canvases: []engine.CanvasStats{{Steps: 3}, {Steps: 4}}}
	if got := canvasSummary(two, engine.Diffusion); got != "2 canvases (steps 3,4)" {
		t.Errorf("canvasSummary of two canvases = %q", got)
	}
}
