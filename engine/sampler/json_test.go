package sampler

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// randomJSON writes a random JSON value of at most depth levels, with the
// shapes a model writes: nested objects and arrays, strings with escapes and
// UTF-8, numbers of every form, the literals, and whitespace between tokens.
func randomJSON(rng *rand.Rand, depth int, b *strings.Builder) {
	space := func() {
		for range rng.IntN(3) {
			b.WriteString([]string{" ", "\n", "\t", "\r\n  "}[rng.IntN(4)])
		}
	}
	kind := rng.IntN(7)
	if depth == 0 {
		kind = 2 + rng.IntN(5)
	}
	switch kind {
	case 0: // object
		b.WriteByte('{')
		space()
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
				space()
			}
			randomString(rng, b)
			space()
			b.WriteByte(':')
			space()
			randomJSON(rng, depth-1, b)
			space()
		}
		b.WriteByte('}')
	case 1: // array
		b.WriteByte('[')
		space()
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
				space()
			}
			randomJSON(rng, depth-1, b)
			space()
		}
		b.WriteByte(']')
	case 2, 3:
		randomString(rng, b)
	case 4:
		b.WriteString([]string{"0", "-0", "12", "-3.25", "1e9", "2.5E-3", "7e+2", "-0.0e0", "123456789"}[rng.IntN(9)])
	case 5:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	case 6:
		randomJSON(rng, max(depth-1, 0), b)
	}
}

func randomString(rng *rand.Rand, b *strings.Builder) {
	b.WriteByte('"')
	for range rng.IntN(6) {
		b.WriteString([]string{"a", "Unix", " ", `\"`, `\\`, `\n`, `\u00e9`, `\/`, "é", "☃", "<h1>", "'", "{}[],:"}[rng.IntN(13)])
	}
	b.WriteByte('"')
}

func randomObject(rng *rand.Rand) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range 1 + rng.IntN(3) {
		if i > 0 {
			b.WriteString(", ")
		}
		randomString(rng, &b)
		b.WriteString(": ")
		randomJSON(rng, 3, &b)
	}
	b.WriteByte('}')
	return b.String()
}

// TestJSONPrefixAgreesWithEncodingJSON holds the automaton to encoding/json:
// every prefix of a valid object passes and only the whole closes it; a text
// the automaton calls a closed object is valid JSON; and mutated objects that
// encoding/json finds valid the automaton closes too.
func TestJSONPrefixAgreesWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		doc := randomObject(rng)
		if !json.Valid([]byte(doc)) {
			t.Fatalf("the generator wrote invalid JSON: %q", doc)
		}
		for i := 0; i <= len(doc); i++ {
			ok, closed := JSONPrefix(doc[:i])
			if !ok || closed != (i == len(doc)) {
				t.Fatalf("%q: prefix %d %q: ok %v closed %v", doc, i, doc[:i], ok, closed)
			}
		}
		for range 5 { // one byte changed, inserted or dropped
			b := []byte(doc)
			at := rng.IntN(len(b))
			const pieces = "{}[]\",:\\ 0-e.tfnu\x01a"
			c := pieces[rng.IntN(len(pieces))]
			switch rng.IntN(3) {
			case 0:
				b[at] = c
			case 1:
				b = append(b[:at], append([]byte{c}, b[at:]...)...)
			case 2:
				b = append(b[:at], b[at+1:]...)
			}
			ok, closed := JSONPrefix(string(b))
			valid := json.Valid(b) && utf8.Valid(b) && strings.HasPrefix(string(b), "{") && strings.HasSuffix(string(b), "}")
			if ok && closed && !json.Valid(b) {
				t.Errorf("%q: the automaton closes an invalid text", b)
			}
			if valid && !(ok && closed) {
				t.Errorf("%q: valid JSON the automaton refuses (ok %v, closed %v)", b, ok, closed)
			}
		}
	}
	for _, c := range []struct {
		text       string
		ok, closed bool
	}{
		{`[1]`, false, false}, // an object, not any value
		{`"x"`, false, false},
		{`{"a":1,}`, false, false},
		{`{"a" 1}`, false, false},
		{`{"a":01}`, false, false},
		{`{"a":1.}`, false, false},
		{`{"a":"\x"}`, false, false},
		{`{"a":"\u12g4"}`, false, false},
		{"{\"a\":\"line\nbreak\"}", false, false},
		{`{"a":[1,]}`, false, false},
		{`{"a":tru`, true, false},
		{`{"a":-`, true, false},
		{`{}`, true, true},
		{`{} `, false, false}, // nothing after the object: it ends there
		{" {}", false, false}, // nor before it
		{"{" + strings.Repeat(" ", maxJSONSpace) + "}", true, true},
		{"{" + strings.Repeat(" ", maxJSONSpace+1) + "}", false, false},
		{`{"é☃😀":"\u00e9"}`, true, true},
		{"{\"\xc3", true, false},                 // half a character, the rest to come
		{"{\"\xc3\"", false, false},              // not the rest
		{"{\"\xa9", false, false},                // a continuation byte alone
		{"{\"\xc0\xaf\"}", false, false},         // an overlong form
		{"{\"\xed\xa0\x80\"}", false, false},     // a surrogate
		{"{\"\xf4\x90\x80\x80\"}", false, false}, // past U+10FFFF
		{"{\xc3\xa9:1}", false, false},           // outside a string
	} {
		if ok, closed := JSONPrefix(c.text); ok != c.ok || closed != c.closed {
			t.Errorf("%q: ok %v closed %v, want %v %v", c.text, ok, closed, c.ok, c.closed)
		}
	}
}

// TestJSONObjectBans: over a vocabulary of JSON's pieces and words, an id is
// allowed exactly when the answer with its text is still the beginning of an
// object (brute force: JSONPrefix over the whole text); special ids and the
// ends never are, until the object is closed, when only the ends are (or no
// text could follow). Random allowed picks that close the object are valid
// JSON.
func TestJSONObjectBans(t *testing.T) {
	texts := []string{"<eos>", "<|turn>", "", "{", "}", "[", "]", `"`, `":`, `","`, `{"`, `"}`, "]}", ":", ",", " ", "\n", "  ",
		"a", "Unix", " is", `\`, `\"`, "n", "u", "00e9", "1", "0", "-", ".", "5", "e", "+", "tr", "ue", "true", "fal", "se", "null",
		"é", "\xc3", "\xa9", "\x01", `"name": "`, `", "`, "}\n", "[{", "}]", "12", "3.", "E"}
	special := make([]bool, len(texts))
	special[1] = true
	v := NewJSONVocab(texts, special, []int{0})
	rng := rand.New(rand.NewPCG(5, 6))
	closedRuns := 0
	for run := range 300 {
		j := v.Object()
		var answer strings.Builder
		for step := 0; step < 200; step++ {
			banned := j.Banned()
			want := make([]bool, len(texts))
			stuck := true // no text may follow (here: a literal whose rest the vocabulary lacks)
			for id := range texts {
				ok, _ := JSONPrefix(answer.String() + texts[id])
				want[id] = ok && !v.never[id] && !j.Done()
				stuck = stuck && !want[id]
			}
			want[0] = stuck // the end: once closed, or where nothing else could come
			var allowed []int
			for id := range texts {
				want := want[id]
				if banned[id] == want {
					t.Fatalf("run %d after %q: id %d %q banned %v, want allowed %v", run, answer.String(), id, texts[id], banned[id], want)
				}
				if !banned[id] {
					allowed = append(allowed, id)
				}
			}
			if len(allowed) == 0 {
				t.Fatalf("run %d after %q: every id banned", run, answer.String())
			}
			id := allowed[rng.IntN(len(allowed))]
			if id == 0 {
				break
			}
			j.Picked(id)
			answer.WriteString(texts[id])
		}
		if j.Done() {
			closedRuns++
			if !json.Valid([]byte(answer.String())) {
				t.Errorf("run %d: closed on invalid JSON %q", run, answer.String())
			}
		}
	}
	if closedRuns < 30 {
		t.Errorf("only %d of 300 random runs closed their object: the test hardly reaches the end", closedRuns)
	}
}

// BenchmarkJSONBanned prices a pick's bans over a 262,144-id vocabulary of
// words and JSON's pieces, inside a string and between tokens.
func BenchmarkJSONBanned(b *testing.B) {
	texts := benchTexts()
	v := NewJSONVocab(texts, nil, []int{1})
	schema, err := CompileSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"year":{"type":"integer"},
		"kind":{"enum":["os","language"]},"authors":{"type":"array","items":{"type":"string"}},"born":{"type":"string","format":"date"},
		"about":{"type":"string","pattern":"Unix"},"word":{"type":"string","pattern":"^[a-z ]*$"},"short":{"type":"string","maxLength":12}},
		"required":["name","year"]}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, so string
		schema   *Schema
	}{{"in-string", `{"name": "Un`, nil}, {"between", `{"name": "Unix", "year": 1969`, nil}, {"after-comma", `{"name": "Unix",`, nil},
		{"schema-in-string", `{"name": "Un`, schema}, {"schema-between", `{"name": "Unix", "year": 1969`, schema},
		{"schema-after-comma", `{"name": "Unix",`, schema}, {"schema-in-key", `{"name": "Unix", "ye`, schema},
		{"schema-in-date", `{"born": "1969-0`, schema}, {"schema-in-pattern", `{"about": "The Un`, schema},
		{"schema-in-class", `{"word": "some text`, schema}, {"schema-in-maxlength", `{"short": "some text`, schema}} {
		b.Run(c.name, func(b *testing.B) {
			j := v.ObjectOf(c.schema)
			for i := 0; i < len(c.so); i++ {
				j.Picked(int(c.so[i]))
			}
			if ok, _ := JSONPrefix(c.so); !ok || j.h.st.mode != map[string]jsonMode{"in-string": jString, "between": jNumber, "after-comma": jKey,
				"in-key": jString, "in-date": jString, "in-pattern": jString, "in-class": jString, "in-maxlength": jString}[strings.TrimPrefix(c.name, "schema-")] {
				b.Fatalf("%q: mode %d", c.so, j.h.st.mode)
			}
			for b.Loop() {
				j.Banned()
			}
		})
	}
}

// benchTexts is a vocabulary of Gemma's size for the benchmarks: every byte
// (ids 0 to 255, to walk a constraint to where a benchmark wants it), JSON's
// punctuation and words.
func benchTexts() []string {
	rng := rand.New(rand.NewPCG(7, 8))
	texts := make([]string, 262144)
	pieces := []string{"{", "}", "[", "]", `"`, `":`, `","`, ",", ":", " ", "\n", "  ", `\n`, "true", "1", "0.5"}
	for id := range texts {
		if id < 256 {
			texts[id] = string([]byte{byte(id)})
			continue
		}
		if id < 256+len(pieces)*64 {
			texts[id] = pieces[id%len(pieces)]
			continue
		}
		var w strings.Builder
		if rng.IntN(2) == 0 {
			w.WriteByte(' ')
		}
		for range 2 + rng.IntN(7) {
			w.WriteByte(byte('a' + rng.IntN(26)))
		}
		texts[id] = w.String()
	}
	return texts
}

// TestJSONThoughtFirst: ThoughtFirst lets the answer think first — the
// thought's start or the object's may come first, the thought is unheld to
// its end, and the object is held from there; without it a thought's start is
// banned, and once the object has begun no thought may.
func TestJSONThoughtFirst(t *testing.T) {
	texts := []string{ThoughtStart, ThoughtEnd, `{`, `}`, `"a"`, `:`, ` 1`, `words`, ` `, `<eos>`}
	special := []bool{true, true, false, false, false, false, false, false, false, true}
	v := NewJSONVocab(texts, special, []int{9})
	allowed := func(b []bool) []string {
		if b == nil {
			return []string{"any"}
		}
		var out []string
		for id, banned := range b {
			if !banned {
				out = append(out, texts[id])
			}
		}
		return out
	}
	j := v.Object()
	if got := allowed(j.Banned()); !slices.Equal(got, []string{`{`}) {
		t.Errorf("no thought asked: %q allowed first, want the object's start alone", got)
	}
	j = v.Object()
	j.ThoughtFirst()
	for _, step := range []struct {
		pick int
		want []string
	}{
		{-1, []string{ThoughtStart, `{`}}, // before anything
		{0, []string{"any"}},              // in the thought
		{7, []string{"any"}},
		{2, []string{"any"}}, // (an object's brace in a thought is the thought's)
		{1, []string{`{`}},   // the thought ended: the object
		{2, []string{`}`, `"a"`, ` `}},
	} {
		if step.pick >= 0 {
			j.Picked(step.pick)
		}
		if got := allowed(j.Banned()); !slices.Equal(got, step.want) {
			t.Errorf("after %q: %q allowed, want %q", texts[max(step.pick, 0)], got, step.want)
		}
	}
	j = v.Object()
	j.ThoughtFirst()
	j.Picked(2)
	if got := allowed(j.Banned()); slices.Contains(got, ThoughtStart) {
		t.Errorf("the object begun: a thought's start is allowed (%q)", got)
	}
}
