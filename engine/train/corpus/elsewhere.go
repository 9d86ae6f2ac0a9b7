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
//
// The asked ones (ElsewhereAsked, `train elsewhere --asked`) do: "What is the
// best airplane to buy?", "Explain how to make a cake.", "Tell me about the
// history of the lamp.". Without them the Mini answered "What is the capital
// of France?" with a made-up definition of "capital of France": it had never
// turned a "What is …?" away. Their topics are phrases no entry is titled
// ("the best X", "how to …", "the history of the X"), never a term or a
// WordNet noun the corpus defines, so that the model learns to tell the
// phrase, not to turn away a form of question.

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

// ElsewhereAskedFile is the corpus file `train elsewhere --asked` records its
// additions in.
const ElsewhereAskedFile = "elsewhere-asked.json"

var (
	elsewhereAskedFixed = []string{
		"What is the capital of Italy?", "What is the capital of Germany?", "What is the biggest animal?",
		"What is the longest river in the world?", "What is the best song ever?", "What is your favourite colour?",
		"What is the date today?", "What is a good film for tonight?", "What is the best team in the league?",
		"What is the price of a house in London?", "What is the secret of happiness?", "What is the deepest ocean?",
		"What is the best holiday for a family?", "What is the cheapest flight to Rome?", "What is a good gift for my dad?",
		"What is the nicest beach in Spain?", "What is the height of the Eiffel Tower?", "What is the news today?",
		"Explain the offside rule.", "Explain how to make a cake.", "Explain why the sea is salty.",
		"Explain the Second World War.", "Explain how to plant tomatoes.", "Explain how to swim.",
		"Tell me about the Middle Ages.", "Tell me about London.", "Tell me about your family.",
		"Tell me about the ancient Greeks.", "Tell me about the moon landing.", "Tell me about Napoleon.",
		"What does my name mean?", "What does a nurse earn?", "What does the cat say?", "What does my dream mean?",
		"Define beauty in one word.", "Define friendship.", "What is meant by a balanced diet?",
	}
	elsewhereAskedNoun = []string{
		"What is the best %s to buy?", "What is the best way to clean a %s?", "What is a good %s for a child?",
		"What is the price of a %s?", "Explain how to choose a %s.", "Explain how to look after a %s.",
		"Tell me about the history of the %s.", "Tell me about your favourite %s.", "What does a new %s cost?",
		"Define the perfect %s.", "What does a broken %s look like?", "What is meant by a cheap %s?",
	}
)

// ElsewhereAsked returns n off-topic chats asked the way terms are (the
// package doc), each answered with assets.ChatElsewhere: about a fifth fixed
// questions, the rest templates filled with nouns; every third lower-cased
// without its end punctuation, as ElsewhereChats does. Prompts whose topic
// (assets.ChatTopic, its article dropped or not) is one of titles, in any
// case, are left out: the model must answer those. None is held out: the
// off-topic questions the training README measures with
// (assets/training/session24/offtopic-questions.txt) are other ones.
func ElsewhereAsked(nouns []string, titles map[string]bool, n int) []Example {
	rng := rand.New(rand.NewPCG(13, 17))
	out := make([]Example, 0, n)
	for i := 0; len(out) < n && i < 20*n; i++ {
		prompt := offTopicPrompt(i, elsewhereAskedFixed, elsewhereAskedNoun, nouns, rng)
		if topic, ok := assets.ChatTopic(prompt); ok && (titles[strings.ToLower(assets.TopicBare(topic))] || titles[strings.ToLower(topic)]) {
			continue
		}
		out = append(out, offTopicChat(prompt))
	}
	return out
}

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
			out = append(out, offTopicChat(offTopicPrompt(i, fixed, templates, nouns, rng)))
		}
		return out
	}
	return chats(n, elsewhereFixed, elsewhereNoun, trainNouns), chats(max(n/40, 10), elsewhereFixedHeld, elsewhereNounHeld, heldNouns)
}

// offTopicPrompt is the i-th off-topic prompt: every fifth one (all, with no
// nouns) the next of fixed, the others one of templates filled with one of
// nouns, both drawn from rng; every third lower-cased and stripped of its end
// punctuation, as people type.
func offTopicPrompt(i int, fixed, templates, nouns []string, rng *rand.Rand) string {
	var prompt string
	if i%5 == 0 || len(nouns) == 0 {
		prompt = fixed[(i/5)%len(fixed)]
	} else {
		prompt = fmt.Sprintf(templates[rng.IntN(len(templates))], nouns[rng.IntN(len(nouns))])
	}
	if i%3 == 2 {
		prompt = strings.TrimRight(strings.ToLower(prompt), ".!?")
	}
	return prompt
}

// offTopicChat is the chat example that answers prompt with assets.ChatElsewhere.
func offTopicChat(prompt string) Example {
	return Example{Kind: KindChat, Source: SourceElsewhere, Title: assets.CleanLine(prompt),
		System: assets.ChatSystem(), Prompt: prompt, Answer: assets.ChatElsewhere()}
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
	nouns, err := templateNouns(dir, examples)
	if err != nil {
		return 0, 0, err
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

// AddElsewhereAsked adds n off-topic chats asked the way terms are
// (ElsewhereAsked, nouns from the corpus's own WordNet chats, none whose topic
// titles an example) to train.jsonl of the corpus in dir, after its other
// off-topic chats (AddElsewhere), then records it in ElsewhereAskedFile. None
// is held out (ElsewhereAsked). A corpus that has them already is refused.
func AddElsewhereAsked(dir string, n int) (int, error) {
	if _, err := os.Stat(filepath.Join(dir, ElsewhereAskedFile)); err == nil {
		return 0, fmt.Errorf("%s has its asked off-topic chats already (%s)", dir, ElsewhereAskedFile)
	}
	if _, err := os.Stat(filepath.Join(dir, ElsewhereFile)); err != nil {
		return 0, fmt.Errorf("%s has no off-topic chats yet: run train elsewhere without --asked first", dir)
	}
	examples, err := ReadExamples(filepath.Join(dir, "train.jsonl"))
	if err != nil {
		return 0, err
	}
	titles := map[string]bool{}
	for _, ex := range examples {
		if ex.Source != SourceElsewhere {
			titles[strings.ToLower(ex.Title)] = true
		}
	}
	nouns, err := templateNouns(dir, examples)
	if err != nil {
		return 0, err
	}
	asked := ElsewhereAsked(nouns, titles, n)
	if err := appendJSONL(filepath.Join(dir, "train.jsonl"), asked); err != nil {
		return 0, err
	}
	note, _ := json.MarshalIndent(map[string]int{"train": len(asked), "nouns": len(nouns)}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, ElsewhereAskedFile), append(note, '\n'), 0o644); err != nil {
		return 0, fmt.Errorf("add asked off-topic chats: %w", err)
	}
	return len(asked), nil
}

// templateNouns are the nouns that fill the off-topic templates of the corpus
// in dir (ElsewhereNouns of its examples), refused below 100.
func templateNouns(dir string, examples []Example) ([]string, error) {
	nouns := ElsewhereNouns(examples)
	if len(nouns) < 100 {
		return nil, fmt.Errorf("%s: %d WordNet nouns to fill the off-topic templates with; build the corpus with --extra wordnet", dir, len(nouns))
	}
	return nouns, nil
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
