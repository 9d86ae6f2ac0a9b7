package chats

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	long := "Unix was written at Bell Labs in 1969. " + strings.Repeat("It ran on a PDP-7 and later machines. ", 4) +
		"Its successor, Plan 9, kept the idea that everything is a file."
	th := &Thread{Title: "What is Unix?", Messages: []Message{
		{Role: "user", Content: "What is Unix?"},
		{Role: "model", Content: long, Thought: "secret thought"},
		{Role: "user", Content: "And ÉCOLE?\nTell me more"},
	}}
	cases := []struct {
		query, snippet string
		ok             bool
	}{
		{"", "", true},
		{"   ", "", true},
		{"unix", "", true},      // in the title: no snippet
		{"UNIX what", "", true}, // every word, in any case
		{"nix", "", true},       // anywhere in a word
		{"unix bell", "Unix was written at Bell Labs in 1969. It ran on a PDP-7 and…", true},
		{"plan", "…Its successor, Plan 9, kept the idea that everything is a file.", true},
		{"école", "And ÉCOLE? Tell me more", true}, // folded rune by rune; lines joined
		{"unix windows", "", false}, // one word missing is no match
		{"secret", "", false},       // thoughts are not searched
	}
	for _, c := range cases {
		snippet, ok := th.Match(c.query)
		if ok != c.ok || snippet != c.snippet {
			t.Errorf("Match(%q) = %q, %v; want %q, %v", c.query, snippet, ok, c.snippet, c.ok)
		}
	}
}

// TestMatchSnippetBounds: the snippet holds the word found, is about snippetRunes
// long wherever the word is (start, middle, end of a long message, a message shorter
// than a snippet), and never cuts a rune.
func TestMatchSnippetBounds(t *testing.T) {
	words := strings.Fields(strings.Repeat("alpha beta gamma delta épsilon ", 40))
	for _, at := range []int{0, 1, 50, len(words) - 2, len(words) - 1} {
		ws := append([]string(nil), words...)
		ws[at] = "NEEDLE"
		th := &Thread{Title: "t", Messages: []Message{{Role: "model", Content: strings.Join(ws, " ")}}}
		s, ok := th.Match("needle")
		if !ok || !strings.Contains(s, "NEEDLE") {
			t.Fatalf("word %d: %q, %v", at, s, ok)
		}
		if n := len([]rune(s)); n < snippetRunes-15 || n > snippetRunes+snippetSlack+2 {
			t.Errorf("word %d: snippet of %d runes: %q", at, n, s)
		}
		if strings.ContainsRune(s, '\uFFFD') {
			t.Errorf("word %d: a rune cut: %q", at, s)
		}
		if at == 0 && strings.HasPrefix(s, "…") || at == len(words)-1 && strings.HasSuffix(s, "…") {
			t.Errorf("word %d: an ellipsis where the text does not go on: %q", at, s)
		}
	}
	short := &Thread{Title: "t", Messages: []Message{{Role: "user", Content: "a short needle"}}}
	if s, _ := short.Match("needle"); s != "a short needle" {
		t.Errorf("short message: %q", s)
	}
}

// BenchmarkSearch: one keystroke's search over 1,000 chats of ten 500-character
// messages each (5 MB of text), as the chat list runs it: every thread matched
// against the query; the last word is in none, so every message is read.
func BenchmarkSearch(b *testing.B) {
	msg := strings.Repeat("Unix was written at Bell Labs in 1969 by Ken Thompson. ", 9)
	threads := make([]*Thread, 1000)
	for i := range threads {
		th := &Thread{Title: "What is Unix?"}
		for range 10 {
			th.Messages = append(th.Messages, Message{Role: "model", Content: msg})
		}
		threads[i] = th
	}
	for b.Loop() {
		for _, th := range threads {
			th.Match("thompson plan9")
		}
	}
}

// TestIndexASCIIFold: the ASCII path finds what folding into runes finds, on
// random text and words of a small alphabet (so that near misses abound).
func TestIndexASCIIFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aAbB c.T"
	pick := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		text, word := pick(rng.IntN(40)), pick(1+rng.IntN(4))
		fw := fold(word)
		if got, want := indexASCIIFold(text, fw), index(fold(text), fw); got != want {
			t.Fatalf("indexASCIIFold(%q, %q) = %d, want %d", text, word, got, want)
		}
	}
}
