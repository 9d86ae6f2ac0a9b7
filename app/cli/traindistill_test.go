package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/train"
)

// TestTrainDistill: `train distill` writes a corpus folder `train run` and `train
// eval` take — train.jsonl with the chosen pages rewritten by the model's
// printer and every other record as it was, the held-out set and tokenizer
// beside it — and never over an existing folder.
func TestTrainDistill(t *testing.T) {
	model := tinyModelDir(t)
	corpus := t.TempDir()
	lines := `{"kind":"chat","source":"foldoc","title":"Unix","system":"s","prompt":"What is Unix?","answer":"An OS."}
{"kind":"page","source":"foldoc","title":"Unix","prompt":"Write the Darkroom encyclopedia page for: Unix","answer":"<h1>Unix</h1>\n<p>An OS.</p>"}
{"kind":"page","source":"foldoc","title":"C","prompt":"Write the Darkroom encyclopedia page for: C","answer":"<h1>C</h1>\n<p>A language.</p>"}
`
	os.MkdirAll(filepath.Join(corpus, "tokenizer"), 0o755)
	for name, body := range map[string]string{"train.jsonl": lines, "heldout.jsonl": lines, "words.txt": "unix\n"} {
		os.WriteFile(filepath.Join(corpus, name), []byte(body), 0o644)
	}
	tok, _ := os.ReadFile(filepath.Join(model, "tokenizer.json"))
	os.WriteFile(filepath.Join(corpus, "tokenizer", "tokenizer.json"), tok, 0o644)
	out := filepath.Join(t.TempDir(), "kd")

	code, stdout, stderr := runCLI("train", "distill", "--model", model, "--corpus", corpus, "--out", out, "--pages", "1")
	if code != 0 || !strings.Contains(stdout, "distilled 1 pages") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	orig, _ := train.ReadRecords(filepath.Join(corpus, "train.jsonl"))
	got, err := train.ReadRecords(filepath.Join(out, "train.jsonl"))
	if err != nil || len(got) != len(orig) {
		t.Fatalf("distilled corpus: %d records, %v", len(got), err)
	}
	changed := 0
	for i := range got {
		if got[i] != orig[i] {
			changed++
			if got[i].Kind != "page" || !strings.HasPrefix(got[i].Answer, "<h1>"+got[i].Title+"</h1>\n") {
				t.Errorf("record %d rewritten: %+v", i, got[i])
			}
		}
	}
	if changed != 1 {
		t.Errorf("%d records rewritten, want 1", changed)
	}
	for _, f := range []string{"heldout.jsonl", "words.txt", "tokenizer/tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the distilled corpus lacks %s", f)
		}
	}
	if code, _, stderr := runCLI("train", "distill", "--model", model, "--corpus", corpus, "--out", out, "--pages", "1"); code != 1 ||
		!strings.Contains(stderr, "exists") {
		t.Errorf("over an existing folder: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out + ".partial"); err == nil {
		t.Error("a .partial folder was left behind")
	}

	// --beside: the original page stays for the printer, the rewritten one is added
	// for the polaroid, and the trainer's tokenizer accepts both.
	besideDir := filepath.Join(t.TempDir(), "beside")
	if code, stdout, stderr := runCLI("train", "distill", "--model", model, "--corpus", corpus, "--out", besideDir, "--pages", "1", "--beside"); code != 0 ||
		!strings.Contains(stdout, "(4 records)") {
		t.Fatalf("--beside: exit %d\n%s\n%s", code, stdout, stderr)
	}
	beside, err := train.ReadRecords(filepath.Join(besideDir, "train.jsonl"))
	if err != nil || len(beside) != 4 {
		t.Fatalf("--beside: %d records, %v", len(beside), err)
	}
	added := beside[3]
	if added.Kind != "page" || added.Loss != train.LossDiffusion || !strings.HasPrefix(added.Answer, "<h1>"+added.Title+"</h1>\n") {
		t.Errorf("--beside: the added record is %+v, want the rewritten page for the polaroid", added)
	}
	for i, r := range beside[:3] {
		want := orig[i]
		if r.Kind == "page" && r.Title == added.Title {
			want.Loss = train.LossAR
		}
		if r != want {
			t.Errorf("--beside: record %d is %+v, want %+v", i, r, want)
		}
	}
	// --reuse lays out the pages written before again, without the model: the
	// same corpus as writing them anew; --keep-good drops the rewritten pages out
	// of the page format (the tiny model's are).
	reused := filepath.Join(t.TempDir(), "reused")
	if code, stdout, stderr := runCLI("train", "distill", "--model", filepath.Join(t.TempDir(), "no-model"), "--corpus", corpus, "--out", reused,
		"--pages", "1", "--beside", "--reuse", out); code != 0 || !strings.Contains(stdout, "with the pages of "+out) {
		t.Fatalf("--reuse: exit %d\n%s\n%s", code, stdout, stderr)
	}
	a, _ := os.ReadFile(filepath.Join(besideDir, "train.jsonl"))
	b, _ := os.ReadFile(filepath.Join(reused, "train.jsonl"))
	if string(a) != string(b) {
		t.Errorf("--reuse wrote another corpus than writing the pages anew:\n%s\n%s", a, b)
	}
	good := filepath.Join(t.TempDir(), "good")
	if code, stdout, stderr := runCLI("train", "distill", "--corpus", corpus, "--out", good, "--pages", "1", "--beside", "--reuse", out, "--keep-good"); code != 0 ||
		!strings.Contains(stdout, "distilled 0 pages") || !strings.Contains(stdout, "(0 of 1 pages in the page format)") {
		t.Fatalf("--keep-good: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("train", "distill", "--corpus", corpus, "--out", good+"2", "--pages", "1", "--seed", "9", "--reuse", filepath.Join(t.TempDir())); code != 1 ||
		!strings.Contains(stderr, "--reuse") {
		t.Errorf("--reuse of a folder without train.jsonl: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("train", "distill", "--model", model, "--corpus", corpus, "--out", besideDir+"2", "--pages", "1", "--beside", "--only-distilled"); code != 1 ||
		!strings.Contains(stderr, "choose one") {
		t.Errorf("--beside with --only-distilled: exit %d, %q", code, stderr)
	}
}

// TestTrainElsewhereAsked: `train elsewhere --asked` adds the off-topic
// questions to a corpus that has the other off-topic chats, says how many, and
// refuses a corpus without them, naming the command to run first.
func TestTrainElsewhereAsked(t *testing.T) {
	corpus := t.TempDir()
	var lines strings.Builder
	for i := range 120 {
		w := fmt.Sprintf("thing%c%c", 'a'+i/26, 'a'+i%26)
		fmt.Fprintf(&lines, `{"kind":"chat","source":"wordnet","title":%q,"prompt":"What is %s?","answer":"**%s** (noun): A thing."}`+"\n", w, w, w)
	}
	os.WriteFile(filepath.Join(corpus, "train.jsonl"), []byte(lines.String()), 0o644)
	os.WriteFile(filepath.Join(corpus, "heldout.jsonl"), nil, 0o644)
	if code, _, stderr := runCLI("train", "elsewhere", "--corpus", corpus, "--asked", "--n", "30"); code != 1 ||
		!strings.Contains(stderr, "run train elsewhere without --asked first") {
		t.Errorf("before the other off-topic chats: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("train", "elsewhere", "--corpus", corpus, "--n", "40"); code != 0 {
		t.Fatalf("train elsewhere: exit %d, %q", code, stderr)
	}
	code, stdout, stderr := runCLI("train", "elsewhere", "--corpus", corpus, "--asked", "--n", "30")
	if code != 0 || !strings.Contains(stdout, "added 30 off-topic questions") {
		t.Fatalf("train elsewhere --asked: exit %d, %q, %q", code, stdout, stderr)
	}
	got, err := train.ReadRecords(filepath.Join(corpus, "train.jsonl"))
	if err != nil || len(got) != 120+40+30 || !strings.HasPrefix(got[len(got)-1].Answer, "I am Darkroom Mini") {
		t.Errorf("train.jsonl: %d records, want 190 ending in an off-topic answer; %v", len(got), err)
	}
}
