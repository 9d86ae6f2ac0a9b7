package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/assets"
)

// TestElsewhereChats: the off-topic chats answer with assets.ChatElsewhere;
// the held-out ones share no prompt, template or noun with the training ones,
// and none asks a question the Chat would take for a term's (assets.ChatTopic
// with "What is") and head as one (assets.Leads.ChatStart): the model must
// still turn them away.
func TestElsewhereChats(t *testing.T) {
	var nouns []string
	for i := range 300 {
		nouns = append(nouns, fmt.Sprintf("noun%03d", i))
	}
	train, held := ElsewhereChats(nouns, 400)
	var leads assets.Leads // a folder with leads, as the Mini's: Chat heads the answers to terms' questions
	leads.Add("Unix", "<h1>Unix</h1>\n<p>An operating system.</p>", nil)
	if len(train) != 400 || len(held) != 10 {
		t.Fatalf("%d training and %d held-out chats, want 400 and 10", len(train), len(held))
	}
	again, _ := ElsewhereChats(nouns, 400)
	trainPrompts, trainNouns := map[string]bool{}, map[string]bool{}
	for i, ex := range train {
		if ex != again[i] {
			t.Fatalf("not the same examples from the same nouns: %+v, then %+v", ex, again[i])
		}
		trainPrompts[strings.ToLower(strings.TrimRight(ex.Prompt, ".!?"))] = true
		for _, w := range nouns {
			if strings.Contains(ex.Prompt, w) {
				trainNouns[w] = true
			}
		}
	}
	for _, ex := range append(append([]Example(nil), train...), held...) {
		if ex.Kind != KindChat || ex.Source != SourceElsewhere || ex.Answer != assets.ChatElsewhere() || ex.System != assets.ChatSystem() {
			t.Errorf("%+v", ex)
		}
		if strings.HasPrefix(strings.ToLower(ex.Prompt), "what is") {
			t.Errorf("%q asks as a term's question does", ex.Prompt)
		}
		if start := leads.ChatStart(ex.Prompt); start.Opening != "" || start.Lead != "" {
			t.Errorf("%q: the Chat would open its answer with %q%q, not let the model turn it away", ex.Prompt, start.Opening, start.Lead)
		}
	}
	for _, ex := range held {
		if trainPrompts[strings.ToLower(strings.TrimRight(ex.Prompt, ".!?"))] {
			t.Errorf("held-out %q is also a training prompt", ex.Prompt)
		}
		for _, tmpl := range elsewhereNoun {
			before, _, _ := strings.Cut(tmpl, "%s")
			if strings.HasPrefix(strings.ToLower(ex.Prompt), strings.ToLower(before)) && strings.Contains(tmpl, "%s") {
				t.Errorf("held-out %q uses the training template %q", ex.Prompt, tmpl)
			}
		}
		for w := range trainNouns {
			if strings.Contains(ex.Prompt, w+" ") || strings.HasSuffix(strings.TrimRight(ex.Prompt, ".!?"), w) {
				t.Errorf("held-out %q uses the training noun %q", ex.Prompt, w)
			}
		}
	}
}

// TestAddElsewhere: the chats are appended to a corpus's train.jsonl and
// heldout.jsonl, every earlier line kept; a second run, and a corpus with no
// WordNet nouns to fill the templates with, are refused and change nothing.
func TestAddElsewhere(t *testing.T) {
	dir := t.TempDir()
	var train []Example
	for i := range 150 {
		w := fmt.Sprintf("thing%c%c", 'a'+i/26, 'a'+i%26)
		train = append(train, Example{Kind: KindChat, Source: "wordnet", Title: w, Prompt: "What is " + w + "?", Answer: "**" + w + "** (noun): A thing."})
	}
	train = append(train, Example{Kind: KindChat, Source: "wordnet", Title: "quick", Prompt: "Explain quick.", Answer: "**quick** (adjective): Fast."},
		Example{Kind: KindChat, Source: "wordnet", Title: "kernel", Prompt: "Explain kernel.", Answer: "**kernel** (noun): A seed."},
		Example{Kind: KindPage, Source: "foldoc", Title: "Kernel", Prompt: "p", Answer: "<h1>Kernel</h1>"})
	held := []Example{{Kind: KindPage, Source: "foldoc", Title: "ABC", Prompt: "p", Answer: "a"}}
	if err := writeJSONL(filepath.Join(dir, "train.jsonl"), train); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONL(filepath.Join(dir, "heldout.jsonl"), held); err != nil {
		t.Fatal(err)
	}
	if nouns := ElsewhereNouns(train); len(nouns) != 150 {
		t.Fatalf("%d nouns, want the 150 nouns and not the adjective or a FOLDOC title", len(nouns))
	}
	if _, err := AddElsewhereAsked(dir, 50); err == nil || !strings.Contains(err.Error(), "without --asked first") {
		t.Errorf("asked chats before the others: %v", err)
	}
	if n, h, err := AddElsewhere(dir, 200); err != nil || n != 200 || h != 10 {
		t.Fatalf("AddElsewhere: %d, %d, %v", n, h, err)
	}
	gotTrain, err := ReadExamples(filepath.Join(dir, "train.jsonl"))
	if err != nil || len(gotTrain) != len(train)+200 || gotTrain[0] != train[0] || gotTrain[len(train)].Source != SourceElsewhere {
		t.Fatalf("train.jsonl: %d examples, %v", len(gotTrain), err)
	}
	gotHeld, err := ReadExamples(filepath.Join(dir, "heldout.jsonl"))
	if err != nil || len(gotHeld) != 11 || gotHeld[0] != held[0] {
		t.Fatalf("heldout.jsonl: %d examples, %v", len(gotHeld), err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "train.jsonl"))
	if _, _, err := AddElsewhere(dir, 200); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second run: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "train.jsonl")); string(after) != string(before) {
		t.Error("a refused second run changed train.jsonl")
	}
	if n, err := AddElsewhereAsked(dir, 50); err != nil || n != 50 {
		t.Fatalf("AddElsewhereAsked: %d, %v", n, err)
	}
	withAsked, _ := os.ReadFile(filepath.Join(dir, "train.jsonl"))
	if !strings.HasPrefix(string(withAsked), string(before)) || strings.Count(string(withAsked), "\n") != len(train)+250 {
		t.Errorf("train.jsonl after the asked chats: %d lines, the earlier ones kept: %v",
			strings.Count(string(withAsked), "\n"), strings.HasPrefix(string(withAsked), string(before)))
	}
	if _, err := AddElsewhereAsked(dir, 50); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second asked run: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "train.jsonl")); string(after) != string(withAsked) {
		t.Error("a refused second asked run changed train.jsonl")
	}
	bare := t.TempDir()
	if err := writeJSONL(filepath.Join(bare, "train.jsonl"), train[:5]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := AddElsewhere(bare, 200); err == nil || !strings.Contains(err.Error(), "wordnet") {
		t.Errorf("a corpus with 5 nouns: %v", err)
	}
}

// TestElsewhereAsked: the asked off-topic chats ask as terms' questions do
// (assets.ChatTopic knows most of them), answer with assets.ChatElsewhere,
// never ask about a title (in any case, with or without its article), and
// none is one of the off-topic questions the training README measures with.
func TestElsewhereAsked(t *testing.T) {
	var nouns []string
	for i := range 300 {
		nouns = append(nouns, fmt.Sprintf("noun%03d", i))
	}
	titles := map[string]bool{"noun007": true, "capital of italy": true, "the longest river in the world": true}
	asked := ElsewhereAsked(nouns, titles, 500)
	if len(asked) != 500 {
		t.Fatalf("%d chats, want 500", len(asked))
	}
	measured, err := os.ReadFile("../../../assets/training/session24/offtopic-questions.txt")
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, q := range strings.Split(strings.TrimSpace(string(measured)), "\n") {
		held[strings.ToLower(strings.TrimRight(q, ".!?"))] = true
	}
	again := ElsewhereAsked(nouns, titles, 500)
	topics, fixed := 0, 0
	for i, ex := range asked {
		if ex.Kind != KindChat || ex.Source != SourceElsewhere || ex.Answer != assets.ChatElsewhere() || ex.System != assets.ChatSystem() {
			t.Errorf("%+v", ex)
		}
		if held[strings.ToLower(strings.TrimRight(ex.Prompt, ".!?"))] {
			t.Errorf("%q is one of the measured off-topic questions", ex.Prompt)
		}
		if topic, ok := assets.ChatTopic(ex.Prompt); ok {
			topics++
			if low := strings.ToLower(topic); titles[low] || titles[strings.ToLower(assets.TopicBare(topic))] {
				t.Errorf("%q asks about the title %q", ex.Prompt, topic)
			}
		}
		if slices.Contains(elsewhereAskedFixed, ex.Prompt) {
			fixed++
		}
		if ex != again[i] {
			t.Fatalf("not the same examples from the same nouns at %d", i)
		}
	}
	if topics < 400 || fixed == 0 {
		t.Errorf("%d of 500 ask as terms' questions do, %d are fixed questions: want most, and some", topics, fixed)
	}
}
