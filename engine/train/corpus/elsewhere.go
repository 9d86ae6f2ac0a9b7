package corpus

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
)

// Off-topic chats. Darkroom Mini is a computing encyclopedia, and its system
// turn tells it to send anything else to the Library; with no example of doing
// so, it answered "Hello!" with a definition of a made-up term. These examples
// teach it to answer a greeting, an everyday task or a request about a common
// thing with assets.ChatElsewhere. Their prompts are written here (no source
// text): fixed messages, and templates filled with common nouns (WordNet's, as
// the corpus holds them). The held-out ones use other messages, other
// templates and other nouns, so that `train eval` measures whether the model
// tells such a message from a question about a term, not whether it remembers
// these. None asks "What is …?", the form of the questions it must answer.

// SourceElsewhere is the Source of the off-topic chat examples.
const SourceElsewhere = "elsewhere"

// ElsewhereFile is the corpus file `train elsewhere` records its additions in
// (so that it is not run twice on one corpus).
const ElsewhereFile = "elsewhere.json"

var (
	elsewhereFixed = []string{
		"Hello!", "Hi", "Hi there!", "Hey", "Good morning!", "Good evening.", "How are you?", "How are you today?",
		"Who are you?", "What can you do?", "Are you there?", "Thanks!", "Thank you.", "Can you help me?",
		"Nice to meet you.", "Are you a robot?", "Do you like music?", "What should I cook tonight?",
		"What's the weather like today?", "What time is it?", "Play some music.", "Set an alarm for 7 am.",
		"How do I lose weight?", "Tell me the news.", "Who won the game last night?", "Book a table for two.",
		"Do my homework for me.", "Help me write my CV.", "What should I watch tonight?", "I feel sad today.",
		"Tell me a joke.", "Write a poem.", "Can we talk?", "I'm bored.", "Good night!", "Where do you live?",
	}
	elsewhereFixedHeld = []string{
		"Hello there!", "Good afternoon.", "How is it going?", "Who made you?", "Can you do me a favour?",
		"What's on TV tonight?", "Remind me to call my mother.", "How do I get fit?", "Is it going to rain tomorrow?",
		"Tell me something funny.",
	}
	elsewhereNoun = []string{
		"Write a poem about %s.", "Write a short story about a %s.", "Tell me a joke about %s.", "Can you draw a %s?",
		"How do I clean my %s?", "Where can I buy a %s?", "How much does a %s cost?", "Can you recommend a good %s?",
		"I lost my %s. What should I do?", "Give me a recipe with %s.", "Write an email to my boss about the %s.",
		"Translate \"%s\" into French.", "Help me plan a party with a %s theme.", "Should I get a %s?",
		"Why is my %s broken?", "Make a shopping list with %s.", "Sing me a song about %s.",
		"Can you help me choose a %s?", "My %s smells funny. Why?", "Is a %s a good present for my sister?",
	}
	elsewhereNounHeld = []string{
		"Compose a haiku about %s.", "How do I fix my %s?", "Can you find me a cheap %s?",
		"Write a letter to my friend about %s.", "Tell me a funny story about a %s.",
	}
)

// ElsewhereChats returns off-topic chat examples, n for training and n/40 (at
// least 10) held out, each answered with assets.ChatElsewhere: about a fifth
// fixed messages, the rest templates filled with nouns (a tenth of the nouns,
// chosen by their hash, only in held-out prompts). Every third prompt is
// lower-cased and stripped of its end punctuation, as people type. The same
// nouns give the same examples.
func ElsewhereChats(nouns []string, n int) (train, held []Example) {
	var trainNouns, heldNouns []string
	for _, w := range nouns {
		h := fnv.New32a()
		h.Write([]byte(w))
		if h.Sum32()%10 == 0 {
			heldNouns = append(heldNouns, w)
		} else {
			trainNouns = append(trainNouns, w)
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	chats := func(count int, fixed, templates, nouns []string) []Example {
		out := make([]Example, 0, count)
		for i := range count {
			var prompt string
			if i%5 == 0 || len(nouns) == 0 {
				prompt = fixed[(i/5)%len(fixed)]
			} else {
				prompt = fmt.Sprintf(templates[rng.IntN(len(templates))], nouns[rng.IntN(len(nouns))])
			}
			if i%3 == 2 {
				prompt = strings.TrimRight(strings.ToLower(prompt), ".!?")
			}
			out = append(out, Example{Kind: KindChat, Source: SourceElsewhere, Title: assets.CleanLine(prompt),
				System: assets.ChatSystem(), Prompt: prompt, Answer: assets.ChatElsewhere()})
		}
		return out
	}
	return chats(n, elsewhereFixed, elsewhereNoun, trainNouns), chats(max(n/40, 10), elsewhereFixedHeld, elsewhereNounHeld, heldNouns)
}

// ElsewhereNouns are the nouns of examples' WordNet chats (a one-word,
// lower-case title answered as a noun) that no other source has a page or
// chat on, in any case ("encoding", "resistor": asked about those, the Mini
// should answer), sorted, so that corpora holding the same entries in another
// order get the same off-topic chats.
func ElsewhereNouns(examples []Example) []string {
	terms := map[string]bool{}
	for _, ex := range examples {
		if ex.Source != "wordnet" && ex.Kind != KindDesktop {
			terms[strings.ToLower(ex.Title)] = true
		}
	}
	seen := map[string]bool{}
	var nouns []string
	for _, ex := range examples {
		w := ex.Title
		if ex.Kind != KindChat || ex.Source != "wordnet" || seen[w] || terms[w] || !strings.Contains(ex.Answer, "** (noun):") {
			continue
		}
		if w != "" && !strings.ContainsAny(w, " -'") && strings.ToLower(w) == w {
			seen[w] = true
			nouns = append(nouns, w)
		}
	}
	slices.Sort(nouns)
	return nouns
}

// AddElsewhere adds n off-topic chat examples (ElsewhereChats, nouns from the
// corpus's own WordNet chats) to the corpus in dir: to train.jsonl, and the
// held-out ones to heldout.jsonl, then records it in ElsewhereFile. A corpus
// that has them already is refused. It returns how many were added to each.
func AddElsewhere(dir string, n int) (trained, heldOut int, err error) {
	if _, err := os.Stat(filepath.Join(dir, ElsewhereFile)); err == nil {
		return 0, 0, fmt.Errorf("%s has its off-topic chats already (%s)", dir, ElsewhereFile)
	}
	examples, err := ReadExamples(filepath.Join(dir, "train.jsonl"))
	if err != nil {
		return 0, 0, err
	}
	if slices.ContainsFunc(examples, func(ex Example) bool { return ex.Source == SourceElsewhere }) {
		return 0, 0, fmt.Errorf("%s: train.jsonl holds off-topic chats already", dir)
	}
	nouns := ElsewhereNouns(examples)
	if len(nouns) < 100 {
		return 0, 0, fmt.Errorf("%s: %d WordNet nouns to fill the off-topic templates with; build the corpus with --extra wordnet", dir, len(nouns))
	}
	train, held := ElsewhereChats(nouns, n)
	for _, f := range []struct {
		name string
		ex   []Example
	}{{"train.jsonl", train}, {"heldout.jsonl", held}} {
		if err := appendJSONL(filepath.Join(dir, f.name), f.ex); err != nil {
			return 0, 0, err
		}
	}
	note, _ := json.MarshalIndent(map[string]int{"train": len(train), "heldout": len(held), "nouns": len(nouns)}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, ElsewhereFile), append(note, '\n'), 0o644); err != nil {
		return 0, 0, fmt.Errorf("add off-topic chats: %w", err)
	}
	return len(train), len(held), nil
}

// appendJSONL appends examples to path, one JSON line each, and syncs it.
func appendJSONL(path string, ex []Example) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("add off-topic chats: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range ex {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return fmt.Errorf("add off-topic chats to %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("add off-topic chats to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("add off-topic chats to %s: %w", path, err)
	}
	return f.Close()
}
