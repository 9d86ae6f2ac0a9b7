package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// trainedTokenizerDir trains a small vocabulary and saves it in a temp dir.
func trainedTokenizerDir(t *testing.T) string {
	t.Helper()
	corpus := []string{
		"<h1>Unix</h1>\n<p>Unix is an operating system.</p>",
		"<|turn>user\nWhat is Unix?<turn|>\n<|turn>model\nUnix is an operating system.<turn|>",
		"The operating system runs programs. The kernel is part of the operating system.",
	}
	tr, err := tokenizer.Train(tokenizer.Slice(corpus), tokenizer.TrainOptions{VocabSize: 400, MinFrequency: 2})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tr.Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTokenizeCommand(t *testing.T) {
	dir := trainedTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	text := "<|turn>user\nWhat is an operating system?<turn|>"
	want := tok.Encode(text)
	if want[0] != tokenizer.MiniTurnStart || want[len(want)-1] != tokenizer.MiniTurnEnd {
		t.Fatalf("special tokens in the text not recognized: %v", want)
	}

	// Plain output: comma-separated ids, no BOS.
	code, out, errs := runCLI("tokenize", "--tokenizer", dir, text)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var parts []string
	for _, id := range want {
		parts = append(parts, strconv.Itoa(id))
	}
	if strings.TrimSpace(out) != strings.Join(parts, ",") {
		t.Errorf("tokenize output %q, want %q", out, strings.Join(parts, ","))
	}

	// --json, with the flag after the text and a file path instead of a dir.
	code, out, errs = runCLI("tokenize", "--tokenizer", filepath.Join(dir, "tokenizer.json"), text, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct{ IDs []int }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if len(got.IDs) != len(want) {
		t.Fatalf("--json ids %v, want %v", got.IDs, want)
	}

	// --decode back to the text, plain and JSON.
	code, out, errs = runCLI("tokenize", "--tokenizer", dir, "--decode", strings.Join(parts, ","))
	if code != 0 || out != text+"\n" {
		t.Errorf("--decode: exit %d, out %q, err %q", code, out, errs)
	}
	code, out, _ = runCLI("tokenize", "--tokenizer", dir, "--json", "--decode", strings.Join(parts, ", "))
	var dec struct{ Text string }
	if code != 0 || json.Unmarshal([]byte(out), &dec) != nil || dec.Text != text {
		t.Errorf("--decode --json: exit %d, out %q", code, out)
	}
	if !strings.Contains(out, "<|turn>") {
		t.Errorf("--json escapes the special tokens: %q", out)
	}
}

// TestTokenizeModelName: --tokenizer takes a model's name, as --model does
// elsewhere: the built-in Mini's tokenizer.
func TestTokenizeModelName(t *testing.T) {
	fsys, err := assets.Mini()
	if err != nil {
		t.Skip("Darkroom Mini is not built in:", err)
	}
	tok, err := tokenizer.LoadFS(fsys, "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, id := range tok.Encode("Unix is an operating system.") {
		parts = append(parts, strconv.Itoa(id))
	}
	code, out, errs := runCLI("tokenize", "--tokenizer", "darkroom-mini", "Unix is an operating system.")
	if code != 0 || strings.TrimSpace(out) != strings.Join(parts, ",") {
		t.Errorf("tokenize --tokenizer darkroom-mini: exit %d, out %q, err %q; want %q", code, out, errs, strings.Join(parts, ","))
	}
	// Without --tokenizer: the built-in model's, as generate's default model.
	code, out, errs = runCLI("tokenize", "Unix is an operating system.")
	if code != 0 || strings.TrimSpace(out) != strings.Join(parts, ",") {
		t.Errorf("tokenize without --tokenizer: exit %d, out %q, err %q; want %q", code, out, errs, strings.Join(parts, ","))
	}
}

func TestTokenizeErrors(t *testing.T) {
	dir := trainedTokenizerDir(t)
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"missing file", []string{"tokenize", "--tokenizer", filepath.Join(dir, "nope"), "hello"}, "nope"},
		{"no text", []string{"tokenize", "--tokenizer", dir}, "no TEXT"},
		{"text and decode", []string{"tokenize", "--tokenizer", dir, "--decode", "1", "hi"}, "not both"},
		{"bad id", []string{"tokenize", "--tokenizer", dir, "--decode", "1,x"}, `"x"`},
		{"id out of range", []string{"tokenize", "--tokenizer", dir, "--decode", "99999"}, "99999"},
		{"unknown flag", []string{"tokenize", "--frobnicate"}, "frobnicate"},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(tc.args...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (out %q)", tc.name, code, out)
		}
		if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.msg) {
			t.Errorf("%s: stderr %q, want one line mentioning %q", tc.name, errs, tc.msg)
		}
	}
	if code, out, _ := runCLI("tokenize", "--help"); code != 0 || !strings.Contains(out, "--decode") {
		t.Errorf("--help: exit %d, out %q", code, out)
	}
}

// TestTokenizeFolderWithoutTokenizer: a folder that holds no tokenizer.json (a
// model folder whose download lost it, or the wrong folder) says so and what
// to give, as loading a model does — it said 'load tokenizer DIR/tokenizer.json:
// open tokenizer.json: no such file or directory'.
func TestTokenizeFolderWithoutTokenizer(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("tokenize", "--tokenizer", dir, "hello")
	want := "darkroom tokenize: --tokenizer: " + dir + " has no tokenizer.json: give the folder of a model that holds one, the tokenizer.json itself, or a model's name from `darkroom models` (e.g. --tokenizer darkroom-mini)\n"
	if code != 1 || out != "" || errs != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and\n%q", code, out, errs, want)
	}
}
